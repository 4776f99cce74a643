//! SGEMM, `C = alpha * A * B + beta * C`: from one thread per element to a
//! double-buffered, warp-tiled, bank-conflict-free block tile.
//!
//! Row-major `f32`: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`. Any
//! shape: edge tiles are guarded inside the kernels (out-of-range loads
//! read 0, out-of-range stores are skipped), the user's matrices are never
//! padded. Every multiply-add is one `fma.rn.f32` (FP32, no TF32).
//! As in BLAS, `beta = 0` means `C` is not read (it may hold NaN).
//!
//! Work: `2 m n k` FLOPs. Bytes: at least `4 (m k + k n + 2 m n)`. At
//! 4096^3 that is 137 GFLOP over 0.2 GB: ~680 FLOP per byte, far beyond
//! the ~15 at which a Hopper GPU stops being memory-bound (~67 TFLOP/s of
//! FFMA over ~4.5 TB/s), so the limit is the FFMA rate and, before it, how
//! often each loaded value is reused from registers and shared memory.
//!
//! Names follow CUTLASS: the *block tile* is the part of `C` one block
//! computes (`BM x BN`, stepping through `k` by `BK`), the *warp tile* the
//! part one warp computes, the *thread tile* the part one thread holds in
//! registers.

// `seq!` unrolls loops by substituting 0, 1, ... into index arithmetic:
// `4 * H + I` with `H = 0` is intended.
#![allow(clippy::erasing_op, clippy::identity_op)]
// Loops over register arrays index them with constant-bound counters, which
// LLVM unrolls; iterator chains were not always unrolled (see `load_next`).
#![allow(clippy::needless_range_loop)]
// BLAS's signature: A, B, C, m, n, k, alpha, beta.
#![allow(clippy::too_many_arguments)]

use crate::dev::shared::tile_bytes;
use crate::dev::{
    In, Out, SharedTile, block_idx_x, block_idx_y, math::fma, sync_threads, thread_idx_x, thread_idx_y,
};
use crate::gemm::ffma::epilogue;
use crate::kernel;

mod block_tile;

use block_tile::{Steps, sgemm_block_tile};

/// Tile edge of kernels 1 and 2.
pub const TILE: usize = 32;

/// Kernel 3's block tile: 64 x 64, stepping 8 through k; each of its 512
/// threads computes 8 rows of one column.
pub const COL_BM: usize = 64;
pub const COL_BN: usize = 64;
pub const COL_BK: usize = 8;
pub const COL_TM: usize = 8;

/// The block tile of kernels 4 to 7: 128 x 128, stepping 8 through k, 256
/// threads, each with an 8 x 8 thread tile (64 accumulators).
pub const BM: usize = 128;
pub const BN: usize = 128;
pub const BK: usize = 8;
pub const THREADS: usize = 256;
/// Row stride of the transposed A tile in shared memory (`As[k][m]`):
/// 128 + 4, so that the transposing stores of a warp spread over all banks
/// (rows start 4 banks apart) while rows stay 16-byte aligned for `load_x4`.
pub const AS_STRIDE: usize = BM + 4;
/// Kernel 7's block tile is twice as wide: 128 x 256, each thread an
/// 8 x 16 thread tile (see [`sgemm_tuned()`]).
pub const WIDE_BN: usize = 256;
/// Floats in one stage of shared memory for a block tile `bn` wide: the A
/// tile (`As[k][m]`), then the B tile (`Bs[k][n]`, row stride `bn`).
pub const fn stage_floats(bn: usize) -> usize {
    BK * AS_STRIDE + BK * bn
}
/// [`stage_floats`] of the 128 x 128 block tile.
pub const STAGE: usize = stage_floats(BN);

/// The block tile kernels ask for 2 resident blocks per SM (16 warps): at
/// most 128 registers per thread. Without it ptxas uses more than 128, only
/// one block fits, and the kernels run far slower than the 128-register
/// kernel 3b.
const BLOCK_TILE_MIN_BLOCKS: u32 = 2;

