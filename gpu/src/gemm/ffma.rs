//! GEMM at every shape and layout: the kernels behind the host's BLAS-style
//! `sgemm` (`cpu/src/blas/`): the FFMA library kernel, which the SGEMM
//! ladder's steps share their epilogue and tile order with.
//!
//! The host reduces every BLAS call to one row-major problem,
//! `C = alpha op(A) op(B) + beta C` with `C` `m x n` (row stride `ldc`),
//! `op(A)` `m x k` and `op(B)` `k x n`. A column-major call is the same
//! call on the transposes (`Cᵀ = op(B)ᵀ op(A)ᵀ`: A and B swap, their ops
//! stay), so the kernels see four cases, named by the ops as stored
//! row-major:
//!
//! | op | `op(A)[i][p]` | `op(B)[p][j]` |
//! | --- | --- | --- |
//! | N | `a[i lda + p]` (k contiguous) | `b[p ldb + j]` (n contiguous) |
//! | T | `a[p lda + i]` (m contiguous) | `b[j ldb + p]` (k contiguous) |
//!
//! Every kernel is the warp-tiled, double-buffered block tile of
//! `sgemm_warp_tiled` (see `gpu::sgemm`), generalised three ways:
//!
//! - **Operands as panels.** Each k-step stages an `8 x BM` panel of
//!   `op(A)` and an `8 x BN` panel of `op(B)` in shared memory, both k-major
//!   (`As[p][i]`, `Bs[p][j]`), whatever the storage: a panel whose source
//!   is contiguous along m or n (A^T, B) is copied row by row with 16-byte
//!   loads and stores; one contiguous along k (A, B^T) is loaded 4 k-values
//!   at a time and stored transposed. Rows are padded by 4 words, so the
//!   transposing stores of a warp (lanes `2 j` and `2 j + 1` write rows `q`
//!   and `q + 4`, column `j`) fall `4 (BM + 4) = 16 mod 32` banks apart:
//!   32 distinct banks.
//! - **Block tiles** of `BM x BN` for BM in {64, 128}, BN in {64, 128}: one
//!   warp per 64 x 32 warp tile, each thread an 8 x 8 thread tile (lane `l`
//!   at `(l / 4, l % 4)` of an 8 x 4 grid of 4 x 4 blocks, repeated at +32
//!   rows and +16 columns: conflict-free fragment reads, as in kernel 6).
//!   Per k-step a thread does 512 FMAs against 4 16-byte fragment loads
//!   per `p`, at any tile size; smaller tiles give more blocks.
//! - **Split-K.** Block `z` of the grid sums only `k` range
//!   `z k_chunk..(z + 1) k_chunk`, and writes its raw sums to slice `z` of a
//!   workspace (`c` plus `z c_split` elements, `alpha = 1`, `beta = 0`);
//!   [`gemm_split_reduce()`] then adds the slices in order `0, 1, ...` and
//!   applies `alpha` and `beta`. The order is fixed, so the result is the
//!   same bits run after run, unlike atomics.
//!
//! Aligned operands (`lda`, `ldb` multiples of 4, and m or n too for an
//! operand contiguous along it) run a main loop with no range checks at
//! all: rows and columns past the matrix are clamped to its last ones,
//! whose products land only in sums the epilogue does not store, and a
//! partial last k-step (k not a multiple of 8) is done first, with checks.
//! Other operands run the checked loop, which reads zeros outside the
//! matrices and uses 16-byte loads only where the four elements exist and
//! are aligned. Which tile and how many splits a shape gets is the host's
//! choice (`cpu/src/blas/plan.rs` explains the arithmetic).

// `seq!` unrolls loops by substituting 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]
// Register arrays are indexed by constant-bound counters, which LLVM
// unrolls; iterator chains over them were not always unrolled.
#![allow(clippy::needless_range_loop)]
// BLAS's signature.
#![allow(clippy::too_many_arguments)]

use crate::dev::{In, Out, SharedTile, block_idx_z, math::fma, sync_threads, thread_idx_x};
use crate::dev::{block_idx_x, block_idx_y};
use crate::kernel;
use seq_macro::seq;

