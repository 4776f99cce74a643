//! `cargo run --release --bin attention -- --batch 4 --heads 16 --kv-heads 4 --seq 4096 --head-dim 128
//! --causal --precision bf16`: attention's steps (`kernel_lab::attention`) verified
//! against the `f64` reference (every element of O and lse within its derived bound; up to 4096
//! rows, a sample beyond), then timed with CUDA events (median after warm-up), in TFLOP/s counted
//! as `4 b h s_q s_k d`, halved when causal. `--sweep` runs the sweep's table and odd lengths (a
//! GPU only). Without a GPU it verifies on the emulator, each problem within its budget
//! (`attention::EMULATOR_MULTIPLY_ADDS`), with smaller defaults (2 heads, 256 long). `--backward`
//! also runs the backward steps (dQ, dK, dV from the forward's O and lse and a random dO), each
//! verified against its `f64` reference, and times them apart from the forward, in TFLOP/s
//! counted as `10 b h s_q s_k d` (2.5 times the forward's), halved when causal. `--decode` runs
//! `--seq` queries a sequence (default 1) against a KV cache of `--kv-len` keys (or `--kv-lens`,
//! one a sequence), contiguous and, with `--page-size`, paged, in TB/s of the bytes it must read,
//! beside the device's copy (`decode.rs`); `--varlen 100,4000,77` packs sequences of those
//! lengths, each against its own keys, timed beside the same sequences one by one.
//! `--precision e4m3` runs the Hopper step on FP8 inputs (`fp8.rs`): O in bf16, verified against its
//! own bound, timed with and without its Vᵀ pass, its RMSE beside the bf16 step's.

mod decode;
mod fp8;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use kernel_lab::attention::{self, Element, Problem, Step, backward};
use kernel_lab::cli::{Output, within_budget};
use kernel_lab::gemm::{self, Bf16, F16};
use kernel_lab::measure::bench::Runs;
use kernel_lab::runtime::{self, Error, Gpu, Result};

/// Verify and time attention, unfused and fused.
#[derive(Parser, Debug)]
#[command(name = "attention", version)]
struct Options {
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Query heads (default: 16; 2 on the emulator).
    #[arg(long)]
    heads: Option<usize>,
    /// K/V heads (grouped-query attention; must divide --heads; default:
    /// --heads).
    #[arg(long)]
    kv_heads: Option<usize>,
    /// Query length, and key length unless --seq-k (default: 1024; 256
    /// on the emulator).
    #[arg(long)]
    seq: Option<usize>,
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
    /// With --precision e4m3: Q, K and V quantized with a descale per K/V
    /// head of each batch (a query head takes its K/V head's), not per
    /// tensor. Such a call never splits its last round.
    #[arg(long)]
    head_descales: bool,
    /// bf16, f16, or e4m3 (FP8 inputs with a descale per tensor, O in
    /// bf16: the hopper step only, forward only).
    #[arg(long, default_value = "bf16")]
    precision: String,
    /// Steps to run: unfused, flash, hopper (default: every one the device
    /// runs; hopper needs sm_90a).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Also the backward (dQ, dK, dV) of each step, verified and timed
    /// apart from the forward.
    #[arg(long)]
    backward: bool,
    /// The backward sums dQ in a fixed order: the same bits every run
    /// (checked by a second run; the fused steps'). With --sweep, each
    /// problem runs in both modes.
    #[arg(long)]
    deterministic: bool,
    /// With --backward: writes the first problem's Q, K, V, dO and the
    /// fastest backward step's dQ, dK, dV into this folder (raw
    /// little-endian 16-bit elements, and `problem.txt`), for
    /// `scripts/torch-sdpa-backward.py --compare` to hold against torch's.
    #[arg(long)]
    dump: Option<std::path::PathBuf>,
    /// Decode: --seq queries a sequence (default 1) against a KV cache of
    /// --kv-len keys, the keys split across blocks.
    #[arg(long)]
    decode: bool,
    /// Keys a sequence in the cache (--decode; default 4096, 300 on the
    /// emulator).
    #[arg(long)]
    kv_len: Option<usize>,
    /// Each sequence's keys, comma-separated (--decode; sets the batch).
    #[arg(long, value_delimiter = ',')]
    kv_lens: Vec<usize>,
    /// Packed variable-length sequences, their query counts
    /// comma-separated (`100,4000,77`): Q and O `[tokens, heads, d]`, each
    /// sequence against its own keys (as many as its queries, or
    /// --kv-lens), through the decode kernels; timed beside the same
    /// sequences one by one.
    #[arg(long, value_delimiter = ',')]
    varlen: Vec<usize>,
    /// Tokens a page of a paged cache, a power of two from 16 to 256
    /// (--decode): the paged cache runs beside the contiguous one.
    #[arg(long)]
    page_size: Option<usize>,
    /// The KV cache's element type (--decode): e4m3 (FP8, a descale per
    /// K/V head), or by default --precision's.
    #[arg(long)]
    kv_cache: Option<String>,
    /// Prints how each decode call is split across blocks, and why.
    #[arg(long)]
    explain: bool,
    /// The sweep's table of shapes, then odd lengths (a GPU only); with
    /// --backward, the backward's (bench/attention-backward-sweep.txt);
    /// with --decode, the decode's (bench/attention-decode-sweep.txt).
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
    #[command(flatten)]
    output: Output,
}

