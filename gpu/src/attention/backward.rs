//! Attention's backward pass: from `dO` (the gradient of the loss with
//! respect to O), the gradients `dQ`, `dK`, `dV`, one step per file.
//!
//! With `P = softmax(scale Q Kᵀ + mask)` row by row, recomputed from the
//! forward's log-sum-exp as `P_ij = e^(scale s_ij - lse_i)`:
//!
//! - `dV = Pᵀ dO`;
//! - `dP = dO Vᵀ`;
//! - `D_i = sum_c dO_ic O_ic` (equal to `sum_j P_ij dP_ij`: the softmax's
//!   Jacobian `diag(p) - p pᵀ` applied to `dP` is `p ∘ (dP - pᵀ dP)`);
//! - `dS = P ∘ (dP - D)`;
//! - `dQ = scale dS K`, `dK = scale dSᵀ Q`.
//!
//! Layouts are the forward's ([`crate::attention`]); dQ is Q's shape, dK
//! and dV K's. With grouped-query heads, a K/V head's dK and dV are the
//! sums over the query heads that read it. A query that sees no key has
//! `lse = +inf` and a zero row of P: its dQ row is 0.
//!
//! FLOPs: five products of `2 s_q s_k d` each per head (S recomputed, dV,
//! dP, dQ, dK), `10 b h s_q s_k d`, two and a half times the forward's;
//! rates count them so, halved when causal, as FlashAttention's papers do.
//!
//! The steps:
//! 1. [`unfused`]: every product is a call of the GEMM library; S, dP, P
//!    and dS go through global memory. Besides the GEMMs, two kernels:
//!    [`attention_backward_dot()`] (D) and the elementwise
//!    [`unfused::attention_backward_scores()`] (P and dS).
//! 2. [`flash`]: FlashAttention-2's backward on `mma.sync`: a block per
//!    K/V head and tile of 128 keys holds their dK and dV in registers and
//!    walks the queries; dQ is summed across blocks in `f32` by `red`s of
//!    pairs ([`crate::dev::Out::reduce_add_pair`]), then scaled and
//!    rounded by [`attention_backward_dq()`].
//! 3. [`hopper`]: FlashAttention-3's on Hopper (sm_90a): TMA copies by a
//!    producer warpgroup, two consumer warpgroups of 64 keys each running
//!    the products on `wgmma`, dQ summed across blocks in `f32` by TMA
//!    reductions of whole boxes ([`crate::dev::tma::reduce_add_3d`]), then
//!    converted as step 2's.
//!
//! In the deterministic mode ([`DETERMINISTIC`]) each query tile's sums
//! arrive in one order, from the last key tile that sees it down to the
//! first (`turn`): the same bits every run.

pub mod flash;
pub mod hopper;
pub mod unfused;

use crate::dev::Element;
use crate::dev::math::{fma, pack, widen};
use crate::dev::warp::{FULL_MASK, shfl_xor_f32};
use crate::dev::{In, Out, block_idx_x, grid_dim_x, index_1d, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};

/// Queries per tile of the fused steps; their turn counters (the
/// deterministic mode) are one per such tile of each head, `b heads
/// ceil(s_q / BR)`.
pub const BR: usize = 64;

/// Flag bit of the fused steps' launches: causal (bottom-right).
pub const CAUSAL: u32 = 1;
/// Flag bit of the fused steps' launches: dQ summed in a fixed order (the
/// steps' **Deterministic**), through the turn counters.
pub const DETERMINISTIC: u32 = 2;

/// The key tile of this block of a fused step's grid (`ceil(s_k / bc)`
/// key tiles along x). In the ordered mode ([`DETERMINISTIC`]) the
/// grid's first blocks take the last key tiles: each query tile's adds
/// run from the last key tile that sees it down to the first
/// ([`turn`]), so a block waits only on blocks launched before it.
#[inline(always)]
pub(crate) fn key_tile(ordered: bool) -> u32 {
    if ordered { grid_dim_x() - 1 - block_idx_x() } else { block_idx_x() }
}