/// 1. Naive: thread `(tx, ty)` computes `C[row][col]`, `row = 32 by +
/// ty`, `col = 32 bx + tx`, as a `k`-long dot product.
///
/// A warp (one `ty`, 32 `tx`) reads one `A` element, broadcast, and 32
/// consecutive `B` elements (4 sectors) per step: coalesced, but every
/// value is fetched from L1/L2 again by every thread that needs it: `2 k`
/// loads per 2 `k` FLOPs, 1 FLOP per 4 bytes loaded.
///
/// Launch (all SGEMM kernels): `a`, `b` and `c` hold `m k`, `k n` and `m n`
/// elements; the grid covers `n` x `m` with the declared tile.
/// Measured: `BENCHMARKS.md`, rows `sgemm_naive`.
#[kernel(block = [TILE, TILE])]
pub fn sgemm_naive(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let col = block_idx_x() as usize * TILE + thread_idx_x() as usize;
    let row = block_idx_y() as usize * TILE + thread_idx_y() as usize;
    if row < m && col < n {
        let mut acc = 0.0f32;
        for p in 0..k {
            // SAFETY: row < m, p < k, col < n: inside A (m k) and B (k n).
            acc = fma(unsafe { a.load(row * k + p) }, unsafe { b.load(p * n + col) }, acc);
        }
        // SAFETY: inside C (m n); element (row, col) is this thread's alone.
        unsafe { c.store(row * n + col, epilogue(acc, alpha, beta, || c.load(row * n + col))) };
    }
}

/// 2. Shared-memory tiling: the block stages a 32 x 32 tile of `A` and
/// one of `B` (one element per thread, coalesced), then each thread
/// runs 32 steps of its dot product from shared memory.
///
/// Each global element is now loaded once per block instead of once
/// per thread: 32x less global traffic. The inner loop reads
/// `As[ty][p]` (one word per warp: broadcast) and `Bs[p][tx]` (32
/// consecutive words: 32 banks), conflict-free, but still 2 shared
/// loads per FMA.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_shared`.
#[kernel(block = [TILE, TILE], shared = 2 * tile_bytes::<f32>(TILE, TILE))]
pub fn sgemm_shared(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // SAFETY: the declaration passes two 32 x 32 tiles.
    let a_tile = unsafe { SharedTile::<f32, TILE>::launch_sized() };
    // SAFETY: the second tile, within those bytes.
    let b_tile = unsafe { a_tile.offset(TILE * TILE) };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let col = block_idx_x() as usize * TILE + tx;
    let row = block_idx_y() as usize * TILE + ty;
    let mut acc = 0.0f32;
    let mut p0 = 0;
    while p0 < k {
        let (ak, bk) = (p0 + tx, p0 + ty);
        // SAFETY: the loads are guarded to lie inside A and B; (ty, tx) is
        // in the tiles and this thread's alone between the barriers.
        unsafe {
            a_tile.store(ty, tx, if row < m && ak < k { a.load(row * k + ak) } else { 0.0 });
            b_tile.store(ty, tx, if bk < k && col < n { b.load(bk * n + col) } else { 0.0 });
        }
        sync_threads();
        for p in 0..TILE {
            // SAFETY: p, tx, ty < 32: inside the tiles, stored before the barrier.
            acc = fma(unsafe { a_tile.load(ty, p) }, unsafe { b_tile.load(p, tx) }, acc);
        }
        sync_threads();
        p0 += TILE;
    }
    if row < m && col < n {
        // SAFETY: inside C; element (row, col) is this thread's alone.
        unsafe { c.store(row * n + col, epilogue(acc, alpha, beta, || c.load(row * n + col))) };
    }
}