/// Rows of blocks per group of `grouped_block_origin`'s launch order.
pub const SWIZZLE_GROUP: usize = 8;

/// `alpha * acc + beta * old`, not reading `old` when `beta` is 0.
#[inline(always)]
pub(crate) fn epilogue(acc: f32, alpha: f32, beta: f32, old: impl FnOnce() -> f32) -> f32 {
    if beta == 0.0 { alpha * acc } else { fma(beta, old(), alpha * acc) }
}

/// [`epilogue`] on the 4 elements of C at `at..at + 4`: one 16-byte load
/// (none when `beta` is 0) and one 16-byte store.
///
/// # Safety
/// The 4 elements lie inside C, `at` is a multiple of 4, and they are this
/// thread's alone.
#[inline(always)]
pub(crate) unsafe fn epilogue4(c: &Out<f32>, at: usize, v: [f32; 4], alpha: f32, beta: f32) {
    // SAFETY: the caller's contract.
    let old = if beta == 0.0 { [0.0; 4] } else { unsafe { c.load_x4(at) } };
    let out = [
        epilogue(v[0], alpha, beta, || old[0]),
        epilogue(v[1], alpha, beta, || old[1]),
        epilogue(v[2], alpha, beta, || old[2]),
        epilogue(v[3], alpha, beta, || old[3]),
    ];
    // SAFETY: as above.
    unsafe { c.store_x4(at, out) };
}

/// The grouped order of `bm x bn` block tiles: block
/// `(x, y)` of the grid, taken in launch order, computes the tile at
/// `(first row, first column)` walking down groups of [`SWIZZLE_GROUP`]
/// block rows.
#[inline(always)]
pub(crate) fn grouped_block_origin(bm: usize, bn: usize) -> (usize, usize) {
    let (bx, by) = (block_idx_x(), block_idx_y());
    // In u32 (block counts fit): fewer 64-bit registers at the 128 cap.
    let (gx, gy) = (crate::dev::grid_dim_x(), crate::dev::grid_dim_y());
    let group = SWIZZLE_GROUP as u32;
    let id = by * gx + bx;
    // The divisors are never 0; `max(1)`/`clamp(1, ..)` tell the compiler
    // so, and no division-by-zero panic path is compiled in.
    let per_group = (group * gx).max(1);
    let first_row = id / per_group * group;
    let rows = gy.saturating_sub(first_row).clamp(1, group);
    let within = id % per_group;
    ((first_row + within % rows) as usize * bm, (within / rows) as usize * bn)
}

/// k-values per k-step.
pub const BK: usize = 8;
/// Words of padding after each shared panel row.
pub const PAD: usize = 4;

/// Threads of a `bm x bn` block tile: one warp per 64 x 32 warp tile.
pub const fn threads(bm: usize, bn: usize) -> usize {
    (bm / 64) * (bn / 32) * 32
}

/// Floats in one shared stage: `As[BK][bm + PAD]`, then `Bs[BK][bn + PAD]`.
pub const fn stage_floats(bm: usize, bn: usize) -> usize {
    BK * (bm + PAD) + BK * (bn + PAD)
}

/// Bytes of shared memory of a `bm x bn` block tile: two stages.
pub const fn shared_bytes(bm: usize, bn: usize) -> usize {
    2 * 4 * stage_floats(bm, bn)
}

/// 16-byte vectors of one panel (`E` wide, `BK` deep) per thread of `T`.
const fn vectors(e: usize, t: usize) -> usize {
    e * BK / (4 * t)
}

