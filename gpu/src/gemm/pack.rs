//! Packing an operand for the copy engine: `op(X)` (`rows x cols`, read
//! at any leading dimension and either way round) written row-major into a
//! workspace whose rows start on 16 bytes.
//!
//! TMA reads a matrix only if its row stride is a multiple of 16 bytes,
//! and `wgmma` reads A K-major and (for tf32) B K-major. A BLAS call may
//! give neither: `lda = 4095`, A transposed, a column-major B. One pass
//! through a 32 x 33 shared tile fixes both: each block reads a 32 x 32
//! tile along whichever direction is contiguous in the source (a warp
//! reads 32 consecutive elements: 1 sector of FP8, 2 of 16-bit elements,
//! 4 of `f32`), and writes it along the destination's rows, equally coalesced.
//! The tile's column reads (the transposing direction) hit 32 different
//! banks thanks to the one-element pad, as in `transpose_padded`. It moves
//! each element twice (read, write): `2 rows cols bytes`, a small fraction
//! of the product's time whenever the third dimension is large.
//!
//! An operand that needs no transposing, only rows on other boundaries
//! (`ldb = 3000` bf16 rows, 16 bytes apart but not 32), is copied by
//! [`gemm_repitch()`] in units as wide as its rows allow: 16 bytes a thread
//! where the tile kernel moves one element (a 32-byte sector per warp in
//! FP8), so the copy runs at the memory's rate.
//!
//! The library's product kernel waits for a pack behind it on the stream
//! (a dependent launch: `crate::dev::grid`); each thread of a pack lets it
//! start once its stores are issued, so that the product's launch and
//! set-up overlap the pack's last blocks rather than follow them. The
//! packs are dependent launches too: a pack's launch overlaps the kernel
//! ahead of it (the other operand's pack, or the previous call's product,
//! which may still be reading this workspace or writing this call's
//! input), and its threads wait for that kernel before their first global
//! access. A call of three launches then pays about one launch's latency
//! rather than three.

use half::{bf16, f16};

use crate::dev::fp8::{E4m3, E5m2};

use crate::dev::{
    In, Out, SharedTile, block_idx_x, block_idx_y, block_idx_z, sync_threads, thread_idx_x, thread_idx_y,
};
use crate::kernel;

/// The tile edge.
pub const TILE: usize = 32;
/// Rows of threads: each thread moves `TILE / ROWS` elements each way.
pub const ROWS: usize = 8;
/// The tile's row stride in elements: one pad element, so a column of the
/// tile spans 32 banks (for 2-byte elements, 16 words with 2 lanes per
/// word: no conflict either).
const STRIDE: usize = TILE + 1;

/// Copies `op(X)` of batch `z` into `dst`: `X[r][c]` is `src[z src_batch
/// + r src_ld + c]` (`transposed == 0`) or `src[z src_batch + c src_ld +
/// r]` (`transposed != 0`), written to `dst[z dst_batch + r dst_ld + c]`
/// for `r < rows`, `c < cols`.
///
/// Launch: blocks of 32 x 8 threads, the grid `(cols / 32, rows / 32,
/// batch)` rounded up; `src` and `dst` hold every element named.
#[kernel(block = [TILE, ROWS], shared = TILE * STRIDE * size_of::<T>(), tile = [TILE, TILE], dependent = true, types = [bf16, f16, f32, E4m3, E5m2])]
#[allow(clippy::too_many_arguments)]
pub fn gemm_pack<T: Copy + 'static>(
    src: In<T>,
    dst: Out<T>,
    rows: u32,
    cols: u32,
    src_ld: u64,
    src_batch: u64,
    dst_ld: u32,
    dst_batch: u64,
    transposed: u32,
) {
    wait_before_global_access();
    let (rows, cols) = (rows as usize, cols as usize);
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let (c0, r0, z) = (block_idx_x() as usize * TILE, block_idx_y() as usize * TILE, block_idx_z() as usize);
    let (src_base, dst_base) = (z * src_batch as usize, z * dst_batch as usize);
    // SAFETY: the launch passes the tile's bytes.
    let tile = unsafe { SharedTile::<T, STRIDE>::launch_sized() };
    for i in 0..TILE / ROWS {
        // The lane index runs along the source's contiguous direction.
        let (r, c) = if transposed != 0 { (tx, ty + i * ROWS) } else { (ty + i * ROWS, tx) };
        if r0 + r < rows && c0 + c < cols {
            let at = if transposed != 0 {
                src_base + (c0 + c) * src_ld as usize + r0 + r
            } else {
                src_base + (r0 + r) * src_ld as usize + c0 + c
            };
            // SAFETY: (r0 + r, c0 + c) is inside X, which `src` holds; the
            // tile cell is inside the tile.
            unsafe { tile.store(r, c, src.load(at)) };
        }
    }
    sync_threads();
    for i in 0..TILE / ROWS {
        let (r, c) = (ty + i * ROWS, tx);
        if r0 + r < rows && c0 + c < cols {
            // SAFETY: phase 1 stored this cell (same bounds); `dst` holds
            // the destination element; each is this thread's alone.
            unsafe { dst.store(dst_base + (r0 + r) * dst_ld as usize + c0 + c, tile.load(r, c)) };
        }
    }
    allow_dependents_after_stores();
}

