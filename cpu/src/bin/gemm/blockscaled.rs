//! `gemm --block-scaled --shape MxNxK`: block-scaled FP8
//! (`kernel_lab::gemm::blockscaled`, E4M3 with scales per 1 x 128 of A and
//! per 128 x 128 of B) verified against the `f64` reference, then timed
//! in the same process against cuBLASLt's block-scaled FP8 (its
//! `VEC128_32F` and `BLK128x128_32F` modes, whose result is checked
//! against the same reference), and against what it replaces: cuBLASLt's
//! FP8 matmul and our own FP8 kernel, both with one scale per tensor, on
//! the same E4M3 operands.

use half::{bf16, f16};
use kernel_lab::blas::{Gemm, Layout, Op};
use kernel_lab::gemm::blockscaled::{self, BlockScaled, BlockScaledGemm, Inputs, Operands};
use kernel_lab::gemm::{Act, Call, E4m3, Element, TensorGemm};
use kernel_lab::measure::bench::{self, Runs};
use kernel_lab::peers::lt::Lt;
use kernel_lab::runtime::{Error, Gpu, Result};

use super::Options;

/// One call's results: the worst error over its bound (ours, cuBLASLt's
/// block-scaled), then ours, the per-tensor kernel's, cuBLASLt's
/// per-tensor and cuBLASLt's block-scaled times.
struct Row {
    call: BlockScaled,
    worst: f64,
    peer_worst: Option<f64>,
    ms: [Option<f64>; 4],
}

fn calls(o: &Options) -> Result<Vec<BlockScaled>> {
    let bad = |m: String| Error::InvalidInput(m);
    let act: Act = o.act.parse().map_err(bad)?;
    if o.precision != "e4m3" {
        return Err(bad(format!("--block-scaled is FP8 E4M3 (--precision e4m3), not {}", o.precision)));
    }
    if o.beta != 0.0 || o.bias || o.batch != 1 || o.splits.is_some() || o.tile.is_some() {
        return Err(bad(
            "--block-scaled takes alpha and --act; not --beta, --bias, --batch, --splits or --tile".into(),
        ));
    }
    if (o.scale_a, o.scale_b) != (1.0, 1.0) {
        return Err(bad(
            "--block-scaled draws its own scales, one per block; drop --scale-a and --scale-b".into()
        ));
    }
    let mut calls = Vec::new();
    for (m, n, k) in super::shapes(o)? {
        let call = BlockScaled::new(m, n, k).with_alpha(o.alpha).with_act(act);
        call.check(call.elements())?;
        calls.push(call);
    }
    if calls.is_empty() {
        return Err(bad("--block-scaled needs --shape MxNxK".into()));
    }
    Ok(calls)
}

fn one<O: Element>(gpu: &Gpu, o: &Options, call: &BlockScaled) -> Result<Row> {
    let lib = BlockScaledGemm::new();
    // On a GPU the reference checks 128 rows spread over D.
    let sample = (!gpu.is_emulator()).then_some(128);
    let worst = blockscaled::verify::<O>(gpu, &lib, call, 0x6e4d, sample)?
        .map_err(|why| Error::Mismatch(format!("{call}: {why}")))?;
    let mut row = Row { call: *call, worst, peer_worst: None, ms: [None; 4] };
    if gpu.is_emulator() {
        return Ok(row);
    }
    let x = Inputs::random(call, 0x7a1e);
    let (a, b) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?);
    let (scale_a, scale_b) = (gpu.upload(&x.scale_a)?, gpu.upload(&x.scale_b)?);
    let mut d = gpu.alloc::<O>(call.elements()[4])?;
    let operands = Operands { a: &a, b: &b, scale_a: &scale_a, scale_b: &scale_b };
    // The per-tensor call on the same operands: A m x k, B n x k (op T).
    let dense = Call::new(Gemm::new(Layout::Row, Op::N, Op::T, call.m, call.n, call.k));
    let tensor = TensorGemm::new();
    let lt = Lt::new(gpu)?;
    let peer = lt.prepare::<E4m3, O>(gpu, &dense, &d, None).and_then(|p| p.run(&a, &b, &mut d).map(|()| p));
    if let Err(e) = &peer {
        eprintln!("no cuBLASLt peer for {call}: {e}");
    }
    // cuBLASLt's block-scaled call, its D checked as ours is.
    let mut scaled = dense.with_epilogue(false, call.act);
    scaled.gemm.alpha = call.alpha;
    // A peer whose D is wrong is reported and left untimed; our rows stand.
    let blocks = lt
        .prepare_block_scaled::<O>(gpu, &scaled, &d, (&x.scale_a, &x.scale_b))
        .and_then(|p| p.run(&a, &b, &mut d).map(|()| p))
        .and_then(|p| {
            let got = gpu.download(&d)?;
            let checked = blockscaled::check::<O>(call, &x, &got, sample);
            row.peer_worst = Some(checked.map_err(|why| Error::Mismatch(format!("its D: {why}")))?);
            Ok(p)
        });
    if let Err(e) = &blocks {
        eprintln!("no cuBLASLt block-scaled peer for {call}: {e}");
    }
    let runs = Runs { warmup: o.warmup, timed: o.iters.max(1).div_ceil(super::ROUNDS) };
    let mut times: [Vec<f64>; 4] = Default::default();
    for _ in 0..super::ROUNDS {
        times[0]
            .push(bench::time_batched(gpu, runs, || lib.run::<O>(gpu, call, &operands, &mut d))?.median_ms);
        let per_tensor = || tensor.run::<E4m3, O>(gpu, &dense, &a, &b, &mut d, None).map(|_| ());
        times[1].push(bench::time_batched(gpu, runs, per_tensor)?.median_ms);
        if let Ok(p) = &peer {
            times[2].push(bench::time_batched(gpu, runs, || p.run(&a, &b, &mut d))?.median_ms);
        }
        if let Ok(p) = &blocks {
            times[3].push(bench::time_batched(gpu, runs, || p.run(&a, &b, &mut d))?.median_ms);
        }
    }
    for (slot, t) in row.ms.iter_mut().zip(&times) {
        *slot = (!t.is_empty()).then(|| bench::median(t));
    }
    Ok(row)
}

