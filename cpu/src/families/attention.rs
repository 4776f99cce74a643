//! The attention family: every step of `crate::attention` verified and
//! timed at the suite's sizes, in bf16 and f16, and the Hopper step on FP8
//! inputs (`crate::attention::fp8`, O in bf16).

use gpu::launch::{Kernel, registry};

use crate::gemm::{self, Bf16, F16, Input};
use crate::measure::{AnalysisColumns, Rate, Record, Shape};
use crate::runtime::Result;

use super::{About, Family, Run};
use crate::attention::{Element, Problem, Step, run_steps};

/// The family: fused and unfused attention, bf16 and f16; FP8 on Hopper.
pub struct Attention;


/// The suite's problem at size `s`: batch 4, 16 heads, d = 128, not causal
/// (the sweep's shape); on the emulator, batch 1 and 2 heads.
fn suite_problem(s: usize, emulator: bool) -> Problem {
    let (b, h) = if emulator { (1, 2) } else { (4, 16) };
    Problem::new(b, h, h, (s, s), 128, false)
}

/// The precisions, by name.
fn run_precision<P: gemm::Precision<Input: Element>>(run: &Run, s: usize, kernels: &[&'static Kernel]) -> Result<Vec<Record>> {
    let p = suite_problem(s, run.gpu.is_emulator());
    let name = <P::Input as Input>::NAME;
    let mut steps = Vec::new();
    for &kernel in kernels {
        for step in Step::ALL {
            // (A kernel this device's PTX lacks, sm_90a's elsewhere, is left out.)
            if step.kernel(name, p.d).is_ok_and(|k| std::ptr::eq(k, kernel)) && run.gpu.has_kernel(kernel).is_ok() {
                steps.push((step, kernel));
            }
        }
    }
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    (run.progress)(&format!("attention {p} {name}"));
    let outcomes = run_steps::<P>(run.gpu, &p, &steps.iter().map(|s| s.0).collect::<Vec<_>>(), run.runs)?;
    Ok(outcomes
        .into_iter()
        .zip(&steps)
        .map(|((_, outcome), (_, kernel))| {
            record(run, (kernel, name), (outcome.worst, outcome.analysis.as_ref()), outcome.timing, p.flops())
        })
        .collect())
}

/// The FP8 step's record at size `s`, where `kernels` names it and the
/// device has it (sm_90a): verified on uniform inputs (its RMSE is the
/// `attention` binary's), then timed without its Vᵀ pass.
fn run_fp8(run: &Run, s: usize, kernels: &[&'static Kernel]) -> Result<Vec<Record>> {
    let p = suite_problem(s, run.gpu.is_emulator());
    let kernel = crate::attention::fp8::kernel::<half::bf16>(&p)?;
    if !kernels.iter().any(|&k| std::ptr::eq(k, kernel)) || run.gpu.has_kernel(kernel).is_err() {
        return Ok(Vec::new());
    }
    (run.progress)(&format!("attention {p} e4m3"));
    let outcome = crate::attention::fp8::run::<half::bf16>(run.gpu, &p, run.runs, false)?;
    let checked = (outcome.worst, outcome.analysis.as_ref());
    Ok(vec![record(run, (kernel, "e4m3"), checked, outcome.timing, p.flops())])
}

/// A row of the family: `kernel` in `precision`, its worst error over its
/// bound (or why it failed) and the emulator's analysis, timed at `flops`
/// a launch.
fn record(
    run: &Run,
    (kernel, precision): (&'static Kernel, &str),
    (worst, analysis): (std::result::Result<f64, String>, Option<&emu::Analysis>),
    timing: Option<crate::measure::bench::Timing>,
    flops: f64,
) -> Record {
    let mut r = Record::new("attention", kernel.name, precision, run.size);
    r.verified = worst.is_ok();
    r.error = worst.clone().err();
    r.relative_error = worst.ok();
    r.analysis = analysis.map(|a| AnalysisColumns::from(run.size.lead(), a));
    r.timed(timing, Rate::Flops { flops, peer: "-", peer_tflops: None })
}

impl Family for Attention {
    fn about(&self) -> &'static About {
        &About {
            name: "attention",
            size_meaning: "s: batch 4, 16 heads, s queries and keys, d = 128, not causal (emulator: batch 1, 2 heads)",
            default_sizes: &[1024, 2048, 4096],
            emulator_size: 77,
            method: "every element of O and lse against an f64 reference on the same inputs (up to 4096 rows; a \
                     sample beyond), within a bound derived from the f32 scores, the exponent's argument, \
                     ex2.approx, P rounded to the input type, the f32 sums and the output rounding (the module \
                     documentation of cpu/src/families/attention.rs); the softmax kernel's rows time the whole \
                     unfused baseline (GEMM, softmax, GEMM)",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let p = suite_problem(size.one("attention")?, false);
        p.check()?;
        Ok(p.device_bytes())
    }

    fn emulator_work(&self, size: &Shape) -> usize {
        size.dims().iter().product::<usize>().pow(2)
    }

    fn emulator_limit(&self) -> usize {
        1 << 16
    }

    fn kernels(&self) -> Vec<&'static Kernel> {
        registry::tree("gpu::attention")
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let s = run.size.one("attention")?;
        let mut records = run_precision::<Bf16>(run, s, run.kernels)?;
        records.extend(run_precision::<F16>(run, s, run.kernels)?);
        records.extend(run_fp8(run, s, run.kernels)?);
        Ok(records)
    }

    fn notes(&self) -> &'static str {
        "Step 1 (the rows `attention_softmax_*`) is the unfused baseline timed whole: S = Q Kᵀ by the GEMM \
         library (f32 out), the softmax kernel writing P in the input type and lse, then P V by the GEMM library; \
         it moves at least 16 bytes per score. Step 2 (`attention_flash_d*`) is FlashAttention-2 on `mma.sync`: S \
         and P stay in registers. Step 3 (`attention_hopper_d*`, sm_90a) is FlashAttention-3 style: TMA, \
         mbarriers, `wgmma` with P from registers, a producer and two consumer warpgroups taking turns, \
         persistent blocks. Step 3c (`attention_hopper_e4m3_d*`, sm_90a) is the same kernel on E4M3 Q, K and V \
         (a descale per tensor, O in bf16; timed without the pass that transposes V). The fused kernels' rows \
         are at d = 128 only here; the `attention` binary runs every head dimension."
    }
}
