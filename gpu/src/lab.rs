//! The memory-access lab: one kernel per access pattern, each measured on
//! the GPU and explained by the emulator's analysis.
//!
//! Global memory is served in 32-byte sectors; a warp's request costs the
//! distinct sectors its 32 lanes touch. Shared memory is 32 banks of 4-byte
//! words (bank = word index mod 32); a request costs the largest number of
//! distinct words in one bank.

use crate::dev::shared::tile_bytes;
use crate::dev::{In, Out, SharedArray, SharedTile, block_idx_x, index_1d, sync_threads, thread_idx_x};
use crate::launch::{Dim3, Kernel};

/// Threads per block of the streaming kernels.
pub const BLOCK: usize = 256;

const fn stream(name: &'static str, shared_bytes: u32) -> Kernel {
    Kernel::new(name, Dim3::x(BLOCK as u32), shared_bytes, [BLOCK as u32, 1])
}

// ---- structure layout: |v|^2 of n 3-vectors -------------------------------

pub const LEN2_AOS12: Kernel = stream("lab_len2_aos12", 0);
pub const LEN2_AOS16: Kernel = stream("lab_len2_aos16", 0);
pub const LEN2_SOA: Kernel = stream("lab_len2_soa", 0);
pub const LEN2_AOS12_STAGED: Kernel = stream("lab_len2_aos12_staged", (3 * BLOCK * 4) as u32);
/// The layout study, worst first.
pub const LAYOUT: [Kernel; 4] = [LEN2_AOS12, LEN2_AOS16, LEN2_SOA, LEN2_AOS12_STAGED];

/// `x^2 + y^2 + z^2`, in this order, each product rounded (no FMA): the
/// host computes the same bits.
#[inline(always)]
pub fn len2(x: f32, y: f32, z: f32) -> f32 {
    x * x + y * y + z * z
}

kernel! {
    /// Array of 12-byte structs `[f32; 3]`: thread `i` reads `v[3 i]`,
    /// `v[3 i + 1]`, `v[3 i + 2]`. Each of the three warp loads spans 384
    /// bytes at a 12-byte stride, 12 or 13 sectors for 128 useful bytes:
    /// about a third of every sector moved is used by that load (the rest
    /// by the other two, through L1 if it is still there).
    pub fn lab_len2_aos12(v: In<f32>, out: Out<f32>, n: u32) {
        let i = index_1d();
        if i < n as usize {
            out.store(i, len2(v.load(3 * i), v.load(3 * i + 1), v.load(3 * i + 2)));
        }
    }
}

kernel! {
    /// Array of 16-byte aligned structs (`x, y, z` and a pad): one
    /// `ld.global.v4` per thread, 512 contiguous bytes per warp in 16
    /// sectors, all used, of which a quarter is padding.
    pub fn lab_len2_aos16(v: In<f32>, out: Out<f32>, n: u32) {
        let i = index_1d();
        if i < n as usize {
            let [x, y, z, _] = v.load4(4 * i);
            out.store(i, len2(x, y, z));
        }
    }
}

kernel! {
    /// Structure of arrays: three coalesced loads, 4 sectors each per warp,
    /// every byte used.
    pub fn lab_len2_soa(x: In<f32>, y: In<f32>, z: In<f32>, out: Out<f32>, n: u32) {
        let i = index_1d();
        if i < n as usize {
            out.store(i, len2(x.load(i), y.load(i), z.load(i)));
        }
    }
}

