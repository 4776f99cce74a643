//! The decode kernels on `mma.sync`: the weight as the 16-row A operand,
//! the tokens as the 8-column B operand (see the module above for the
//! lane maps and why the order of k may be the loads').
//!
//! Every loop is an `#[inline(always)]` function with the load widths as
//! constants: the four copies (16-byte or element loads of the weight and
//! of the tokens) each keep their sums in registers, and the kernel's
//! register count is its largest copy's.

use super::{
    Out, ROWS_K, ROWS_N, Raw, STEP_N, Shape, Store, WARPS, WIDE_W, WIDE_X, Work, chunk_k, finish, load8,
    load16,
};
use crate::dev::mma::mma;
use crate::dev::{Element, thread_idx_x};
use crate::gemm::epilogue::Output;
use seq_macro::seq;

/// A warp's sums: `T` 16-row tiles of the weight by two 8-token halves,
/// each an `mma` D fragment.
type Acc<const T: usize> = [[[f32; 4]; 2]; T];

/// A warp's sums as one array, fragment by fragment: element `i` is tile
/// `i / 8`, token half `(i / 4) % 2`, D element `i % 4`.
#[inline(always)]
fn flat<const T: usize, const N: usize>(acc: &Acc<T>) -> [f32; N] {
    let mut out = [0.0; N];
    seq!(I in 0..32 {
        let i: usize = I;
        if i < N {
            out[i] = acc[i / 8][(i / 4) % 2][i % 4];
        }
    });
    out
}

/// Tokens past 8 take the second half's `mma`s (skipped, warp-uniformly,
/// at 8 or fewer: a constant trip count, with the test inside, keeps the
/// arrays' indices constant).
#[inline(always)]
fn halves(p: &Shape) -> usize {
    if p.tokens > 8 { 2 } else { 1 }
}

/// What a lane of [`decode_k`] reads from: its rows `g` and `g + 8` of
/// each tile (clamped into the weight), its token row `g`, and where its
/// 16 bytes of k start in the weight and the tokens.
#[derive(Clone, Copy)]
struct LaneK {
    rows: [[usize; 2]; 2],
    g: usize,
    w_base: usize,
    x_base: usize,
}

/// One chunk's registers of [`decode_k`]: rows `g` and `g + 8` of each of
/// the two tiles, and the two token halves.
struct ChunkK {
    w: [[[u32; 4]; 2]; 2],
    x: [[u32; 4]; 2],
}

impl ChunkK {
    /// Nothing: zero products.
    const ZERO: ChunkK = ChunkK { w: [[[0; 4]; 2]; 2], x: [[0; 4]; 2] };
}

/// The lane's loads of chunk `c` (its own 16 bytes, `valid` elements of
/// them inside k), 16 bytes at a time where `WW` (the weight) and `WX`
/// (the tokens) say.
///
/// # Safety
/// The launch's contract; `valid` elements lie inside the split.
#[inline(always)]
unsafe fn load_chunk<S: Raw, const WW: bool, const WX: bool>(
    k: &Work<S>,
    l: LaneK,
    c: usize,
    valid: usize,
) -> ChunkK {
    let (p, k0) = (&k.p, k.at.lo + c * chunk_k(S::BYTES));
    let (w_at, x_at) = (l.w_base + k0, l.x_base + k0 * p.x_p);
    // SAFETY: the caller's contract.
    unsafe {
        ChunkK {
            w: core::array::from_fn(|tile| {
                core::array::from_fn(|h| load16(k.w, w_at + l.rows[tile][h] * p.ldw, 1, valid, WW))
            }),
            x: core::array::from_fn(|h| {
                let s = l.g + 8 * h;
                if s < p.tokens { load16(k.x, x_at + s * p.x_s, p.x_p, valid, WX) } else { [0; 4] }
            }),
        }
    }
}

/// The chunk's `mma`s: each 16-byte register set is two steps of k.
///
/// # Safety
/// The whole warp runs it, converged.
#[inline(always)]
unsafe fn mma_k<T: Element>(acc: &mut Acc<2>, c: &ChunkK, halves: usize) {
    for (tile, sums) in acc.iter_mut().enumerate() {
        let (lo, hi) = (c.w[tile][0], c.w[tile][1]);
        for (h, d) in sums.iter_mut().enumerate() {
            if h < halves {
                let xs = c.x[h];
                // SAFETY: the caller's contract.
                unsafe {
                    *d = mma::<T>([lo[0], hi[0], lo[1], hi[1]], [xs[0], xs[1]], *d);
                    *d = mma::<T>([lo[2], hi[2], lo[3], hi[3]], [xs[2], xs[3]], *d);
                }
            }
        }
    }
}

