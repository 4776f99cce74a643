//! Tensor cores: the GEMM ladder continued through `mma.sync`.
//!
//! Every kernel computes `C = A B` for row-major `A` (`m x k`) and `B` (`k
//! x n`) in bf16 (their bit patterns as `u16`) and `C` (`m x n`) in `f32`,
//! accumulating in `f32`. Any `m`, `n`, `k`: edge tiles read zeros outside
//! the matrices and store only inside `C`. The device layer's `mma` module
//! says which lane holds which element of each fragment.
//!
//! FLOPs: `2 m n k`. One `m16n8k16` does 16 x 8 x 16 = 2048 multiply-adds
//! for the warp in one instruction, where the FP32 pipe takes 64 `FFMA`
//! instructions: the tensor cores' bf16 rate is an order of magnitude above
//! SGEMM's, which is why the ceiling here is cuBLAS's bf16 GEMM.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use crate::dev::mma::{a_bf16, b_bf16, c_f32, mma_bf16_m16n8k16, pack_bf16};
use crate::dev::{In, Out, SharedTile, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use seq_macro::seq;

/// Block tile of [`tc_mma_bf16`]: 128 x 128 of C, 32 of k per step.
pub const BM: usize = 128;
pub const BN: usize = 128;
pub const BK: usize = 32;
/// Shared rows are padded by 8 bf16 (16 bytes): A rows are 20 words apart,
/// so the 8 rows a fragment load touches start in banks `20 g mod 32`, all
/// different multiples of 4 (see the kernel).
const PAD: usize = 8;
/// Threads: 8 warps as 2 x 4, each a 64 x 32 warp tile of 4 x 4 `m16n8`
/// tiles.
pub const THREADS: usize = 256;
/// Row strides in 32-bit words (two bf16 each).
const A_WORDS: usize = (BK + PAD) / 2;
const B_WORDS: usize = (BN + PAD) / 2;

/// Bytes of one stage: `As[BM][BK + PAD]` then `Bs[BK][BN + PAD]`.
const STAGE_BYTES: usize = 2 * (BM * (BK + PAD) + BK * (BN + PAD));

/// Bytes of shared memory: two stages.
pub const fn shared_bytes() -> usize {
    2 * STAGE_BYTES
}

/// Eight consecutive bf16 as four words of two (the lower index in the low
/// half), for one 16-byte shared store.
#[inline(always)]
fn words(v: [u16; 8]) -> [f32; 4] {
    [0, 1, 2, 3].map(|i| f32::from_bits(pack_bf16(v[2 * i], v[2 * i + 1])))
}

/// 1. `mma.sync` with shared-memory tiles: the first tensor-core step.
///
/// Each k-step of 32 stages a 128 x 32 tile of A and a 32 x 128 tile of B
/// in shared memory: 16-byte loads and stores, two of each per thread and
/// operand, when rows start on 16 bytes (`k` and `n` multiples of 8), and
/// element by element with zeros outside the matrices otherwise. Then warp
/// `w`, a 64 x 32 piece of C, does 2 x 4 x 4 `m16n8k16`: 32 x 2048
/// multiply-adds per barrier. Two shared stages: the next k-step's tiles
/// are loaded into registers before this one's multiplies and stored into
/// the other stage after them, so their global latency overlaps the
/// tensor cores' work (the SGEMM ladder's double buffer).
///
/// Fragments come from shared memory register by register, at the
/// places the PTX ISA's lane map names: an A register is two neighbours
/// along k of one row, one 32-bit load (lanes of a quad read consecutive
/// words, the 8 groups rows 20 words apart: banks `20 g + q mod 32`, all 32
/// different); a B register is two neighbours along k of one column, two
/// 16-bit loads from two rows. The next step's `ldmatrix` (with `.trans`
/// for B) loads four registers in one instruction.
///
/// Launch: `a` holds `m k`, `b` `k n`, `c` `m n` elements; the grid covers
/// C with 128 x 128 tiles (`tile`), 256 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16`.
#[kernel(block = THREADS, shared = shared_bytes(), tile = [BN, BM])]
pub fn tc_mma_bf16(a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread_idx_x() as usize;
    let (lane, warp) = ((t % 32) as u32, t / 32);
    let (wm, wn) = (warp / 4 * 64, warp % 4 * 32);
    let (m0, n0) = (block_idx_y() as usize * BM, block_idx_x() as usize * BN);
    // 16-byte global loads need every row to start on 16 bytes.
    let vector = k.is_multiple_of(8) && n.is_multiple_of(8);
    // Vector v of each tile: A row v / 4, columns 8 (v % 4)..+8; B row
    // v / 16, columns 8 (v % 16)..+8; v = t and t + 256. Zeros past k.
    let load = |k0: usize| -> [[u16; 8]; 4] {
        let mut out = [[0u16; 8]; 4];
        seq!(H in 0..2 {{
            let v = t + H * THREADS;
            let (row, kk) = (m0 + v / 4, k0 + 8 * (v % 4));
            out[H] = if vector && row < m && kk + 8 <= k {
                // SAFETY: inside A; row * k + kk is a multiple of 8.
                unsafe { a.load16::<8>(row * k + kk) }
            } else {
                // SAFETY: each element guarded: inside A, or a zero.
                core::array::from_fn(|e| if row < m && kk + e < k { unsafe { a.load(row * k + kk + e) } } else { 0 })
            };
            let (kk, nn) = (k0 + v / 16, n0 + 8 * (v % 16));
            out[2 + H] = if vector && kk < k && nn + 8 <= n {
                // SAFETY: inside B; kk * n + nn is a multiple of 8.
                unsafe { b.load16::<8>(kk * n + nn) }
            } else {
                // SAFETY: each element guarded: inside B, or a zero.
                core::array::from_fn(|e| if kk < k && nn + e < n { unsafe { b.load(kk * n + nn + e) } } else { 0 })
            };
        }});
        out
    };
    // Stage s's word views of As and Bs, and the 16-bit view of Bs.
    let views = |s: usize| {
        let at = s * STAGE_BYTES;
        // SAFETY: the declaration passes two stages; each view lies in
        // stage s (As first, Bs after), and the views of Bs are the same
        // bytes.
        unsafe {
            (
                SharedTile::<f32, A_WORDS>::launch_sized_at(at),
                SharedTile::<f32, B_WORDS>::launch_sized_at(at + 2 * BM * (BK + PAD)),
                SharedTile::<u16, { BN + PAD }>::launch_sized_at(at + 2 * BM * (BK + PAD)),
            )
        }
    };
    let store = |s: usize, tiles: [[u16; 8]; 4]| {
        let (a_w, b_w, _) = views(s);
        seq!(H in 0..2 {{
            let v = t + H * THREADS;
            // SAFETY: A row v / 4 < BM, words 4 (v % 4)..+4 of BK / 2; B
            // row v / 16 < BK, words 4 (v % 16)..+4 of BN / 2.
            unsafe {
                a_w.store4(v / 4, 4 * (v % 4), words(tiles[H]));
                b_w.store4(v / 16, 4 * (v % 16), words(tiles[2 + H]));
            }
        }});
    };
    let mut acc = [[[0.0f32; 4]; 4]; 4];

    store(0, load(0));
    sync_threads();
    let (mut k0, mut stage) = (0, 0);
    while k0 < k {
        let next = load(k0 + BK);
        let (a_w, _, b_h) = views(stage);
        seq!(KS in 0..2 {{
            // Straight-line code (`seq!`): the fragments and sums stay in
            // registers only when every index is a constant.
            let mut fa = [[0u32; 4]; 4];
            seq!(MI in 0..4 { seq!(REG in 0..4 {{
                let (r, col) = a_bf16(lane, 2 * REG);
                // SAFETY: row < BM; the word of columns col, col + 1 < BK.
                fa[MI][REG] = unsafe { a_w.load(wm + 16 * MI + r as usize, (16 * KS + col as usize) / 2) }.to_bits();
            }}); });
            let mut fb = [[0u32; 2]; 4];
            seq!(NI in 0..4 { seq!(REG in 0..2 {{
                let (kk, col) = b_bf16(lane, 2 * REG);
                let (kk, col) = (16 * KS + kk as usize, wn + 8 * NI + col as usize);
                // SAFETY: kk + 1 < BK, col < BN.
                fb[NI][REG] = unsafe { pack_bf16(b_h.load(kk, col), b_h.load(kk + 1, col)) };
            }}); });
            seq!(MI in 0..4 { seq!(NI in 0..4 {
                // SAFETY: every lane of every warp runs this straight-line
                // code alike (no lane-dependent control flow around it).
                acc[MI][NI] = unsafe { mma_bf16_m16n8k16(fa[MI], fb[NI], acc[MI][NI]) };
            }); });
        }});
        // The other stage was last read before the previous barrier.
        store(stage ^ 1, next);
        sync_threads();
        (k0, stage) = (k0 + BK, stage ^ 1);
    }

    seq!(MI in 0..4 { seq!(NI in 0..4 { seq!(I in 0..4 {{
        let (r, col) = c_f32(lane, I);
        let (row, col) = (m0 + wm + 16 * MI + r as usize, n0 + wn + 8 * NI + col as usize);
        if row < m && col < n {
            // SAFETY: inside C; this lane's element alone.
            unsafe { c.store(row * n + col, acc[MI][NI][I]) };
        }
    }}); }); });
}
