//! The memory-access lab: one kernel per access pattern, each timed on the
//! GPU and explained by the emulator's analysis.
//!
//! Global memory is served in 32-byte sectors; a warp's request costs the
//! distinct sectors its 32 lanes touch. Shared memory is 32 banks of 4-byte
//! words (bank = word index mod 32); a request costs the largest number of
//! distinct words in one bank.

use crate::dev::shared::tile_bytes;
use crate::dev::{DisjointSlice, In, Out, SharedArray, SharedTile, Slice, block_idx_x, sync_threads, thread};
use crate::dev::{thread::ThreadIndex, thread_idx_x};
use crate::kernel;

/// Threads per block of the streaming kernels.
pub const BLOCK: usize = 256;

// ---- structure layout: |v|^2 of n 3-vectors -------------------------------

/// `x^2 + y^2 + z^2`, in this order, each product rounded (no FMA): the
/// host computes the same bits.
#[inline(always)]
pub fn len2(x: f32, y: f32, z: f32) -> f32 {
    x * x + y * y + z * z
}

/// `out[i] = len2` of the three values `at(i)` names in `v`: the body of
/// the element-wise layout kernels, with every access checked.
#[inline(always)]
fn len2_of(v: &Slice<f32>, out: &mut DisjointSlice<f32>, i: ThreadIndex, at: [usize; 3]) {
    if let (Some(o), Some(x), Some(y), Some(z)) = (out.get_mut(i), v.get(at[0]), v.get(at[1]), v.get(at[2])) {
        *o = len2(x, y, z);
    }
}

/// Array of 12-byte structs `[f32; 3]`: thread `i` reads `v[3 i]`,
/// `v[3 i + 1]`, `v[3 i + 2]`. Each of the three warp loads spans 384
/// bytes at a 12-byte stride, 12 or 13 sectors for 128 useful bytes:
/// about a third of every sector moved is used by that load (the rest
/// by the other two, through L1 if it is still there).
///
/// Launch: `v` holds `3 n` floats for the `n` elements of `out`.
/// Measured: `BENCHMARKS.md`, rows `lab_len2_aos12`.
#[kernel(block = BLOCK)]
pub fn lab_len2_aos12(v: Slice<f32>, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    let at = 3 * i.get();
    len2_of(&v, &mut out, i, [at, at + 1, at + 2]);
}

/// Array of 16-byte aligned structs (`x, y, z` and a pad): one
/// `ld.global.v4` per thread, 512 contiguous bytes per warp in 16
/// sectors, all used, of which a quarter is padding.
///
/// Launch: `v` holds `4 n` floats for the `n` elements of `out`.
/// Measured: `BENCHMARKS.md`, rows `lab_len2_aos16`.
#[kernel(block = BLOCK)]
pub fn lab_len2_aos16(v: Slice<f32>, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let (Some(o), Some([x, y, z, _])) = (out.get_mut(i), v.get4(4 * i.get())) {
        *o = len2(x, y, z);
    }
}

/// Structure of arrays: three coalesced loads, 4 sectors each per warp,
/// every byte used.
///
/// Launch: `x`, `y`, `z` and `out` hold `n` elements.
/// Measured: `BENCHMARKS.md`, rows `lab_len2_soa`.
#[kernel(block = BLOCK)]
pub fn lab_len2_soa(x: Slice<f32>, y: Slice<f32>, z: Slice<f32>, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let (Some(o), Some(x), Some(y), Some(z)) =
        (out.get_mut(i), x.get(i.get()), y.get(i.get()), z.get(i.get()))
    {
        *o = len2(x, y, z);
    }
}