kernel! {
    /// The 12-byte AoS staged through shared memory: the block copies its
    /// `3 * 256` floats with coalesced loads (`smem[t + 256 k] = v[base + t
    /// + 256 k]`: 4 sectors per warp request), then thread `t` reads
    /// `smem[3 t..3 t + 3]`: word `3 t`, bank `3 t mod 32`, distinct for the
    /// 32 lanes because 3 is coprime with 32: conflict-free.
    pub fn lab_len2_aos12_staged(v: In<f32>, out: Out<f32>, n: u32) {
        let n = n as usize;
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        let first = block_idx_x() as usize * BLOCK;
        let floats = 3 * n;
        for k in 0..3 {
            let j = 3 * first + t + k * BLOCK;
            if j < floats {
                smem.set(t + k * BLOCK, v.load(j));
            }
        }
        sync_threads();
        let i = first + t;
        if i < n {
            out.store(i, len2(smem.get(3 * t), smem.get(3 * t + 1), smem.get(3 * t + 2)));
        }
    }
}

// ---- alignment and stride sweeps ------------------------------------------

pub const COPY_OFFSET: Kernel = stream("lab_copy_offset", 0);
pub const COPY_STRIDE: Kernel = stream("lab_copy_stride", 0);

kernel! {
    /// `out[i] = input[i + offset]`. With `offset = 0` a warp reads 128
    /// bytes starting on a sector boundary: 4 sectors. Any offset that is
    /// not a multiple of 8 elements (32 bytes) straddles one more: 5
    /// sectors for the same 128 bytes, 80% efficiency.
    pub fn lab_copy_offset(input: In<f32>, out: Out<f32>, n: u32, offset: u32) {
        let i = index_1d();
        if i < n as usize {
            out.store(i, input.load(i + offset as usize));
        }
    }
}

kernel! {
    /// `out[i] = input[i * stride]`: a warp's 32 reads are `4 * stride`
    /// bytes apart, so they touch `min(32, 4 * stride)` sectors for 128
    /// useful bytes: 4 at stride 1, 8 at 2, 16 at 4, 32 from 8 on.
    pub fn lab_copy_stride(input: In<f32>, out: Out<f32>, n: u32, stride: u32) {
        let i = index_1d();
        if i < n as usize {
            out.store(i, input.load(i * stride as usize));
        }
    }
}

// ---- shared-memory banks ---------------------------------------------------

/// Reads per thread in each bank kernel (enough for the shared reads to
/// dominate the time).
pub const BANK_READS: usize = 64;

/// One warp per block; the block's tile comes from `input[1024 b..]`.
const fn bank(name: &'static str, shared_bytes: u32) -> Kernel {
    Kernel::new(name, Dim3::x(32), shared_bytes, [32, 1])
}

pub const BANK_COLUMN_32: Kernel = bank("lab_bank_column_32", tile_bytes::<f32>(32, 32));
pub const BANK_COLUMN_33: Kernel = bank("lab_bank_column_33", tile_bytes::<f32>(32, 33));
pub const BANK_COLUMN_31: Kernel = bank("lab_bank_column_31", tile_bytes::<f32>(31, 31));
pub const BANK_ROW: Kernel = bank("lab_bank_row", tile_bytes::<f32>(32, 32));
pub const BANK_BROADCAST: Kernel = bank("lab_bank_broadcast", tile_bytes::<f32>(32, 32));
pub const BANK_F64_ROW: Kernel = bank("lab_bank_f64_row", tile_bytes::<f64>(32, 32));
pub const BANK_F64_COLUMN: Kernel = bank("lab_bank_f64_column", tile_bytes::<f64>(32, 32));
pub const BANK_F64_COLUMN_33: Kernel = bank("lab_bank_f64_column_33", tile_bytes::<f64>(32, 33));
/// The bank study.
pub const BANKS: [Kernel; 8] = [
    BANK_COLUMN_32,
    BANK_COLUMN_33,
    BANK_COLUMN_31,
    BANK_ROW,
    BANK_BROADCAST,
    BANK_F64_ROW,
    BANK_F64_COLUMN,
    BANK_F64_COLUMN_33,
];