/// One thread's share of staging an operand's `BK x E` panel each k-step:
/// `vectors(E, T)` (1 or 2) groups of 4 elements.
///
/// - `KMAJOR` (A, or B^T): group `v` is row `e0 + t / 2 + v T / 2` of the
///   stored matrix at k-offset `4 (t % 2)`: 4 consecutive k-values, stored
///   transposed into column `t / 2 + v T / 2` of the panel.
/// - otherwise (A^T, or B): group `v` is k-row `t / (E / 4) + v T / (E / 4)`
///   at columns `e0 + 4 (t % (E / 4))..+4`, stored as one 16-byte word.
///
/// It holds one pointer, advanced one k-step at a time, and the range facts
/// that do not change along k.
#[derive(Clone, Copy)]
struct Panel<const E: usize, const T: usize, const KMAJOR: bool> {
    /// This thread's first element of the current k-step.
    at: In<f32>,
    /// Elements from one k-step to the next: `BK` (k-major) or `BK ld`.
    /// (32-bit, as is `between`: at the 128-register cap a 64-bit stride
    /// costs a register the k loop needs; the host checks they fit.)
    step: u32,
    /// Elements between this thread's two groups.
    between: u32,
    /// Groups whose m/n row exists (k-major), or columns of the 4 that
    /// exist (otherwise). (The checked loop's arithmetic is 32-bit, k fits.)
    whole: u32,
    /// 16-byte loads are allowed: `ld` is a multiple of 4.
    aligned: bool,
}

impl<const E: usize, const T: usize, const KMAJOR: bool> Panel<E, T, KMAJOR> {
    const V: usize = vectors(E, T);
    /// Panel rows (k-major: columns) between a thread's groups.
    const GROUP_STRIDE: usize = if KMAJOR { T / 2 } else { T / (E / 4) };

    /// The panel of the block tile starting at `e0` (along m or n, whose
    /// extent is `extent`), from k-value `k0`, of a matrix stored with row
    /// stride `ld`.
    #[inline(always)]
    fn new(x: In<f32>, ld: usize, extent: usize, e0: usize, k0: usize, t: usize) -> Self {
        let (line, offset) = Self::origin(t);
        // Rows and columns past the matrix are clamped to its last ones: the
        // unchecked loop then reads real elements there, whose products land
        // only in accumulators the epilogue does not store. (The checked
        // loop reads only existing elements, which clamping leaves alone.)
        if KMAJOR {
            let row = e0 + line;
            let whole = if row >= extent { 0 } else { (extent - row).div_ceil(Self::GROUP_STRIDE) as u32 };
            let last = extent.max(1) - 1;
            let (first, second) = (row.min(last), (row + Self::GROUP_STRIDE).min(last));
            Panel {
                at: x.wrapping_offset(first * ld + k0 + offset),
                step: BK as u32,
                between: ((second - first) * ld) as u32,
                whole,
                aligned: ld.is_multiple_of(4),
            }
        } else {
            let col = e0 + offset;
            let clamped = if extent.is_multiple_of(4) && extent >= 4 { col.min(extent - 4) } else { col };
            Panel {
                at: x.wrapping_offset((k0 + line) * ld + clamped),
                step: (BK * ld) as u32,
                between: (Self::GROUP_STRIDE * ld) as u32,
                whole: extent.saturating_sub(col).min(4) as u32,
                aligned: ld.is_multiple_of(4),
            }
        }
    }

    /// Where thread `t`'s first group lies in the panel: k-major `(m/n row,
    /// k offset)`, otherwise `(k row, m/n column)`.
    #[inline(always)]
    fn origin(t: usize) -> (usize, usize) {
        if KMAJOR { (t / 2, 4 * (t % 2)) } else { (t / (E / 4), 4 * (t % (E / 4))) }
    }

    /// The same panel `steps` k-steps further on.
    #[inline(always)]
    fn ahead(&self, steps: u32) -> Self {
        Panel { at: self.at.wrapping_offset(steps as usize * self.step as usize), ..*self }
    }

