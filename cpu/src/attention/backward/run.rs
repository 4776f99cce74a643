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

/// One backward run's tensors on the host: Q, K, V, dO (the inputs, as
/// [`run_steps`] draws them) and dQ, dK, dV.
pub struct Tensors<T> {
    pub q: Vec<T>,
    pub k: Vec<T>,
    pub v: Vec<T>,
    pub d_o: Vec<T>,
    pub dq: Vec<T>,
    pub dk: Vec<T>,
    pub dv: Vec<T>,
}

/// What every backward run starts from: `p`'s inputs (Q, K, V from the
/// forward's draw, dO), the forward's buffers after `forward_step` ran
/// (O and lse, the backward's inputs), the GEMM library.
struct Start<T: Element> {
    q: Vec<T>,
    k: Vec<T>,
    v: Vec<T>,
    d_o: Vec<T>,
    x: Buffers<T>,
    lib: TensorGemm,
}

fn start<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    forward_step: Step,
) -> Result<Start<P::Input>> {
    p.check()?;
    let (q, k, v) = inputs::<P::Input>(p, 0xa77e);
    let d_o = output_gradient::<P::Input>(p, 0xa77e + 3);
    let mut x = Buffers::new(gpu, p, &q, &k, &v)?;
    let lib = TensorGemm::new();
    forward::launch::<P>(gpu, &lib, forward_step, p, &mut x)?;
    Ok(Start { q, k, v, d_o, x, lib })
}

/// The inputs [`run_steps`] draws for `p`, and `step`'s gradients of
/// them (after the forward step `forward_step`): what a peer's gradients
/// are compared with.
pub fn gradients<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    (forward_step, step): (Step, Step),
) -> Result<Tensors<P::Input>> {
    let Start { q, k, v, d_o, x, lib } = start::<P>(gpu, p, forward_step)?;
    let mut g = Gradients::new(gpu, p, &d_o)?;
    launch::<P>(gpu, &lib, step, p, &x, &mut g)?;
    gpu.sync()?;
    Ok(Tensors { q, k, v, d_o, dq: gpu.download(&g.dq)?, dk: gpu.download(&g.dk)?, dv: gpu.download(&g.dv)? })
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
    let Start { q, k, v, d_o, x, lib } = start::<P>(gpu, p, forward_step)?;
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
        let mut worst = verify(&name, p, (&dq, &dk, &dv), &want);
        if p.deterministic && worst.is_ok() {
            // The same bits again, gradients poisoned first.
            for buffer in [&mut g.dq, &mut g.dk, &mut g.dv] {
                gpu.poison(buffer)?;
            }
            launch::<P>(gpu, &lib, step, p, &x, &mut g)?;
            gpu.sync()?;
            let again = (gpu.download(&g.dq)?, gpu.download(&g.dk)?, gpu.download(&g.dv)?);
            let bits =
                |x: &[P::Input]| -> Vec<u32> { x.iter().map(|e| gpu::dev::Element::bits(*e)).collect() };
            if (bits(&again.0), bits(&again.1), bits(&again.2)) != (bits(&dq), bits(&dk), bits(&dv)) {
                worst = Err(format!("{name} {p}: two runs gave different bits"));
            }
        }
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
