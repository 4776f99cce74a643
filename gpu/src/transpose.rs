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
use crate::dev::{
    In, Out, SharedTile, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, sync_threads, thread_idx_x,
    thread_idx_y,
};
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

/// The tiled transpose shared by kernels 3 to 5: a `TX` x `TY` block tile
/// (`TX` input columns, `TY` input rows, both multiples of 32) staged
/// through shared memory, moved by 32 x `ROWS` threads.
///
/// Phase 1 reads tile rows from the input (coalesced: a warp reads 32
/// consecutive `f32`) into `tile[r][c]`. After the barrier, phase 2 writes
/// tile *columns* as output rows (coalesced too: lane `tx` writes
/// `output[x * ny + y0 + tx]`), reading `tile[tx][r]`: word
/// `tx * STRIDE + r`, bank `(tx * STRIDE + r) % 32`.
/// - `STRIDE = 32`: every lane hits bank `r`: a 32-way conflict, the read is
///   replayed 32 times.
/// - `STRIDE = 33` (any `TX + 1`): lane `tx` hits bank `(tx + r) % 32`: 32
///   distinct banks, one pass. The padding costs one word per row.
///
/// Every access is guarded (`x < nx && y < ny`), so edge tiles of any shape
/// are handled in place.
///
/// # Safety
/// `input` and `output` hold `nx * ny` elements, and the launch passes
/// `tile_bytes::<f32>(TY, STRIDE)` bytes of shared memory.
#[inline(always)]
unsafe fn transpose_tiled<const TX: usize, const TY: usize, const STRIDE: usize, const ROWS: usize>(
    input: In<f32>,
    output: Out<f32>,
    nx: u32,
    ny: u32,
    (x0, y0): (usize, usize),
) {
    let (nx, ny) = (nx as usize, ny as usize);
    // SAFETY: the caller's launch passes `tile_bytes(TY, STRIDE)`.
    let tile = unsafe { SharedTile::<f32, STRIDE>::launch_sized() };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);

    for i in 0..TY / ROWS {
        for j in 0..TX / 32 {
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            let (x, y) = (x0 + c, y0 + r);
            if x < nx && y < ny {
                // SAFETY: r < TY, c < TX, and (x, y) is inside the input.
                unsafe { tile.store(r, c, input.load(y * nx + x)) };
            }
        }
    }
    sync_threads();
    for i in 0..TX / ROWS {
        for j in 0..TY / 32 {
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

/// The input origin of this block's `tx x ty` tile, by the grid's layout.
#[inline(always)]
fn block_origin(tx: usize, ty: usize) -> (usize, usize) {
    (block_idx_x() as usize * tx, block_idx_y() as usize * ty)
}

/// 3. Shared-memory tile, 32 x 32: both global sides coalesced, but the
/// column read of phase 2 is a 32-way bank conflict (stride 32 words:
/// every lane in the same bank). See `transpose_tiled`.
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
    unsafe { transpose_tiled::<TILE, TILE, TILE, TILE>(input, output, nx, ny, block_origin(TILE, TILE)) }
}

/// 4. The same tile padded to 32 x 33: the column read becomes
/// conflict-free (lane `tx` in bank `(tx + r) % 32`).
///
/// Launch: as kernel 1.
/// Measured: `BENCHMARKS.md`, rows `transpose_padded`.
#[kernel(block = [TILE, TILE], shared = tile_bytes::<f32>(TILE, PADDED_STRIDE))]
pub fn transpose_padded(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    // SAFETY: as in kernel 3, with the 32 x 33 tile's bytes.
    unsafe {
        transpose_tiled::<TILE, TILE, PADDED_STRIDE, TILE>(input, output, nx, ny, block_origin(TILE, TILE))
    }
}

/// 5. Fast: a 64 x 64 block tile moved by 32 x 8 threads, every store
/// starting on a 32-byte sector, tiles taken down the columns of tiles.
///
/// A transpose does no arithmetic; its speed is how many bytes are in
/// flight, and how whole the sectors are. Three ideas on top of kernel 4:
///
/// - **Many loads in flight.** Tiles wholly inside the matrix skip the
///   per-element guards, so each thread issues all of its 16 loads before
///   its first shared store, and all shared reads before its first global
///   store. By Little's law, ~4 TB/s x ~1 us of DRAM latency is ~4 MB in
///   flight across 132 SMs, ~30 KB per SM: eight 256-thread blocks of 16
///   loads of 4 bytes keep ~128 KB queued.
/// - **Sector-aligned stores.** When `ny` is not a multiple of 8, output
///   row `x` starts `(x ny) mod 8` words into a sector, so a 64-word row
///   segment covers 9 sectors, two of them partly: each partial sector is
///   written by two blocks at different times, and one that leaves L2
///   half-written costs DRAM a read-modify-write. So each output row's
///   window moves back by `s(x) = (x ny) mod 8` words: lane `c` writes
///   `y = y0 - s(x) + c`, and every window starts on a sector and covers 8
///   whole ones. The block stages the `HALO` = 7 input rows above its tile
///   too (7/64 more reads, mostly L2 hits: the tile above read them), and
///   the grid gains a row of tiles when the last windows need it. (Reads
///   stay misaligned when `nx` is odd: one side can be aligned, not both,
///   and a partial sector read costs no write-back.)
/// - **Down the columns.** Blocks take tiles column of tiles by column of
///   tiles, so the blocks on the GPU at once write neighbouring windows of
///   the same output rows, and the sectors they share meet in L2; a
///   grid-stride loop over the tiles lets any grid run the extra row.
///
/// The shared tile is `(64 + 7) x 65`: lane `c` reads tile row
/// `HALO - s + c`, column `r`: bank `(HALO - s + c + r) mod 32` over the
/// lanes, conflict-free. (`docs/notes.md` lists the variants tried on the
/// way.)
///
/// Launch: as kernel 1 (the grid of the declared tile; any grid works).
/// Measured: `BENCHMARKS.md`, rows `transpose_fast`.
#[kernel(
    block = [32, FAST_BLOCK_ROWS],
    shared = tile_bytes::<f32>(FAST_TILE + HALO, FAST_TILE + 1),
    tile = [FAST_TILE, FAST_TILE]
)]
pub fn transpose_fast(input: In<f32>, output: Out<f32>, nx: u32, ny: u32) {
    // SAFETY: the launch's contract (nx * ny elements each; device
    // allocations start on 256-byte boundaries) and the declaration passes
    // the (64 + HALO) x 65 tile's bytes.
    unsafe {
        transpose_aligned::<FAST_TILE, FAST_TILE, { FAST_TILE + 1 }, FAST_BLOCK_ROWS>(input, output, nx, ny)
    }
}

