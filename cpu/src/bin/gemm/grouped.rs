//! `gemm --groups G --shape MxNxK`: the grouped GEMM of a mixture of
//! experts (`kernel_lab::gemm::grouped`), `G` experts of `M` tokens each
//! on average against `n x k` weights, verified against the `f64`
//! reference, then timed against a loop of `cublasGemmEx` calls (one an
//! expert, bf16 and f16) in the same process, taking turns in rounds.
//! `--masked` shares the rows out by counts of a capacity of `M` rows a
//! group; `--skew S` draws uneven loads (each expert's weight `e^(S x)`,
//! `x` uniform in `[-1, 1)`, `--seed` the draw), as a router's are.
//! `--block-scaled` (e4m3) runs block-scaled FP8's grouped form
//! (`kernel_lab::gemm::blockscaled`), timed against our grouped FP8 with
//! one scale per tensor on the same operands.

use half::{bf16, f16};
use kernel_lab::gemm::blockscaled::{self, BlockScaledGemm, Operands};
use kernel_lab::gemm::grouped::{self, GroupedInputs};
use kernel_lab::gemm::{Act, Bf16, E4m3, Element, F16, Grouped, GroupedGemm, GroupedPrecision};
use kernel_lab::measure::bench::{self, Runs};
use kernel_lab::peers::Cublas;
use kernel_lab::runtime::{Error, Gpu, Result};

use super::Options;

/// One grouped call's results.
struct Row {
    call: Grouped,
    /// Rows in groups, and the smallest and largest group.
    rows: (usize, usize, usize),
    flops: f64,
    worst: f64,
    ours_ms: Option<f64>,
    peer_ms: Option<f64>,
}

/// Every grouped call the options ask for, checked before anything runs.
fn calls(o: &Options, groups: usize) -> Result<Vec<Grouped>> {
    let bad = |m: String| Error::InvalidInput(m);
    let act: Act = o.act.parse().map_err(bad)?;
    if o.beta != 0.0 || o.batch != 1 || o.splits.is_some() || o.tile.is_some() {
        return Err(bad(
            "--groups takes alpha, --bias and --act; not --beta, --batch, --splits or --tile".into()
        ));
    }
    if o.layout != "row"
        || o.op_a != "n"
        || o.op_b != "n"
        || o.lda.is_some()
        || o.ldb.is_some()
        || o.ldc.is_some()
    {
        return Err(bad(
            "--groups runs its own layout (A m x k, B's stack k x n, or n x k for FP8, D m x n, all row-major)".into(),
        ));
    }
    if !(o.skew.is_finite() && (0.0..=8.0).contains(&o.skew)) {
        return Err(bad(format!("--skew is 0..=8, not {}", o.skew)));
    }
    let mut calls = Vec::new();
    for (m, n, k) in super::shapes(o)? {
        let call = if o.masked {
            Grouped::masked(groups, m, n, k)
        } else {
            Grouped::contiguous(groups, groups.saturating_mul(m), n, k)
        };
        let call = call.with_alpha(o.alpha).with_act(act).with_scales(o.scale_a, o.scale_b);
        let call = if o.bias { call.with_bias() } else { call };
        if o.block_scaled && o.precision != "e4m3" {
            return Err(bad(format!("--block-scaled is FP8 E4M3 (--precision e4m3), not {}", o.precision)));
        }
        let (a, b, d) = call.elements();
        let lens = (a, b, call.row_values(), d, call.bias_values());
        match o.precision.as_str() {
            "bf16" => call.check::<Bf16>(lens)?,
            "f16" => call.check::<F16>(lens)?,
            "e4m3" => call.check::<E4m3>(lens)?,
            other => {
                return Err(bad(format!("--groups runs bf16, f16 or e4m3, not --precision {other}")));
            }
        }
        calls.push(call);
    }
    if calls.is_empty() {
        return Err(bad("--groups needs --shape MxNxK (M: rows a group, on average)".into()));
    }
    Ok(calls)
}

