//! Tensor cores: the GEMM ladder continued through `mma.sync`.
//!
//! Every kernel computes `C = A B` for row-major `A` (`m x k`) and `B` (`k
//! x n`) in bf16 (their bit patterns as `u16`) and `C` (`m x n`) in `f32`,
//! accumulating in `f32`. Any `m`, `n`, `k`: edge tiles read zeros outside
//! the matrices and store only inside `C`. The device layer's `mma` module
//! says which lane holds which element of each fragment.
//!
//! FLOPs: `2 m n k`. One `m16n8k16` does 16 x 8 x 16 = 2048 multiply-adds
//! for the warp in one instruction, where the FP32 pipe takes 64 `FFMA`
//! instructions: the tensor cores' bf16 rate is an order of magnitude above
//! SGEMM's, which is why the ceiling here is cuBLAS's bf16 GEMM.

use crate::dev::mma::{a_bf16, b_bf16, c_f32, mma_bf16_m16n8k16, pack_bf16};
use crate::dev::{In, Out, SharedTile, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;

/// Block tile of [`tc_mma_bf16`]: 64 x 64 of C, 16 of k per step.
pub const BM: usize = 64;
pub const BN: usize = 64;
pub const BK: usize = 16;
/// Shared rows are padded by 8 bf16 (16 bytes), so that rows start in
/// different banks.
const PAD: usize = 8;
/// Threads: 4 warps, each a 32 x 32 warp tile of 2 x 4 `m16n8` tiles.
pub const THREADS: usize = 128;

/// Bytes of shared memory: `As[BM][BK + PAD]` then `Bs[BK][BN + PAD]`.
pub const fn shared_bytes() -> usize {
    2 * (BM * (BK + PAD) + BK * (BN + PAD))
}

/// 1. `mma.sync` with shared-memory tiles: the first tensor-core step.
///
/// Each k-step of 16 stages a 64 x 16 tile of A and a 16 x 64 tile of B in
/// shared memory (each thread 8 elements of each, zeros outside the
/// matrices), then warp `w` (a 32 x 32 quarter of C) does 2 x 4 `m16n8k16`
/// instructions: 8 x 2048 multiply-adds per warp per barrier pair,
/// against 16 two-byte shared loads per lane for the fragments
/// (assembled element by element from the lane map of the PTX ISA; the
/// next step's `ldmatrix` loads them four registers at a time).
///
/// Launch: `a` holds `m k`, `b` `k n`, `c` `m n` elements; the grid covers
/// C with 64 x 64 tiles (`tile`), 128 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16`.
#[kernel(block = THREADS, shared = shared_bytes(), tile = [BN, BM])]
pub fn tc_mma_bf16(a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread_idx_x() as usize;
    let (lane, warp) = ((t % 32) as u32, t / 32);
    let (wm, wn) = (warp / 2 * 32, warp % 2 * 32);
    let (m0, n0) = (block_idx_y() as usize * BM, block_idx_x() as usize * BN);
    // SAFETY: the declaration passes shared_bytes(): As first, Bs after.
    let a_s = unsafe { SharedTile::<u16, { BK + PAD }>::launch_sized() };
    // SAFETY: as above; the offset is a multiple of 2 bytes.
    let b_s = unsafe { SharedTile::<u16, { BN + PAD }>::launch_sized_at(2 * BM * (BK + PAD)) };
    let mut acc = [[[0.0f32; 4]; 4]; 2];

    let mut k0 = 0;
    while k0 < k {
        // A tile: thread t loads row t / 2, columns 8 (t % 2)..+8. B tile:
        // row t / 8, columns 8 (t % 8)..+8.
        for e in 0..8 {
            let (r, col) = (t / 2, 8 * (t % 2) + e);
            let (row, kk) = (m0 + r, k0 + col);
            // SAFETY: guarded: inside A, or a zero.
            let v = if row < m && kk < k { unsafe { a.load(row * k + kk) } } else { 0 };
            // SAFETY: r < BM, col < BK.
            unsafe { a_s.store(r, col, v) };
            let (r, col) = (t / 8, 8 * (t % 8) + e);
            let (kk, nn) = (k0 + r, n0 + col);
            // SAFETY: guarded: inside B, or a zero.
            let v = if kk < k && nn < n { unsafe { b.load(kk * n + nn) } } else { 0 };
            // SAFETY: r < BK, col < BN.
            unsafe { b_s.store(r, col, v) };
        }
        sync_threads();
        // (Index loops over the register arrays: LLVM keeps them in
        // registers only when every index is a constant after unrolling.)
        let mut fa = [[0u32; 4]; 2];
        for mi in 0..2 {
            for reg in 0..4 {
                let (r, col) = a_bf16(lane, 2 * reg as u32);
                let row = wm + 16 * mi + r as usize;
                // SAFETY: row < BM, col + 1 < BK.
                fa[mi][reg] =
                    unsafe { pack_bf16(a_s.load(row, col as usize), a_s.load(row, col as usize + 1)) };
            }
        }
        for ni in 0..4 {
            let mut fb = [0u32; 2];
            for reg in 0..2 {
                let (kk, col) = b_bf16(lane, 2 * reg as u32);
                let col = wn + 8 * ni + col as usize;
                // SAFETY: kk + 1 < BK, col < BN.
                fb[reg] = unsafe { pack_bf16(b_s.load(kk as usize, col), b_s.load(kk as usize + 1, col)) };
            }
            for mi in 0..2 {
                // SAFETY: every lane of every warp runs this loop alike
                // (no lane-dependent control flow around it).
                acc[mi][ni] = unsafe { mma_bf16_m16n8k16(fa[mi], fb, acc[mi][ni]) };
            }
        }
        // The tiles are rewritten by the next k-step.
        sync_threads();
        k0 += BK;
    }

    for mi in 0..2 {
        for ni in 0..4 {
            for i in 0..4 {
                let (r, col) = c_f32(lane, i as u32);
                let (row, col) = (m0 + wm + 16 * mi + r as usize, n0 + wn + 8 * ni + col as usize);
                if row < m && col < n {
                    // SAFETY: inside C; this lane's element alone.
                    unsafe { c.store(row * n + col, acc[mi][ni][i]) };
                }
            }
        }
    }
}
