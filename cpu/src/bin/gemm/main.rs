//! `cargo run --release --bin gemm -- --precision bf16 --shape 4095x4095x4095 --layout col --op-a t
//! --alpha 0.5 --beta 1 --out bf16`: the tensor-core GEMM library call
//! (`kernel_lab::gemm`) verified against the `f64` reference, then timed
//! against cuBLAS on the same call in the same process:
//! `cublasGemmStridedBatchedEx`, or `cublasLtMatmul` for FP8 and for
//! epilogues, both in batches of back-to-back calls where a call is short
//! (`bench::time_batched`), taking turns in three rounds. `--sweep` runs
//! the public sweep
//! (`bench/gemm-sweep.txt`); `--groups G` the grouped GEMM of a mixture of
//! experts (`grouped.rs`), `--block-scaled` block-scaled FP8
//! (`blockscaled.rs`).
//! Without `--shape`, one square (4096^3 on a GPU, 512x384x256 on the
//! emulator). Without a GPU it verifies on the emulator, each call within
//! its budget (`gemm::EMULATOR_MULTIPLY_ADDS`, `gemm::EMULATOR_ELEMENTS`).

use std::process::ExitCode;

use clap::Parser;
use half::{bf16, f16};
use kernel_lab::blas::gemm::parse_shape;
use kernel_lab::blas::{Gemm, Layout, Op, Operand};
use kernel_lab::cli::{Output, within_budget};
use kernel_lab::gemm::random;
use kernel_lab::gemm::reference::Inputs;
use kernel_lab::gemm::verify::verify;
use kernel_lab::gemm::{
    Act, Bf16, Call, E4m3, E5m2, EMULATOR_ELEMENTS, EMULATOR_MULTIPLY_ADDS, Element, F16, F32, Plan,
    Precision, TensorGemm, Tf32, TileShape,
};
use kernel_lab::measure::bench::{self, Runs};
use kernel_lab::peers::Cublas;
use kernel_lab::peers::lt::{Lt, Prepared};
use kernel_lab::runtime::{self, DeviceBuffer, Error, Gpu, Result};

mod blockscaled;
mod grouped;

