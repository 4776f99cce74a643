//! A decode call verified against the `f64` reference (outputs poisoned
//! first), then timed beside the device's copy of as many bytes.
//!
//! The reference is the forward's, one sequence at a time
//! ([`Decode::sequence`]), on the values the kernel multiplies (an FP8
//! cache descaled, exactly, and Q rounded to f16 for its f16 products),
//! with the bound's rescale count taken at the decode's 16-key chunks (and
//! a merge of warps and of splits within its slack of 7). Its descales
//! add a rounding each to the scores' scale and to O's division, within
//! the bound's allowance for them.

use rayon::prelude::*;

use crate::gemm::{self, Input};
use crate::measure::{bench, data};
use crate::runtime::{Gpu, Result};

use gpu::dev::fp8::E4m3;

use super::super::launch::Element;
use super::super::reference::{Reference, reference_tiled, sample_rows, verify};
use super::launch::CacheElement;
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

/// A call's inputs: Q `[b, heads, s_q, d]` in `T`, each sequence's K and
/// V `[kv_heads, len, d]` in the cache's `C`, and the descales (K's of each
/// K/V head, then V's).
pub struct DecodeInputs<T, C> {
    pub q: Vec<T>,
    pub k: Vec<Vec<C>>,
    pub v: Vec<Vec<C>>,
    pub scales: Vec<f32>,
}

/// Random inputs of `p`: Q in [-2, 2), K and V in [-1, 1), rounded to `T`
/// and `C`. An FP8 cache (`C` of one byte) stores each K/V head's values
/// over a descale, the head's largest magnitude over E4M3's largest
/// (448), so that its values span E4M3's range (per-head scaling, as a
/// server's quantizer does); a 16-bit one's descales are 1.
pub fn decode_inputs<T: Input, C: Input>(p: &Decode, seed: u64) -> DecodeInputs<T, C> {
    let q = data::uniform_f32(p.q_len(), seed).into_iter().map(|x| T::round_f32(2.0 * x)).collect();
    let raw = |salt: u64| -> Vec<Vec<f32>> {
        (0..p.batch)
            .map(|b| data::uniform_f32(p.kv_heads * p.lens[b] * p.d, seed + 2 * b as u64 + salt))
            .collect()
    };
    let head = |b: usize, i: usize| i / (p.lens[b] * p.d);
    let quantize = |x: Vec<Vec<f32>>| -> (Vec<Vec<C>>, Vec<f32>) {
        let scales: Vec<f32> = if size_of::<C>() == 1 {
            let mut top = vec![0.0f32; p.kv_heads];
            for (b, seq) in x.iter().enumerate() {
                for (i, v) in seq.iter().enumerate() {
                    top[head(b, i)] = top[head(b, i)].max(v.abs());
                }
            }
            top.iter().map(|t| if *t > 0.0 { t / 448.0 } else { 1.0 }).collect()
        } else {
            vec![1.0; p.kv_heads]
        };
        let values = x
            .iter()
            .enumerate()
            .map(|(b, seq)| {
                seq.iter().enumerate().map(|(i, v)| C::round_f32(v / scales[head(b, i)])).collect()
            })
            .collect();
        (values, scales)
    };
    let ((k, k_scales), (v, v_scales)) = (quantize(raw(1)), quantize(raw(2)));
    DecodeInputs { q, k, v, scales: [k_scales, v_scales].concat() }
}

impl<T: Input, C: Input> DecodeInputs<T, C> {
    /// Whether the products run in f16 (an FP8 cache's kernels widen it to
    /// f16, and round Q to f16).
    fn f16_products() -> bool {
        size_of::<C>() == 1
    }

    /// The values the kernel multiplies, in `f64`: Q as its products see it
    /// (rounded to f16 with an FP8 cache, saturating), each sequence's K
    /// and V times their head's descale (exact).
    pub fn values(&self, p: &Decode) -> (Vec<f64>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let q = self
            .q
            .par_iter()
            .map(|&x| {
                let x = x.to_f64();
                if Self::f16_products() {
                    half::f16::round_f32((x as f32).clamp(-65504.0, 65504.0)).to_f64()
                } else {
                    x
                }
            })
            .collect();
        let descaled = |x: &[Vec<C>], first: usize| -> Vec<Vec<f64>> {
            x.iter()
                .enumerate()
                .map(|(b, seq)| {
                    seq.iter()
                        .enumerate()
                        .map(|(i, v)| v.to_f64() * self.scales[first + i / (p.lens[b] * p.d)] as f64)
                        .collect()
                })
                .collect()
        };
        (q, descaled(&self.k, 0), descaled(&self.v, p.kv_heads))
    }

    /// The rounding the bound takes (one for P and O): `T`'s, or with an
    /// FP8 cache the coarser of `T`'s (O) and f16's (P, rounded for the
    /// f16 products).
    pub fn rounding() -> (f64, f64) {
        if Self::f16_products() {
            (T::ROUNDING.max(half::f16::ROUNDING), T::TINY.max(half::f16::TINY))
        } else {
            (T::ROUNDING, T::TINY)
        }
    }
}

