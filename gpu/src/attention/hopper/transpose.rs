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
//! **The pass.** A block of 64 threads (two warps) moves a tile of 64
//! keys by 64 columns (4 KB). Each thread copies four 16-byte chunks of V
//! rows into shared memory, rows 68 bytes apart. Then each thread takes
//! one sixteen of keys and four columns. Key `k` of its sixteen gives it
//! one word (the four columns' bytes, one load). The four words of the
//! keys that one Vᵀ word holds, `fp8_column(4 q..4 q + 4)`, become four Vᵀ
//! words, one per column, by a 4 x 4 byte transpose (six `PRMT`s). So 16
//! loads and 24 permutes make 64 bytes, four 16-byte stores of Vᵀ rows.
//! A warp's 32 threads are 16 column groups by two sixteens. Their loads
//! fall in 32 different banks (a row of 17 words puts the second sixteen
//! 16 banks on), and each Vᵀ row gets two neighbouring 16-byte stores,
//! one 32-byte sector. Keys past `s_k`, up to the padded length, are
//! written as zeros. The pass reads and writes every byte once: `2 s_k d`
//! bytes per K/V head, at the copy's rate at best.

use crate::dev::fp8::E4m3;
use crate::dev::registers::transpose_bytes;
use crate::dev::wgmma::fp8_column;
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, block_idx_z, sync_threads, thread_idx_x};
use crate::kernel;
use seq_macro::seq;

/// Keys (and Vᵀ columns) per block.
pub const TRANSPOSE_KEYS: usize = 64;
/// V columns (Vᵀ rows) per block.
pub const TRANSPOSE_COLUMNS: usize = 64;
/// Threads per block.
pub const TRANSPOSE_THREADS: usize = 64;
/// Words a row of the shared tile: 16 and one, so that the two sixteens a
/// warp reads lie 16 banks apart.
const ROW_WORDS: usize = TRANSPOSE_COLUMNS / 4 + 1;

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
#[kernel(block = TRANSPOSE_THREADS, shared = TRANSPOSE_KEYS * ROW_WORDS * 4, tile = [TRANSPOSE_KEYS, TRANSPOSE_COLUMNS])]
pub fn fp8_v_transpose(v: In<E4m3>, vt: Out<E4m3>, s_k: u32, d: u32) {
    let (s_k, d) = (s_k as usize, d as usize);
    let s_kt = transposed_keys(s_k);
    let t = thread_idx_x() as usize;
    let (key0, col0, head) = (
        block_idx_x() as usize * TRANSPOSE_KEYS,
        block_idx_y() as usize * TRANSPOSE_COLUMNS,
        block_idx_z() as usize,
    );
    // SAFETY: the launch passes the tile's bytes.
    let tile = unsafe { SharedArray::<u32>::launch_sized() };
    let words = v.recast::<u32>();
    seq!(N in 0..4 {{
        // Chunk `c` of the tile: key `c / 4`, bytes `16 (c mod 4)..`.
        let c = t + TRANSPOSE_THREADS * N;
        let (key, at) = (key0 + c / 4, col0 + 16 * (c % 4));
        // Keys past `s_k` read the last key's bytes and keep zeros (a select
        // per word: a branch between two arrays would put them on the stack).
        let valid = key < s_k;
        // SAFETY: the clamped key is below s_k, and the 16 bytes lie inside
        // its row (d is a multiple of 64), 16-byte aligned.
        let chunk = unsafe { words.load16::<4>(((head * s_k + key.min(s_k - 1)) * d + at) / 4) };
        seq!(I in 0..4 {
            // SAFETY: inside the tile (row c / 4 < 64, word < 16); this
            // thread's own.
            unsafe { tile.set((c / 4) * ROW_WORDS + 4 * (c % 4) + I, if valid { chunk[I] } else { 0 }) };
        });
    }});
    sync_threads();
    // Columns `4 g..4 g + 4` of the tile, keys `16 s..16 s + 16` (a warp:
    // 16 column groups by two sixteens).
    let (g, s) = (t % 16, t / 16);
    if key0 + 16 * s >= s_kt {
        return;
    }
    // Vᵀ words: `columns[c][q]` is column `4 g + c`'s keys `4 q..4 q + 4`.
    let mut columns = [[0u32; 4]; 4];
    seq!(Q in 0..4 {{
        let q: u32 = Q;
        // SAFETY: (below) key < 64 and g < 16: inside the tile, written above.
        let word = |i: u32| unsafe { tile.get((16 * s + fp8_column(4 * q + i) as usize) * ROW_WORDS + g) };
        let four = transpose_bytes([word(0), word(1), word(2), word(3)]);
        seq!(C in 0..4 {
            columns[C][Q] = four[C];
        });
    }});
    let out = vt.recast::<f32>();
    seq!(C in 0..4 {{
        let at = (head * d + col0 + 4 * g + C) * s_kt + key0 + 16 * s;
        // SAFETY: inside Vᵀ (key0 + 16 s + 16 <= s_kt, a multiple of 16;
        // the row below d), 16-byte aligned; these 16 bytes are this
        // thread's alone.
        unsafe { out.store_x4(at / 4, columns[C].map(f32::from_bits)) };
    }});
}
