//! One kernel's trial: poisoned outputs, one run checked against the host
//! reference, then timed runs on a GPU or the analysis on the emulator.

use emu::Analysis;

use super::bench::{self, Runs, Stage, Timing};
use crate::runtime::{Gpu, Result};

/// What a trial found.
#[derive(Clone, Debug)]
pub struct Trial {
    /// `Err` says why the kernel failed: a mismatch, or the launch itself
    /// (an emulator error, a CUDA error).
    pub verified: std::result::Result<(), String>,
    /// On a GPU, when verified and asked for.
    pub timing: Option<Timing>,
    /// On the emulator: bank conflicts and sectors of the verification run.
    pub analysis: Option<Analysis>,
}

/// Verifies one kernel, then times it.
///
/// `step(state, stage)` does what each [`Stage`] asks: poison the outputs
/// (`Prepare`, before the verification run), restore an input the kernel
/// overwrites (`Restore`, before each timed run, untimed), queue the kernel
/// (`Run`). `check(state)` compares the outputs with the host reference
/// (and may run the kernel again, to compare two runs). The buffers live in
/// `state`, which both closures get, so neither needs to hold them. On the emulator the verification run is analysed; on a GPU,
/// a verified kernel is timed when `runs` is given.
pub fn trial<S>(
    gpu: &Gpu,
    runs: Option<Runs>,
    state: &mut S,
    mut step: impl FnMut(&mut S, Stage) -> Result<()>,
    check: impl FnOnce(&mut S) -> std::result::Result<(), String>,
) -> Result<Trial> {
    step(state, Stage::Prepare)?;
    let emulated = gpu.is_emulator();
    gpu.set_analysis(emulated);
    let outcome = step(state, Stage::Run).and_then(|()| gpu.sync());
    gpu.set_analysis(false);
    let analysis = emulated.then(|| gpu.take_analysis());
    let verified = match outcome {
        Ok(()) => check(state),
        Err(e) => Err(e.to_string()),
    };
    let timing = match runs {
        Some(runs) if verified.is_ok() && !emulated => {
            Some(bench::time_staged(gpu, runs, |stage| step(state, stage))?)
        }
        _ => None,
    };
    Ok(Trial { verified, timing, analysis })
}

/// [`trial`] of a kernel with one output: poisoned before the verification
/// run, downloaded for `check`, nothing to restore between timed runs.
pub fn of_output<T: cudarc::driver::DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    runs: Option<Runs>,
    out: &mut crate::runtime::DeviceBuffer<T>,
    mut launch: impl FnMut(&mut crate::runtime::DeviceBuffer<T>) -> Result<()>,
    check: impl FnOnce(&[T]) -> std::result::Result<(), String>,
) -> Result<Trial> {
    trial(
        gpu,
        runs,
        out,
        |out, stage| match stage {
            Stage::Prepare => gpu.poison(out),
            Stage::Restore => Ok(()),
            Stage::Run => launch(out),
        },
        |out| check(&gpu.download(out).map_err(|e| e.to_string())?),
    )
}