/// Chunk `c`'s loads and products a tile at a time (the tokens first,
/// then each tile's two rows and its `mma`s): fewer registers than
/// [`load_chunk`]'s whole chunk, for the copies that load element by
/// element and the masked last chunk.
///
/// # Safety
/// As for [`load_chunk`] and [`mma_k`].
#[inline(always)]
unsafe fn k_chunk_by_tile<S: Raw, T: Element, const WW: bool, const WX: bool>(
    k: &Work<S>,
    l: LaneK,
    acc: &mut Acc<2>,
    c: usize,
    valid: usize,
) {
    let (p, k0) = (&k.p, k.at.lo + c * chunk_k(S::BYTES));
    let (w_at, x_at) = (l.w_base + k0, l.x_base + k0 * p.x_p);
    let halves = halves(p);
    // SAFETY: the caller's contract.
    unsafe {
        let xs: [[u32; 4]; 2] = core::array::from_fn(|h| {
            let s = l.g + 8 * h;
            if s < p.tokens { load16(k.x, x_at + s * p.x_s, p.x_p, valid, WX) } else { [0; 4] }
        });
        for (tile, sums) in acc.iter_mut().enumerate() {
            let lo = load16(k.w, w_at + l.rows[tile][0] * p.ldw, 1, valid, WW);
            let hi = load16(k.w, w_at + l.rows[tile][1] * p.ldw, 1, valid, WW);
            for (h, d) in sums.iter_mut().enumerate() {
                if h < halves {
                    let x = xs[h];
                    *d = mma::<T>([lo[0], hi[0], lo[1], hi[1]], [x[0], x[1]], *d);
                    *d = mma::<T>([lo[2], hi[2], lo[3], hi[3]], [x[2], x[3]], *d);
                }
            }
        }
    }
}

/// The warp's whole chunks `c, c + 8, ..` below `chunks`, one at a time
/// (two chunks' loads in flight held more than the 128 registers that let
/// two blocks share an SM, and spilled).
///
/// # Safety
/// The launch's contract; the whole warp runs it.
#[inline(always)]
unsafe fn k_chunks<S: Raw, T: Element, const WW: bool, const WX: bool>(
    k: &Work<S>,
    l: LaneK,
    acc: &mut Acc<2>,
    mut c: usize,
    chunks: usize,
) {
    let (per, halves) = (16 / S::BYTES, halves(&k.p));
    // SAFETY: the caller's contract: whole chunks lie inside the split.
    unsafe {
        while c < chunks {
            if WW && WX {
                let chunk = load_chunk::<S, WW, WX>(k, l, c, per);
                mma_k::<T>(acc, &chunk, halves);
            } else {
                k_chunk_by_tile::<S, T, WW, WX>(k, l, acc, c, per);
            }
            c += WARPS;
        }
    }
}

