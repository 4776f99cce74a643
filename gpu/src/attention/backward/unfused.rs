//! Step 1 of the backward, the unfused baseline's one kernel of its own:
//! `P` and `dS` from the scores `S` and `dP` that GEMMs wrote.

use super::super::{LOG2_E, visible_keys};
use crate::dev::Element;
use crate::dev::math::{ex2_approx, fma, pack};
use crate::dev::{In, Out, block_idx_x, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};

/// Rows per block: one warp a row.
pub const ROWS: usize = 4;

/// 1. The unfused backward's elementwise kernel: for each score of row `i`
/// (of `b h s_q`) and key `j`, `P = e^(scale S - lse_i)` (one `FFMA` and
/// one `ex2.approx`: `2^(S c - lse_i log2 e)`, `c = scale log2 e`) and `dS
/// = P (dP - D_i)`, both rounded to the input type for the GEMMs that
/// follow (`dV = Pᵀ dO`, `dQ = scale dS K`, `dK = scale dSᵀ Q`). Keys past
/// the row's causal limit get zeros.
///
/// One warp per row, lane `l` taking keys `l, l + 32, ...`: every load and
/// store of a warp is 128 (`f32`) or 64 (16-bit) consecutive bytes. Per
/// score the kernel reads 8 bytes and writes 4: with the GEMMs that write
/// S and dP and read P and dS, the baseline moves at least 20 bytes a
/// score against `10 d` FLOPs, `d / 2` FLOP a byte: bound by DRAM.
///
/// Launch: `s`, `dp` hold `rows s_k` `f32`, `p`, `ds` `rows s_k` elements,
/// `lse`, `delta` `rows`; `ceil(rows / 4)` blocks of 128 threads; `scale >
/// 0`.
/// Measured: `BENCHMARKS.md`, rows `attention_backward_scores`.
#[kernel(block = 32 * ROWS, tile = ROWS, types = [bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_scores<T: Element>(
    s: In<f32>,
    dp: In<f32>,
    lse: In<f32>,
    delta: In<f32>,
    p: Out<T>,
    ds: Out<T>,
    rows: u32,
    s_q: u32,
    s_k: u32,
    scale: f32,
    causal: u32,
) {
    let (rows, s_q, s_k) = (rows as usize, s_q as usize, s_k as usize);
    let lane = thread_idx_x() as usize % 32;
    let row = block_idx_x() as usize * ROWS + thread_idx_x() as usize / 32;
    if row >= rows {
        return;
    }
    let keys = visible_keys(row % s_q.max(1), s_q, s_k, causal != 0);
    let c = scale * LOG2_E;
    // SAFETY: row < rows.
    let (reference, d) = unsafe { (lse.load(row) * LOG2_E, delta.load(row)) };
    let at = row * s_k;
    for j in (lane..s_k).step_by(32) {
        let (pj, dsj) = if j < keys {
            // SAFETY: j < s_k, inside row `row`.
            let (x, y) = unsafe { (s.load(at + j), dp.load(at + j)) };
            // (A row that sees no key has lse = +inf: P = 2^-inf = 0.)
            let pj = ex2_approx(fma(x, c, -reference));
            (pj, pj * (y - d))
        } else {
            (0.0, 0.0)
        };
        // Both rounded by one paired conversion.
        let pair = pack::<T>(pj, dsj);
        // SAFETY: inside row `row`; this lane's element alone.
        unsafe {
            p.store(at + j, T::from_bits(pair & 0xffff));
            ds.store(at + j, T::from_bits(pair >> 16));
        }
    }
}
