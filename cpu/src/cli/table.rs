//! What the library binaries (`gemm`, `attention`) share with the suite's:
//! `--json` checked before the work and written after it, with the run's
//! provenance; a progress bar that ticks while a long call runs; the
//! emulator's budget, said before anything runs.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use indicatif::ProgressBar;
use serde::Serialize;

use super::provenance::{git_revision, today};
use crate::files::{check_file_destination, write_file};
use crate::report::suite::EMULATOR;
use crate::runtime::{Error, Gpu, Result};

/// The options the library binaries take beside their problems' own.
#[derive(Args, Debug, Clone)]
pub struct Output {
    /// Write every row, with the device, date and git revision, as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The device a library binary runs on: the GPU, or without one the
/// emulator and the line that says so (to print once the problems are
/// known to fit). `gpu_only` names what the run asks that only a GPU does
/// (`--sweep`), refused without one.
pub fn open(device: usize, gpu_only: Option<&str>) -> Result<(Gpu, Option<String>)> {
    let (gpu, no_gpu) = crate::runtime::open_or_emulate(device)?;
    match (no_gpu, gpu_only) {
        (Some(e), Some(what)) => Err(Error::InvalidInput(format!("{what} and needs a GPU ({e})"))),
        (no_gpu, _) => {
            Ok((gpu, no_gpu.map(|e| format!("{e}: verifying on the CPU emulator instead (no timings)"))))
        }
    }
}

/// A library binary's rows as `--json` writes them.
#[derive(Serialize)]
pub struct Rows<'a, R: Serialize> {
    /// The binary that ran.
    pub binary: &'a str,
    pub device: String,
    pub compute_capability: String,
    pub date: String,
    pub git_revision: String,
    pub rows: &'a [R],
}

impl Output {
    /// That `--json` can be written, and that this run would replace no
    /// GPU run's results with an emulator's: an error before any work.
    pub fn check(&self, gpu: &Gpu) -> Result<()> {
        let Some(path) = &self.json else { return Ok(()) };
        check_file_destination("--json", path)?;
        if gpu.is_emulator() {
            keeps_gpu_results(path)?;
        }
        Ok(())
    }

    /// Writes `rows` where `--json` says, if it does.
    pub fn write<R: Serialize>(&self, gpu: &Gpu, binary: &str, rows: &[R]) -> Result<()> {
        let Some(path) = &self.json else { return Ok(()) };
        let info = &gpu.info;
        let report = Rows {
            binary,
            device: info.name.clone(),
            compute_capability: format!("{}.{}", info.major, info.minor),
            date: today(),
            git_revision: git_revision(),
            rows,
        };
        write_file(path, &serde_json::to_string_pretty(&report).expect("rows serialise"))?;
        println!("wrote {}", path.display());
        Ok(())
    }

    /// A bar of `steps` steps that redraws itself every second while a
    /// step runs, so that a long emulated call shows it is alive (hidden
    /// with `--quiet`, and where stderr is not a terminal).
    pub fn progress(&self, steps: usize) -> ProgressBar {
        let bar = super::run::progress_bar(steps, self.quiet);
        bar.enable_steady_tick(Duration::from_secs(1));
        bar
    }
}

/// That a `--json` file an emulator run is about to write holds no GPU
/// run's results (a suite run's, or a library binary's): an error before
/// any work if it does.
pub(super) fn keeps_gpu_results(path: &Path) -> Result<()> {
    // Only a regular file can hold them (reading a FIFO would wait for a
    // writer).
    if !path.is_file() {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(()) };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { return Ok(()) };
    match json.get("device").and_then(|d| d.as_str()) {
        Some(device) if device != EMULATOR => Err(Error::InvalidInput(format!(
            "--json {}: it holds a GPU run's records ({device}, {}), which an emulator run does not replace: give another file",
            path.display(),
            json.get("date").and_then(|d| d.as_str()).unwrap_or("undated")
        ))),
        _ => Ok(()),
    }
}

/// The emulator's budget for one problem: `what` (a call, a problem) is
/// refused before any work when its `work` is above `most` (a power of
/// two), in the unit
/// `unit` names, with the time the budget takes on one core.
pub fn within_budget(what: &str, work: usize, most: usize, unit: &str, time: &str) -> Result<()> {
    if work > most {
        return Err(Error::InvalidInput(format!(
            "no GPU found, and {what} is too large for the emulator ({work:.1e} {unit}, at most 2^{} = {most:.1e}, about {time} on one core): run it on a GPU",
            most.ilog2()
        )));
    }
    Ok(())
}