/// The K-major form: lane `(g, t)` (`g = lane / 4`, `t = lane % 4`)
/// reads 16 bytes of rows `g` and `g + 8` of each 16-row tile at byte `16
/// t` of a 64-byte chunk (a warp's load: 8 rows x 64 contiguous bytes,
/// whole sectors). A block owns 32 rows; its 8 warps take interleaved
/// chunks of the split's k. Block `(x, y, z)` computes weight rows `32 x
/// ..` over split `y` of matrix `z`, then [`finish`].
///
/// # Safety
/// The launch's contract (`gemm_decode_k_bf16`).
#[inline(always)]
pub(super) unsafe fn decode_k<S: Raw, T: Element, O: Output>(
    k: Work<S>,
    out: (Out<O>, Out<f32>, Out<u32>),
    e: Store,
) {
    let (p, at) = (k.p, k.at);
    let per = 16 / S::BYTES;
    let kc = chunk_k(S::BYTES);
    let (warp, lane) = (thread_idx_x() as usize / 32, thread_idx_x() as usize % 32);
    let (g, t) = (lane / 4, lane % 4);
    let last = p.rows - 1;
    let l = LaneK {
        rows: core::array::from_fn(|tile| {
            core::array::from_fn(|h| (at.j0 + 16 * tile + g + 8 * h).min(last))
        }),
        g,
        w_base: at.z * p.w_batch + t * per,
        x_base: at.z * p.x_batch + t * per * p.x_p,
    };
    let chunks = (at.hi - at.lo) / kc;
    let mut acc: Acc<2> = [[[0.0; 4]; 2]; 2];
    // SAFETY: the launch's contract: rows clamped into the weight, k
    // within the split's range (the tail masked), tokens below `tokens`.
    unsafe {
        // FP8 comes here only with every row on 16 bytes and k a multiple
        // of 16 (the host's routing): its element loads (16 for a row's 16
        // bytes) would need more than 128 registers.
        let fp8 = S::BYTES == 1;
        match (p.flags & WIDE_W != 0, p.flags & WIDE_X != 0) {
            (true, true) => k_chunks::<S, T, true, true>(&k, l, &mut acc, warp, chunks),
            _ if fp8 => {}
            (true, false) => k_chunks::<S, T, true, false>(&k, l, &mut acc, warp, chunks),
            (false, true) => k_chunks::<S, T, false, true>(&k, l, &mut acc, warp, chunks),
            (false, false) => k_chunks::<S, T, false, false>(&k, l, &mut acc, warp, chunks),
        }
        // The split's last, partial chunk: the warp after the last full
        // one's, each lane's elements past k zero (FP8's 16 bytes lie all
        // inside k or all past it).
        let tail = (at.hi - at.lo) % kc;
        if tail > 0 && warp == chunks % WARPS {
            let valid = tail.saturating_sub(t * per).min(per);
            if fp8 {
                let whole = valid == per;
                let c = if whole { load_chunk::<S, true, true>(&k, l, chunks, per) } else { ChunkK::ZERO };
                mma_k::<T>(&mut acc, &c, halves(&p));
            } else {
                k_chunk_by_tile::<S, T, false, false>(&k, l, &mut acc, chunks, valid);
            }
        }
        let place = |i: usize| {
            let (tile, h, i) = (i / 8, (i / 4) % 2, i % 4);
            let (row, col) = (g + 8 * (i / 2), 2 * t + i % 2);
            (col + 8 * h, 16 * tile + row)
        };
        finish::<O, ROWS_K, WARPS, 16>(&flat(&acc), place, warp, at, out, p, e);
    }
}

/// Two 16-bit values `lo`, `hi` in one word.
#[inline(always)]
fn pair(lo: u32, hi: u32) -> u32 {
    (lo & 0xffff) | (hi << 16)
}

/// What a lane of [`decode_n`] reads from: its group and quad, how many
/// of its 8 columns lie inside the weight, and where they start in the
/// weight and the tokens.
#[derive(Clone, Copy)]
struct LaneN {
    g: usize,
    t: usize,
    cols: usize,
    w_base: usize,
    x_base: usize,
}

/// One step's registers of [`decode_n`]: rows `p0 .. p0 + 4` of the
/// weight, 8 columns each, and the two token halves' 4 values of k.
type StepN = ([[u32; 4]; 4], [[u32; 2]; 2]);

/// The lane's loads of step `s` (rows of k past the split zero): the
/// weight 16 bytes a row where `WW` (its 8 columns then lie all inside
/// the weight or all outside), the tokens 8 bytes where `WX`.
///
/// # Safety
/// The launch's contract.
#[inline(always)]
unsafe fn n_step<S: Raw, const WW: bool, const WX: bool>(k: &Work<S>, l: LaneN, s: usize) -> StepN {
    let (p, at) = (&k.p, &k.at);
    let p0 = at.lo + s * STEP_N + 4 * l.t;
    let valid = at.hi.saturating_sub(p0).min(4);
    // SAFETY: the caller's contract; rows below `at.hi`, columns below
    // `cols`, tokens below `tokens`.
    unsafe {
        let rows = core::array::from_fn(|r| {
            if r < valid && l.cols > 0 {
                load16(k.w, l.w_base + (p0 + r) * p.ldw, 1, if WW { 8 } else { l.cols }, WW)
            } else {
                [0; 4]
            }
        });
        let xs = core::array::from_fn(|h| {
            let tok = l.g + 8 * h;
            if tok < p.tokens && valid > 0 {
                load8(k.x, l.x_base + tok * p.x_s + p0 * p.x_p, p.x_p, valid, WX)
            } else {
                [0; 2]
            }
        });
        (rows, xs)
    }
}

