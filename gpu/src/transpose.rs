//! Matrix transpose: the shared-memory and bank-conflict lesson.
//!
//! All kernels compute `output = inputᵀ` for a row-major `f32` input of
//! `ny` rows and `nx` columns: `output[x * ny + y] = input[y * nx + x]`.
//! Each reads and writes every element once, so the floor is
//! `2 * nx * ny * 4` bytes over the device's copy bandwidth; the host
//! reports each kernel against a device-to-device copy measured in the same
//! run.
//!
//! Every block covers a 32 x 32 (or larger) tile of the input; edge tiles
//! are guarded element by element (`x < nx && y < ny`), so any shape works.
//!
//! Global memory is served in 32-byte sectors. A warp whose 32 lanes touch
//! 32 consecutive `f32` moves 128 bytes in 4 sectors (coalesced); a warp
//! whose lanes are a whole row apart touches 32 sectors for 128 useful
//! bytes, so 7/8 of each sector moved is wasted (strided).

use crate::dev::shared::tile_bytes;
use crate::dev::{In, Out, SharedTile, block_idx_x, block_idx_y, sync_threads, thread_idx_x, thread_idx_y};
use crate::kernel;

/// The tile edge of the 32 x 32 variants: one warp spans one tile row.
pub const TILE: usize = 32;
/// Shared-memory row stride of the padded tile: 33 words, so row `r` starts
/// in bank `r % 32`.
pub const PADDED_STRIDE: usize = TILE + 1;
/// The fast variant's block tile: 64 x 64, moved by 32 x 8 threads, 16
/// elements each, through a 64 x 65 padded shared tile.
pub const FAST_TILE: usize = 64;
/// Threads per block in y for the fast variant.
pub const FAST_BLOCK_ROWS: usize = 8;

/// 1. Naive, coalesced reads and strided writes.
///
/// Thread `(tx, ty)` of block `(bx, by)` moves element `x = 32 bx + tx`,
/// `y = 32 by + ty`. A warp is one tile row: its reads
/// `input[y * nx + x..+32]` are 128 contiguous bytes (4 sectors), but its
/// writes `output[x * ny + y]` are `ny * 4` bytes apart: 32 sectors per
/// request, 4 useful bytes in each 32-byte sector.
///
/// Launch: `input` and `output` hold `nx * ny` elements.
/// Measured: `BENCHMARKS.md`, rows `transpose_naive_row`.
#[kernel(block = [TILE, TILE])]
pub fn transpose_naive_row(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    let (nx, ny) = (nx as usize, ny as usize);
    let x = block_idx_x() as usize * TILE + thread_idx_x() as usize;
    let y = block_idx_y() as usize * TILE + thread_idx_y() as usize;
    if x < nx && y < ny {
        // SAFETY: x < nx and y < ny, so both indices are below nx * ny, the
        // buffers' length; (x, y) is this thread's alone.
        unsafe { output.store(x * ny + y, input.load(y * nx + x)) };
    }
}

/// 2. Naive, strided reads and coalesced writes.
///
/// The same tile, with the lanes of a warp running along the output row
/// instead: lane `tx` writes `output[x * ny + y]` with `y = 32 by + tx`
/// (4 sectors per request) and reads `input[y * nx + x]`, a column of
/// the input (32 sectors per request). Strided reads should cost less
/// than strided writes: a partly used sector that was read may still be in
/// L1 or L2 when a neighbouring warp wants the rest of it, while each
/// partial write costs a read-modify-write of its sector in L2.
///
/// Launch: as kernel 1.
/// Measured: `BENCHMARKS.md`, rows `transpose_naive_col`.
#[kernel(block = [TILE, TILE])]
pub fn transpose_naive_col(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    let (nx, ny) = (nx as usize, ny as usize);
    let y = block_idx_y() as usize * TILE + thread_idx_x() as usize;
    let x = block_idx_x() as usize * TILE + thread_idx_y() as usize;
    if x < nx && y < ny {
        // SAFETY: as in kernel 1.
        unsafe { output.store(x * ny + y, input.load(y * nx + x)) };
    }
}

