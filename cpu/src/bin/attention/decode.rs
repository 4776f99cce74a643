//! `attention --decode`: each call verified against the `f64` reference,
//! then timed, contiguous and (with `--page-size`) paged, in TB/s of the
//! bytes it must read (K and V of every sequence, Q, O and lse), beside the
//! device's copy of as many bytes in the same run.

use kernel_lab::attention::decode::{self, Decode, DecodeOutcome};
use kernel_lab::attention::{self, Element};
use kernel_lab::cli::within_budget;
use kernel_lab::gemm::{self, Bf16, F16};
use kernel_lab::measure::bench::Runs;
use kernel_lab::runtime::{self, Error, Gpu, Result};

use super::{DEFAULT_HEADS, Options};

/// The default keys a sequence: a GPU's, and the emulator's.
const DEFAULT_KV_LEN: [usize; 2] = [4096, 300];

/// The calls the options ask for, checked (on the emulator or not: the
/// defaults differ).
fn calls(o: &Options, emulator: bool) -> Result<Vec<Decode>> {
    let bad = |m: &str| Err(Error::InvalidInput(m.into()));
    let prefill_only = [
        ("--backward", o.backward),
        ("--kernels", !o.kernels.is_empty()),
        ("--seq-k", o.seq_k.is_some()),
        ("--ping-pong", o.ping_pong),
        ("--no-split", o.no_split),
        ("--dump", o.dump.is_some()),
    ];
    if let Some((flag, _)) = prefill_only.iter().find(|(_, set)| *set) {
        return bad(&format!("{flag} does not apply to --decode"));
    }
    if !["bf16", "f16"].contains(&o.precision.as_str()) {
        return bad(&format!("unknown --precision '{}'; accepted: bf16, f16", o.precision));
    }
    let fp8 = match o.kv_cache.as_deref() {
        None => false,
        Some("e4m3") => true,
        Some(x) if x == o.precision => false,
        Some(x) => {
            return bad(&format!(
                "unknown --kv-cache '{x}'; accepted: e4m3, or --precision's ({})",
                o.precision
            ));
        }
    };
    if o.kv_len.is_some() && !o.kv_lens.is_empty() {
        return bad("--kv-len and --kv-lens both give the keys: give one");
    }
    if o.iters == 0 {
        return bad("--iters must be at least 1");
    }
    if !o.varlen.is_empty() && (o.seq.is_some() || o.kv_len.is_some() || o.sweep) {
        return bad("--varlen gives each sequence's queries: leave out --seq, --kv-len and --sweep");
    }
    let mut calls = if !o.varlen.is_empty() {
        let heads = o.heads.unwrap_or(DEFAULT_HEADS[usize::from(emulator)]);
        let kv_lens = if o.kv_lens.is_empty() { o.varlen.clone() } else { o.kv_lens.clone() };
        if kv_lens.len() != o.varlen.len() {
            return bad("--kv-lens gives one length for each of --varlen's sequences");
        }
        let mut p =
            Decode::packed((heads, o.kv_heads.unwrap_or(heads)), o.varlen.clone(), kv_lens, o.head_dim);
        p.causal = o.causal;
        p.page_size = o.page_size;
        if let Some(scale) = o.scale {
            p.scale = scale;
        }
        vec![p]
    } else if o.sweep {
        decode::sweep()
    } else {
        let heads = o.heads.unwrap_or(DEFAULT_HEADS[usize::from(emulator)]);
        let lens = if o.kv_lens.is_empty() {
            vec![o.kv_len.unwrap_or(DEFAULT_KV_LEN[usize::from(emulator)]); o.batch]
        } else {
            o.kv_lens.clone()
        };
        let mut p = Decode::new(
            lens.len(),
            (heads, o.kv_heads.unwrap_or(heads)),
            o.seq.unwrap_or(1),
            lens[0],
            o.head_dim,
        );
        p.lens = lens;
        p.causal = o.causal;
        p.page_size = o.page_size;
        if let Some(scale) = o.scale {
            p.scale = scale;
        }
        vec![p]
    };
    for p in &mut calls {
        p.fp8 |= fp8;
        p.check()?;
    }
    Ok(calls)
}

/// One row of the table, as `--json` writes it.
#[derive(serde::Serialize, Clone)]
struct Row {
    precision: &'static str,
    problem: String,
    cache: String,
    /// Splits a sequence's keys take, and keys a split.
    splits: u32,
    split_keys: u32,
    worst_error_over_bound: f64,
    ms: Option<f64>,
    /// The bytes a call must read (`Decode::bytes`) over its time.
    tb_per_s: Option<f64>,
    /// The device's copy: bytes read and written over its time.
    copy_tb_per_s: Option<f64>,
}

impl Row {
    fn markdown(&self) -> String {
        let or_dash = |x: Option<f64>, places: usize| x.map_or("-".into(), |x| format!("{x:.places$}"));
        let share = self.tb_per_s.zip(self.copy_tb_per_s).map(|(a, b)| 100.0 * a / b);
        format!(
            "| {} | {} | {} | {} x {} | {:.3} | {} | {} | {} | {} |",
            self.precision,
            self.problem,
            self.cache,
            self.splits,
            self.split_keys,
            self.worst_error_over_bound,
            or_dash(self.ms, 4),
            or_dash(self.tb_per_s, 2),
            or_dash(self.copy_tb_per_s, 2),
            share.map_or("-".into(), |s| format!("{s:.1}%"))
        )
    }
}

