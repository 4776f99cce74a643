//! The merge of a split decode launch's chunks, a kernel of its own.

use super::THREADS;
use crate::attention::log_sum_exp;
use crate::dev::math::{ex2_approx, fma, pack};
use crate::dev::{Element, In, Out, index_1d};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// 5b. The merge of a split decode launch's chunks: a warp per row of Q,
/// a lane two columns of each 64; the splits' states combined as the
/// online softmax does (`M = max m_s`, `O = sum 2^(m_s - M) O_s / sum
/// 2^(m_s - M) l_s`, the maxima in log2 units and O already descaled:
/// `rows::store`), then lse. A row no split saw a key of is 0,
/// with lse `+inf`.
///
/// **Arithmetic.** Per split a row reads `4 (d + 2)` bytes (whole 128-byte
/// lines, a warp's loads consecutive) for `d` FMAs: bound by L2, a small
/// share of the decode's bytes (`splits (d + 2) 4` against the cache's `4
/// d` a key, with each split at least 256 keys).
///
/// Launch: one warp per row (`rows` of them), blocks of 128 threads;
/// `parts` as the decode launch of `splits` splits left it; O and lse as
/// the decode's.
/// Measured: `BENCHMARKS.md`, rows `attention_decode_merge`.
#[kernel(block = THREADS, tile = THREADS, types = [bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn attention_decode_merge<T: Element>(
    parts: In<f32>,
    o: Out<T>,
    lse: Out<f32>,
    rows: u32,
    d: u32,
    splits: u32,
) {
    let g = index_1d();
    let (row, lane) = (g / 32, g % 32);
    if row >= rows as usize {
        return;
    }
    let d = d as usize;
    let f = d + 2;
    let stride = rows as usize * f;
    let mut top = f32::NEG_INFINITY;
    for s in 0..splits as usize {
        // SAFETY: each split's state of the row (the launch's contract).
        top = top.max(unsafe { parts.load(s * stride + row * f + d) });
    }
    let reference = if top == f32::NEG_INFINITY { 0.0 } else { top };
    let mut sum = 0.0f32;
    let mut acc = [0.0f32; 8];
    for s in 0..splits as usize {
        let base = s * stride + row * f;
        // SAFETY: as above.
        let (m, l) = unsafe { (parts.load(base + d), parts.load(base + d + 1)) };
        let w = ex2_approx(m - reference);
        sum = fma(l, w, sum);
        seq!(N in 0..4 {
            if 64 * N < d {
                seq!(E in 0..2 {{
                    // SAFETY: column 64 N + 2 lane + E < d.
                    let x = unsafe { parts.load(base + 64 * N + 2 * lane + E) };
                    acc[2 * N + E] = fma(x, w, acc[2 * N + E]);
                }});
            }
        });
    }
    let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
    let o = o.recast::<u32>();
    seq!(N in 0..4 {
        if 64 * N < d {
            let pair = pack::<T>(acc[2 * N] * inv, acc[2 * N + 1] * inv);
            // SAFETY: inside the row, 4 bytes on 4.
            unsafe { o.store((row * d + 64 * N + 2 * lane) / 2, pair) };
        }
    });
    if lane == 0 {
        // SAFETY: the row's lse.
        unsafe { lse.store(row, log_sum_exp(reference, sum)) };
    }
}
