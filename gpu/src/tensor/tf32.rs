//! Step 1 in tf32: `mma.sync.m16n8k8` on `f32` inputs.
//!
//! The tf32 kernels take `f32` A (`m x k`) and B transposed (`bt`, `n x
//! k`), both row-major: `C = A btᵀ`, the layout `wgmma` needs for tf32 and
//! the one the tf32 family's peer (cuBLAS TF32, "TN") runs on. The tensor
//! core reads each `f32` as tf32, dropping the low 13 mantissa bits.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::{BM, Sums, store_c};
use crate::dev::mma::{a_tf32, b_tf32, mma_tf32_m16n8k8};
use crate::dev::{In, Out, SharedTile, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use seq_macro::seq;

/// Columns of C per block: 128 (8 warps as 2 x 4 of 64 x 32).
pub const BN: usize = 128;
/// Threads: 8 warps.
pub const THREADS: usize = 256;
/// k per stage: 32 `f32`, one 128-byte row.
pub const BK: usize = 32;
/// Row stride of the staged tiles in words: 32 + 4 of padding.
const STRIDE: usize = BK + 4;
/// Words of one staged tile (A's 128 rows, or bt's 128).
const TILE: usize = BM * STRIDE;
/// Bytes of one stage: A's tile, then bt's.
const STAGE_BYTES: usize = 2 * 4 * TILE;

/// A tile of this kernel in shared memory.
type Tile = SharedTile<f32, STRIDE>;

/// Stage `s`'s tiles of A and bt.
///
/// # Safety
/// The launch passes two stages.
#[inline(always)]
unsafe fn stage(s: usize) -> (Tile, Tile) {
    // SAFETY: the caller's contract; bt's tile after A's.
    unsafe { (Tile::launch_sized_at(s * STAGE_BYTES), Tile::launch_sized_at(s * STAGE_BYTES + 4 * TILE)) }
}

/// 1, tf32: step 1 on `f32` inputs (`mma.sync.m16n8k8.tf32`), B transposed.
///
/// The structure of the bf16 step 1 before it took 64 x 64 warp tiles, with 4-byte elements: each
/// k-step of 32 stages A's 128 x 32 tile and bt's 128 x 32 in shared
/// memory (16-byte loads and stores, four of each per thread and operand,
/// when `k` is a multiple of 4; element by element, zeros outside, else),
/// prefetched into registers one k-step ahead; warp `w`, a 64 x 32 piece
/// of C, does 4 x 4 x 4 `m16n8k8` per k-step.
///
/// Fragments, register by register at the lane map's places: A register
/// `i` is row `g + 8 (i mod 2)`, column `q + 4 (i / 2)`; B register `i` is
/// bt's row `g` (n), column `q + 4 i` (k), with `g = lane / 4`, `q = lane
/// mod 4`. Rows are 36 words apart, so a fragment register's 32 lanes hit
/// banks `36 g + q = 4 g + q mod 32`: all 32 different, for A and for bt
/// alike.
///
/// Launch: `a` holds `m k`, `bt` `n k`, `c` `m n` elements; the grid covers
/// C with 128 x 128 tiles, 256 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_tf32`.
#[kernel(block = THREADS, shared = 2 * STAGE_BYTES, tile = [BN, BM])]
pub fn tc_mma_tf32(a: In<f32>, bt: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread_idx_x() as usize;
    let (lane, warp) = ((t % 32) as u32, t / 32);
    let (wm, wn) = (warp / 4 * 64, warp % 4 * 32);
    let (m0, n0) = (block_idx_y() as usize * BM, block_idx_x() as usize * BN);
    let vector = k.is_multiple_of(4);
    // Thread t's vectors of the k-step at k0: A's rows, then bt's, four
    // each (vector v = t + 256 h is row v / 8, columns 4 (v % 8)..+4).
    let load = |k0: usize| -> [[f32; 4]; 8] {
        let mut out = [[0.0f32; 4]; 8];
        seq!(H in 0..8 {{
            let h: usize = H;
            let (matrix, rows, r0) = if h < 4 { (a, m, m0) } else { (bt, n, n0) };
            let v = t + (h % 4) * THREADS;
            let (row, kk) = (r0 + v / 8, k0 + 4 * (v % 8));
            out[h] = if vector && row < rows && kk + 4 <= k {
                // SAFETY: inside the matrix; row * k + kk is a multiple of 4.
                unsafe { matrix.load_x4(row * k + kk) }
            } else {
                // SAFETY: each element guarded: inside, or a zero.
                core::array::from_fn(|e| if row < rows && kk + e < k { unsafe { matrix.load(row * k + kk + e) } } else { 0.0 })
            };
        }});
        out
    };
    // SAFETY: s < 2 stages (the declaration's); rows < 128, columns 4
    // (v % 8) + 4 <= 32, 16-byte aligned (36 r + 4 j).
    let store = |s: usize, tiles: [[f32; 4]; 8]| unsafe {
        let (sa, sb) = stage(s);
        seq!(H in 0..8 {{
            let h: usize = H;
            let v = t + (h % 4) * THREADS;
            (if h < 4 { sa } else { sb }).store_x4(v / 8, 4 * (v % 8), tiles[h]);
        }});
    };
    let mut acc: Sums<4> = [[[0.0f32; 4]; 4]; 4];
    store(0, load(0));
    sync_threads();
    let (mut k0, mut s) = (0, 0);
    while k0 < k {
        let next = load(k0 + BK);
        // SAFETY: two stages; this one was filled before the barrier.
        let (sa, sb) = unsafe { stage(s) };
        seq!(KS in 0..4 {{
            let mut fb = [[0u32; 2]; 4];
            seq!(NI in 0..4 { seq!(REG in 0..2 {{
                let (kk, col) = b_tf32(lane, REG);
                // SAFETY: bt's row wn + 8 NI + col < 128, column < 32.
                fb[NI][REG] = unsafe { sb.load(wn + 8 * NI + col as usize, 8 * KS + kk as usize) }.to_bits();
            }}); });
            seq!(MI in 0..4 {{
                let mut fa = [0u32; 4];
                seq!(REG in 0..4 {{
                    let (r, col) = a_tf32(lane, REG);
                    // SAFETY: row < 128, column < 32.
                    fa[REG] = unsafe { sa.load(wm + 16 * MI + r as usize, 8 * KS + col as usize) }.to_bits();
                }});
                seq!(NI in 0..4 {
                    // SAFETY: the whole warp, converged.
                    acc[MI][NI] = unsafe { mma_tf32_m16n8k8(fa, fb[NI], acc[MI][NI]) };
                });
            }});
        }});
        // The other stage was last read before the previous barrier.
        store(s ^ 1, next);
        sync_threads();
        (k0, s) = (k0 + BK, s ^ 1);
    }
    // SAFETY: the launch's contract: c holds m n elements.
    unsafe { store_c(c, &acc, lane, (m0 + wm, n0 + wn), (m, n), false) };
}