/// Verify and time the tensor-core GEMM call against cuBLAS.
#[derive(Parser, Debug)]
#[command(name = "gemm", version)]
struct Options {
    /// What A and B hold and the products are formed in: f32 (FFMA), tf32,
    /// bf16, f16, e4m3 or e5m2 (FP8).
    #[arg(long, default_value = "bf16")]
    precision: String,
    /// D's element type: f32, bf16 or f16 (FP8 inputs too: there is no FP8
    /// output).
    #[arg(long, default_value = "f32")]
    out: String,
    /// Problems `MxNxK`, comma-separated: D is m x n, op(A) m x k
    /// (default: 4096x4096x4096 on a GPU, 512x384x256 on the emulator).
    #[arg(long, value_delimiter = ',')]
    shape: Vec<String>,
    /// Every shape of the public sweep (bench/gemm-sweep.txt), in the
    /// precision's native layout (row-major; tf32 and FP8 with op(B) = T).
    #[arg(long)]
    sweep: bool,
    /// N shapes drawn from the ranges users run (`gemm::random`: log-uniform
    /// on 1..16384, shares aligned, odd, skinny and decode), in the
    /// precision's native layout, as for --sweep (a GPU only).
    #[arg(long, value_name = "N")]
    random: Option<usize>,
    /// The seed of --random's draw (default: a fresh one, printed;
    /// the benchmarks keep seed 1), or of --skew's (default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// A grouped GEMM of G experts (a mixture of experts' layer, one
    /// launch): --shape MxNxK gives each expert's rows on average, and the
    /// weights' n and k. bf16, f16 or e4m3.
    #[arg(long, value_name = "G")]
    groups: Option<usize>,
    /// With --groups: rows shared out by counts, M rows of capacity a group
    /// (the masked layout), rather than by offsets (contiguous).
    #[arg(long, requires = "groups")]
    masked: bool,
    /// With --groups: uneven rows, each expert's share e^(S x), x uniform
    /// in [-1, 1) (0: even).
    #[arg(long, default_value_t = 0.0, requires = "groups")]
    skew: f64,
    /// Block-scaled FP8 (--precision e4m3): a scale per 1 x 128 of A and
    /// per 128 x 128 of B, applied in the main loop (DeepSeek-V3's recipe),
    /// timed against the per-tensor-scaled FP8 of cuBLASLt and ours (with
    /// --groups: grouped, against our per-tensor grouped FP8).
    #[arg(long)]
    block_scaled: bool,
    /// Storage of A, B, C: row or col.
    #[arg(long, default_value = "row")]
    layout: String,
    /// op(A): n or t.
    #[arg(long, default_value = "n")]
    op_a: String,
    /// op(B): n or t.
    #[arg(long, default_value = "n")]
    op_b: String,
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    alpha: f32,
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    beta: f32,
    /// Leading dimensions (default: the least BLAS allows).
    #[arg(long)]
    lda: Option<usize>,
    #[arg(long)]
    ldb: Option<usize>,
    #[arg(long)]
    ldc: Option<usize>,
    /// Matrices in a strided batch (packed one after another).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// FP8 per-tensor scale factors of A and B.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    scale_a: f32,
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    scale_b: f32,
    /// Add a bias, one value per row of D (with --groups: n values per expert, added to each of its rows; the cuBLAS loop it is timed against adds none).
    #[arg(long)]
    bias: bool,
    /// The activation after the bias: none, relu or gelu.
    #[arg(long, default_value = "none")]
    act: String,
    /// Force k-splits instead of the dispatcher's plan (with --tile, or
    /// 128 x 256 tiles).
    #[arg(long)]
    splits: Option<usize>,
    /// Force the tiles instead of the dispatcher's plan: 128x256 (or
    /// 256), 128x192 (or 192), 128x128 (or 128) or 64x128 (with
    /// --splits, or one split).
    #[arg(long)]
    tile: Option<String>,
    /// The least elements of B at which rows on 16 bytes but not on 32
    /// are copied into a padded workspace rather than read in place (and
    /// of D at which rows off 16 bytes are written through one;
    /// `TensorGemm::pad_from`, 0 pads every such matrix).
    #[arg(long)]
    pad_from: Option<usize>,
    /// Launch the product kernel after the kernel ahead of it has
    /// finished, rather than overlapping that kernel's end (a dependent
    /// launch, `Gpu::set_dependent_launches`): for A/B timing.
    #[arg(long)]
    serial_launches: bool,
    /// Timed runs (median reported) after the warm-up.
    #[arg(long, default_value_t = 30)]
    iters: usize,
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[command(flatten)]
    output: Output,
}

/// The shape run when none is given: a GPU's, and the emulator's (a
/// second or so).
const DEFAULT_SHAPE: [(usize, usize, usize); 2] = [(4096, 4096, 4096), (512, 384, 256)];

/// One row of the results.
struct Row {
    call: Call,
    ours_ms: Option<f64>,
    peer_ms: Option<f64>,
    /// cuBLAS or cuBLASLt.
    peer: &'static str,
    ratio: f64,
    route: String,
    /// The k-splits that ran.
    splits: usize,
    /// Decode calls: the weight's bytes (the larger operand, read once),
    /// and a device-to-device copy of them timed in the same rounds.
    weight: Option<(usize, Option<f64>)>,
}

fn parse_op(what: &str, s: &str) -> Result<Op> {
    match s {
        "n" | "N" => Ok(Op::N),
        "t" | "T" => Ok(Op::T),
        _ => Err(Error::InvalidInput(format!("--{what} is n or t, not '{s}'"))),
    }
}

/// The shapes the options ask for: `--shape`'s, or the sweep's (none
/// when neither is given).
fn shapes(o: &Options) -> Result<Vec<(usize, usize, usize)>> {
    let bad = |m: String| Error::InvalidInput(m);
    let mut shapes = Vec::new();
    for s in &o.shape {
        shapes.push(parse_shape(s).map_err(bad)?);
    }
    if o.sweep {
        if !o.shape.is_empty() || o.random.is_some() {
            return Err(bad("--sweep runs its own shapes; drop --shape and --random".into()));
        }
        shapes.extend(kernel_lab::gemm::sweep::shapes().into_iter().map(|(_, shape)| shape));
    }
    if let Some(count) = o.random {
        if !o.shape.is_empty() {
            return Err(bad("--random draws its own shapes; drop --shape".into()));
        }
        if count == 0 {
            return Err(bad("--random must be at least 1".into()));
        }
        shapes.extend(random::shapes(count, seed(o)).into_iter().map(|(_, shape)| shape));
    }
    Ok(shapes)
}

