//! One call's steps, each verified against the `f64` reference (outputs
//! poisoned first), then timed.

use crate::gemm::TensorGemm;
use crate::measure::bench;
use crate::runtime::{Gpu, Result};

use super::launch::{Buffers, Element, Step, launch};
use super::problem::Problem;
use super::reference::{inputs, reference_of, rows_to_check, verify};
use crate::gemm;

/// One step's outcome: the worst error against its bound, and its time.
pub struct Outcome {
    pub worst: std::result::Result<f64, String>,
    pub timing: Option<bench::Timing>,
    /// On the emulator: the verification run's bank-conflict and sector
    /// analysis (every launch of the step).
    pub analysis: Option<emu::Analysis>,
}

/// Verifies (outputs poisoned first) then, given `runs`, times each of
/// `steps` on `p` in precision `P`.
pub fn run_steps<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    steps: &[Step],
    runs: Option<bench::Runs>,
) -> Result<Vec<(Step, Outcome)>> {
    p.check()?;
    let (q, k, v) = inputs::<P::Input>(p, 0xa77e);
    let rows = rows_to_check(p);
    let want = reference_of(p, (&q, &k, &v), &rows);
    let mut x = Buffers::new(gpu, p, &q, &k, &v)?;
    let lib = TensorGemm::new();
    let mut out = Vec::new();
    for &step in steps {
        gpu.poison(&mut x.o)?;
        gpu.poison(&mut x.lse)?;
        gpu.set_analysis(gpu.is_emulator());
        let launched = launch::<P>(gpu, &lib, step, p, &mut x).and_then(|()| gpu.sync());
        gpu.set_analysis(false);
        let analysis = gpu.is_emulator().then(|| gpu.take_analysis());
        launched?;
        let (o, lse) = (gpu.download(&x.o)?, gpu.download(&x.lse)?);
        let name = format!("attention {}", step.name());
        let worst = verify(&name, p, &o, &lse, &want);
        let timing = match runs {
            Some(runs) if worst.is_ok() && !gpu.is_emulator() => {
                Some(bench::time(gpu, runs, || launch::<P>(gpu, &lib, step, p, &mut x))?)
            }
            _ => None,
        };
        out.push((step, Outcome { worst, timing, analysis }));
    }
    Ok(out)
}