/// The defaults of `--heads` and `--seq`: a GPU's, and the emulator's (a
/// few seconds).
pub(crate) const DEFAULT_HEADS: [usize; 2] = [16, 2];
const DEFAULT_SEQ: [usize; 2] = [1024, 256];

/// Every problem the options ask for, and the steps, checked; the shape's
/// defaults on the emulator or not.
fn problems(o: &Options, emulator: bool) -> Result<(Vec<Problem>, Vec<Step>)> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if !["bf16", "f16", "e4m3"].contains(&o.precision.as_str()) {
        return bad(format!("unknown --precision '{}'; accepted: bf16, f16, e4m3", o.precision));
    }
    let fp8 = o.precision == "e4m3";
    let mut steps = Vec::new();
    for name in &o.kernels {
        match Step::ALL.into_iter().find(|s| s.name() == name.as_str()) {
            Some(s) if !steps.contains(&s) => steps.push(s),
            Some(_) => {}
            None => return bad(format!("unknown --kernels '{name}'; accepted: unfused, flash, hopper")),
        }
    }
    if !o.decode {
        let decode_only = [
            ("--kv-len", o.kv_len.is_some()),
            ("--kv-lens", !o.kv_lens.is_empty()),
            ("--page-size", o.page_size.is_some()),
            ("--kv-cache", o.kv_cache.is_some()),
            ("--explain", o.explain),
        ];
        if let Some((flag, _)) = decode_only.iter().find(|(_, set)| *set) {
            return bad(format!("{flag} applies to decode: add --decode"));
        }
    }
    if fp8 && (o.backward || o.decode || !o.varlen.is_empty()) {
        return bad("--precision e4m3 is the forward prefill's: the backward and decode take bf16 or f16 (decode's cache: --kv-cache e4m3)".into());
    }
    if o.head_descales && !fp8 {
        return bad("--head-descales quantizes FP8 inputs: add --precision e4m3".into());
    }
    if fp8 && steps.iter().any(|&s| s != Step::Hopper) {
        return bad("--precision e4m3 runs the hopper step only".into());
    }
    if o.deterministic && !o.backward {
        return bad("--deterministic applies to the backward: add --backward".into());
    }
    if o.dump.is_some() && !o.backward {
        return bad("--dump writes the backward's tensors: add --backward".into());
    }
    // Named steps with --backward: at least one has a backward (the others
    // run forward only).
    if o.backward && !steps.is_empty() {
        let refusals: Vec<Error> =
            steps.iter().filter_map(|&s| backward::kernel(s, &o.precision, o.head_dim).err()).collect();
        if refusals.len() == steps.len() {
            return Err(refusals.into_iter().next().expect("steps named"));
        }
    }

    if steps.is_empty() {
        steps = if fp8 { vec![Step::Hopper] } else { Step::ALL.to_vec() };
    }
    if o.iters == 0 {
        return bad("--iters must be at least 1".into());
    }
    let mut problems = if o.sweep && o.backward {
        attention::backward_sweep()
    } else if o.sweep {
        attention::sweep()
    } else {
        let heads = o.heads.unwrap_or(DEFAULT_HEADS[usize::from(emulator)]);
        let seq = o.seq.unwrap_or(DEFAULT_SEQ[usize::from(emulator)]);
        let kv = o.kv_heads.unwrap_or(heads);
        let mut p = Problem::new(o.batch, heads, kv, (seq, o.seq_k.unwrap_or(seq)), o.head_dim, o.causal);
        if let Some(scale) = o.scale {
            p.scale = scale;
        }
        vec![p]
    };
    for p in &mut problems {
        p.ping_pong = o.ping_pong;
        p.deterministic = o.deterministic;
        p.split = !o.no_split;
        p.head_descales = o.head_descales;
        p.check()?;
    }
    if o.sweep && o.deterministic {
        // The sweep runs each problem in the default mode too, so that the
        // report can set the deterministic mode's cost beside it.
        problems = problems.into_iter().flat_map(|p| [Problem { deterministic: false, ..p }, p]).collect();
    }
    Ok((problems, steps))
}