/// --random's seed: the one given, or one fresh for this process.
fn seed(o: &Options) -> u64 {
    static FRESH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    o.seed.unwrap_or_else(|| *FRESH.get_or_init(random::fresh_seed))
}

/// Every call the options ask for at `shapes`, checked, before anything
/// runs.
fn calls(o: &Options, shapes: &[(usize, usize, usize)]) -> Result<Vec<Call>> {
    let bad = |m: String| Error::InvalidInput(m);
    let layout = match o.layout.as_str() {
        "row" => Layout::Row,
        "col" => Layout::Col,
        other => return Err(bad(format!("--layout is row or col, not '{other}'"))),
    };
    let (mut op_a, mut op_b) = (parse_op("op-a", &o.op_a)?, parse_op("op-b", &o.op_b)?);
    let act: Act = o.act.parse().map_err(bad)?;
    if o.sweep || o.random.is_some() {
        let k_major_b = ["tf32", "e4m3", "e5m2"].contains(&o.precision.as_str());
        (op_a, op_b) = (Op::N, if k_major_b { Op::T } else { Op::N });
    }
    let fp8 = ["e4m3", "e5m2"].contains(&o.precision.as_str());
    if !fp8 && (o.scale_a, o.scale_b) != (1.0, 1.0) {
        return Err(bad(format!(
            "--scale-a and --scale-b are for FP8 inputs (e4m3, e5m2), not {}",
            o.precision
        )));
    }
    if let Some(t) = o.tile.as_deref().filter(|t| TileShape::parse(t).is_none()) {
        let names: Vec<String> = TileShape::ALL.iter().map(|t| t.name()).collect();
        return Err(bad(format!("--tile must be one of {}, not {t}", names.join(", "))));
    }
    if o.splits == Some(0) {
        return Err(bad("--splits must be at least 1".into()));
    }
    if o.batch == 0 {
        return Err(bad("--batch must be at least 1".into()));
    }
    for (name, x) in [("alpha", o.alpha), ("beta", o.beta), ("scale-a", o.scale_a), ("scale-b", o.scale_b)] {
        if !x.is_finite() {
            return Err(bad(format!("--{name} must be a finite number, not {x}")));
        }
    }
    let mut calls = Vec::new();
    for &(m, n, k) in shapes {
        let mut g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(o.alpha, o.beta);
        g.lda = o.lda.unwrap_or(g.lda);
        g.ldb = o.ldb.unwrap_or(g.ldb);
        g.ldc = o.ldc.unwrap_or(g.ldc);
        let call = Call::new(g).packed(o.batch).with_epilogue(o.bias, act).with_scales(o.scale_a, o.scale_b);
        let sizes = |x: Operand| call.elements(x);
        call.check(sizes(Operand::A), sizes(Operand::B), sizes(Operand::C), if o.bias { m } else { 0 })?;
        calls.push(call);
    }
    Ok(calls)
}

/// Rounds of ours then the peer's timing per call.
const ROUNDS: usize = 3;

/// The peer's call, ready to run: a cuBLASLt matmul prepared for it, or
/// cuBLAS.
enum Peer {
    Lt(Box<Prepared>),
    Cublas(Cublas),
}

impl Peer {
    fn run<P: Precision, O: Element>(
        &self,
        call: &Call,
        a: &DeviceBuffer<P::Input>,
        b: &DeviceBuffer<P::Input>,
        c: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        match self {
            Peer::Lt(p) => p.run(a, b, c),
            Peer::Cublas(cublas) => cublas.gemm::<P, O>(call, a, b, c),
        }
    }
}