    /// This k-step's groups (the one `at` points to, whose k-values start at
    /// `p0`; the range ends at `k_end`), then moves on. Zeros outside the
    /// matrix; `CHECKED = false` is for aligned operands (no checks at all; rows and
    /// columns past the matrix are clamped in [`Panel::new`]).
    ///
    /// # Safety
    /// The matrix holds every element of its stored extent that a check
    /// admits; with `CHECKED = false` every element of this panel (clamped)
    /// exists and `aligned` holds.
    #[inline(always)]
    unsafe fn load<const CHECKED: bool>(&mut self, p0: u32, k_end: u32, t: usize) -> [[f32; 4]; 2] {
        let x = self.at;
        self.at = self.at.wrapping_offset(self.step as usize);
        let mut out = [[0.0f32; 4]; 2];
        let (line, offset) = Self::origin(t);
        let (line, offset) = (line as u32, offset as u32);
        for v in 0..Self::V {
            let g = x.wrapping_offset(v * self.between as usize);
            if !CHECKED {
                // SAFETY: aligned operands, whole k-steps, clamped rows and columns (the caller's contract).
                out[v] = unsafe { g.load_x4(0) };
                continue;
            }
            if KMAJOR {
                let kq = p0 + offset;
                if v as u32 >= self.whole {
                    continue;
                }
                if self.aligned && kq + 4 <= k_end {
                    // SAFETY: the row exists (v < whole), its k-values kq..kq + 4 too, and
                    // `aligned`: ld and kq are multiples of 4.
                    out[v] = unsafe { g.load_x4(0) };
                } else {
                    for i in 0..4 {
                        if kq + (i as u32) < k_end {
                            // SAFETY: the row exists and k-value kq + i < k_end.
                            out[v][i] = unsafe { g.load(i) };
                        }
                    }
                }
            } else {
                if p0 + line + (v * Self::GROUP_STRIDE) as u32 >= k_end {
                    continue;
                }
                if self.aligned && self.whole == 4 {
                    // SAFETY: the k-row exists, all four columns exist, aligned.
                    out[v] = unsafe { g.load_x4(0) };
                } else {
                    for j in 0..4 {
                        if (j as u32) < self.whole {
                            // SAFETY: the k-row exists and column j does.
                            out[v][j] = unsafe { g.load(j) };
                        }
                    }
                }
            }
        }
        out
    }

    /// Stores loaded groups into the panel (`S = E + PAD` words per k-row).
    ///
    /// # Safety
    /// `panel` is this operand's panel of a stage no thread reads before
    /// the next barrier.
    #[inline(always)]
    unsafe fn store<const S: usize>(panel: SharedTile<f32, S>, t: usize, groups: [[f32; 4]; 2]) {
        let (line, offset) = Self::origin(t);
        for v in 0..Self::V {
            let line = line + v * Self::GROUP_STRIDE;
            if KMAJOR {
                for i in 0..4 {
                    // SAFETY: k-row offset + i < BK, column line < E: inside the panel, and this
                    // thread's own element.
                    unsafe { panel.store(offset + i, line, groups[v][i]) };
                }
            } else {
                // SAFETY: k-row line < BK, columns offset..+4 < E, 16-byte aligned (S and
                // offset are multiples of 4): this thread's own word.
                unsafe { panel.store_x4(line, offset, groups[v]) };
            }
        }
    }
}

/// Everything a block tile kernel is given, widened to `usize`.
#[derive(Clone, Copy)]
struct FfmaArgs {
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
    alpha: f32,
    beta: f32,
    /// k-values per split (`k` without split-K).
    k_chunk: usize,
    /// Elements between the slices of `c` that split `z` writes.
    c_split: usize,
}

/// The `BM x BN` block tile over the problem, for operands stored
/// k-contiguous (`A_KMAJOR`: op(A) = N; `B_KMAJOR`: op(B) = T) or not, with `SA = BM + PAD` and `SB = BN + PAD` (passed because a
/// const generic cannot be computed from another).
///
/// # Safety
/// `a`, `b` hold every element of op(A) and op(B) at their leading
/// dimensions, `c` every element of the `m x n` tile rows at `ldc` in
/// each of the grid's `z` slices; the grid covers C with `BM x BN` tiles
/// and k with `k_chunk` ranges (a multiple of `BK` when more than one);
/// the launch passes [`shared_bytes`]`(BM, BN)` and
/// [`threads`]`(BM, BN)` threads.
#[inline(always)]
unsafe fn block_tile<
    const A_KMAJOR: bool,
    const B_KMAJOR: bool,
    const BM: usize,
    const BN: usize,
    const SA: usize,
    const SB: usize,
    const THREADS: usize,