/// One row of the table, as `--json` writes it.
#[derive(serde::Serialize)]
struct Row {
    precision: &'static str,
    problem: String,
    step: String,
    /// The worst element's error over its bound.
    worst_error_over_bound: f64,
    ms: Option<f64>,
    tflops: Option<f64>,
}

impl Row {
    fn markdown(&self) -> String {
        let or_dash = |x: Option<f64>, places: usize| x.map_or("-".into(), |x| format!("{x:.places$}"));
        format!(
            "| {} | {} | {} | {:.3} | {} | {} |",
            self.precision,
            self.problem,
            self.step,
            self.worst_error_over_bound,
            or_dash(self.ms, 4),
            or_dash(self.tflops, 1)
        )
    }
}

/// One problem's rows of the table: step, worst error / bound, ms, TFLOP/s.
fn one<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    (steps, backward_steps): (&[Step], &[Step]),
    runs: Runs,
) -> Result<Vec<Row>> {
    let outcomes = attention::run_steps::<P>(gpu, p, steps, Some(runs))?;
    let row = |step: String, outcome: attention::Outcome, flops: f64| -> Result<Row> {
        let worst = outcome.worst.map_err(|why| Error::Mismatch(format!("attention {p}: {why}")))?;
        let ms = outcome.timing.map(|t| t.median_ms);
        Ok(Row {
            precision: <P::Input as kernel_lab::gemm::Input>::NAME,
            problem: p.to_string(),
            step,
            worst_error_over_bound: worst,
            ms,
            tflops: ms.map(|ms| flops / (ms * 1e-3) / 1e12),
        })
    };
    let mut rows = Vec::new();
    for (step, outcome) in outcomes {
        rows.push(row(step.name().into(), outcome, p.flops())?);
    }
    let name = <P::Input as kernel_lab::gemm::Input>::NAME;
    let backward_steps: Vec<Step> =
        backward_steps.iter().copied().filter(|&s| backward::kernel(s, name, p.d).is_ok()).collect();
    if !backward_steps.is_empty() {
        // The forward that makes the backward's O and lse: the fastest
        // step this device runs.
        let forward = if steps.contains(&Step::Hopper) { Step::Hopper } else { Step::Flash };
        let outcomes = backward::run_steps::<P>(gpu, p, (forward, &backward_steps), Some(runs))?;
        for (step, outcome) in outcomes {
            rows.push(row(format!("{} backward", step.name()), outcome, backward::flops(p))?);
        }
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let o: Options = kernel_lab::cli::parse();
    kernel_lab::cli::main_with(|| run(&o))
}

/// The options checked, each problem's steps verified and timed, the
/// table printed: `Ok(true)`, or the first error (a failed verification
/// is exit 1).
fn run(o: &Options) -> Result<bool> {
    if o.decode || !o.varlen.is_empty() {
        return decode::run(o);
    }
    // The options alone, checked before the device is opened.
    problems(o, false)?;
    let (gpu, no_gpu) =
        kernel_lab::cli::open(o.device, o.sweep.then_some("--sweep times full-size problems"))?;
    // What this device can take, checked before any work.
    let (problems, steps) = fitting(o, &gpu)?;
    if let Some(line) = no_gpu {
        eprintln!("{line}");
    }
    if !gpu.is_emulator() {
        println!("{}", kernel_lab::cli::device_line(&gpu));
    }
    // By default, the steps this device runs (hopper's kernels are in the
    // sm_90a PTX only); a step asked for by name runs or fails.
    let runs = Runs { warmup: o.warmup, timed: o.iters };
    if o.precision == "e4m3" {
        return fp8::run(o, &gpu, &problems, runs);
    }
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
    // The backward's steps: each problem's steps that have one (named
    // ones were checked to, for the head dimension asked).
    let backward_steps: &[Step] = if o.backward { &steps } else { &[] };
    if o.backward {
        println!(
            "Backward rows: dQ, dK, dV from the forward's O and lse; TFLOP/s count 10 b h s_q s_k d (2.5 times the forward's), halved when causal."
        );
    }
    println!("| precision | problem | step | worst error / bound | ms | TFLOP/s |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let bar = o.output.progress(problems.len());
    let mut json = Vec::new();
    for p in &problems {
        bar.suspend(|| eprintln!("attention {} {p}", o.precision));
        bar.set_message(p.to_string());
        let rows = if o.precision == "bf16" {
            one::<Bf16>(&gpu, p, (&steps, backward_steps), runs)
        } else {
            one::<F16>(&gpu, p, (&steps, backward_steps), runs)
        };
        let rows = rows.inspect_err(|_| bar.finish_and_clear())?;
        bar.suspend(|| rows.iter().for_each(|r| println!("{}", r.markdown())));
        json.extend(rows);
        bar.inc(1);
    }
    bar.finish_and_clear();
    o.output.write(&gpu, "attention", &json)?;
    if let (Some(dir), Some(p)) = (&o.dump, problems.first()) {
        if o.precision == "bf16" {
            dump::<Bf16>(&gpu, p, &steps, dir)
        } else {
            dump::<F16>(&gpu, p, &steps, dir)
        }?;
    }
    Ok(true)
}

/// `--dump`: `p`'s inputs and the fastest backward step's
/// gradients into `dir`, each tensor `NAME.bin` (its elements' bits,
/// 16-bit little-endian, row-major), and `problem.txt` (`b h kv s_q s_k d
/// causal scale precision`).
fn dump<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Problem,
    steps: &[Step],
    dir: &Path,
) -> Result<()> {
    // The fastest step this device runs that has a backward at `d`.
    let name = <P::Input as kernel_lab::gemm::Input>::NAME;
    let step = [Step::Hopper, Step::Flash, Step::Unfused]
        .into_iter()
        .find(|&s| steps.contains(&s) && backward::kernel(s, name, p.d).is_ok())
        .unwrap_or(Step::Unfused);
    let forward = if steps.contains(&Step::Hopper) { Step::Hopper } else { Step::Flash };
    let t = backward::gradients::<P>(gpu, p, (forward, step))?;
    let cannot = |e: std::io::Error| Error::InvalidInput(format!("--dump {}: {e}", dir.display()));
    for (name, x) in
        [("q", &t.q), ("k", &t.k), ("v", &t.v), ("do", &t.d_o), ("dq", &t.dq), ("dk", &t.dk), ("dv", &t.dv)]
    {
        let bytes: Vec<u8> =
            x.iter().flat_map(|e| (gpu::dev::Element::bits(*e) as u16).to_le_bytes()).collect();
        std::fs::write(dir.join(format!("{name}.bin")), bytes).map_err(cannot)?;
    }
    let line = format!(
        "{} {} {} {} {} {} {} {} {} {}\n",
        p.batch,
        p.heads,
        p.kv_heads,
        p.s_q,
        p.s_k,
        p.d,
        u8::from(p.causal),
        p.scale,
        <P::Input as kernel_lab::gemm::Input>::NAME,
        step.name()
    );
    std::fs::write(dir.join("problem.txt"), line).map_err(cannot)?;
    println!("wrote {}: {p}, the {} backward's gradients", dir.display(), step.name());
    Ok(())
}

/// The problems (with the device's defaults) and steps, each problem
/// within what this device can take: on the emulator its budget; the
/// device's memory on a GPU; the host's memory everywhere.
fn fitting(o: &Options, gpu: &Gpu) -> Result<(Vec<Problem>, Vec<Step>)> {
    let (problems, steps) = problems(o, gpu.is_emulator())?;
    for p in &problems {
        let mut host = p.host_bytes() + if o.backward { backward::host_bytes(p) } else { 0 };
        if gpu.is_emulator() {
            let what = format!("attention {p}");
            // The backward's five products beside the forward's two.
            let products = if o.backward { 7 } else { 2 };
            within_budget(
                &what,
                p.multiply_adds().saturating_mul(products) / 2,
                attention::EMULATOR_MULTIPLY_ADDS,
                "multiply-adds",
                "25 s",
            )?;
            // The emulator's device buffers are on the host.
            host += p.device_bytes() + if o.backward { backward::device_bytes(p) } else { 0 };
        } else {
            // Each problem's buffers, the baseline's S and P included.
            let backward = if o.backward { backward::device_bytes(p) } else { 0 };
            gpu.check_fits(p.device_bytes() + backward)
                .map_err(|e| Error::InvalidInput(format!("attention {p}: {e}")))?;
        }
        runtime::check_host_fits(host).map_err(|e| Error::InvalidInput(format!("attention {p}: {e}")))?;
    }
    o.output.check(gpu)?;
    if let Some(dir) = &o.dump {
        kernel_lab::files::check_folder_destination("--dump", dir)?;
    }
    Ok((problems, steps))
}