/// Verifies then (on a GPU) times `call` against cuBLAS.
fn one<P: Precision, O: Element>(gpu: &Gpu, lib: &TensorGemm, call: &Call, runs: Runs) -> Result<Row> {
    let r = call.gemm.row_major();
    // On a GPU the reference checks up to 128 rows of each matrix (the
    // whole output buffer is still checked for stray writes).
    let rows: Option<Vec<usize>> =
        (!gpu.is_emulator() && r.m > 128).then(|| (0..128).map(|i| i * (call.gemm.m - 1) / 127).collect());
    let verified = verify::<P, O>(gpu, lib, call, 0x6e4d, rows.as_deref())?
        .map_err(|why| Error::Mismatch(format!("{call}: {why}")))?;
    let route = format!(
        "{}{}{}{}splits {}{}{}",
        if verified.route.decode { "decode, " } else { "" },
        if verified.route.pack_a { "pack A, " } else { "" },
        if verified.route.pack_b { "pack B, " } else { "" },
        match verified.route.tile {
            _ if verified.route.decode => String::new(),
            TileShape::Wide => String::new(),
            tile => format!("{} tiles, ", tile.name()),
        },
        verified.route.splits,
        if verified.route.fused { ", fused epilogue" } else { ", epilogue pass" },
        if verified.route.pad_d { ", padded D" } else { "" }
    );
    if gpu.is_emulator() {
        return Ok(Row {
            call: *call,
            ours_ms: None,
            peer_ms: None,
            peer: "-",
            ratio: verified.ratio,
            route,
            splits: verified.route.splits,
            weight: None,
        });
    }
    let x = Inputs::<P, O>::random(call, 0x7a1e);
    let (a, b) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?);
    let mut c = gpu.upload(&x.c)?;
    let bias = x.bias.as_ref().map(|v| gpu.upload(v)).transpose()?;
    // cublasGemmEx for plain calls; cublasLtMatmul for FP8 and epilogues.
    // Either refuses some calls (f16 in, bf16 out; a row-major bias; FP8
    // with k not a multiple of 16): no peer then, said on stderr.
    let lt_peer = P::SCALED || call.has_epilogue();
    // (The handle outlives the matmul prepared on it.)
    let lt = if lt_peer { Some(Lt::new(gpu)?) } else { None };
    let ready = match &lt {
        Some(lt) => lt.prepare::<P, O>(gpu, call, &c, bias.as_ref()).map(|p| Peer::Lt(Box::new(p))),
        None => Ok(Peer::Cublas(Cublas::new(gpu)?)),
    };
    let peer_call = match ready.and_then(|p| p.run::<P, O>(call, &a, &b, &mut c).map(|()| p)) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("no peer for {call}: {e}");
            None
        }
    };
    // Ours and the peer take turns, ROUNDS times, each figure the median of
    // its rounds' medians: the machine's slow spells (milliseconds long,
    // `docs/notes.md`) then weigh on both sides alike.
    // (One round without a warm-up: a profiler's single launch.)
    let rounds = if runs.warmup == 0 { 1 } else { ROUNDS };
    let runs = Runs { timed: runs.timed.div_ceil(rounds), ..runs };
    // A decode call reads its weight once: a copy of it, timed in the same
    // rounds, is the rate to reach.
    let weight = if a.len() >= b.len() { &a } else { &b };
    let mut copy_to = if verified.route.decode { Some(gpu.alloc::<P::Input>(weight.len())?) } else { None };
    let (mut ours, mut peer, mut copy) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let run_ours = || lib.run::<P, O>(gpu, call, &a, &b, &mut c, bias.as_ref()).map(|_| ());
        ours.push(bench::time_batched(gpu, runs, run_ours)?.median_ms);
        if let Some(p) = &peer_call {
            peer.push(bench::time_batched(gpu, runs, || p.run::<P, O>(call, &a, &b, &mut c))?.median_ms);
        }
        if let Some(to) = copy_to.as_mut() {
            copy.push(bench::time_batched(gpu, runs, || gpu.copy(weight, to))?.median_ms);
        }
    }
    let peer = (!peer.is_empty()).then(|| bench::median(&peer));
    let weight = verified
        .route
        .decode
        .then(|| (weight.len() * size_of::<P::Input>(), (!copy.is_empty()).then(|| bench::median(&copy))));
    Ok(Row {
        call: *call,
        ours_ms: Some(bench::median(&ours)),
        peer_ms: peer,
        peer: if lt_peer { "cuBLASLt" } else { "cuBLAS" },
        ratio: verified.ratio,
        route,
        splits: verified.route.splits,
        weight,
    })
}