/// The most an output row's window moves back: `(x ny) mod 8 <= 7` words.
const MAX_SHIFT: usize = 7;
/// Input rows above its tile a block of [`transpose_fast()`] also stages.
pub const HALO: usize = MAX_SHIFT;
/// The most elements one thread of [`transpose_aligned`] holds.
const MAX_PER_THREAD: usize = 32;

/// Kernel 5's body: `TX` x `TY` tiles, taken down the columns of tiles by
/// a grid-stride loop, each output row's window moved back to a sector
/// boundary (see [`transpose_fast`]). Tile row `HALO + r` holds input row
/// `y0 + r`; rows `0..HALO` the rows above.
///
/// # Safety
/// `input` and `output` hold `nx * ny` elements, `output` starts on a
/// 32-byte boundary, and the launch passes
/// `tile_bytes::<f32>(TY + HALO, STRIDE)` bytes of shared memory.
#[inline(always)]
unsafe fn transpose_aligned<const TX: usize, const TY: usize, const STRIDE: usize, const ROWS: usize>(
    input: In<f32>,
    output: Out<f32>,
    nx: u32,
    ny: u32,
) {
    const {
        assert!(
            STRIDE == TX + 1
                && TX.is_multiple_of(32)
                && TY.is_multiple_of(32)
                && TY.is_multiple_of(ROWS)
                && TX.is_multiple_of(ROWS)
        )
    };
    const { assert!(HALO <= ROWS && (TY / ROWS + 1) * (TX / 32) <= MAX_PER_THREAD) };
    let (nx, ny) = (nx as usize, ny as usize);
    // ny a multiple of 8 makes every shift 0 and the halo unused.
    let shifted = ny % 8 != 0;
    // The last window of a row ends at tiles_y TY - s: with s up to
    // MAX_SHIFT, the tiles must cover ny + MAX_SHIFT rows.
    // (At least 1, so the division below needs no zero check; ny = 0 has
    // no tiles anyway.)
    let tiles_y = if shifted { (ny + MAX_SHIFT).div_ceil(TY) } else { ny.div_ceil(TY) }.max(1);
    let tiles = nx.div_ceil(TX) * tiles_y;
    // SAFETY: the caller's launch passes `tile_bytes(TY + HALO, STRIDE)`.
    let tile = unsafe { SharedTile::<f32, STRIDE>::launch_sized() };
    let (tx, ty) = (thread_idx_x() as usize, thread_idx_y() as usize);
    let blocks = grid_dim_x() as usize * grid_dim_y() as usize;
    let mut t = block_idx_y() as usize * grid_dim_x() as usize + block_idx_x() as usize;
    while t < tiles {
        let (x0, y0) = ((t / tiles_y) * TX, (t % tiles_y) * TY);
        let whole = x0 + TX <= nx && y0 + TY <= ny && (y0 >= HALO || !shifted);
        let mut v = [0.0f32; MAX_PER_THREAD];
        if whole {
            // All loads first, then all shared stores: 2 TY / ROWS (+ 2)
            // loads in flight per thread.
            for i in 0..TY / ROWS {
                for j in 0..TX / 32 {
                    let (r, c) = (ty + i * ROWS, tx + j * 32);
                    // SAFETY: the whole tile is inside the input.
                    v[i * (TX / 32) + j] = unsafe { input.load((y0 + r) * nx + x0 + c) };
                }
            }
            let halo = TY / ROWS * (TX / 32);
            if shifted && ty < HALO {
                for j in 0..TX / 32 {
                    // SAFETY: y0 >= HALO, so input row y0 - HALO + ty exists.
                    v[halo + j] = unsafe { input.load((y0 - HALO + ty) * nx + x0 + tx + j * 32) };
                }
            }
            for i in 0..TY / ROWS {
                for j in 0..TX / 32 {
                    // SAFETY: HALO + r < TY + HALO rows, c < TX.
                    unsafe { tile.store(HALO + ty + i * ROWS, tx + j * 32, v[i * (TX / 32) + j]) };
                }
            }
            if shifted && ty < HALO {
                for j in 0..TX / 32 {
                    // SAFETY: ty < HALO rows, c < TX.
                    unsafe { tile.store(ty, tx + j * 32, v[halo + j]) };
                }
            }
        } else {
            for i in 0..(TY + HALO).div_ceil(ROWS) {
                for j in 0..TX / 32 {
                    let (row, c) = (ty + i * ROWS, tx + j * 32);
                    // Input row y = y0 + row - HALO, if it exists.
                    let (x, y) = (x0 + c, (y0 + row).wrapping_sub(HALO));
                    if row < TY + HALO && x < nx && y < ny {
                        // SAFETY: inside the tile and the input.
                        unsafe { tile.store(row, c, input.load(y * nx + x)) };
                    }
                }
            }
        }
        sync_threads();
        // Output row x = x0 + r; lane tx's column y = y0 - s + c, with s =
        // (x ny) mod 8 (in wrapping 32-bit arithmetic: 2^32 is a multiple
        // of 8). Input row y is tile row HALO - s + c.
        let at = |i: usize, j: usize| {
            let (r, c) = (ty + i * ROWS, tx + j * 32);
            let s = if shifted { ((x0 + r) as u32).wrapping_mul(ny as u32) as usize % 8 } else { 0 };
            let (x, y) = (x0 + r, (y0 + c).wrapping_sub(s));
            (r, HALO - s + c, x, y, whole || (x < nx && y < ny))
        };
        for i in 0..TX / ROWS {
            for j in 0..TY / 32 {
                let (r, row, _, _, inside) = at(i, j);
                if inside {
                    // SAFETY: row < TY + HALO, r < TX; phase 1 stored it
                    // (input row y exists).
                    v[i * (TY / 32) + j] = unsafe { tile.load(row, r) };
                }
            }
        }
        for i in 0..TX / ROWS {
            for j in 0..TY / 32 {
                let (_, _, x, y, inside) = at(i, j);
                if inside {
                    // SAFETY: (x, y) is inside the output; this tile owns it.
                    unsafe { output.store(x * ny + y, v[i * (TY / 32) + j]) };
                }
            }
        }
        // The tile is rewritten by the next iteration.
        sync_threads();
        t += blocks;
    }
}