/// Verifies then (on a GPU) times one call against the cuBLAS loop.
fn one<P: GroupedPrecision, O: Element>(gpu: &Gpu, o: &Options, call: &Grouped) -> Result<Row> {
    let lib = GroupedGemm::new();
    let rows = grouped::draw_rows(call, o.skew, o.seed.unwrap_or(1));
    let spans = call.spans(&rows);
    let in_groups: usize = spans.iter().map(|s| s.1).sum();
    let (least, most) = spans.iter().fold((usize::MAX, 0), |(l, m), s| (l.min(s.1), m.max(s.1)));
    // On a GPU the reference checks about 512 rows, spread over the groups
    // (every row in no group is still checked).
    let sample = (!gpu.is_emulator()).then_some((512 / call.groups).max(2));
    let x = GroupedInputs::<P, O>::random(call, 0x6e4d);
    let (a, b, r) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?, gpu.upload(&rows)?);
    let bias = if call.bias { Some(gpu.upload(&x.bias)?) } else { None };
    let mut d = gpu.upload(&x.d)?;
    lib.run::<P, O>(gpu, call, &a, &b, &r, &mut d, bias.as_ref())?;
    let got = gpu.download(&d)?;
    let worst = grouped::check::<P, O>(call, (&x.a, &x.b, &x.bias), &rows, &x.d, &got, sample)
        .map_err(|why| Error::Mismatch(format!("{call}: {why}")))?;
    drop((x, got));
    let mut row = Row {
        call: *call,
        rows: (in_groups, least, most),
        flops: call.flops(&spans),
        worst,
        ours_ms: None,
        peer_ms: None,
    };
    if gpu.is_emulator() {
        return Ok(row);
    }
    // cublasGemmEx takes no FP8: e4m3 has no in-process peer (the torch
    // script's `_scaled_grouped_mm` is its peer). The loop adds no bias.
    let cublas = if P::SCALED { None } else { Some(Cublas::new(gpu)?) };
    let runs = Runs { warmup: o.warmup, timed: o.iters.max(1).div_ceil(super::ROUNDS) };
    let (mut ours, mut peer) = (Vec::new(), Vec::new());
    for _ in 0..super::ROUNDS {
        ours.push(
            bench::time_batched(gpu, runs, || lib.run::<P, O>(gpu, call, &a, &b, &r, &mut d, bias.as_ref()))?
                .median_ms,
        );
        if let Some(c) = &cublas {
            let loop_ = || c.gemm_groups::<P, O>(&spans, (call.n, call.k), &a, &b, &mut d);
            peer.push(bench::time_batched(gpu, runs, loop_)?.median_ms);
        }
    }
    row.ours_ms = Some(bench::median(&ours));
    row.peer_ms = (!peer.is_empty()).then(|| bench::median(&peer));
    Ok(row)
}

/// The block-scaled grouped call: verified, then timed against our
/// per-tensor grouped FP8 on the same E4M3 operands (the peer column).
fn one_scaled<O: Element>(gpu: &Gpu, o: &Options, call: &Grouped) -> Result<Row> {
    let lib = BlockScaledGemm::new();
    let rows = grouped::draw_rows(call, o.skew, o.seed.unwrap_or(1));
    let spans = call.spans(&rows);
    let in_groups: usize = spans.iter().map(|s| s.1).sum();
    let (least, most) = spans.iter().fold((usize::MAX, 0), |(l, m), s| (l.min(s.1), m.max(s.1)));
    let sample = (!gpu.is_emulator()).then_some((512 / call.groups).max(2));
    let worst = blockscaled::verify_grouped::<O>(gpu, &lib, call, &rows, 0x6e4d, sample)?
        .map_err(|why| Error::Mismatch(format!("{call}: {why}")))?;
    let flops = call.flops(&spans);
    let mut row =
        Row { call: *call, rows: (in_groups, least, most), flops, worst, ours_ms: None, peer_ms: None };
    if gpu.is_emulator() {
        return Ok(row);
    }
    let x = blockscaled::Inputs::grouped(call, 0x7a1e);
    let (a, b, r) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?, gpu.upload(&rows)?);
    let (scale_a, scale_b) = (gpu.upload(&x.scale_a)?, gpu.upload(&x.scale_b)?);
    let bias = if call.bias { Some(gpu.upload(&vec![0.5f32; call.bias_values()])?) } else { None };
    let mut d = gpu.alloc::<O>(call.elements().2)?;
    let operands = Operands { a: &a, b: &b, scale_a: &scale_a, scale_b: &scale_b };
    let per_tensor = GroupedGemm::new();
    let runs = Runs { warmup: o.warmup, timed: o.iters.max(1).div_ceil(super::ROUNDS) };
    let (mut ours, mut peer) = (Vec::new(), Vec::new());
    for _ in 0..super::ROUNDS {
        let run = || lib.run_grouped::<O>(gpu, call, &operands, (&r, bias.as_ref()), &mut d);
        ours.push(bench::time_batched(gpu, runs, run)?.median_ms);
        let run = || per_tensor.run::<E4m3, O>(gpu, call, &a, &b, &r, &mut d, bias.as_ref());
        peer.push(bench::time_batched(gpu, runs, run)?.median_ms);
    }
    (row.ours_ms, row.peer_ms) = (Some(bench::median(&ours)), Some(bench::median(&peer)));
    Ok(row)
}

