//! Vᵀ for the FP8 step: FP8 `wgmma` reads its B operand K-major only, and
//! in `P V` the k is the keys, so V (`s_k x d`, a key a row) must come as
//! Vᵀ (`d x s_k`, a key a column). This pass writes it once per V, before
//! the attention kernel.
//!
//! **The keys' order.** The attention kernel packs P's `f32` accumulators
//! four to a register as they lie. The byte that the instruction takes as
//! k-index `k` then holds key [`fp8_column`]`(k)` of its 32, not key `k`
//! (the permutation stays within each 16 keys). So column `x` of Vᵀ holds
//! key `16 (x / 16) + fp8_column(x mod 16)`: the keys of P and of Vᵀ are
//! permuted alike, and their product is the sum over keys, unchanged. A
//! shuffle of P in registers (FlashAttention-3's byte permutes) is no
//! longer needed.
//!
//! **The pass.** A block of 128 threads moves a tile of 64 keys by 64
//! columns (4 KB). Each thread loads two 16-byte chunks of V rows into
//! shared memory. Then each thread writes 32 keys of one Vᵀ row (a whole
//! 32-byte sector), gathered byte by byte from one column of the tile. A
//! warp's 32 threads read 32 neighbouring bytes of a tile row, so 8 words
//! and no bank conflict. Keys past `s_k` up to the padded length are
//! written as zeros. The pass reads and writes every byte once:
//! `2 s_k d` bytes per K/V head, at the copy's rate at best.

use crate::dev::fp8::E4m3;
use crate::dev::wgmma::fp8_column;
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, block_idx_z, sync_threads, thread_idx_x};
use crate::kernel;

/// Keys (and Vᵀ columns) per block.
pub const TRANSPOSE_KEYS: usize = 64;
/// V columns (Vᵀ rows) per block.
pub const TRANSPOSE_COLUMNS: usize = 64;
/// Threads per block.
pub const TRANSPOSE_THREADS: usize = 128;

/// The padded key count of Vᵀ for `s_k` keys: a multiple of 16, so that
/// each Vᵀ row starts on 16 bytes (TMA's rule) and the permutation's
/// blocks of 16 are whole.
pub const fn transposed_keys(s_k: usize) -> usize {
    s_k.div_ceil(16) * 16
}

/// 3c. V (E4M3, `[heads, s_k, d]`) to Vᵀ (`[heads, d, s_kt]`, `s_kt =`
/// [`transposed_keys`]`(s_k)`), keys permuted in sixteens for the FP8 step's
/// packed P (the module documentation has the order and the arithmetic).
///
/// Launch: grid `(ceil(s_kt / 64), d / 64, heads)` blocks of
/// [`TRANSPOSE_THREADS`]; `d` a multiple of 64; `v` holds `heads s_k d`
/// bytes, `vt` `heads d s_kt`.
/// Measured: `BENCHMARKS.md`, rows `fp8_v_transpose`.
#[kernel(block = TRANSPOSE_THREADS, shared = TRANSPOSE_KEYS * TRANSPOSE_COLUMNS, tile = [TRANSPOSE_KEYS, TRANSPOSE_COLUMNS])]
pub fn fp8_v_transpose(v: In<E4m3>, vt: Out<E4m3>, s_k: u32, d: u32) {
    let (s_k, d) = (s_k as usize, d as usize);
    let s_kt = transposed_keys(s_k);
    let t = thread_idx_x() as usize;
    let (key0, col0, head) = (
        block_idx_x() as usize * TRANSPOSE_KEYS,
        block_idx_y() as usize * TRANSPOSE_COLUMNS,
        block_idx_z() as usize,
    );
    // The tile, a key a row of 64 bytes (16 words).
    // SAFETY: the launch passes 4 KB of shared memory.
    let tile = unsafe { SharedArray::<u32>::launch_sized() };
    let words = v.recast::<u32>();
    for n in 0..2 {
        // Chunk `c` of the tile: key `c / 4`, bytes `16 (c mod 4)..`.
        let c = t + TRANSPOSE_THREADS * n;
        let (key, at) = (key0 + c / 4, col0 + 16 * (c % 4));
        // Keys past `s_k` read the last key's bytes and keep zeros (a select
        // per word: a branch between two arrays would put them on the stack).
        let valid = key < s_k;
        // SAFETY: the clamped key is below s_k, and the 16 bytes lie inside
        // its row (d is a multiple of 64), 16-byte aligned.
        let chunk = unsafe { words.load16::<4>(((head * s_k + key.min(s_k - 1)) * d + at) / 4) };
        for (i, word) in chunk.map(|w| if valid { w } else { 0 }).into_iter().enumerate() {
            // SAFETY: 4 c + i < 1024 words; this thread's own.
            unsafe { tile.set(4 * c + i, word) };
        }
    }
    sync_threads();
    // Vᵀ row `col0 + t mod 64`, keys `key0 + 32 (t / 64)..` (a sector).
    let (row, half) = (t % TRANSPOSE_COLUMNS, t / TRANSPOSE_COLUMNS);
    let byte = |key: usize| {
        // SAFETY: key < 64, row < 64: inside the tile, written above.
        let word = unsafe { tile.get(16 * key + row / 4) };
        (word >> (8 * (row % 4))) & 0xff
    };
    let out = vt.recast::<f32>();
    for sixteen in 0..2 {
        let first = 32 * half + 16 * sixteen;
        if key0 + first >= s_kt {
            continue;
        }
        let mut chunk = [0u32; 4];
        for (i, word) in chunk.iter_mut().enumerate() {
            for b in 0..4 {
                let k = (4 * i + b) as u32;
                *word |= byte(first + fp8_column(k) as usize) << (8 * b);
            }
        }
        let at = (head * d + col0 + row) * s_kt + key0 + first;
        // SAFETY: inside Vᵀ (key0 + first + 16 <= s_kt, a multiple of 16;
        // row < d), 16-byte aligned; these 16 bytes are this thread's alone.
        unsafe { out.store_x4(at / 4, chunk.map(f32::from_bits)) };
    }
}
