//! The merge of a split decode launch's chunks, a kernel of its own.

use super::THREADS;
use crate::attention::log_sum_exp;
use crate::dev::math::{ex2_approx, fma, pack};
use crate::dev::warp::{FULL_MASK, shfl_idx_u32, shfl_xor_f32};
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
/// **Arithmetic.** Per split a row reads `4 (d + 2)` bytes for `d` FMAs,
/// the cache's bytes of `(d + 2) / d` keys at 16 bits: a small share of
/// the decode's (a split is at least a stage, 64 keys, and mostly far
/// more). What costs is latency: the lanes load 32 splits' maxima and
/// sums at once and reduce them by shuffles, and each lane reads its
/// columns of two splits at a time (8-byte loads, a warp's 256 bytes of
/// a split's row in two 128-byte lines), so that a row waits on an L2 round
/// trip per two splits, not two per split.
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
    let (d, splits) = (d as usize, splits as usize);
    let f = d + 2;
    let state = |s: usize| (s * rows as usize + row) * f;
    // The largest maximum: lane `i` takes splits `i, i + 32, ...`.
    let mut top = f32::NEG_INFINITY;
    for s in (lane..splits).step_by(32) {
        // SAFETY: each split's state of the row (the launch's contract).
        top = top.max(unsafe { parts.load(state(s) + d) });
    }
    seq!(X in 0..5 {
        // SAFETY: every lane of the warp is here.
        top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1 << X) });
    });
    let reference = if top == f32::NEG_INFINITY { 0.0 } else { top };
    let mut sum = 0.0f32;
    let mut acc = [0.0f32; 8];
    for round in (0..splits).step_by(32) {
        // This lane's split of the round: its weight and weighted sum.
        let mine = round + lane;
        let w = if mine < splits {
            // SAFETY: as above.
            let (m, l) = unsafe { (parts.load(state(mine) + d), parts.load(state(mine) + d + 1)) };
            let w = ex2_approx(m - reference);
            sum = fma(l, w, sum);
            w
        } else {
            0.0
        };
        let here = (splits - round).min(32);
        let mut j = 0;
        while j < here {
            // Two splits at a time, their weights from their lanes.
            let pair = [j, (j + 1).min(here - 1)];
            // SAFETY: every lane of the warp is here.
            let ws = pair.map(|s| f32::from_bits(unsafe { shfl_idx_u32(FULL_MASK, w.to_bits(), s as u32) }));
            let ws = [ws[0], if j + 1 < here { ws[1] } else { 0.0 }];
            seq!(N in 0..4 {
                if 64 * N < d {
                    // SAFETY: columns `64 N + 2 lane..+2` < d of each split's
                    // row, 8 bytes on 8 (`f` and the column are even).
                    let x = pair.map(|s| unsafe { parts.load8::<2>(state(round + s) + 64 * N + 2 * lane) });
                    seq!(E in 0..2 {
                        acc[2 * N + E] = fma(x[1][E], ws[1], fma(x[0][E], ws[0], acc[2 * N + E]));
                    });
                }
            });
            j += 2;
        }
    }
    seq!(X in 0..5 {
        // SAFETY: every lane of the warp is here.
        sum += unsafe { shfl_xor_f32(FULL_MASK, sum, 1 << X) };
    });
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
