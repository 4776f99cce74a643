//! `attention --precision e4m3`: the Hopper step on FP8 inputs
//! (`kernel_lab::attention::fp8`), each problem verified against its own
//! bound on uniform inputs and on FlashAttention-3's outlier case, then
//! timed. Two rows per problem: the kernel alone (`hopper`) and with the
//! Vᵀ pass before it (`hopper+vt`). After the table comes a second one,
//! the accuracy: O's RMSE against the `f64` reference of the unrounded
//! inputs, beside the bf16 Hopper step's on the same inputs.

use half::bf16;
use kernel_lab::attention::{Problem, fp8};
use kernel_lab::measure::bench::Runs;
use kernel_lab::runtime::{Error, Gpu, Result};

use super::{Options, Row};

/// Each problem verified and timed, both tables printed: `Ok(true)`, or
/// the first error (a failed verification is exit 1).
pub(crate) fn run(o: &Options, gpu: &Gpu, problems: &[Problem], runs: Runs) -> Result<bool> {
    println!("| precision | problem | step | worst error / bound | ms | TFLOP/s |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let bar = o.output.progress(problems.len());
    let (mut json, mut accuracy) = (Vec::new(), Vec::new());
    for p in problems {
        bar.suspend(|| eprintln!("attention e4m3 {p}"));
        bar.set_message(p.to_string());
        let outcome = fp8::run::<bf16>(gpu, p, Some(runs), true).inspect_err(|_| bar.finish_and_clear())?;
        let worst = outcome.worst.map_err(|why| {
            bar.finish_and_clear();
            Error::Mismatch(format!("attention {p}: {why}"))
        })?;
        let kernel = outcome.timing.map(|t| t.median_ms);
        let with_pass = kernel.zip(outcome.transpose.map(|t| t.median_ms)).map(|(a, b)| a + b);
        let rows = [("hopper", kernel), ("hopper+vt", with_pass)].map(|(step, ms)| Row {
            precision: "e4m3",
            problem: p.to_string(),
            step: step.into(),
            worst_error_over_bound: worst,
            ms,
            tflops: ms.map(|ms| p.flops() / (ms * 1e-3) / 1e12),
        });
        bar.suspend(|| rows.iter().for_each(|r| println!("{}", r.markdown())));
        json.extend(rows);
        accuracy.extend(outcome.accuracy.into_iter().map(|a| (p.to_string(), a)));
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!();
    println!("| problem | inputs | RMSE e4m3 | RMSE bf16 | e4m3 / bf16 | RMS of O |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (problem, a) in &accuracy {
        println!(
            "| {problem} | {} | {:.3e} | {:.3e} | {:.1} | {:.3e} |",
            a.inputs,
            a.fp8,
            a.bf16,
            a.fp8 / a.bf16.max(f64::MIN_POSITIVE),
            a.rms
        );
    }
    o.output.write(gpu, "attention", &json)?;
    Ok(true)
}