/// In the ordered mode, the value of query tile `q0`'s turn counter at
/// which key tile `j` (of `tiles`, `bc` keys each) adds into it: the key
/// tiles that see it add from the last (`j_last`, the diagonal's when
/// causal) down to 0, each when the counter holds `j_last - j`, then
/// setting it to `j_last - j + 1`. Causally, the first key tile to add
/// is also the first tile of its block's walk, which waits on nobody:
/// blocks run ahead of each other along the diagonal instead of each
/// waiting on the one before it.
#[inline(always)]
pub(crate) fn turn(j: u32, q0: u32, (s_q, s_k): (u32, u32), causal: bool, (bc, tiles): (u32, u32)) -> u32 {
    let j_last = if causal {
        // The tile's last query, and the last key it sees (`j`'s block
        // visits the tile, so some of its keys are seen).
        let q = (q0 + BR as u32).min(s_q) - 1;
        ((q + s_k).saturating_sub(s_q) / bc).min(tiles - 1)
    } else {
        tiles - 1
    };
    j_last - j
}

/// Rows per block of [`attention_backward_dot()`]: one warp a row.
pub const ROWS: usize = 4;

/// The backward's first kernel: `D_i = sum_c dO_ic O_ic` for every row `i`
/// of `b h s_q`, in `f32`.
///
/// One warp per row of `d` elements: each lane multiplies and adds the
/// elements `lane, lane + 32, ...` (fused multiply-adds), then five
/// butterfly shuffles sum the 32 partial sums. A warp's loads are 64
/// consecutive bytes of each operand. The kernel reads `4 d` bytes a row
/// and writes 4: bound by DRAM, a small share of the backward's time
/// (`d` bytes for `10 s_k d` FLOPs of the products).
///
/// Launch: `o` and `d_o` hold `rows` rows of `d`, `delta` `rows`;
/// `ceil(rows / 4)` blocks of 128 threads.
/// Measured: `BENCHMARKS.md`, rows `attention_backward_dot`.
#[kernel(block = 32 * ROWS, tile = ROWS, types = [bf16, f16])]
pub fn attention_backward_dot<T: Element>(o: In<T>, d_o: In<T>, delta: Out<f32>, rows: u32, d: u32) {
    let (rows, d) = (rows as usize, d as usize);
    let lane = thread_idx_x() as usize % 32;
    let row = block_idx_x() as usize * ROWS + thread_idx_x() as usize / 32;
    if row >= rows {
        // The whole warp leaves together: no shuffle waits for it.
        return;
    }
    let mut sum = 0.0f32;
    for c in (lane..d).step_by(32) {
        // SAFETY: c < d, inside row `row` of both.
        let (x, y) = unsafe { (o.load(row * d + c), d_o.load(row * d + c)) };
        sum = fma(widen(x), widen(y), sum);
    }
    for mask in [16, 8, 4, 2, 1] {
        // SAFETY: every lane of the warp is here (the row is the warp's).
        sum += unsafe { shfl_xor_f32(FULL_MASK, sum, mask) };
    }
    if lane == 0 {
        // SAFETY: row < rows; one lane a row.
        unsafe { delta.store(row, sum) };
    }
}

/// The fused step's last kernel: `dQ = scale acc`, rounded to the input
/// type, where `acc` is the `f32` sum of `dS K` that the blocks added
/// into. One thread a pair of elements (one paired conversion, one 4-byte
/// store): 12 bytes moved for two multiplications.
///
/// Launch: `acc` and `dq` hold `n` elements, `n` even; `ceil(n / 512)`
/// blocks of 256 threads.
/// Measured: `BENCHMARKS.md`, rows `attention_backward_dq`.
#[kernel(block = 256, tile = 512, types = [bf16, f16])]
pub fn attention_backward_dq<T: Element>(acc: In<f32>, dq: Out<T>, n: u32, scale: f32) {
    let i = index_1d();
    if 2 * i < n as usize {
        // SAFETY: 2 i + 1 < n (n even), inside both.
        let (x, y) = unsafe { (acc.load(2 * i), acc.load(2 * i + 1)) };
        // SAFETY: as above; 4 bytes on 4.
        unsafe { dq.recast::<u32>().store(i, pack::<T>(x * scale, y * scale)) };
    }
}