/// 3a. Register blocking along a column: a 64 x 64 block tile, 512
/// threads, each computing 8 rows of one column (`TM = 8`).
///
/// Per step `p` a thread loads `Bs[p][col]` once into a register and
/// reuses it for 8 FMAs with `As[row0 + i][p]` (a broadcast within the
/// warp: all its lanes share `row0`): 9 shared loads per 8 FMAs instead
/// of 16.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_reg_col`.
#[kernel(
    block = COL_BM / COL_TM * COL_BN,
    shared = tile_bytes::<f32>(COL_BM, COL_BK) + tile_bytes::<f32>(COL_BK, COL_BN),
    tile = [COL_BN, COL_BM]
)]
pub fn sgemm_reg_col(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    // SAFETY: the declaration passes As[64][8] then Bs[8][64].
    let a_tile = unsafe { SharedTile::<f32, COL_BK>::launch_sized() };
    // SAFETY: Bs follows As within those bytes.
    let b_tile = unsafe { a_tile.offset(COL_BM * COL_BK) }.restride::<COL_BN>();
    let t = thread_idx_x() as usize;
    let (bm0, bn0) = (block_idx_y() as usize * COL_BM, block_idx_x() as usize * COL_BN);
    // This thread's column, and its first of 8 rows.
    let (col, row0) = (t % COL_BN, (t / COL_BN) * COL_TM);
    // Loading: 512 threads, one A element (64 x 8) and one B element (8 x 64) each.
    let (a_r, a_c) = (t / COL_BK, t % COL_BK);
    let (b_r, b_c) = (t / COL_BN, t % COL_BN);
    let mut acc = [0.0f32; COL_TM];
    let mut p0 = 0;
    while p0 < k {
        let (ar, ac) = (bm0 + a_r, p0 + a_c);
        let (br, bc) = (p0 + b_r, bn0 + b_c);
        // SAFETY: the loads are guarded to lie inside A and B; each thread
        // stores one distinct element of each tile between the barriers.
        unsafe {
            a_tile.store(a_r, a_c, if ar < m && ac < k { a.load(ar * k + ac) } else { 0.0 });
            b_tile.store(b_r, b_c, if br < k && bc < n { b.load(br * n + bc) } else { 0.0 });
        }
        sync_threads();
        for p in 0..COL_BK {
            // SAFETY: p < 8, col < 64, row0 + i < 64: inside the tiles.
            let bv = unsafe { b_tile.load(p, col) };
            for (i, acc) in acc.iter_mut().enumerate() {
                // SAFETY: as above.
                *acc = fma(unsafe { a_tile.load(row0 + i, p) }, bv, *acc);
            }
        }
        sync_threads();
        p0 += COL_BK;
    }
    let gc = bn0 + col;
    for (i, acc) in acc.iter().enumerate() {
        let gr = bm0 + row0 + i;
        if gr < m && gc < n {
            // SAFETY: inside C; (gr, gc) is this thread's alone.
            unsafe { c.store(gr * n + gc, epilogue(*acc, alpha, beta, || c.load(gr * n + gc))) };
        }
    }
}

/// The steps every 128 x 128 block tile kernel starts from.
const PLAIN: Steps = Steps {
    vector: false,
    double_buffer: false,
    warp_tiled: false,
    swizzle: false,
    async_copy: false,
    wide: false,
};