/// A step's `mma`s: columns `2 i` and `2 i + 1` of the lane's 8 (its A
/// rows `g` and `g + 8` of tile `i`), each over its 4 rows of k, the
/// register pairs of rows `p`, `p + 1` rearranged into A registers of one
/// column and two neighbouring k.
///
/// # Safety
/// The whole warp runs it, converged.
#[inline(always)]
unsafe fn n_products<T: Element>(acc: &mut Acc<4>, (rows, xs): StepN, halves: usize) {
    seq!(I in 0..4 {
        let i: usize = I;
        let a = [
            pair(rows[0][i], rows[1][i]),
            pair(rows[0][i] >> 16, rows[1][i] >> 16),
            pair(rows[2][i], rows[3][i]),
            pair(rows[2][i] >> 16, rows[3][i] >> 16),
        ];
        seq!(H in 0..2 {
            let h: usize = H;
            if h < halves {
                // SAFETY: the caller's contract.
                acc[i][h] = unsafe { mma::<T>(a, xs[h], acc[i][h]) };
            }
        });
    });
}

/// The warp's steps `s, s + 8, ..` below `steps`, one at a time (as
/// [`k_chunks`] takes its chunks).
///
/// # Safety
/// The launch's contract; the whole warp runs it.
#[inline(always)]
unsafe fn n_steps<S: Raw, T: Element, const WW: bool, const WX: bool>(
    k: &Work<S>,
    l: LaneN,
    acc: &mut Acc<4>,
    mut s: usize,
    steps: usize,
) {
    let halves = halves(&k.p);
    // SAFETY: the caller's contract.
    unsafe {
        while s < steps {
            let step = n_step::<S, WW, WX>(k, l, s);
            n_products::<T>(acc, step, halves);
            s += WARPS;
        }
    }
}

/// The N-major form (16-bit elements): lane `(g, t)` reads 16 bytes (8
/// columns `8 g ..`) of each of the 4 rows `4 t ..` of a 16-row step of k
/// (a warp's load: 4 rows x 128 contiguous bytes), feeding 4 `mma` tiles
/// of 16 columns. Block `(x, y, z)` computes weight columns `64 x ..` over
/// split `y` of matrix `z`.
///
/// # Safety
/// The launch's contract (`gemm_decode_n_bf16`).
#[inline(always)]
pub(super) unsafe fn decode_n<S: Raw, T: Element, O: Output>(
    k: Work<S>,
    out: (Out<O>, Out<f32>, Out<u32>),
    e: Store,
) {
    let (p, at) = (k.p, k.at);
    let (warp, lane) = (thread_idx_x() as usize / 32, thread_idx_x() as usize % 32);
    let (g, t) = (lane / 4, lane % 4);
    let col = at.j0 + 8 * g;
    let l = LaneN {
        g,
        t,
        cols: p.rows.saturating_sub(col).min(8),
        w_base: at.z * p.w_batch + col,
        x_base: at.z * p.x_batch,
    };
    let steps = (at.hi - at.lo).div_ceil(STEP_N);
    let mut acc: Acc<4> = [[[0.0; 4]; 2]; 4];
    // SAFETY: the launch's contract: columns and rows of k masked inside
    // the weight, tokens below `tokens`.
    unsafe {
        match (p.flags & WIDE_W != 0, p.flags & WIDE_X != 0) {
            (true, true) => n_steps::<S, T, true, true>(&k, l, &mut acc, warp, steps),
            (true, false) => n_steps::<S, T, true, false>(&k, l, &mut acc, warp, steps),
            (false, true) => n_steps::<S, T, false, true>(&k, l, &mut acc, warp, steps),
            (false, false) => n_steps::<S, T, false, false>(&k, l, &mut acc, warp, steps),
        }
        let place = |i: usize| {
            let (tile, h, i) = (i / 8, (i / 4) % 2, i % 4);
            let (row, c) = (g + 8 * (i / 2), 2 * t + i % 2);
            // A row `g` is column 8 g + 2 tile, row `g + 8` the next.
            (c + 8 * h, 8 * (row % 8) + 2 * tile + row / 8)
        };
        finish::<O, ROWS_N, WARPS, 32>(&flat(&acc), place, warp, at, out, p, e);
    }
}