/// The sequences and rows the reference checks: every row of every
/// sequence while that stays within `REFERENCE_MULTIPLY_ADDS` (2^29), else
/// about 64 rows a sequence, and sequences spread evenly (the first and
/// last among them).
pub fn rows_to_check(p: &Decode) -> Vec<(usize, Vec<usize>)> {
    let per_seq = |b: usize| p.heads * p.queries(b);
    let cost = |b: usize, rows: usize| rows * p.lens[b] * p.d;
    let all: usize = (0..p.batch).map(|b| cost(b, per_seq(b))).sum();
    if all <= REFERENCE_MULTIPLY_ADDS {
        return (0..p.batch).map(|b| (b, (0..per_seq(b)).collect())).collect();
    }
    let rows = |b: usize| -> Vec<usize> {
        if per_seq(b) <= 64 {
            (0..per_seq(b)).collect()
        } else {
            sample_rows(per_seq(b), p.queries(b)).into_iter().step_by(4).collect()
        }
    };
    // The first and last sequences always, then others spread evenly while
    // the budget lasts; each sequence's rows drawn once.
    let step = (p.batch / 16).max(1);
    let candidates = [0, p.batch - 1].into_iter().chain((step..p.batch.saturating_sub(1)).step_by(step));
    let (mut picked, mut spent): (Vec<(usize, Vec<usize>)>, usize) = (Vec::new(), 0);
    for (i, b) in candidates.enumerate() {
        if picked.iter().any(|(x, _)| *x == b) {
            continue;
        }
        let rows = rows(b);
        let work = cost(b, rows.len());
        if i >= 2 && spent + work > REFERENCE_MULTIPLY_ADDS {
            break;
        }
        spent += work;
        picked.push((b, rows));
    }
    picked.sort_unstable_by_key(|(b, _)| *b);
    picked
}

/// The references of the checked sequences' rows.
pub fn decode_reference<T: Input, C: Input>(
    p: &Decode,
    inputs: &DecodeInputs<T, C>,
    checked: &[(usize, Vec<usize>)],
) -> Vec<Reference> {
    let (q, k, v) = inputs.values(p);
    let rounding = DecodeInputs::<T, C>::rounding();
    checked
        .iter()
        .map(|(b, rows)| {
            let qb = gather(&q, &p.sequence_rows(*b), p.d);
            reference_tiled(&p.sequence(*b), (&qb, &k[*b], &v[*b]), rows, rounding, 16)
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
    let mut worst = 0.0f64;
    for ((b, _), reference) in checked.iter().zip(want) {
        let rows = p.sequence_rows(*b);
        let (o, lse) = (gather(o, &rows, p.d), gather(lse, &rows, 1));
        let name = format!("{name} sequence {b}");
        worst = worst.max(verify(&name, &p.sequence(*b), &o, &lse, reference)?);
    }
    Ok(worst)
}

/// Rows `rows` of `x` (rows of `width`), in that order.
fn gather<X: Copy>(x: &[X], rows: &[usize], width: usize) -> Vec<X> {
    rows.iter().flat_map(|&r| x[r * width..(r + 1) * width].iter().copied()).collect()
}

/// Verifies `p` in precision `P` (outputs poisoned first), then, given
/// `runs`, times it and the device's copy of as many bytes as its cache.
pub fn run_decode<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    p: &Decode,
    runs: Option<bench::Runs>,
) -> Result<DecodeOutcome> {
    if p.fp8 { run_with::<P, E4m3>(gpu, p, runs) } else { run_with::<P, P::Input>(gpu, p, runs) }
}

/// [`run_decode`] with the cache in `C`.
fn run_with<P: gemm::Precision<Input: Element>, C: CacheElement>(
    gpu: &Gpu,
    p: &Decode,
    runs: Option<bench::Runs>,
) -> Result<DecodeOutcome> {
    p.check()?;
    let inputs = decode_inputs::<P::Input, C>(p, 0xdec0);
    let cache = Cache::build(p, (&inputs.k, &inputs.v), 0, 0xcace);
    let checked = rows_to_check(p);
    let want = decode_reference(p, &inputs, &checked);
    let mut x = DecodeBuffers::new(gpu, p, &inputs.q, &cache, &inputs.scales)?;
    let plan = plan(p, gpu.resident_blocks(super::launch::kernel::<P::Input, C>(p.d)?)?);
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
            let mut to = gpu.alloc::<C>(cache.k.len())?;
            let copy = bench::time(gpu, runs, || gpu.copy(&x.k, &mut to))?;
            (Some(timing), Some(copy))
        }
        _ => (None, None),
    };
    let copy_bytes = 2 * cache.k.len() * size_of::<C>();
    Ok(DecodeOutcome { plan, worst, timing, copy, copy_bytes })
}