/// 3b. Register blocking in 2-D: the 128 x 128 block tile, each thread
/// an 8 x 8 thread tile (contiguous), scalar loads in the source. Each
/// fragment value is reused 8 times from a register: 16 shared loads
/// per 64 FMAs. (LLVM's load-store vectoriser merges each four
/// consecutive 4-byte fragment loads into one `ld.shared.v4`, since
/// the tile is 16-byte aligned: the SASS has `LDS.128` here too.)
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_reg_2d`.
#[kernel(block = THREADS, shared = 4 * STAGE, tile = [BN, BM], min_blocks = BLOCK_TILE_MIN_BLOCKS)]
pub fn sgemm_reg_2d(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    const STEPS: Steps = PLAIN;
    // SAFETY: the launch's contract (A, B, C hold m k, k n, m n), and the
    // declaration passes one stage of shared memory.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}

/// 4. The seed's starting point: 3b with 16-byte loads, `ld.global.v4`
/// from A and B, `ld.shared.v4` for the fragments (4 per 64 FMAs).
///
/// The fragment reads are no change from 3b, whose `LDS.128` the
/// compiler already made (see 3b); what this kernel adds is 16-byte
/// global loads. Both pay the same bank conflicts: in the contiguous
/// layout a warp's `Bs` fragment read is 16 distinct 16-byte words 32
/// bytes apart, which land on 4 bank groups (5 wavefronts per load
/// instead of 3 in ncu's count). Kernel 6 removes that.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_vec4`.
#[kernel(block = THREADS, shared = 4 * STAGE, tile = [BN, BM], min_blocks = BLOCK_TILE_MIN_BLOCKS)]
pub fn sgemm_vec4(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    const STEPS: Steps = Steps { vector: true, ..PLAIN };
    // SAFETY: as in kernel 3b.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}

/// 5. Double buffering: two shared stages; the next k-step's global
/// loads go out before this step's FMAs and land in the other stage
/// after them. One barrier per k-step instead of two, and the global
/// latency hides behind 512 FMAs per thread.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_double_buffer`.
#[kernel(block = THREADS, shared = 2 * 4 * STAGE, tile = [BN, BM], min_blocks = BLOCK_TILE_MIN_BLOCKS)]
pub fn sgemm_double_buffer(
    a: In<f32>,
    b: In<f32>,
    c: Out<f32>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    const STEPS: Steps = Steps { vector: true, double_buffer: true, ..PLAIN };
    // SAFETY: as in kernel 3b, with two stages.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}

/// 6. Warp tiling: kernel 5 with the thread tile split into four 4 x 4
/// blocks (see `thread_tile_origin`), removing the bank conflicts of
/// the `Bs` fragment reads. Its interior k-loop should be nearly all
/// FFMA: 512 per k-step against a few dozen loads and address updates,
/// at 128 registers and no spills (`cpu/tests/ptx.rs` checks the counts).
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_warp_tiled`.
#[kernel(block = THREADS, shared = 2 * 4 * STAGE, tile = [BN, BM], min_blocks = BLOCK_TILE_MIN_BLOCKS)]
pub fn sgemm_warp_tiled(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    const STEPS: Steps = Steps { vector: true, double_buffer: true, warp_tiled: true, ..PLAIN };
    // SAFETY: as in kernel 5.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}

/// 7. Kernel 6 with the blocks launched in groups of 8 block rows (see
/// `block_origin`) for L2 reuse of the A and B panels. With 2 blocks per
/// SM the plain order's working set may already stay in the 50 MB L2, in
/// which case the swizzle is neutral. (`docs/notes.md` lists the other
/// ideas tried for this step and what they cost.)
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_tuned`.
#[kernel(block = THREADS, shared = 2 * 4 * STAGE, tile = [BN, BM], min_blocks = BLOCK_TILE_MIN_BLOCKS)]
pub fn sgemm_tuned(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    const STEPS: Steps =
        Steps { vector: true, double_buffer: true, warp_tiled: true, swizzle: true, ..PLAIN };
    // SAFETY: as in kernel 5.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}

/// The steps of the 128 x 256 block tile kernels.
const WIDE: Steps =
    Steps { vector: true, double_buffer: true, warp_tiled: true, swizzle: true, wide: true, ..PLAIN };

/// 7b. cuBLAS's own shape for this problem (its FP32 SGEMM kernel for
/// these sizes is `sm80_xmma_gemm_..._tilesize256x128x8_...`, one block of
/// 256 threads per SM; its 256 runs along our `n`): kernel 7 with a 128 x 256 block
/// tile and 8 x 16 thread tiles, 128 accumulators per thread. Per k-step
/// and thread: 6 fragment loads per 128 FMAs instead of 4 per 64. With
/// one block of 8 warps per SM (2 per scheduler), a stall of one warp is
/// covered by one other: how well ptxas schedules the loop decides whether
/// the better ratio pays.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_wide`.
#[kernel(
    block = THREADS,
    shared = 2 * 4 * stage_floats(WIDE_BN),
    tile = [WIDE_BN, BM],
    min_blocks = 1
)]
pub fn sgemm_wide(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    // SAFETY: as in kernel 5, with two 256-wide stages.
    unsafe { sgemm_block_tile::<{ WIDE.bn() }>(WIDE, a, b, c, m, n, k, alpha, beta) }
}

/// 7c. Kernel 7b with `cp.async`: the tiles go straight from global to
/// shared memory (see `main_loop_async`). The transposed `A` tile needs
/// 4-byte copies, four `LDGSTS` per thread per k-step, against one 16-byte
/// load and four shared stores without `cp.async`.
///
/// Measured: `BENCHMARKS.md`, rows `sgemm_wide_async`.
#[kernel(
    block = THREADS,
    shared = 2 * 4 * stage_floats(WIDE_BN),
    tile = [WIDE_BN, BM],
    min_blocks = 1
)]
pub fn sgemm_wide_async(a: In<f32>, b: In<f32>, c: Out<f32>, m: u32, n: u32, k: u32, alpha: f32, beta: f32) {
    const STEPS: Steps = Steps { async_copy: true, ..WIDE };
    // SAFETY: as in kernel 7b.
    unsafe { sgemm_block_tile::<{ STEPS.bn() }>(STEPS, a, b, c, m, n, k, alpha, beta) }
}
