//! One call's backward steps, each verified against the `f64` reference
//! (gradients poisoned first), then timed.

use crate::gemm::{self, Input, TensorGemm};
use crate::measure::{bench, data};
use crate::runtime::{Gpu, Result};

use super::super::launch::{self as forward, Buffers, Element, Step};
use super::super::problem::Problem;
use super::super::reference::{inputs, rows_to_check};
use super::super::run::Outcome;
use super::launch::{Gradients, launch};
use super::reference::{Inputs, key_rows_to_check, reference, verify};

/// dO for `p`: uniform in [-1, 1), rounded to the type.
pub fn output_gradient<T: Input>(p: &Problem, seed: u64) -> Vec<T> {
    data::uniform_f32(p.q_len(), seed).into_iter().map(T::round_f32).collect()
}

/// Runs the forward step `forward_step` on `p` in precision `P` (its O and
/// lse are the backward's inputs; the forward's own runs verify and time
/// it), then verifies (gradients poisoned first) and, given `runs`,
/// times each backward step of `steps`.
pub fn run_steps<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    (forward_step, steps): (Step, &[Step]),
    runs: Option<bench::Runs>,
) -> Result<Vec<(Step, Outcome)>> {
    p.check()?;
    let (q, k, v) = inputs::<P::Input>(p, 0xa77e);
    let d_o = output_gradient::<P::Input>(p, 0xa77e + 3);
    let mut x = Buffers::new(gpu, p, &q, &k, &v)?;
    let lib = TensorGemm::new();
    forward::launch::<P>(gpu, &lib, forward_step, p, &mut x)?;
    gpu.sync()?;
    let (o, lse) = (gpu.download(&x.o)?, gpu.download(&x.lse)?);
    let values = Inputs::of((&q, &k, &v), (&o, &d_o), &lse);
    let (q_rows, k_rows) = (rows_to_check(p), key_rows_to_check(p));
    let want = reference(p, &values, (&q_rows, &k_rows), (P::Input::ROUNDING, P::Input::TINY));
    let mut g = Gradients::new(gpu, p, &d_o)?;
    let mut out = Vec::new();
    for &step in steps {
        for buffer in [&mut g.dq, &mut g.dk, &mut g.dv] {
            gpu.poison(buffer)?;
        }
        gpu.set_analysis(gpu.is_emulator());
        let launched = launch::<P>(gpu, &lib, step, p, &x, &mut g).and_then(|()| gpu.sync());
        gpu.set_analysis(false);
        let analysis = gpu.is_emulator().then(|| gpu.take_analysis());
        launched?;
        let (dq, dk, dv) = (gpu.download(&g.dq)?, gpu.download(&g.dk)?, gpu.download(&g.dv)?);
        let name = format!("attention backward {}", step.name());
        let worst = verify(&name, p, (&dq, &dk, &dv), &want);
        let timing = match runs {
            Some(runs) if worst.is_ok() && !gpu.is_emulator() => {
                Some(bench::time(gpu, runs, || launch::<P>(gpu, &lib, step, p, &x, &mut g))?)
            }
            _ => None,
        };
        out.push((step, Outcome { worst, timing, analysis }));
    }
    Ok(out)
}