>(
    a: In<f32>,
    b: In<f32>,
    c: Out<f32>,
    p: FfmaArgs,
) {
    const { assert!(SA == BM + PAD && SB == BN + PAD && THREADS == threads(BM, BN)) };
    let t = thread_idx_x() as usize;
    let (bm0, bn0) = grouped_block_origin(BM, BN);
    let z = block_idx_z() as usize;
    let k0 = z * p.k_chunk;
    let k_end = p.k.min(k0 + p.k_chunk);

    // Thread tile: warps as (BM / 64) x (BN / 32) warp tiles of 64 x 32.
    let (warp, lane) = (t / 32, t % 32);
    let (wm, wn) = (warp / (BN / 32), warp % (BN / 32));
    let (r0, c0) = (wm * 64 + (lane / 4) * 4, wn * 32 + (lane % 4) * 4);

    let a_panel = Panel::<BM, THREADS, A_KMAJOR>::new(a, p.lda, p.m, bm0, k0, t);
    let b_panel = Panel::<BN, THREADS, B_KMAJOR>::new(b, p.ldb, p.n, bn0, k0, t);
    // SAFETY: the launch passes two stages (the caller's contract).
    let first = unsafe { SharedTile::<f32, SA>::launch_sized() };
    // The unchecked loop needs 16-byte loads everywhere (leading dimensions
    // multiples of 4) and, for an operand contiguous along m or n, whole
    // groups of 4 columns (that extent a multiple of 4) so that clamping
    // keeps them aligned. It runs every whole k-step; a last partial one
    // is checked.
    let unchecked = p.lda.is_multiple_of(4)
        && p.ldb.is_multiple_of(4)
        && (A_KMAJOR || p.m.is_multiple_of(4))
        && (B_KMAJOR || p.n.is_multiple_of(4))
        && (p.k_chunk.is_multiple_of(BK) || p.k_chunk >= p.k);
    let length = k_end.saturating_sub(k0);
    let steps = if unchecked { length / BK } else { length.div_ceil(BK) } as u32;
    let (k0, k_end) = (k0 as u32, k_end as u32);
    let acc = if unchecked {
        // SAFETY: aligned operands (checked above), clamped rows and columns; the caller's contract.
        unsafe {
            main_loop::<false, A_KMAJOR, B_KMAJOR, BM, BN, SA, SB, THREADS>(
                a_panel, b_panel, first, steps, k0, k_end, t, r0, c0,
            )
        }
    } else {
        // SAFETY: the caller's contract; every load is checked.
        unsafe {
            main_loop::<true, A_KMAJOR, B_KMAJOR, BM, BN, SA, SB, THREADS>(
                a_panel, b_panel, first, steps, k0, k_end, t, r0, c0,
            )
        }
    };

    // Recomputed after the loop rather than kept live through it.
    let z = block_idx_z() as usize;
    let c_z = z * p.c_split;
    let vector = p.ldc.is_multiple_of(4) && p.c_split.is_multiple_of(4);
    seq!(H in 0..2 { seq!(I in 0..4 { seq!(G in 0..2 {{
        let row = bm0 + r0 + H * 32 + I;
        let col = bn0 + c0 + G * 16;
        if row < p.m {
            let v = [acc[4 * H + I][4 * G], acc[4 * H + I][4 * G + 1], acc[4 * H + I][4 * G + 2], acc[4 * H + I][4 * G + 3]];
            let at = c_z + row * p.ldc + col;
            if vector && col + 4 <= p.n {
                // SAFETY: row < m, col + 4 <= n, aligned (ldc, c_split, col multiples of 4): these 4 elements are this thread's.
                unsafe { epilogue4(&c, at, v, p.alpha, p.beta) };
            } else {
                for j in 0..4 {
                    if col + j < p.n {
                        // SAFETY: row < m and col + j < n; this element is this thread's.
                        unsafe { c.store(at + j, epilogue(v[j], p.alpha, p.beta, || c.load(at + j))) };
                    }
                }
            }
        }
    }}); }); });
}