/// The 12-byte AoS staged through shared memory: the block copies its
/// `3 * 256` floats with coalesced loads (`smem[t + 256 k] = v[base + t
/// + 256 k]`: 4 sectors per warp request), then thread `t` reads
/// `smem[3 t..3 t + 3]`: word `3 t`, bank `3 t mod 32`, distinct for the
/// 32 lanes because 3 is coprime with 32: conflict-free.
///
/// Launch: as the 12-byte AoS, one-dimensional.
/// Measured: `BENCHMARKS.md`, rows `lab_len2_aos12_staged`.
#[kernel(block = BLOCK, shared = 3 * BLOCK * 4)]
pub fn lab_len2_aos12_staged(v: Slice<f32>, mut out: DisjointSlice<f32>) {
    // SAFETY: the declaration passes 3 * BLOCK floats.
    let smem = unsafe { SharedArray::<f32>::launch_sized() };
    let t = thread_idx_x() as usize;
    let first = block_idx_x() as usize * BLOCK;
    for k in 0..3 {
        if let Some(x) = v.get(3 * first + t + k * BLOCK) {
            // SAFETY: t + k * BLOCK < 3 * BLOCK; each word has one writer
            // before the barrier.
            unsafe { smem.set(t + k * BLOCK, x) };
        }
    }
    sync_threads();
    if let Some(o) = out.get_mut(thread::index()) {
        // SAFETY: 3 t + 2 < 3 * BLOCK; this element exists, so the block
        // stored all three floats of vector `first + t` before the barrier.
        *o = unsafe { len2(smem.get(3 * t), smem.get(3 * t + 1), smem.get(3 * t + 2)) };
    }
}

// ---- alignment and stride sweeps ------------------------------------------

/// `out[i] = input[i + offset]`. With `offset = 0` a warp reads 128
/// bytes starting on a sector boundary: 4 sectors. Any offset that is
/// not a multiple of 8 elements (32 bytes) straddles one more: 5
/// sectors for the same 128 bytes, 80% efficiency.
///
/// Launch: `input` holds at least `out`'s length plus `offset`.
/// Measured: `BENCHMARKS.md`, rows `lab_copy_offset+*`.
#[kernel(block = BLOCK)]
pub fn lab_copy_offset(input: Slice<f32>, mut out: DisjointSlice<f32>, offset: u32) {
    let i = thread::index();
    if let (Some(o), Some(x)) = (out.get_mut(i), input.get(i.get() + offset as usize)) {
        *o = x;
    }
}

/// `out[i] = input[i * stride]`: a warp's 32 reads are `4 * stride`
/// bytes apart, so they touch `min(32, 4 * stride)` sectors for 128
/// useful bytes: 4 at stride 1, 8 at 2, 16 at 4, 32 from 8 on.
///
/// Launch: `input` holds at least `stride` times `out`'s length.
/// Measured: `BENCHMARKS.md`, rows `lab_copy_stride*`.
#[kernel(block = BLOCK)]
pub fn lab_copy_stride(input: Slice<f32>, mut out: DisjointSlice<f32>, stride: u32) {
    let i = thread::index();
    if let (Some(o), Some(x)) = (out.get_mut(i), input.get(i.get() * stride as usize)) {
        *o = x;
    }
}

// ---- shared-memory banks ---------------------------------------------------

/// Reads per thread in each bank kernel (enough for the shared reads to
/// dominate the time).
pub const BANK_READS: usize = 64;

/// Fills a `rows` x `STRIDE` tile from `input[rows * cols * b..]` (lane
/// `l` writes column `l` of each row: conflict-free), then lane `l` sums
/// `BANK_READS` elements `at(l, r)` and writes the sum to `out[32 b + l]`
/// (`lanes` active lanes; the others write 0).
///
/// # Safety
/// `input` holds `rows * rows` elements per block and `out` 32 per block;
/// the launch passes a `rows` x `STRIDE` tile of shared memory and `at`
/// stays inside it.
#[inline(always)]
unsafe fn bank_study<T, const STRIDE: usize>(
    input: In<T>,
    out: Out<T>,
    rows: usize,
    lanes: usize,
    at: impl Fn(usize, usize) -> (usize, usize),
) where
    T: Copy + core::ops::Add<Output = T> + Default,
{
    // SAFETY: the caller's launch passes the tile.
    let tile = unsafe { SharedTile::<T, STRIDE>::launch_sized() };
    let lane = thread_idx_x() as usize;
    let base = block_idx_x() as usize * rows * rows;
    if lane < rows {
        for r in 0..rows {
            // SAFETY: r, lane < rows: inside the block's input and the
            // tile; one writer per element.
            unsafe { tile.store(r, lane, input.load(base + r * rows + lane)) };
        }
    }
    sync_threads();
    let mut sum = T::default();
    if lane < lanes {
        for r in 0..BANK_READS {
            let (row, col) = at(lane, r);
            // SAFETY: the caller's `at` stays inside the filled tile.
            sum = sum + unsafe { tile.load(row, col) };
        }
    }
    // SAFETY: 32 outputs per block, lane < 32, one writer each.
    unsafe { out.store(block_idx_x() as usize * 32 + lane, sum) };
}