/// Fills a `rows` x `STRIDE` tile from `input[rows * cols * b..]` (lane
/// `l` writes column `l` of each row: conflict-free), then lane `l` sums
/// `BANK_READS` elements `at(l, r)` and writes the sum to `out[32 b + l]`
/// (`lanes` active lanes; the others write 0).
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
    let tile = unsafe { SharedTile::<T, STRIDE>::launch_sized() };
    let lane = thread_idx_x() as usize;
    let base = block_idx_x() as usize * rows * rows;
    if lane < rows {
        for r in 0..rows {
            unsafe { tile.store(r, lane, input.load(base + r * rows + lane)) };
        }
    }
    sync_threads();
    let mut sum = T::default();
    if lane < lanes {
        for r in 0..BANK_READS {
            let (row, col) = at(lane, r);
            sum = sum + unsafe { tile.load(row, col) };
        }
    }
    unsafe { out.store(block_idx_x() as usize * 32 + lane, sum) };
}

kernel! {
    /// Column of a 32 x 32 tile: lane `l` reads `tile[l][c]`, word `32 l +
    /// c`, bank `c` for every lane: 32-way, 32 wavefronts per request.
    pub fn lab_bank_column_32(input: In<f32>, out: Out<f32>) {
        bank_study::<f32, 32>(input, out, 32, 32, |l, r| (l, r % 32))
    }
}

kernel! {
    /// Column of a 32 x 33 tile: bank `(33 l + c) mod 32 = (l + c) mod 32`,
    /// 32 distinct banks: conflict-free.
    pub fn lab_bank_column_33(input: In<f32>, out: Out<f32>) {
        bank_study::<f32, 33>(input, out, 32, 32, |l, r| (l, r % 32))
    }
}

kernel! {
    /// 31 lanes reading a column of a 31 x 31 tile: bank `(31 l + c) mod
    /// 32`; 31 is coprime with 32, so `31 l mod 32` takes 31 distinct
    /// values: conflict-free without padding.
    pub fn lab_bank_column_31(input: In<f32>, out: Out<f32>) {
        bank_study::<f32, 31>(input, out, 31, 31, |l, r| (l, r % 31))
    }
}

kernel! {
    /// A row: lane `l` reads `tile[r][l]`, 32 consecutive words in 32
    /// banks: conflict-free.
    pub fn lab_bank_row(input: In<f32>, out: Out<f32>) {
        bank_study::<f32, 32>(input, out, 32, 32, |l, r| (r % 32, l))
    }
}

kernel! {
    /// Every lane reads the same word `tile[r][0]`: one word, broadcast to
    /// all lanes in one wavefront.
    pub fn lab_bank_broadcast(input: In<f32>, out: Out<f32>) {
        bank_study::<f32, 32>(input, out, 32, 32, |_, r| (r % 32, 0))
    }
}

kernel! {
    /// A row of 8-byte `f64`: 256 bytes per warp, served as two half-warps
    /// of 128 bytes; lane `l` covers words `2 l, 2 l + 1`, so each half
    /// fills the 32 banks once: 2 wavefronts, the fewest for 256 bytes.
    pub fn lab_bank_f64_row(input: In<f64>, out: Out<f64>) {
        bank_study::<f64, 32>(input, out, 32, 32, |l, r| (r % 32, l))
    }
}

kernel! {
    /// A column of a 32 x 32 `f64` tile: rows are 64 words apart, so every
    /// lane of a half-warp hits banks `2 c, 2 c + 1`: 16-way in each half.
    pub fn lab_bank_f64_column(input: In<f64>, out: Out<f64>) {
        bank_study::<f64, 32>(input, out, 32, 32, |l, r| (l, r % 32))
    }
}

kernel! {
    /// The `f64` column padded to 33: rows are 66 words apart, lane `l` of a
    /// half-warp starts at bank `2 (l + c) mod 32`: 16 lanes x 2 words fill
    /// the 32 banks once: conflict-free again.
    pub fn lab_bank_f64_column_33(input: In<f64>, out: Out<f64>) {
        bank_study::<f64, 33>(input, out, 32, 32, |l, r| (l, r % 32))
    }
}