/// A thread's sums: its 8 x 8 thread tile.
type Accumulators = [[f32; 8]; 8];

/// The k loop: stage 0 filled first; then each step prefetches the next
/// panels into registers, multiplies the current stage, stores the
/// prefetched panels into the other stage, and passes one barrier.
///
/// # Safety
/// As for [`block_tile`]; `CHECKED = false` only for aligned operands (see
/// its `unchecked`), with `steps` the whole k-steps.
#[inline(always)]
unsafe fn main_loop<
    const CHECKED: bool,
    const A_KMAJOR: bool,
    const B_KMAJOR: bool,
    const BM: usize,
    const BN: usize,
    const SA: usize,
    const SB: usize,
    const THREADS: usize,
>(
    mut a_panel: Panel<BM, THREADS, A_KMAJOR>,
    mut b_panel: Panel<BN, THREADS, B_KMAJOR>,
    first: SharedTile<f32, SA>,
    steps: u32,
    k0: u32,
    k_end: u32,
    t: usize,
    r0: usize,
    c0: usize,
) -> Accumulators {
    // SAFETY: two stages of stage_floats(BM, BN) (the caller's contract).
    let a_stage = |s: usize| unsafe { first.offset(s * stage_floats(BM, BN)) };
    // SAFETY: the B panel follows the A panel within a stage.
    let b_stage = |s: usize| unsafe { a_stage(s).offset(BK * SA) }.restride::<SB>();
    let mut acc = [[0.0f32; 8]; 8];
    // The unchecked loop runs the whole k-steps. A partial last one (k not
    // a multiple of 8) is done first, with checks, in stage 1: what the
    // checks need is then dead before the loop, which keeps the loop at
    // the 128-register cap without spilling.
    let tail = k0 + steps * BK as u32;
    if !CHECKED && tail < k_end {
        let (mut a_tail, mut b_tail) = (a_panel.ahead(steps), b_panel.ahead(steps));
        // SAFETY: checked loads; the caller's contract otherwise.
        let (av, bv) = unsafe { (a_tail.load::<true>(tail, k_end, t), b_tail.load::<true>(tail, k_end, t)) };
        // SAFETY: nobody reads stage 1 before the barrier below.
        unsafe {
            Panel::<BM, THREADS, A_KMAJOR>::store(a_stage(1), t, av);
            Panel::<BN, THREADS, B_KMAJOR>::store(b_stage(1), t, bv);
        }
        sync_threads();
        // SAFETY: filled and published by the barrier above. The loop writes stage 1 again only
        // after its first barrier, which every thread passes after these reads.
        unsafe { multiply_stage::<SA, SB>(&mut acc, a_stage(1), b_stage(1), r0, c0) };
    }
    if steps > 0 {
        // SAFETY: the caller's contract.
        let (av, bv) =
            unsafe { (a_panel.load::<CHECKED>(k0, k_end, t), b_panel.load::<CHECKED>(k0, k_end, t)) };
        // SAFETY: stage 0, read by nobody before the barrier below.
        unsafe {
            Panel::<BM, THREADS, A_KMAJOR>::store(a_stage(0), t, av);
            Panel::<BN, THREADS, B_KMAJOR>::store(b_stage(0), t, bv);
        }
        sync_threads();
        for s in 0..steps {
            let cur = (s % 2) as usize;
            let next = s + 1 < steps;
            let p0 = k0 + (s + 1) * BK as u32;
            let mut prefetched = ([[0.0f32; 4]; 2], [[0.0f32; 4]; 2]);
            // Interior tiles load the next panels before the FMAs, so their
            // latency hides behind them; edge tiles load after, which keeps the
            // prefetched registers out of the FMA block (the checks use more
            // registers, and at the 128-register cap both would spill).
            if next && !CHECKED {
                // SAFETY: the caller's contract.
                prefetched =
                    unsafe { (a_panel.load::<CHECKED>(p0, k_end, t), b_panel.load::<CHECKED>(p0, k_end, t)) };
            }
            // SAFETY: the stage was filled and published before the last barrier.
            unsafe { multiply_stage::<SA, SB>(&mut acc, a_stage(cur), b_stage(cur), r0, c0) };
            if next {
                if CHECKED {
                    // SAFETY: the caller's contract.
                    prefetched = unsafe {
                        (a_panel.load::<CHECKED>(p0, k_end, t), b_panel.load::<CHECKED>(p0, k_end, t))
                    };
                }
                // SAFETY: the other stage was last read before the previous barrier; nobody reads it
                // before the barrier below.
                unsafe {
                    Panel::<BM, THREADS, A_KMAJOR>::store(a_stage(cur ^ 1), t, prefetched.0);
                    Panel::<BN, THREADS, B_KMAJOR>::store(b_stage(cur ^ 1), t, prefetched.1);
                }
            }
            sync_threads();
        }
    }
    acc
}

