//! `cargo run --release --bin attention -- --batch 4 --heads 16 --kv-heads 4 --seq 4096 --head-dim 128
//! --causal --precision bf16`: attention's steps (`kernel_lab::attention`) verified
//! against the `f64` reference (every element of O and lse within its derived bound; up to 4096
//! rows, a sample beyond), then timed with CUDA events (median after warm-up), in TFLOP/s counted
//! as `4 b h s_q s_k d`, halved when causal. `--sweep` runs the sweep's table and odd lengths (a
//! GPU only). Without a GPU it verifies on the emulator at the shapes given.

use std::process::ExitCode;

use clap::Parser;
use kernel_lab::attention::{self, Element, Problem, Step};
use kernel_lab::cli::{EXIT_BAD_INPUT, EXIT_FAILURE};
use kernel_lab::gemm::{self, Bf16, F16};
use kernel_lab::measure::bench::Runs;
use kernel_lab::runtime::{self, Error, Gpu, Result};

/// Verify and time attention, unfused and fused.
#[derive(Parser, Debug)]
#[command(name = "attention", version)]
struct Options {
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Query heads.
    #[arg(long, default_value_t = 16)]
    heads: usize,
    /// K/V heads (grouped-query attention; must divide --heads; default:
    /// --heads).
    #[arg(long)]
    kv_heads: Option<usize>,
    /// Query length (and key length unless --seq-k).
    #[arg(long, default_value_t = 1024)]
    seq: usize,
    /// Key length.
    #[arg(long)]
    seq_k: Option<usize>,
    /// 64, 128 or 256.
    #[arg(long, default_value_t = 128)]
    head_dim: usize,
    /// Causal mask, bottom-right aligned when the lengths differ.
    #[arg(long)]
    causal: bool,
    /// The score scale (default 1 / sqrt(head dim)).
    #[arg(long)]
    scale: Option<f32>,
    /// The Hopper step's two consumer warpgroups take turns to issue their
    /// products (FlashAttention-3's ping-pong; off by default, being slower:
    /// docs/notes.md).
    #[arg(long)]
    ping_pong: bool,
    /// The Hopper step walks its last round's tiles whole, never splitting
    /// them over the idle blocks (to measure what the split gains).
    #[arg(long)]
    no_split: bool,
    /// bf16 or f16.
    #[arg(long, default_value = "bf16")]
    precision: String,
    /// Steps to run: unfused, flash, hopper (default: every one the device
    /// runs; hopper needs sm_90a).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// The sweep's table of shapes, then odd lengths (a GPU only).
    #[arg(long)]
    sweep: bool,
    /// Timed runs (median reported) after the warm-up.
    #[arg(long, default_value_t = 20)]
    iters: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

/// Every problem the options ask for, and the steps, checked.
fn problems(o: &Options) -> Result<(Vec<Problem>, Vec<Step>)> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if !["bf16", "f16"].contains(&o.precision.as_str()) {
        return bad(format!("unknown --precision '{}'; accepted: bf16, f16", o.precision));
    }
    let mut steps = Vec::new();
    for name in &o.kernels {
        match Step::ALL.into_iter().find(|s| s.name() == name.as_str()) {
            Some(s) if !steps.contains(&s) => steps.push(s),
            Some(_) => {}
            None => return bad(format!("unknown --kernels '{name}'; accepted: unfused, flash, hopper")),
        }
    }
    if steps.is_empty() {
        steps = Step::ALL.to_vec();
    }
    if o.iters == 0 {
        return bad("--iters must be at least 1".into());
    }
    let mut problems = if o.sweep {
        attention::sweep()
    } else {
        let kv = o.kv_heads.unwrap_or(o.heads);
        let mut p =
            Problem::new(o.batch, o.heads, kv, (o.seq, o.seq_k.unwrap_or(o.seq)), o.head_dim, o.causal);
        if let Some(scale) = o.scale {
            p.scale = scale;
        }
        vec![p]
    };
    for p in &mut problems {
        p.ping_pong = o.ping_pong;
        p.split = !o.no_split;
        p.check()?;
    }
    Ok((problems, steps))
}

/// One problem's rows of the table: step, worst error / bound, ms, TFLOP/s.
fn one<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    steps: &[Step],
    runs: Runs,
) -> Result<Vec<String>> {
    let outcomes = attention::run_steps::<P>(gpu, p, steps, Some(runs))?;
    let mut rows = Vec::new();
    for (step, outcome) in outcomes {
        let worst =
            outcome.worst.map_err(|why| Error::InvalidInput(format!("verification failed: {why}")))?;
        let (ms, tflops) = match outcome.timing {
            Some(t) => {
                (format!("{:.4}", t.median_ms), format!("{:.1}", p.flops() / (t.median_ms * 1e-3) / 1e12))
            }
            None => ("-".into(), "-".into()),
        };
        rows.push(format!(
            "| {} | {p} | {} | {worst:.3} | {ms} | {tflops} |",
            <P::Input as kernel_lab::gemm::Input>::NAME,
            step.name()
        ));
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let o: Options = kernel_lab::cli::parse();
    let (problems, steps) = match problems(&o) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let gpu = match runtime::open_or_emulate(o.device) {
        Ok((gpu, None)) => gpu,
        Ok((_, Some(e))) if o.sweep => {
            eprintln!("error: --sweep times full-size problems and needs a GPU ({e})");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        Ok((gpu, Some(e))) => {
            eprintln!("{e}: verifying on the CPU emulator instead (no timings)");
            gpu
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    if !gpu.is_emulator() {
        println!("{}", kernel_lab::cli::device_line(&gpu));
        // Each problem's buffers, the baseline's S and P included, must fit.
        for p in &problems {
            if let Err(e) = gpu.check_fits(p.device_bytes()) {
                eprintln!("error: attention {p}: {e}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    }
    // By default, the steps this device runs (hopper's kernels are in the
    // sm_90a PTX only); a step asked for by name runs or fails.
    let steps: Vec<Step> = if o.kernels.is_empty() {
        steps
            .into_iter()
            .filter(|s| {
                problems.iter().all(|p| s.kernel(&o.precision, p.d).is_ok_and(|k| gpu.has_kernel(k).is_ok()))
            })
            .collect()
    } else {
        steps
    };
    let runs = Runs { warmup: o.warmup, timed: o.iters };
    println!("| precision | problem | step | worst error / bound | ms | TFLOP/s |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for p in &problems {
        eprintln!("attention {} {p}", o.precision);
        let rows = if o.precision == "bf16" {
            one::<Bf16>(&gpu, p, &steps, runs)
        } else {
            one::<F16>(&gpu, p, &steps, runs)
        };
        match rows {
            Ok(rows) => rows.iter().for_each(|r| println!("{r}")),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(
                    if matches!(e, Error::InvalidInput(ref m) if m.starts_with("verification failed")) {
                        EXIT_FAILURE
                    } else {
                        e.exit_code()
                    },
                );
            }
        }
    }
    ExitCode::SUCCESS
}
