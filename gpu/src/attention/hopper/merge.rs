//! The merge of a split last round's chunks (`scheduler`, [`super::SPLIT`]):
//! a kernel of its own, after the product, so that the product's code
//! stays what it is without a split.
//!
//! Each chunk left, per consumer thread's place, its rows' state: O's `d /
//! 2` accumulators, then each of the thread's two rows' reference and
//! whole sum, thread-minor (`TileStore::chunk`, `epilogue`). A thread here takes
//! one place's eight accumulators (two rows, four columns each) of one
//! tile and walks the tile's chunks in the order of their blocks,
//! `2^(m c)` rescaling as the online softmax does: `M = max(M, m_b)`, `O =
//! O 2^((M_old - M) c) + O_b 2^((m_b - M) c)`, the sums alike. Then `O /
//! l`, and lse from the thread that holds a row's first columns.
//!
//! **Arithmetic.** Per chunk a thread loads 12 words (48 bytes, a warp's
//! 32 threads consecutive words: whole 128-byte lines) for 16 FMAs: bound
//! by the loads' latency, one L2 round trip per chunk, which the many
//! warps (one per 32 of `8 L d` places, `L` the last round's tiles) hide.

use super::BR;
use super::scheduler::Tail;
use crate::attention::{LOG2_E, log_sum_exp};
use crate::dev::Element;
use crate::dev::math::pack;
use crate::dev::math::{ex2_approx, fma};
use crate::dev::wgmma::d_f32;
use crate::dev::{In, Out, index_1d};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Accumulators a thread merges: two rows' four columns (`seq!`s below
/// count them out).
const PART: usize = 8;

/// 3b. The merge of a split Hopper launch's chunks (the module says how).
///
/// Launch: `states` as the product launch (`blocks` blocks, head
/// dimension `d`, the problem's sizes) left it; one thread per place and part, `2
/// x 128 x d / 8` a tile of the last round, in blocks of 256; O and lse
/// as the product's.
/// Its time is counted in the hopper step's (`BENCHMARKS.md`).
/// Measured: `BENCHMARKS.md`, rows `attention_merge`.
#[kernel(block = 256, tile = 256, types = [bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn attention_merge<T: Element>(
    states: In<f32>,
    o: Out<T>,
    lse: Out<f32>,
    batch: u32,
    heads: u32,
    s_q: u32,
    s_k: u32,
    d: u32,
    blocks: u32,
    scale: f32,
) {
    let (d, c) = (d as usize, scale * LOG2_E);
    let bc = super::bc(d) as u32;
    let m_blocks = s_q.div_ceil(BR as u32).max(1);
    let Some(tail) = Tail::of_problem(batch * heads, (s_q, s_k), bc, blocks) else { return };
    let g = index_1d();
    // (`max(1)`: d is 64, 128 or 256; no divide-by-zero branch.)
    let parts = (d / 2 / PART).max(1);
    let (t, rest) = (g % 128, g / 128);
    let (part, rest) = (rest % parts, rest / parts);
    let (wg, tile) = (rest % 2, (rest / 2) as u32);
    if tile >= tail.tiles {
        return;
    }
    let f = d / 2 + 4;
    let (first, last) = tail.blocks_of(tile);
    let mut top = [f32::NEG_INFINITY; 2];
    let mut sum = [0.0f32; 2];
    let mut acc = [0.0f32; PART];
    for b in first..=last {
        let at = (tail.slot(b, tile) as usize * 2 + wg) * f * 128 + t;
        // SAFETY: (all loads) block `b`'s chunk of the tile wrote its
        // place, inside `blocks part_floats(d)` words (the launch's contract).
        let word = |w: usize| unsafe { states.load(at + 128 * w) };
        let (m, l) = ([word(d / 2), word(d / 2 + 1)], [word(d / 2 + 2), word(d / 2 + 3)]);
        let mut v = [0.0f32; PART];
        seq!(K in 0..8 {
            v[K] = word(PART * part + K);
        });
        let mut scales = [[0.0f32; 2]; 2];
        seq!(R in 0..2 {{
            let new = top[R].max(m[R]);
            let reference = if new == f32::NEG_INFINITY { 0.0 } else { new * c };
            scales[R] = [ex2_approx(fma(top[R], c, -reference)), ex2_approx(fma(m[R], c, -reference))];
            sum[R] = fma(sum[R], scales[R][0], scales[R][1] * l[R]);
            top[R] = new;
        }});
        // Accumulator `k` is row `(k / 2) mod 2`'s.
        seq!(K in 0..8 {{
            let k: usize = K;
            let row = (k / 2) % 2;
            acc[K] = fma(acc[K], scales[row][0], scales[row][1] * v[K]);
        }});
    }
    let (r, col) = d_f32(t as u32, 0);
    let bh = (tail.whole + tile) / m_blocks;
    let q0 = ((tail.whole + tile) % m_blocks) as usize * BR + 64 * wg;
    let o = o.recast::<u32>();
    seq!(R in 0..2 {{
        let row = q0 + r as usize + 8 * R;
        if row < s_q as usize {
            let inv = if sum[R] > 0.0 { 1.0 / sum[R] } else { 0.0 };
            let head_row = bh as usize * s_q as usize + row;
            seq!(N in 0..2 {
                // Accumulators `4 n + 2 R + (0, 1)`, columns `8 (2 part + n) +
                // col` and the next.
                let pair = pack::<T>(acc[4 * N + 2 * R] * inv, acc[4 * N + 2 * R + 1] * inv);
                // SAFETY: inside the row (column `8 n' + col + 1 < d`), 4
                // bytes on 4.
                unsafe { o.store((head_row * d + col as usize + 8 * (2 * part + N)) / 2, pair) };
            });
            if part == 0 && col == 0 {
                let value = log_sum_exp(top[R] * c, sum[R]);
                // SAFETY: row < s_q; one thread per row.
                unsafe { lse.store(head_row, value) };
            }
        }
    }});
}

/// Threads of a merge launch for head dimension `d` and `tiles` tiles in
/// the last round.
pub const fn merge_threads(d: usize, tiles: usize) -> usize {
    tiles * 2 * 128 * (d / 2 / PART)
}
