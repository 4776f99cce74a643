//! A decode call verified against the `f64` reference (outputs poisoned
//! first), then timed beside the device's copy of as many bytes.
//!
//! The reference is the forward's, one sequence at a time
//! ([`Decode::sequence`]), with the bound's rescale count taken at the
//! decode's 16-key chunks (and a merge of warps and of splits within its
//! slack of 7).

use rayon::prelude::*;

use crate::gemm::{self, Input};
use crate::measure::{bench, data};
use crate::runtime::{Gpu, Result};

use super::super::launch::Element;
use super::super::reference::{Reference, reference_tiled, sample_rows, verify};
use super::{Cache, Decode, DecodeBuffers, Plan, launch, plan};

/// The multiply-adds the reference may take before it samples (rows of
/// each checked sequence, then sequences).
const REFERENCE_MULTIPLY_ADDS: usize = 1 << 29;

/// A verified call's outcome.
pub struct DecodeOutcome {
    pub plan: Plan,
    /// The worst error against its bound.
    pub worst: std::result::Result<f64, String>,
    pub timing: Option<bench::Timing>,
    /// The device's copy of as many bytes as the cache's K and V (K's
    /// elements, read and written), timed in the same call: the bandwidth
    /// decode aims at.
    pub copy: Option<bench::Timing>,
    /// The bytes the copy reads and writes.
    pub copy_bytes: usize,
}

/// The inputs of `p`: Q `[b, heads, s_q, d]` in [-2, 2), each sequence's K
/// and V `[kv_heads, len, d]` in [-1, 1), rounded to `T`.
pub fn decode_inputs<T: Input>(p: &Decode, seed: u64) -> (Vec<T>, Vec<Vec<T>>, Vec<Vec<T>>) {
    let round = |x: Vec<f32>, by: f32| -> Vec<T> { x.into_iter().map(|x| T::round_f32(by * x)).collect() };
    let q = round(data::uniform_f32(p.q_len(), seed), 2.0);
    let seq = |b: usize, salt: u64| {
        round(data::uniform_f32(p.kv_heads * p.lens[b] * p.d, seed + 2 * b as u64 + salt), 1.0)
    };
    let k = (0..p.batch).map(|b| seq(b, 1)).collect();
    let v = (0..p.batch).map(|b| seq(b, 2)).collect();
    (q, k, v)
}

/// The sequences and rows the reference checks: every row of every
/// sequence while that stays within [`REFERENCE_MULTIPLY_ADDS`], else
/// about 64 rows a sequence, and sequences spread evenly (the first and
/// last among them).
pub fn rows_to_check(p: &Decode) -> Vec<(usize, Vec<usize>)> {
    let per_seq = p.heads * p.s_q;
    let cost = |b: usize, rows: usize| rows * p.lens[b] * p.d;
    let all: usize = (0..p.batch).map(|b| cost(b, per_seq)).sum();
    if all <= REFERENCE_MULTIPLY_ADDS {
        return (0..p.batch).map(|b| (b, (0..per_seq).collect())).collect();
    }
    let rows = if per_seq <= 64 {
        (0..per_seq).collect()
    } else {
        sample_rows(per_seq, p.s_q).into_iter().step_by(4).collect::<Vec<_>>()
    };
    let mut picked: Vec<usize> = vec![0, p.batch - 1];
    let mut spent = cost(0, rows.len()) + cost(p.batch - 1, rows.len());
    let step = (p.batch / 16).max(1);
    for b in (step..p.batch - 1).step_by(step) {
        if spent + cost(b, rows.len()) > REFERENCE_MULTIPLY_ADDS {
            break;
        }
        spent += cost(b, rows.len());
        picked.push(b);
    }
    picked.sort_unstable();
    picked.dedup();
    picked.into_iter().map(|b| (b, rows.clone())).collect()
}

/// The references of the checked sequences' rows.
pub fn decode_reference<T: Input>(
    p: &Decode,
    (q, k, v): (&[T], &[Vec<T>], &[Vec<T>]),
    checked: &[(usize, Vec<usize>)],
) -> Vec<Reference> {
    let f = |x: &[T]| -> Vec<f64> { x.par_iter().map(|&x| x.to_f64()).collect() };
    let per_seq = p.heads * p.s_q * p.d;
    checked
        .iter()
        .map(|(b, rows)| {
            let qb = f(&q[b * per_seq..(b + 1) * per_seq]);
            reference_tiled(&p.sequence(*b), (&qb, &f(&k[*b]), &f(&v[*b])), rows, (T::ROUNDING, T::TINY), 16)
        })
        .collect()
}

/// Checks O and lse of every checked sequence: `Err` names the first
/// element out of its bound; `Ok` the worst error relative to its bound.
pub fn verify_decode<T: Input>(
    name: &str,
    p: &Decode,
    (o, lse): (&[T], &[f32]),
    want: &[Reference],
    checked: &[(usize, Vec<usize>)],
) -> std::result::Result<f64, String> {
    let rows = p.heads * p.s_q;
    let mut worst = 0.0f64;
    for ((b, _), reference) in checked.iter().zip(want) {
        let (o, lse) = (&o[b * rows * p.d..(b + 1) * rows * p.d], &lse[b * rows..(b + 1) * rows]);
        let name = format!("{name} sequence {b}");
        worst = worst.max(verify(&name, &p.sequence(*b), o, lse, reference)?);
    }
    Ok(worst)
}

/// Verifies `p` in precision `P` (outputs poisoned first), then, given
/// `runs`, times it and the device's copy of the cache's bytes.
pub fn run_decode<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Decode,
    runs: Option<bench::Runs>,
) -> Result<DecodeOutcome> {
    p.check()?;
    let (q, k, v) = decode_inputs::<P::Input>(p, 0xdec0);
    let cache = Cache::build(p, (&k, &v), 0, 0xcace);
    let checked = rows_to_check(p);
    let want = decode_reference(p, (&q, &k, &v), &checked);
    let mut x = DecodeBuffers::new(gpu, p, &q, &cache)?;
    let plan = plan(p, gpu.resident_blocks(super::launch::kernel::<P::Input>(p.d)?)?);
    gpu.poison(&mut x.o)?;
    gpu.poison(&mut x.lse)?;
    launch(gpu, p, &plan, &mut x).and_then(|()| gpu.sync())?;
    let (o, lse) = (gpu.download(&x.o)?, gpu.download(&x.lse)?);
    let worst = verify_decode("attention decode", p, (&o, &lse), &want, &checked);
    let (timing, copy) = match runs {
        Some(runs) if worst.is_ok() && !gpu.is_emulator() => {
            let timing = bench::time(gpu, runs, || launch(gpu, p, &plan, &mut x))?;
            // The copy peer: as many bytes as the cache's K and V, read and
            // written once.
            let mut to = gpu.alloc::<P::Input>(cache.k.len())?;
            let copy = bench::time(gpu, runs, || gpu.copy(&x.k, &mut to))?;
            (Some(timing), Some(copy))
        }
        _ => (None, None),
    };
    let copy_bytes = 2 * cache.k.len() * std::mem::size_of::<P::Input>();
    Ok(DecodeOutcome { plan, worst, timing, copy, copy_bytes })
}