/// One k-step's products: for each `p` < 8, this thread's 8 `As` and 8
/// `Bs` values (four 16-byte loads) and their 64 FMAs.
///
/// # Safety
/// Both panels are filled; `r0 + 36 <= BM`, `c0 + 20 <= BN`, multiples of 4.
#[inline(always)]
unsafe fn multiply_stage<const SA: usize, const SB: usize>(
    acc: &mut Accumulators,
    a_tile: SharedTile<f32, SA>,
    b_tile: SharedTile<f32, SB>,
    r0: usize,
    c0: usize,
) {
    seq!(P in 0..8 {{
        // SAFETY: row P < BK of filled panels; the columns lie inside them, 16-byte aligned
        // (SA, SB, r0, c0 multiples of 4): the caller's contract.
        let (a_lo, a_hi, b_lo, b_hi) = unsafe {
            (a_tile.load_x4(P, r0), a_tile.load_x4(P, r0 + 32), b_tile.load_x4(P, c0), b_tile.load_x4(P, c0 + 16))
        };
        let af = [a_lo[0], a_lo[1], a_lo[2], a_lo[3], a_hi[0], a_hi[1], a_hi[2], a_hi[3]];
        let bf = [b_lo[0], b_lo[1], b_lo[2], b_lo[3], b_hi[0], b_hi[1], b_hi[2], b_hi[3]];
        seq!(I in 0..8 { seq!(J in 0..8 {
            acc[I][J] = fma(af[I], bf[J], acc[I][J]);
        }); });
    }});
}

/// Declares one block tile kernel per line: name, tile, storage ops, and the
/// resident blocks per SM asked of ptxas: 2 for 256 threads (at most 128
/// registers a thread, 16 warps per SM), 3 for 128 and 6 for 64 (up to
/// ~170 registers, where the 128 cap spilled).
macro_rules! block_tile_kernels {
    ($($name:ident: $bm:literal x $bn:literal, $ta:literal $tb:literal, min_blocks $min:literal;)*) => {$(
        #[doc = concat!(
            "`C = alpha op(A) op(B) + beta C` with ", stringify!($bm), " x ", stringify!($bn),
            " block tiles, ops ", stringify!($ta), "/", stringify!($tb),
            " (true: T); split-K when the grid has z > 1 (see the module documentation)."
        )]
        #[kernel(
            block = threads($bm, $bn),
            shared = shared_bytes($bm, $bn),
            tile = [$bn, $bm],
            min_blocks = $min
        )]
        pub fn $name(
            a: In<f32>,
            b: In<f32>,
            c: Out<f32>,
            m: u32,
            n: u32,
            k: u32,
            lda: u32,
            ldb: u32,
            ldc: u32,
            alpha: f32,
            beta: f32,
            k_chunk: u32,
            c_split: u64,
        ) {
            let p = FfmaArgs {
                m: m as usize,
                n: n as usize,
                k: k as usize,
                lda: lda as usize,
                ldb: ldb as usize,
                ldc: ldc as usize,
                alpha,
                beta,
                k_chunk: k_chunk as usize,
                c_split: c_split as usize,
            };
            // SAFETY: the launch's contract (see `block_tile`), which the host's `sgemm` checks.
            unsafe {
                block_tile::<{ !$ta }, $tb, $bm, $bn, { $bm + PAD }, { $bn + PAD }, { threads($bm, $bn) }>(a, b, c, p)
            }
        }
    )*};
}