fn run_all<P: Precision, O: Element>(gpu: &Gpu, o: &Options, calls: &[Call]) -> Result<Vec<Row>> {
    let mut lib = match (o.splits, o.tile.as_deref()) {
        (None, None) => TensorGemm::new(),
        (splits, tile) => TensorGemm::forcing(Plan {
            splits: splits.unwrap_or(1),
            tile: tile.and_then(TileShape::parse).unwrap_or_default(),
        }),
    };
    lib.pad_from = o.pad_from;
    // Each call's buffers and workspaces must fit the device.
    for call in calls {
        let splits = lib.plan::<P>(gpu, call).splits;
        gpu.check_fits(call.device_bytes(size_of::<P::Input>(), size_of::<O>(), splits))
            .map_err(|e| Error::InvalidInput(format!("gemm {call}: {e}")))?;
    }
    let runs = Runs { warmup: o.warmup, timed: o.iters.max(1) };
    let bar = o.output.progress(calls.len());
    let mut rows = Vec::new();
    for call in calls {
        bar.suspend(|| eprintln!("gemm {} -> {}: {call}", P::NAME, O::NAME));
        bar.set_message(call.to_string());
        let row = one::<P, O>(gpu, &lib, call, runs)?;
        if let Some(asked) = o.splits.filter(|&s| row.splits > 0 && s != row.splits) {
            bar.suspend(|| {
                eprintln!(
                    "note: --splits {asked} ran as {} (k = {} is {} steps of {}, dealt evenly)",
                    row.splits,
                    call.gemm.k,
                    call.gemm.k.div_ceil(P::BK),
                    P::BK
                )
            });
        }
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

fn by_output<P: Precision>(gpu: &Gpu, o: &Options, calls: &[Call]) -> Result<Vec<Row>> {
    match o.out.as_str() {
        "f32" => run_all::<P, f32>(gpu, o, calls),
        "bf16" => run_all::<P, bf16>(gpu, o, calls),
        "f16" => run_all::<P, f16>(gpu, o, calls),
        _ => unreachable!("checked in main"),
    }
}

fn main() -> ExitCode {
    let o: Options = kernel_lab::cli::parse();
    kernel_lab::cli::main_with(|| run(&o))
}

/// The options checked, the calls verified and timed, the table printed:
/// `Ok(true)`, or the first error (a failed verification is exit 1).
fn run(o: &Options) -> Result<bool> {
    // The options alone, checked before the device is opened.
    match o.precision.as_str() {
        "f32" | "tf32" | "bf16" | "f16" | "e4m3" | "e5m2" => {}
        other => {
            return Err(Error::InvalidInput(format!(
                "unknown --precision '{other}'; accepted: f32, tf32, bf16, f16, e4m3, e5m2"
            )));
        }
    }
    if ["e4m3", "e5m2"].contains(&o.out.as_str()) {
        return Err(Error::InvalidInput(format!(
            "--out {}: D is f32, bf16 or f16 (FP8 inputs accumulate in f32; there is no FP8 output)",
            o.out
        )));
    }
    if !["f32", "bf16", "f16"].contains(&o.out.as_str()) {
        return Err(Error::InvalidInput(format!("--out is f32, bf16 or f16, not '{}'", o.out)));
    }
    if o.seed.is_some() && o.random.is_none() && o.groups.is_none() {
        return Err(Error::InvalidInput("--seed is the seed of --random's or --skew's draw".into()));
    }
    if (o.groups.is_some() || o.block_scaled) && (o.sweep || o.random.is_some()) {
        return Err(Error::InvalidInput(
            "--groups and --block-scaled run their --shape; drop --sweep and --random".into(),
        ));
    }
    if let Some(groups) = o.groups {
        return grouped::run(o, groups);
    }
    if o.block_scaled {
        return blockscaled::run(o);
    }
    let given = shapes(o)?;
    calls(o, &given)?;
    let gpu_only = if o.sweep {
        Some("--sweep times the public sweep's full-size shapes")
    } else {
        o.random.map(|_| "--random times its full-size shapes")
    };
    let (gpu, no_gpu) = kernel_lab::cli::open(o.device, gpu_only)?;
    if o.random.is_some() {
        println!("random shapes: {} from seed {}", o.random.unwrap_or(0), seed(o));
    }
    // What this device can take, checked before any work.
    let calls = fitting(o, &gpu, given)?;
    announce(o, &gpu, no_gpu);
    let rows = match o.precision.as_str() {
        "f32" => by_output::<F32>(&gpu, o, &calls),
        "tf32" => by_output::<Tf32>(&gpu, o, &calls),
        "bf16" => by_output::<Bf16>(&gpu, o, &calls),
        "f16" => by_output::<F16>(&gpu, o, &calls),
        "e4m3" => by_output::<E4m3>(&gpu, o, &calls),
        _ => by_output::<E5m2>(&gpu, o, &calls),
    }?;
    println!(
        "| precision | out | call | worst error / bound | ours ms | ours TFLOP/s | peer | peer TFLOP/s | ratio | route |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let tflops = |ms: f64| r.call.flops() / (ms * 1e-3) / 1e12;
        let ratio = r.ratio().map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
        println!(
            "| {} | {} | {} | {:.3} | {} | {} | {} | {} | {ratio} | {} |",
            o.precision,
            o.out,
            r.call,
            r.ratio,
            r.ours_ms.map_or("-".into(), |ms| format!("{ms:.4}")),
            r.ours_ms.map_or("-".into(), |ms| format!("{:.1}", tflops(ms))),
            r.peer,
            r.peer_ms.map_or("-".into(), |ms| format!("{:.1}", tflops(ms))),
            r.route
        );
    }
    if let Some(summary) = summary(&rows) {
        println!("{summary}");
    }
    print_bandwidth(&rows);
    let json: Vec<JsonRow> = rows.iter().map(|r| JsonRow::of(o, r)).collect();
    o.output.write(&gpu, "gemm", &json)?;
    Ok(true)
}

impl Row {
    /// The peer's time over ours, where both ran.
    fn ratio(&self) -> Option<f64> {
        self.ours_ms.zip(self.peer_ms).map(|(ours, peer)| peer / ours)
    }
}

/// The run judged: the geomean of ours against the peer, the lowest call,
/// and the lowest among the calls where the peer reaches half its best
/// rate of the run (where it too is slow, a shape is hard for both).
/// The decode calls' rate of reading their weight, against a copy of the
/// same bytes in the same rounds (its bytes read and written over its
/// time, as `bench::copy_ceiling` counts them).
fn print_bandwidth(rows: &[Row]) {
    let timed: Vec<_> = rows
        .iter()
        .filter_map(|r| match (r.weight, r.ours_ms) {
            (Some((bytes, Some(copy_ms))), Some(ms)) => Some((r, bytes, ms, copy_ms)),
            _ => None,
        })
        .collect();
    if timed.is_empty() {
        return;
    }
    println!();
    println!("| call | weight MB | ours GB/s | copy GB/s | ours / copy |");
    println!("| --- | --- | --- | --- | --- |");
    for (r, bytes, ms, copy_ms) in timed {
        let (ours, copy) = (bytes as f64 / ms / 1e6, 2.0 * bytes as f64 / copy_ms / 1e6);
        println!(
            "| {} | {:.1} | {ours:.0} | {copy:.0} | {:.1}% |",
            r.call,
            bytes as f64 / 1e6,
            100.0 * ours / copy
        );
    }
}

fn summary(rows: &[Row]) -> Option<String> {
    let timed: Vec<(&Row, f64)> = rows.iter().filter_map(|r| r.ratio().map(|x| (r, x))).collect();
    let geomean = (timed.iter().map(|(_, x)| x.ln()).sum::<f64>() / timed.len() as f64).exp();
    let rate = |r: &Row| r.peer_ms.map_or(0.0, |ms| r.call.flops() / ms);
    let best = timed.iter().map(|(r, _)| rate(r)).fold(0.0, f64::max);
    let lowest = |among: &mut dyn Iterator<Item = &(&Row, f64)>| {
        among.min_by(|a, b| a.1.total_cmp(&b.1)).map(|(r, x)| format!("{:.1}% ({})", 100.0 * x, r.call))
    };
    let fast = lowest(&mut timed.iter().filter(|(r, _)| rate(r) >= best / 2.0));
    Some(format!(
        "geomean of ours against the peer over {} calls: {:.1}%; lowest {}; lowest where the peer reaches half its best rate: {}",
        timed.len(),
        100.0 * geomean,
        lowest(&mut timed.iter())?,
        fast.unwrap_or_else(|| "-".into())
    ))
}

/// The calls at `given` shapes (or the device's default), each within
/// what this device can take: on the emulator its budget; the host's
/// memory everywhere.
fn fitting(o: &Options, gpu: &Gpu, given: Vec<(usize, usize, usize)>) -> Result<Vec<Call>> {
    let shapes = if given.is_empty() {
        let (m, n, k) = DEFAULT_SHAPE[usize::from(gpu.is_emulator())];
        eprintln!("no --shape given: {m}x{n}x{k}");
        vec![(m, n, k)]
    } else {
        given
    };
    let calls = calls(o, &shapes)?;
    for call in &calls {
        let mut host = call.host_bytes();
        if gpu.is_emulator() {
            let what = format!("gemm {call}");
            within_budget(
                &what,
                call.multiply_adds(),
                EMULATOR_MULTIPLY_ADDS,
                "multiply-adds",
                "20 to 45 s",
            )?;
            within_budget(&what, call.all_elements(), EMULATOR_ELEMENTS, "elements of A, B and C", "2 GiB")?;
            // The emulator's buffers and their shadows, on the host too.
            host = host.saturating_add(call.all_elements().saturating_mul(256));
        }
        runtime::check_host_fits(host).map_err(|e| Error::InvalidInput(format!("gemm {call}: {e}")))?;
    }
    o.output.check(gpu)?;
    Ok(calls)
}

/// A row as `--json` writes it.
#[derive(serde::Serialize)]
struct JsonRow {
    precision: String,
    out: String,
    call: String,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    /// The worst element's error over its bound.
    worst_error_over_bound: f64,
    ours_ms: Option<f64>,
    peer: &'static str,
    peer_ms: Option<f64>,
    /// The peer's time over ours.
    ratio: Option<f64>,
    route: String,
}

impl JsonRow {
    fn of(o: &Options, r: &Row) -> JsonRow {
        let g = &r.call.gemm;
        JsonRow {
            precision: o.precision.clone(),
            out: o.out.clone(),
            call: r.call.to_string(),
            m: g.m,
            n: g.n,
            k: g.k,
            batch: r.call.batch,
            worst_error_over_bound: r.ratio,
            ours_ms: r.ours_ms,
            peer: r.peer,
            peer_ms: r.peer_ms,
            ratio: r.ratio(),
            route: r.route.clone(),
        }
    }
}

/// Before any work: a call of `adds` multiply-adds over `elements`
/// elements of its operands and D within the emulator's budget (on the
/// emulator), and `host` and `device` bytes within what this machine and
/// the device have free; a bad-input error naming `what` otherwise.
fn fits(
    gpu: &Gpu,
    what: &str,
    (adds, elements): (usize, usize),
    (host, device): (usize, usize),
) -> Result<()> {
    if gpu.is_emulator() {
        within_budget(what, adds, EMULATOR_MULTIPLY_ADDS, "multiply-adds", "20 to 45 s")?;
        within_budget(what, elements, EMULATOR_ELEMENTS, "elements of the operands and D", "2 GiB")?;
    }
    runtime::check_host_fits(host).map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
    gpu.check_fits(device).map_err(|e| Error::InvalidInput(format!("{what}: {e}")))
}

/// What a run prints before its table: on a GPU the device and the git
/// revision (the report shows it beside the date), without one why the
/// emulator runs; and the dependent launches as the options ask.
fn announce(o: &Options, gpu: &Gpu, no_gpu: Option<String>) {
    if let Some(line) = no_gpu {
        eprintln!("{line}");
    }
    gpu.set_dependent_launches(!o.serial_launches);
    if !gpu.is_emulator() {
        println!("{}", kernel_lab::cli::device_line(gpu));
        println!("git {}", kernel_lab::cli::git_revision());
    }
}
