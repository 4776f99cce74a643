//! Step 1, the unfused baseline's middle kernel: the row softmax of the
//! scores `S = Q Kᵀ` that a GEMM wrote, written out as `P` for the second
//! GEMM (`O = P V`), with each row's log-sum-exp.

use super::{LOG2_E, log_sum_exp, visible_keys};
use crate::dev::Element;
use crate::dev::math::ex2_approx;
use crate::dev::math::round;
use crate::dev::warp::{FULL_MASK, shfl_xor_f32};
use crate::dev::{In, Out, block_idx_x, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};

/// Rows per block: one warp a row.
pub const ROWS: usize = 4;

/// 1. The unfused baseline's softmax: `P = softmax(scale S + mask)` row by
/// row, and `lse`.
///
/// One warp per row of `S` (`f32`, `s_k` long; `rows = b h s_q` rows).
/// Pass 1: each lane keeps a running maximum `m` and sum `l` of `2^(x -
/// m)` over its keys `lane, lane + 32, ...` (`x = s log2(e) scale`,
/// rescaling `l` when `m` grows), then five butterfly shuffles merge the
/// 32 pairs. Pass 2 reads the row again and writes `P = 2^(x - m) / l` in
/// the input type, zeros past the causal limit (`visible_keys`). `lse = (m +
/// log2 l) ln 2`; a row that sees no key gets zeros and `lse = +inf`.
/// Reads and writes are coalesced: a warp's load is 128 consecutive bytes.
///
/// What bounds the baseline is bytes, not FLOPs: per score, the first GEMM
/// writes 4 bytes of S, this kernel reads them twice and writes 2 of P,
/// and the second GEMM reads P again: at least `b h s_q s_k (4 + 8 + 2 +
/// 2)` bytes against `4 b h s_q s_k d` FLOPs, `d / 4` FLOP per byte (32 at
/// `d = 128`), an order of magnitude below what the tensor cores need of
/// each byte of DRAM bandwidth (their peak FLOP/s over the bytes/s: in the
/// hundreds on sm_80 and sm_90 parts). The fused step moves none of these bytes.
///
/// Launch: `s` holds `rows s_k` `f32`, `p` `rows s_k` elements, `lse`
/// `rows`; `ceil(rows / 4)` blocks of 128 threads; `scale > 0`.
/// Measured: `BENCHMARKS.md`, rows `attention_softmax`.
#[kernel(block = 32 * ROWS, tile = ROWS, types = [bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn attention_softmax<T: Element>(
    s: In<f32>,
    p: Out<T>,
    lse: Out<f32>,
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
        // The whole warp leaves together: no shuffle waits for it.
        return;
    }
    let keys = visible_keys(row % s_q.max(1), s_q, s_k, causal != 0);
    let c = scale * LOG2_E;
    let at = row * s_k;
    // Pass 1: this lane's running maximum and sum, in log2 units.
    let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
    for j in (lane..keys).step_by(32) {
        // SAFETY: j < keys <= s_k, inside row `row` of S.
        let x = unsafe { s.load(at + j) } * c;
        if x > m {
            l = l * ex2_approx(m - x) + 1.0;
            m = x;
        } else {
            l += ex2_approx(x - m);
        }
    }
    for mask in [16, 8, 4, 2, 1] {
        // SAFETY: every lane of the warp is here (the row is the warp's).
        let (m2, l2) = unsafe { (shfl_xor_f32(FULL_MASK, m, mask), shfl_xor_f32(FULL_MASK, l, mask)) };
        let top = m.max(m2);
        // A lane that saw nothing has m = -inf and l = 0: 2^(-inf) = 0.
        l = if top == f32::NEG_INFINITY { 0.0 } else { l * ex2_approx(m - top) + l2 * ex2_approx(m2 - top) };
        m = top;
    }
    let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
    for j in (lane..s_k).step_by(32) {
        // SAFETY: j < keys <= s_k, inside the row.
        let x = if j < keys { ex2_approx(unsafe { s.load(at + j) } * c - m) * inv } else { 0.0 };
        // SAFETY: inside row `row` of P; this lane's element alone.
        unsafe { p.store(at + j, round::<T>(x)) };
    }
    if lane == 0 {
        let value = log_sum_exp(m, l);
        // SAFETY: row < rows; one lane of the row's warp.
        unsafe { lse.store(row, value) };
    }
}