/// A row as `--json` writes it.
#[derive(serde::Serialize)]
struct JsonRow {
    call: String,
    out: String,
    m: usize,
    n: usize,
    k: usize,
    worst_error_over_bound: f64,
    cublaslt_worst_error_over_bound: Option<f64>,
    ours_ms: Option<f64>,
    per_tensor_ms: Option<f64>,
    cublaslt_per_tensor_ms: Option<f64>,
    cublaslt_block_scaled_ms: Option<f64>,
}

fn run_all<O: Element>(gpu: &Gpu, o: &Options, calls: &[BlockScaled]) -> Result<Vec<Row>> {
    let bar = o.output.progress(calls.len());
    let mut rows = Vec::new();
    for call in calls {
        bar.suspend(|| eprintln!("block-scaled gemm -> {}: {call}", O::NAME));
        rows.push(one::<O>(gpu, o, call)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// `gemm --block-scaled`: the calls checked, verified and timed, the
/// table printed.
pub fn run(o: &Options) -> Result<bool> {
    let calls = calls(o)?;
    let (gpu, no_gpu) = kernel_lab::cli::open(o.device, None)?;
    for call in &calls {
        let [a, b, _, _, d] = call.elements();
        let adds = call.m.saturating_mul(call.n).saturating_mul(call.k);
        let host = a.saturating_add(b).saturating_mul(8).saturating_add(d.saturating_mul(12));
        // A and B (a byte an element) and their scales, D (at most 4 bytes).
        let device =
            a.saturating_add(b).saturating_add(a.saturating_add(b) / 32).saturating_add(d.saturating_mul(4));
        let all = a.saturating_add(b).saturating_add(d);
        super::fits(&gpu, &format!("block-scaled gemm {call}"), (adds, all), (host, device))?;
    }
    o.output.check(&gpu)?;
    super::announce(o, &gpu, no_gpu);
    let rows = match o.out.as_str() {
        "f32" => run_all::<f32>(&gpu, o, &calls),
        "bf16" => run_all::<bf16>(&gpu, o, &calls),
        _ => run_all::<f16>(&gpu, o, &calls),
    }?;
    println!(
        "| call | out | worst error / bound (ours, cuBLASLt) | ours ms | ours TFLOP/s | cuBLASLt block-scaled TFLOP/s | ours / cuBLASLt block-scaled | per-tensor (ours) TFLOP/s | cuBLASLt per-tensor TFLOP/s |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let tflops = |ms: Option<f64>| {
            ms.map_or("-".into(), |ms| format!("{:.1}", r.call.flops() / (ms * 1e-3) / 1e12))
        };
        let ratio =
            r.ms[0].zip(r.ms[3]).map_or("-".into(), |(ours, lt)| format!("{:.1}%", 100.0 * lt / ours));
        println!(
            "| {} | {} | {:.3}, {} | {} | {} | {} | {ratio} | {} | {} |",
            r.call,
            o.out,
            r.worst,
            r.peer_worst.map_or("-".into(), |w| format!("{w:.3}")),
            r.ms[0].map_or("-".into(), |ms| format!("{ms:.4}")),
            tflops(r.ms[0]),
            tflops(r.ms[3]),
            tflops(r.ms[1]),
            tflops(r.ms[2]),
        );
    }
    let json: Vec<JsonRow> = rows
        .iter()
        .map(|r| JsonRow {
            call: r.call.to_string(),
            out: o.out.clone(),
            m: r.call.m,
            n: r.call.n,
            k: r.call.k,
            worst_error_over_bound: r.worst,
            cublaslt_worst_error_over_bound: r.peer_worst,
            ours_ms: r.ms[0],
            per_tensor_ms: r.ms[1],
            cublaslt_per_tensor_ms: r.ms[2],
            cublaslt_block_scaled_ms: r.ms[3],
        })
        .collect();
    o.output.write(&gpu, "gemm", &json)?;
    Ok(true)
}