/// One call's rows: the contiguous cache, then the paged one if asked.
fn one<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Decode,
    runs: Runs,
    explain: bool,
) -> Result<Vec<Row>> {
    let layouts: Vec<Option<usize>> = match p.page_size {
        Some(size) => vec![None, Some(size)],
        None => vec![None],
    };
    let mut rows: Vec<Row> = Vec::new();
    for page_size in layouts {
        let call = Decode { page_size, ..p.clone() };
        let DecodeOutcome { plan, worst, timing, copy, copy_bytes } =
            decode::run_decode::<P>(gpu, &call, Some(runs))?;
        if explain {
            println!("{call}: {}", plan.explain(&call));
        }
        let worst = worst.map_err(|why| Error::Mismatch(format!("decode {call}: {why}")))?;
        let ms = timing.map(|t| t.median_ms);
        rows.push(Row {
            precision: <P::Input as gemm::Input>::NAME,
            // The call without its layout: the cache column names it.
            problem: Decode { page_size: None, ..p.clone() }.to_string(),
            cache: page_size.map_or("contiguous".into(), |s| format!("paged {s}")),
            splits: plan.splits,
            split_keys: plan.split_keys,
            worst_error_over_bound: worst,
            ms,
            tb_per_s: ms.map(|ms| call.bytes() as f64 / (ms * 1e-3) / 1e12),
            copy_tb_per_s: copy.map(|t| copy_bytes as f64 / (t.median_ms * 1e-3) / 1e12),
        });
    }
    if let (Some(q_lens), Some(first)) = (&p.q_lens, rows.first()) {
        // The same sequences one by one, the packed call's peer.
        let mut total = Some(0.0);
        for (&queries, &keys) in q_lens.iter().zip(&p.lens) {
            let one = Decode::packed((p.heads, p.kv_heads), vec![queries], vec![keys], p.d);
            let one = Decode { causal: p.causal, scale: p.scale, fp8: p.fp8, ..one };
            let ms = decode::run_decode::<P>(gpu, &one, Some(runs))?.timing.map(|t| t.median_ms);
            total = total.zip(ms).map(|(a, b)| a + b);
        }
        if let Some(ms) = total {
            rows.push(Row {
                cache: "contiguous, one by one".into(),
                splits: 0,
                split_keys: 0,
                ms: Some(ms),
                tb_per_s: Some(p.bytes() as f64 / (ms * 1e-3) / 1e12),
                copy_tb_per_s: None,
                ..first.clone()
            });
        }
    }
    Ok(rows)
}

/// The options checked, each call verified and timed, the table printed.
pub fn run(o: &Options) -> Result<bool> {
    calls(o, false)?;
    let (gpu, no_gpu) =
        kernel_lab::cli::open(o.device, o.sweep.then_some("--sweep times full-size problems"))?;
    let calls = calls(o, gpu.is_emulator())?;
    for p in &calls {
        let what = format!("decode {p}");
        // The reference samples; the kernel reads the cache once.
        let host = 2 * p.bytes() + 12 * p.q_len();
        if gpu.is_emulator() {
            let work = p.heads * p.s_q * p.keys() * p.d * 2;
            within_budget(&what, work, attention::EMULATOR_MULTIPLY_ADDS, "multiply-adds", "25 s")?;
        } else {
            // The cache, its copy, Q, O, lse and a split's workspace.
            gpu.check_fits(3 * p.bytes()).map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
        }
        runtime::check_host_fits(host).map_err(|e| Error::InvalidInput(format!("{what}: {e}")))?;
    }
    o.output.check(&gpu)?;
    if let Some(line) = no_gpu {
        eprintln!("{line}");
    }
    if !gpu.is_emulator() {
        println!("{}", kernel_lab::cli::device_line(&gpu));
    }
    println!(
        "Decode rows: TB/s of the bytes a call must read (K and V of every sequence, Q, O, lse); the copy's of what it reads and writes."
    );
    println!(
        "| precision | problem | cache | splits x keys | worst error / bound | ms | TB/s | copy TB/s | of copy |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let runs = Runs { warmup: o.warmup, timed: o.iters };
    let bar = o.output.progress(calls.len());
    let mut json = Vec::new();
    for p in &calls {
        bar.suspend(|| eprintln!("attention decode {} {p}", o.precision));
        bar.set_message(p.to_string());
        let rows = bar.suspend(|| {
            if o.precision == "bf16" {
                one::<Bf16>(&gpu, p, runs, o.explain)
            } else {
                one::<F16>(&gpu, p, runs, o.explain)
            }
        });
        let rows = rows.inspect_err(|_| bar.finish_and_clear())?;
        bar.suspend(|| rows.iter().for_each(|r| println!("{}", r.markdown())));
        json.extend(rows);
        bar.inc(1);
    }
    bar.finish_and_clear();
    o.output.write(&gpu, "attention-decode", &json)?;
    Ok(true)
}