/// Column of a 32 x 32 tile: lane `l` reads `tile[l][c]`, word `32 l +
/// c`, bank `c` for every lane: 32-way, 32 wavefronts per request.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_column_32`.
#[kernel(block = 32, shared = tile_bytes::<f32>(32, 32))]
pub fn lab_bank_column_32(input: In<f32>, out: Out<f32>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f32, 32>(input, out, 32, 32, |l, r| (l, r % 32)) }
}

/// Column of a 32 x 33 tile: bank `(33 l + c) mod 32 = (l + c) mod 32`,
/// 32 distinct banks: conflict-free.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_column_33`.
#[kernel(block = 32, shared = tile_bytes::<f32>(32, 33))]
pub fn lab_bank_column_33(input: In<f32>, out: Out<f32>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f32, 33>(input, out, 32, 32, |l, r| (l, r % 32)) }
}

/// 31 lanes reading a column of a 31 x 31 tile: bank `(31 l + c) mod
/// 32`; 31 is coprime with 32, so `31 l mod 32` takes 31 distinct
/// values: conflict-free without padding.
///
/// Launch: `input` holds 31 x 31 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_column_31`.
#[kernel(block = 32, shared = tile_bytes::<f32>(31, 31))]
pub fn lab_bank_column_31(input: In<f32>, out: Out<f32>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f32, 31>(input, out, 31, 31, |l, r| (l, r % 31)) }
}

/// A row: lane `l` reads `tile[r][l]`, 32 consecutive words in 32
/// banks: conflict-free.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_row`.
#[kernel(block = 32, shared = tile_bytes::<f32>(32, 32))]
pub fn lab_bank_row(input: In<f32>, out: Out<f32>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f32, 32>(input, out, 32, 32, |l, r| (r % 32, l)) }
}

/// Every lane reads the same word `tile[r][0]`: one word, broadcast to
/// all lanes in one wavefront.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_broadcast`.
#[kernel(block = 32, shared = tile_bytes::<f32>(32, 32))]
pub fn lab_bank_broadcast(input: In<f32>, out: Out<f32>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f32, 32>(input, out, 32, 32, |_, r| (r % 32, 0)) }
}

/// A row of 8-byte `f64`: 256 bytes per warp, served as two half-warps
/// of 128 bytes; lane `l` covers words `2 l, 2 l + 1`, so each half
/// fills the 32 banks once: 2 wavefronts, the fewest for 256 bytes.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_f64_row`.
#[kernel(block = 32, shared = tile_bytes::<f64>(32, 32))]
pub fn lab_bank_f64_row(input: In<f64>, out: Out<f64>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f64, 32>(input, out, 32, 32, |l, r| (r % 32, l)) }
}

/// A column of a 32 x 32 `f64` tile: rows are 64 words apart, so every
/// lane of a half-warp hits banks `2 c, 2 c + 1`: 16-way in each half.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_f64_column`.
#[kernel(block = 32, shared = tile_bytes::<f64>(32, 32))]
pub fn lab_bank_f64_column(input: In<f64>, out: Out<f64>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f64, 32>(input, out, 32, 32, |l, r| (l, r % 32)) }
}

/// The `f64` column padded to 33: rows are 66 words apart, lane `l` of a
/// half-warp starts at bank `2 (l + c) mod 32`: 16 lanes x 2 words fill
/// the 32 banks once: conflict-free again.
///
/// Launch: `input` holds 32 x 32 elements per block, `out` 32.
/// Measured: `BENCHMARKS.md`, rows `lab_bank_f64_column_33`.
#[kernel(block = 32, shared = tile_bytes::<f64>(32, 33))]
pub fn lab_bank_f64_column_33(input: In<f64>, out: Out<f64>) {
    // SAFETY: the launch's contract; the declaration passes the tile, and
    // the pattern stays inside it.
    unsafe { bank_study::<f64, 33>(input, out, 32, 32, |l, r| (l, r % 32)) }
}
