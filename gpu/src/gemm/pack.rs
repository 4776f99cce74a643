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
#[kernel(block = [TILE, ROWS], shared = TILE * STRIDE * size_of::<T>(), tile = [TILE, TILE], types = [bf16, f16, f32, E4m3, E5m2])]
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
}