/// The tiled transpose shared by kernels 3 to 5: a `TILE` x `TILE` block
/// tile (`TILE` a multiple of 32) staged through shared memory, moved by
/// 32 x `ROWS` threads, each handling `TILE / ROWS` rows of `TILE / 32`
/// columns.
///
/// Phase 1 reads tile rows from the input (coalesced: a warp reads 32
/// consecutive `f32`) into `tile[r][c]`. After the barrier, phase 2 writes
/// tile *columns* as output rows (coalesced too: lane `tx` writes
/// `output[x * ny + y0 + tx]`), reading `tile[tx][r]`: word
/// `tx * STRIDE + r`, bank `(tx * STRIDE + r) % 32`.
/// - `STRIDE = 32`: every lane hits bank `r`: a 32-way conflict, the read is
///   replayed 32 times.
/// - `STRIDE = 33`: lane `tx` hits bank `(tx + r) % 32`: 32 distinct banks,
///   one pass. The padding costs one word per row.
///
/// Every access is guarded (`x < nx && y < ny`), so edge tiles of any shape
/// are handled in place.
///
/// # Safety
/// `input` and `output` hold `nx * ny` elements, and the launch passes
/// `tile_bytes::<f32>(TILE, STRIDE)` bytes of shared memory.
#[inline(always)]
unsafe fn transpose_tiled<const TILE: usize, const STRIDE: usize, const ROWS: usize>(
    input: In<f32>,
    output: Out<f32>,
    nx: u32,
    ny: u32,
) {
    let (nx, ny) = (nx as usize, ny as usize);
    // SAFETY: the caller's launch passes `tile_bytes(TILE, STRIDE)`.
    let tile = unsafe { SharedTile::<f32, STRIDE>::launch_sized() };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let (x0, y0) = (block_idx_x() as usize * TILE, block_idx_y() as usize * TILE);

    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            let (x, y) = (x0 + c, y0 + r);
            if x < nx && y < ny {
                // SAFETY: r, c < TILE, and (x, y) is inside the input.
                unsafe { tile.store(r, c, input.load(y * nx + x)) };
            }
        }
    }
    sync_threads();
    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            // Output row x = x0 + r is input column x0 + r; lane tx writes
            // its column y = y0 + c, which phase 1 stored at tile[c][r].
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            let (x, y) = (x0 + r, y0 + c);
            if x < nx && y < ny {
                // SAFETY: as above; output has nx * ny elements.
                unsafe { output.store(x * ny + y, tile.load(c, r)) };
            }
        }
    }
}

/// The most elements one thread of [`transpose_tiled_unguarded`] moves.
const MAX_PER_THREAD: usize = 16;

/// Kernel 5's body: tiles wholly inside the matrix (all but the last row
/// and column of tiles) skip the per-element guards, so each thread issues
/// all of its `TILE * TILE / (32 * ROWS)` loads before its first shared
/// store, and all shared reads before its first global store: that many
/// independent requests in flight per thread instead of one. Edge tiles take
/// the guarded path of [`transpose_tiled`] (the branch is the same for the
/// whole block, so its barrier is reached by every thread).
///
/// # Safety
/// As for [`transpose_tiled`].
#[inline(always)]
unsafe fn transpose_tiled_unguarded<const TILE: usize, const STRIDE: usize, const ROWS: usize>(
    input: In<f32>,
    output: Out<f32>,
    nx: u32,
    ny: u32,
) {
    const { assert!(TILE / ROWS * (TILE / 32) <= MAX_PER_THREAD) };
    let (nxu, nyu) = (nx as usize, ny as usize);
    let (x0, y0) = (block_idx_x() as usize * TILE, block_idx_y() as usize * TILE);
    if x0 + TILE > nxu || y0 + TILE > nyu {
        // SAFETY: the caller's contract.
        return unsafe { transpose_tiled::<TILE, STRIDE, ROWS>(input, output, nx, ny) };
    }
    // SAFETY: the caller's launch passes `tile_bytes(TILE, STRIDE)`.
    let tile = unsafe { SharedTile::<f32, STRIDE>::launch_sized() };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    // Registers: only the first TILE * TILE / (32 * ROWS) are used, the
    // rest are optimised away (every index is a constant after unrolling).
    let mut v = [0.0f32; MAX_PER_THREAD];
    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            // SAFETY: the whole tile is inside the input.
            v[i * (TILE / 32) + j] = unsafe { input.load((y0 + r) * nxu + x0 + c) };
        }
    }
    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            // SAFETY: r, c < TILE.
            unsafe { tile.store(ty + i * ROWS, tx + j * 32, v[i * (TILE / 32) + j]) };
        }
    }
    sync_threads();
    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            // SAFETY: r, c < TILE.
            v[i * (TILE / 32) + j] = unsafe { tile.load(tx + j * 32, ty + i * ROWS) };
        }
    }
    for i in 0..TILE / ROWS {
        for j in 0..TILE / 32 {
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            // SAFETY: the whole tile is inside the output.
            unsafe { output.store((x0 + r) * nyu + y0 + c, v[i * (TILE / 32) + j]) };
        }
    }
}