block_tile_kernels! {
    gemm_128x128_nn: 128 x 128, false false, min_blocks 2;
    gemm_128x128_nt: 128 x 128, false true, min_blocks 2;
    gemm_128x128_tn: 128 x 128, true false, min_blocks 2;
    gemm_128x128_tt: 128 x 128, true true, min_blocks 2;
    gemm_128x64_nn: 128 x 64, false false, min_blocks 3;
    gemm_128x64_nt: 128 x 64, false true, min_blocks 3;
    gemm_128x64_tn: 128 x 64, true false, min_blocks 3;
    gemm_128x64_tt: 128 x 64, true true, min_blocks 3;
    gemm_64x128_nn: 64 x 128, false false, min_blocks 3;
    gemm_64x128_nt: 64 x 128, false true, min_blocks 3;
    gemm_64x128_tn: 64 x 128, true false, min_blocks 3;
    gemm_64x128_tt: 64 x 128, true true, min_blocks 3;
    gemm_64x64_nn: 64 x 64, false false, min_blocks 6;
    gemm_64x64_nt: 64 x 64, false true, min_blocks 6;
    gemm_64x64_tn: 64 x 64, true false, min_blocks 6;
    gemm_64x64_tt: 64 x 64, true true, min_blocks 6;
}

/// Threads per block of the element-wise kernels below.
pub const ELEMENTWISE: usize = 256;

/// The last step of split-K: `C = alpha (W_0 + W_1 + ... ) + beta C`, with
/// `W_z` the `m x n` slice `z` of `w` (packed, `m n` elements apart). One
/// thread per element of C; a warp reads 128 consecutive bytes of each
/// slice (4 sectors) and writes 32 consecutive elements of a row of C. The
/// slices are added in order, so the bits do not depend on the schedule.
/// `2 (splits + 1) m n` words move for `splits m n` adds: memory-bound.
#[kernel(block = ELEMENTWISE, tile = ELEMENTWISE)]
pub fn gemm_split_reduce(
    w: In<f32>,
    c: Out<f32>,
    m: u32,
    n: u32,
    ldc: u32,
    splits: u32,
    alpha: f32,
    beta: f32,
) {
    let (m, n) = (m as usize, n as usize);
    let i = crate::dev::index_1d();
    if i >= m * n {
        return;
    }
    let mut sum = 0.0f32;
    for z in 0..splits as usize {
        // SAFETY: w holds `splits` slices of m n elements; i < m n.
        sum += unsafe { w.load(z * m * n + i) };
    }
    let at = (i / n) * ldc as usize + i % n;
    // SAFETY: row i / n < m, column i % n < n: inside C at ldc; this element is this thread's.
    unsafe { c.store(at, epilogue(sum, alpha, beta, || c.load(at))) };
}

/// `C = beta C` over the `m x n` matrix at row stride `ldc`, with `beta =
/// 0` writing zeros without reading (BLAS's rule, so a NaN in C does not
/// survive): what `sgemm` is when `k = 0` or `alpha = 0`. One thread per
/// element, consecutive threads along a row.
#[kernel(block = ELEMENTWISE, tile = ELEMENTWISE)]
pub fn gemm_scale(c: Out<f32>, m: u32, n: u32, ldc: u32, beta: f32) {
    let (m, n) = (m as usize, n as usize);
    let i = crate::dev::index_1d();
    if i < m * n {
        let at = (i / n) * ldc as usize + i % n;
        // SAFETY: inside C at ldc; this element is this thread's.
        unsafe { c.store(at, if beta == 0.0 { 0.0 } else { beta * c.load(at) }) };
    }
}