fn run_all<P: GroupedPrecision, O: Element>(gpu: &Gpu, o: &Options, calls: &[Grouped]) -> Result<Vec<Row>> {
    let bar = o.output.progress(calls.len());
    let mut rows = Vec::new();
    for call in calls {
        let how = if o.block_scaled { " block-scaled" } else { "" };
        bar.suspend(|| eprintln!("grouped{how} gemm {} -> {}: {call}", P::NAME, O::NAME));
        rows.push(if o.block_scaled { one_scaled::<O>(gpu, o, call)? } else { one::<P, O>(gpu, o, call)? });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

fn by_output<P: GroupedPrecision>(gpu: &Gpu, o: &Options, calls: &[Grouped]) -> Result<Vec<Row>> {
    match o.out.as_str() {
        "f32" => run_all::<P, f32>(gpu, o, calls),
        "bf16" => run_all::<P, bf16>(gpu, o, calls),
        _ => run_all::<P, f16>(gpu, o, calls),
    }
}

/// A row as `--json` writes it.
#[derive(serde::Serialize)]
struct JsonRow {
    precision: String,
    out: String,
    call: String,
    groups: usize,
    m: usize,
    n: usize,
    k: usize,
    rows_in_groups: usize,
    worst_error_over_bound: f64,
    ours_ms: Option<f64>,
    peer: &'static str,
    block_scaled: bool,
    peer_ms: Option<f64>,
    ratio: Option<f64>,
}

/// `gemm --groups G`: the calls checked, verified and timed, the table
/// printed.
pub fn run(o: &Options, groups: usize) -> Result<bool> {
    let calls = calls(o, groups)?;
    let (gpu, no_gpu) = kernel_lab::cli::open(o.device, None)?;
    for call in &calls {
        let (a, b, d) = call.elements();
        let adds = call.m.saturating_mul(call.n).saturating_mul(call.k);
        let host = a.saturating_add(b).saturating_mul(8).saturating_add(d.saturating_mul(12));
        // A, B and D (at most 2, 2 and 4 bytes an element), and the block
        // scales (a 128th of A and of B, 4 bytes each).
        let device = a.saturating_add(b).saturating_mul(2).saturating_add(d.saturating_mul(4));
        let all = a.saturating_add(b).saturating_add(d);
        super::fits(
            &gpu,
            &format!("grouped gemm {call}"),
            (adds, all),
            (host, device.saturating_add(device / 32)),
        )?;
    }
    o.output.check(&gpu)?;
    super::announce(o, &gpu, no_gpu);
    let rows = match o.precision.as_str() {
        "bf16" => by_output::<Bf16>(&gpu, o, &calls),
        "f16" => by_output::<F16>(&gpu, o, &calls),
        _ => by_output::<E4m3>(&gpu, o, &calls),
    }?;
    let peer = match (o.block_scaled, o.precision.as_str()) {
        (true, _) => "per-tensor grouped FP8 (ours)",
        (false, "e4m3") => "-",
        _ => "cuBLAS loop",
    };
    println!(
        "| precision | out | call | rows in groups (least, most a group) | worst error / bound | ours ms | ours TFLOP/s | {peer} TFLOP/s | ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let tflops = |flops: f64, ms: Option<f64>| {
        ms.map_or("-".into(), |ms| format!("{:.1}", flops / (ms * 1e-3) / 1e12))
    };
    let ratio = |r: &Row| r.ours_ms.zip(r.peer_ms).map(|(ours, peer)| peer / ours);
    for r in &rows {
        println!(
            "| {} | {} | {} | {} ({}, {}) | {:.3} | {} | {} | {} | {} |",
            o.precision,
            o.out,
            r.call,
            r.rows.0,
            r.rows.1,
            r.rows.2,
            r.worst,
            r.ours_ms.map_or("-".into(), |ms| format!("{ms:.4}")),
            tflops(r.flops, r.ours_ms),
            tflops(r.flops, r.peer_ms),
            ratio(r).map_or("-".into(), |x| format!("{:.1}%", 100.0 * x)),
        );
    }
    let json: Vec<JsonRow> = rows
        .iter()
        .map(|r| JsonRow {
            precision: o.precision.clone(),
            out: o.out.clone(),
            call: r.call.to_string(),
            groups: r.call.groups,
            m: r.call.m,
            n: r.call.n,
            k: r.call.k,
            rows_in_groups: r.rows.0,
            worst_error_over_bound: r.worst,
            block_scaled: o.block_scaled,
            ours_ms: r.ours_ms,
            peer: if r.peer_ms.is_some() { peer } else { "-" },
            peer_ms: r.peer_ms,
            ratio: ratio(r),
        })
        .collect();
    o.output.write(&gpu, "gemm", &json)?;
    Ok(true)
}