/// Lets the product kernel behind the pack start (see the module), once
/// this thread's stores are issued: the first of a block's threads here
/// counts for its block, and once every block has (or exited) the
/// product's blocks take SMs as the pack's leave. (Letting it start at
/// the pack's first instruction measured slower where the whole pack fits
/// on the SMs at once.)
#[inline(always)]
fn allow_dependents_after_stores() {
    // (No such instruction before sm_90, nor a dependent launch.)
    #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90"))]
    crate::dev::grid::allow_dependents();
}

/// Waits for the kernel ahead of this dependent launch (see the module)
/// before the thread's first global access.
#[inline(always)]
fn wait_before_global_access() {
    // (No such instruction before sm_90, nor a dependent launch.)
    #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90"))]
    crate::dev::grid::wait_for_prerequisites();
}

/// Units (of the unit type) per block of [`gemm_repitch()`], one a thread.
pub const REPITCH_THREADS: usize = 128;
/// Rows per block of [`gemm_repitch()`].
pub const REPITCH_ROWS: usize = 4;

/// Copies the `rows x cols` matrix of batch `z` from `src` (element `(r,
/// c)` at `src[z src_batch + r src_ld + c]`) to `dst` (at `dst[z
/// dst_batch + r dst_ld + c]`), untransposed, in units of `unit` bytes
/// (16, 8, 4, 2 or 1, at least an element): the host picks the widest
/// that divides every row's start and length in bytes, so each thread
/// moves one aligned unit of a row and a warp 32 neighbouring ones, up to
/// 512 contiguous bytes.
///
/// Launch: 128 x 1 threads; the grid `(cols bytes / unit / 128, rows / 4,
/// batch)` rounded up; `src` and `dst` hold every element named, both
/// 16-byte aligned.
#[kernel(block = REPITCH_THREADS, tile = [REPITCH_THREADS, REPITCH_ROWS], dependent = true, types = [bf16, f16, f32, E4m3, E5m2])]
#[allow(clippy::too_many_arguments)]
pub fn gemm_repitch<T: Copy + 'static>(
    src: In<T>,
    dst: Out<T>,
    rows: u32,
    cols: u32,
    src_ld: u64,
    src_batch: u64,
    dst_ld: u32,
    dst_batch: u64,
    unit: u32,
) {
    wait_before_global_access();
    let bytes = size_of::<T>();
    // Every length in units of `unit` bytes.
    let units = |elements: u64| elements as usize * bytes / unit as usize;
    let (cols, src_ld, src_batch) = (units(u64::from(cols)), units(src_ld), units(src_batch));
    let (dst_ld, dst_batch) = (units(u64::from(dst_ld)), units(dst_batch));
    let c = block_idx_x() as usize * REPITCH_THREADS + thread_idx_x() as usize;
    let (r0, z) = (block_idx_y() as usize * REPITCH_ROWS, block_idx_z() as usize);
    if c >= cols {
        return;
    }
    let at = (z * src_batch + r0 * src_ld + c, z * dst_batch + r0 * dst_ld + c);
    let (ld, rows) = ((src_ld, dst_ld), (rows as usize).saturating_sub(r0).min(REPITCH_ROWS));
    // SAFETY: (each arm) the unit is inside both matrices' rows (the
    // host's choice of `unit` makes every row a whole number of aligned
    // units); this thread's alone.
    unsafe {
        match unit {
            16 => copy_units(src.recast::<u128>(), dst.recast::<u128>(), at, ld, rows),
            8 => copy_units(src.recast::<u64>(), dst.recast::<u64>(), at, ld, rows),
            4 => copy_units(src.recast::<u32>(), dst.recast::<u32>(), at, ld, rows),
            2 => copy_units(src.recast::<u16>(), dst.recast::<u16>(), at, ld, rows),
            _ => copy_units(src.recast::<u8>(), dst.recast::<u8>(), at, ld, rows),
        }
    }
    allow_dependents_after_stores();
}

/// One column of units of [`gemm_repitch()`]'s block: `rows` units from
/// `src[from + i src_ld]` to `dst[to + i dst_ld]`, the loads issued
/// together.
///
/// # Safety
/// Every unit named is inside its buffer, aligned, and this thread's alone.
#[inline(always)]
unsafe fn copy_units<U: Copy + Default>(
    src: In<U>,
    dst: Out<U>,
    (from, to): (usize, usize),
    (src_ld, dst_ld): (usize, usize),
    rows: usize,
) {
    let mut v = [U::default(); REPITCH_ROWS];
    for (i, v) in v.iter_mut().enumerate() {
        if i < rows {
            // SAFETY: the caller's contract.
            *v = unsafe { src.load(from + i * src_ld) };
        }
    }
    for (i, v) in v.iter().enumerate() {
        if i < rows {
            // SAFETY: the caller's contract.
            unsafe { dst.store(to + i * dst_ld, *v) };
        }
    }
}