/// 3. Shared-memory tile, 32 x 32: both global sides coalesced, but the
/// column read of phase 2 is a 32-way bank conflict (stride 32 words:
/// every lane in the same bank). See [`transpose_tiled`].
///
/// The conflict should cost enough to make this kernel, though it moves 4
/// sectors per request on both sides, slower than kernel 2: kernel 2's
/// strided reads are partly served by L1/L2, while 32 replays of every
/// shared read stall all 1024 threads of the block at the barrier that
/// follows. It should beat kernel 1, the naive version with strided
/// *writes*.
///
/// Launch: as kernel 1.
/// Measured: `BENCHMARKS.md`, rows `transpose_shared`.
#[kernel(block = [TILE, TILE], shared = tile_bytes::<f32>(TILE, TILE))]
pub fn transpose_shared(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    // SAFETY: the launch's contract (nx * ny elements each), and the
    // declaration passes the 32 x 32 tile's bytes.
    unsafe { transpose_tiled::<TILE, TILE, TILE>(input, output, nx, ny) }
}

/// 4. The same tile padded to 32 x 33: the column read becomes
/// conflict-free (lane `tx` in bank `(tx + r) % 32`).
///
/// Launch: as kernel 1.
/// Measured: `BENCHMARKS.md`, rows `transpose_padded`.
#[kernel(block = [TILE, TILE], shared = tile_bytes::<f32>(TILE, PADDED_STRIDE))]
pub fn transpose_padded(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    // SAFETY: as in kernel 3, with the 32 x 33 tile's bytes.
    unsafe { transpose_tiled::<TILE, PADDED_STRIDE, TILE>(input, output, nx, ny) }
}

/// 5. Fast: a 64 x 64 block tile moved by 32 x 8 threads, 16 elements
/// per thread, interior tiles unguarded (see
/// [`transpose_tiled_unguarded`]).
///
/// A transpose does no arithmetic; its speed is how many bytes are in
/// flight. By Little's law, ~4 TB/s x ~1 us of DRAM latency is ~4 MB
/// in flight across 132 SMs, ~30 KB per SM. Kernel 4 has one 4-byte
/// load per thread in flight before its barrier; here each thread has 16
/// (64 bytes), and eight 256-thread blocks per SM keep ~128 KB queued.
/// The tile is padded to 65 words per row: lane `tx` reads
/// `tile[tx + 32 j][r]`, bank `(tx + 32 j) * 65 + r = tx + r (mod 32)`,
/// conflict-free. (`docs/notes.md` lists the variants tried on the way.)
///
/// Launch: as kernel 1.
/// Measured: `BENCHMARKS.md`, rows `transpose_fast`.
#[kernel(
    block = [32, FAST_BLOCK_ROWS],
    shared = tile_bytes::<f32>(FAST_TILE, FAST_TILE + 1),
    tile = [FAST_TILE, FAST_TILE]
)]
pub fn transpose_fast(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    // SAFETY: as in kernel 3, with the 64 x 65 tile's bytes.
    unsafe {
        transpose_tiled_unguarded::<FAST_TILE, { FAST_TILE + 1 }, FAST_BLOCK_ROWS>(input, output, nx, ny)
    }
}
