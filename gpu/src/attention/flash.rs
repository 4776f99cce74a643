//! Step 2, fused attention in the style of FlashAttention-2 (sm_80 and
//! later): S and P live in registers, K and V stream through shared memory.
//!
//! A block owns one (batch, head) and [`br`] queries: at `d = 64` and
//! 128, 128, a warp 32 of them in two row tiles of 16 ([`mt`]), so that
//! each K and V fragment a warp loads feeds two `mma`s; at `d = 256`,
//! where one row tile's O accumulators take 128 registers, 64 and one.
//! Each stage holds a tile of [`bc`] keys (64; 32 at `d = 256`), which a
//! warp takes in passes of [`kc`] (at `d = 128` two of 32, so that S
//! takes 32 registers beside O's 128). For each pass a warp computes its
//! rows' scores with
//! `mma.sync` m16n8k16 (Q's fragments by `ldmatrix`, K's by
//! `ldmatrix`: a row of K is a column of Kᵀ, two neighbours along `d` in
//! one register, as the B fragment wants), updates each row's running
//! maximum `m` and sum `l` (the online softmax: when `m` grows, `l` and the
//! row's O accumulators are multiplied by `2^(m_old - m_new)`), turns the
//! scores into `P = 2^(s c - m c)` (`c = scale log2 e`: one `FFMA` and one
//! `ex2.approx` a score), and multiplies `P V` into O (V's fragments by
//! `ldmatrix.trans`: V is stored key-major, and the B fragment wants two
//! neighbouring keys of one column). After the last tile, O is divided by
//! `l` and stored; `lse = (m c + log2 l) ln 2`.
//!
//! P goes from the score accumulators to `P V`'s A fragments in
//! registers (`Warp::tile`), and the tiles are swizzled in
//! shared memory (`swz`).
//!
//! **Causal.** Query `i` sees keys up to `i + s_k - s_q` (bottom-right
//! aligned). Key tiles wholly past the block's last query's limit are
//! never loaded nor multiplied (the loop stops before them); only tiles
//! that cross some row's limit, or the end of K, compare each key with
//! its row's limit. Non-causal blocks mask only the last tile, and only
//! when `s_k` is not a multiple of `BC`. Blocks take the query tiles
//! last first (the longest, causally), so the grid ends on short ones.
//!
//! **Pipeline.** Two stages of (K tile, V tile). Each tile: wait for this
//! thread's copies (`cp.async.wait_group 0`), one barrier (everyone's
//! copies landed, and every warp is done with the other stage), issue the
//! next tile's 16-byte `cp.async` copies into the other stage, compute.
//! The copies of tile `j + 1` fly while the tensor cores work on tile `j`.
//! Q is copied once, with the first tile. Rows past `s_q` or `s_k` are the
//! copies' zero fill (source size 0): no NaN from uninitialized memory
//! reaches a product.
//!
//! **Arithmetic.** FLOPs `4 b h s_q s_k d` (about half when causal). Bytes
//! from L2: per block, Q once and K, V once per tile: `2 d (br + 2 s_k)`
//! (bf16), so `4 br s_k d / (2 d (br + 2 s_k)) ~ br` (64 or 128) FLOP per
//! byte of L2 traffic, and DRAM sees Q, K, V and O once. No `s_q x s_k` matrix is
//! written: the baseline's bytes are gone, and what bounds this kernel is
//! the tensor cores' issue rate, diluted by what is not `mma`: the
//! softmax's `MUFU.EX2`, the rescales, the fragment loads (per warp and
//! pass, `mt d / 16` of Q and `kc d / 128` of K and of V, for `mt kc d /
//! 32` `mma`s: one `ldmatrix` of K or V per four `mma`s at two row tiles,
//! per two at one) and the barrier per tile.
//!
//! Registers per thread: O `mt d / 2` (64, 128, 128), S `mt kc / 2` (64,
//! 32, 16), plus fragments and addresses. At `d = 128` that is all 255:
//! what lives through the tile loop (the block's place, the problem) is
//! kept in 32-bit words, so that no loop-invariant address spills.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::{LOG2_E, log_sum_exp, tree32};
use crate::dev::Element;
use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::math::pack;
use crate::dev::math::{ex2_approx, fma};
use crate::dev::mma::mma_m16n8k16;
use crate::dev::registers::opaque;
use crate::dev::warp::{FULL_MASK, shfl_xor_f32};
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, grid_dim_x, sync_threads, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Row tiles of 16 queries per warp for head dimension `d`: two up to `d
/// = 128` (a warp owns 32 rows, so each K and V fragment it loads feeds
/// two `mma`s of different rows), one at 256 (O's accumulators take 128
/// registers a row tile there).
pub const fn mt(d: usize) -> usize {
    if d > 128 { 1 } else { 2 }
}

/// Queries per block for head dimension `d`: 4 warps of `16 mt(d)` rows.
pub const fn br(d: usize) -> usize {
    64 * mt(d)
}
/// Threads per block.
pub const THREADS: usize = 128;

/// Keys per tile for head dimension `d`: 64, or 32 at `d = 256` (its O
/// accumulators alone take 128 registers a thread).
pub const fn bc(d: usize) -> usize {
    if d > 128 { 32 } else { 64 }
}

/// Keys a warp multiplies at a time for head dimension `d`: a stage's
/// [`bc`] in one pass, or at `d = 128`, where two row tiles' O take 128
/// registers, in two passes of 32 (S at 32 registers, not 64; the copies
/// and the barrier stay one a stage of 64 keys).
pub const fn kc(d: usize) -> usize {
    if d > 64 { 32 } else { 64 }
}

/// Bytes of a K (or V) tile for head dimension `d`, 16-bit; a stage is a
/// K tile, then a V tile.
const fn kv_bytes(d: usize) -> usize {
    2 * bc(d) * d
}

/// Bytes of shared memory for head dimension `d`: Q's tile, then two
/// stages.
pub const fn shared_bytes(d: usize) -> usize {
    2 * br(d) * d + 2 * 2 * kv_bytes(d)
}

/// Element index of row `r`, column `c` in a swizzled tile of rows of `d`
/// elements: 16-byte chunk `c / 8` moves to `(c / 8) ^ (r mod 8)`.
///
/// **Shared memory, swizzled.** Q, K and V tiles keep their rows of `d`
/// elements (`d / 8` 16-byte chunks; 8, 16 or 32) whole, chunk `c` of row
/// `r` stored at chunk `c ^ (r mod 8)`. An `ldmatrix` 8 x 8 matrix is 8
/// consecutive rows at one logical chunk: physical chunks `c ^ 0..c ^ 7`,
/// eight different 16-byte slots of the 128-byte bank line (`d / 8` is a
/// multiple of 8, so a row's slot is its chunk mod 8): one pass each, no
/// conflict, no padding. The copies write 8 consecutive chunks of one row
/// per 8 lanes: `8a + (b ^ (r mod 8))` for `b = 0..8`, again 8 slots.
#[inline(always)]
pub(in crate::attention) const fn swz(d: usize, r: usize, c: usize) -> usize {
    r * d + 8 * ((c / 8) ^ (r % 8)) + c % 8
}

/// Where this block works, from the launch: the (batch, head) pair and
/// the query tile, the problem, and the thread.
///
/// 32-bit words (read as `usize` through the methods): what lives through
/// the tile loop takes one register each, not two, where the products
/// leave none to spare.
#[derive(Clone, Copy)]
struct Block {
    /// Q's (and O's) first row of this head, in rows of `d`.
    q_rows: u32,
    /// K's and V's first row of this head's K/V head.
    kv_rows: u32,
    /// The first query of the tile.
    q0: u32,
    s_q: u32,
    s_k: u32,
    causal: bool,
    lane: u32,
    warp: u32,
}

impl Block {
    #[inline(always)]
    fn q_rows(&self) -> usize {
        self.q_rows as usize
    }
    #[inline(always)]
    fn kv_rows(&self) -> usize {
        self.kv_rows as usize
    }
    #[inline(always)]
    fn q0(&self) -> usize {
        self.q0 as usize
    }
    #[inline(always)]
    fn s_q(&self) -> usize {
        self.s_q as usize
    }
    #[inline(always)]
    fn s_k(&self) -> usize {
        self.s_k as usize
    }
    #[inline(always)]
    fn lane(&self) -> usize {
        self.lane as usize
    }
    #[inline(always)]
    fn warp(&self) -> usize {
        self.warp as usize
    }
}

/// Copies `rows` rows (a constant once inlined) of `D` elements from
/// `src` (from row `first`; rows at or past `valid` are zero-filled) into
/// the swizzled tile at byte `at` of shared memory: 16-byte `cp.async`
/// copies, `D / 8` per row, by the block's `N` threads.
/// Thread `t` takes chunk `t mod (D / 8)` of rows `t / (D / 8) + n step`
/// (`step = N / (D / 8)` rows a pass, `rows / step` passes, unrolled):
/// its source and destination advance by constants, so a copy costs a
/// few adds, not the division, the swizzle and the 64-bit address
/// arithmetic of a chunk index (which took more issue slots than the
/// `mma`s did). Uncommitted.
///
/// # Safety
/// The launch passes the tile's bytes at `at`; `src` holds every valid
/// row; nobody touches the tile until the copies are waited for and a
/// barrier passed.
#[inline(always)]
pub(in crate::attention) unsafe fn copy_tile<const D: usize, const N: usize>(
    src: In<u16>,
    first: usize,
    valid: usize,
    rows: usize,
    at: usize,
    t: usize,
) {
    // SAFETY: the caller's contract.
    let tile = unsafe { SharedArray::<f32>::launch_sized_at(at) };
    let chunks = D / 8;
    let step = N / chunks;
    let (r0, c) = (t / chunks, t % chunks);
    // The thread's first chunk, in 4-byte words (rows start on 16 bytes:
    // D is a multiple of 8).
    let words = src.words();
    let from = words.wrapping_offset(((first + r0) * D + 8 * c) / 2);
    if valid >= rows {
        // Every row inside `src` (all tiles but a tail): plain copies.
        seq!(N in 0..32 {
            if N < rows / step {
                // SAFETY: inside `src`; a whole chunk of the tile, word
                // index / 2.
                unsafe { tile.copy_async4(0, swz(D, r0 + N * step, 8 * c) / 2, from, N * step * D / 2) };
            }
        });
    } else {
        let valid = valid as u32;
        seq!(N in 0..32 {
            if N < rows / step {
                let r = r0 + N * step;
                let inside = (r as u32) < valid;
                // SAFETY: inside `src` when `inside`; a whole chunk of the
                // tile. A row past `valid` copies nothing (source size 0)
                // from the tensor's start.
                unsafe {
                    tile.copy_async4_or_zero(
                        0,
                        swz(D, r, 8 * c) / 2,
                        if inside { from } else { words },
                        if inside { N * step * D / 2 } else { 0 },
                        inside,
                    )
                };
            }
        });
    }
}

/// Whether pass `h` of a stage (its first key `key0`) has keys to
/// multiply: the first always (the loop stops before a stage without
/// any), a later one where the stage holds it and a key of it is visible
/// to some query of the block (`keys`).
#[inline(always)]
fn runs<const D: usize>(h: usize, key0: usize, keys: usize) -> bool {
    h == 0 || (h < bc(D) / kc(D) && key0 < keys)
}

/// A stage's K and V tiles (`bc(D)` keys from row `first`, `valid` of them
/// inside K) into the stage at byte `at`, uncommitted: a function, not a
/// closure, so that it is always inlined (LLVM called the closure).
///
/// # Safety
/// The launch passes `shared_bytes(D)`, the stage at `at`; K and V hold
/// `first + valid` rows; nobody reads the stage until the copies are
/// waited for and a barrier passed.
#[inline(always)]
unsafe fn copy_stage<const D: usize>(
    (k, v): (In<u16>, In<u16>),
    (first, valid, at): (usize, usize, usize),
    t: usize,
) {
    // SAFETY: the caller's contract.
    unsafe {
        copy_tile::<D, THREADS>(k, first, valid, bc(D), at, t);
        copy_tile::<D, THREADS>(v, first, valid, bc(D), at + kv_bytes(D), t);
    }
}

/// Step 2's body for head dimension `D`, in element type `T`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn flash<T: Element, const D: usize>(
    q: In<T>,
    k: In<T>,
    v: In<T>,
    o: Out<T>,
    lse: Out<f32>,
    (heads, kv_heads, s_q, s_k): (u32, u32, u32, u32),
    scale: f32,
    causal: u32,
) {
    // (`max(1)`: the launch's contract makes them at least 1; said so,
    // the divisions need no divide-by-zero branch.)
    let (heads, kv_heads) = (heads.max(1), kv_heads.max(1));
    let bh = block_idx_y();
    let (b, h) = (bh / heads, bh % heads);
    let kvh = h / (heads / kv_heads).max(1);
    let t = thread_idx_x();
    let at = Block {
        q_rows: bh * s_q,
        kv_rows: (b * kv_heads + kvh) * s_k,
        // The last query tile first: causally the longest, so that the
        // grid's last blocks are short ones.
        q0: (grid_dim_x() - 1 - block_idx_x()) * br(D) as u32,
        s_q,
        s_k,
        causal: causal != 0,
        lane: t % 32,
        warp: t / 32,
    };
    let t = t as usize;
    let (s_q, s_k) = (s_q as usize, s_k as usize);
    let (q, k, v) = (q.same_bytes::<u16>(), k.same_bytes::<u16>(), v.same_bytes::<u16>());
    let bc = bc(D);
    // Keys any query of the tile sees: causally, up to the last query's
    // limit (tiles past it are skipped, never masked).
    let keys = if at.causal { (at.q0() + br(D) + s_k).saturating_sub(s_q).min(s_k) } else { s_k };
    let tiles = keys.div_ceil(bc);
    // Shared memory: Q, then stage s at `stage_at(s)`.
    let stage_at = |s: usize| 2 * br(D) * D + s * 2 * kv_bytes(D);
    let fill = |tile: usize| (at.kv_rows() + tile * bc, s_k.saturating_sub(tile * bc), stage_at(tile % 2));
    if tiles > 0 {
        // SAFETY: Q's tile at byte 0; the rows of this head's queries.
        unsafe {
            copy_tile::<D, THREADS>(q, at.q_rows() + at.q0(), s_q.saturating_sub(at.q0()), br(D), 0, t)
        };
        // SAFETY: as `copy_stage` says; the stages are not read yet.
        unsafe { copy_stage::<D>((k, v), fill(0), t) };
        commit_copies();
    }
    let c = scale * LOG2_E;
    let mut rows = Warp::<D>::new();
    for tile in 0..tiles {
        // This thread's copies of the tile landed; after the barrier,
        // everyone's, and every warp is past the tile before.
        wait_copies::<0>();
        sync_threads();
        if tile + 1 < tiles {
            // SAFETY: as `copy_stage` says; the barrier freed the stage.
            unsafe { copy_stage::<D>((k, v), fill(tile + 1), t) };
            commit_copies();
        }
        let kc = kc(D);
        seq!(H in 0..2 {
            let key0 = tile * bc + H * kc;
            if runs::<D>(H, key0, keys) {
                // Whether some key of the pass is past some row's limit: the
                // end of K, or (causal) the first query's limit `q0 + s_k - s_q`.
                let masked = key0 + kc > s_k || (at.causal && key0 + kc + s_q > at.q0() + s_k + 1);
                // The pass's keys: rows `H kc..` of the stage's K and V tiles.
                let (k_at, v_at) = (stage_at(tile % 2) + 2 * H * kc * D, stage_at(tile % 2) + kv_bytes(D) + 2 * H * kc * D);
                // SAFETY: the stage's copies landed (the wait and the
                // barrier); the whole block runs this alike.
                unsafe { rows.tile::<T>(&at, (k_at, v_at), key0, masked, c) };
            }
        });
    }
    // SAFETY: O and lse hold this head's `s_q` rows; each lane stores its
    // own elements.
    unsafe { rows.store::<T>(&at, o, lse, c) };
}

/// A row tile of 16 queries: the O accumulators (`D / 8` m16n8
/// fragments; the arrays hold the largest `D`, 256, and only the first
/// `D / 8` are touched), and for its two rows of this lane (`g`, `g + 8`)
/// the running maximum, in score units, and this lane's part of the
/// running sum.
#[derive(Clone, Copy)]
struct Rows<const D: usize> {
    acc: [[f32; 4]; 32],
    m: [f32; 2],
    l: [f32; 2],
}

/// A warp's row tiles (`mt(D)` of them; rows `16 (mt warp + i)..` of the
/// block's, for tile `i`) and what their products share.
struct Warp<const D: usize> {
    tiles: [Rows<D>; 2],
}

impl<const D: usize> Warp<D> {
    #[inline(always)]
    fn new() -> Self {
        let rows = Rows { acc: [[0.0; 4]; 32], m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
        Warp { tiles: [rows; 2] }
    }

    /// The first query of row tile `i`.
    #[inline(always)]
    fn first_row(at: &Block, i: usize) -> usize {
        at.q0() + 16 * (mt(D) * at.warp() + i)
    }

    /// One pass of [`kc`] keys from `key0`, whose K and V rows lie at bytes
    /// `k_at` and `v_at`: S = Q Kᵀ for every row tile, the mask where
    /// `masked`, the online softmax, O += P V. Each K and V fragment is
    /// loaded once and multiplied into every row tile.
    ///
    /// **P from the accumulators to the A fragment, in registers.** The
    /// `m16n8` C fragment gives lane `(g, q) = (lane / 4, lane % 4)` elements
    /// `c0, c1` at row `g`, columns `2q, 2q + 1` and `c2, c3` at row `g + 8`,
    /// the same columns. The `m16n8k16` A fragment wants, for k 0..16: `a0` =
    /// row `g`, k `2q, 2q + 1`; `a1` = row `g + 8`, the same k; `a2`, `a3` the
    /// same at k `8 + 2q, 9 + 2q`. So the scores of key tiles `2t` and `2t + 1`
    /// (keys `16t..16t + 16`) are the A fragment of k-step `t` of `P V` as they
    /// lie: `a0 = (c0, c1)` and `a1 = (c2, c3)` of tile `2t`, `a2`, `a3` the
    /// same of tile `2t + 1`, each pair rounded to the input type and packed.
    /// No shuffle, no shared memory.
    ///
    /// # Safety
    /// The stage and Q's tile hold their data (after the barrier); every
    /// lane of the block's warps calls it alike.
    #[inline(always)]
    unsafe fn tile<T: Element>(
        &mut self,
        at: &Block,
        (k_at, v_at): (usize, usize),
        key0: usize,
        masked: bool,
        c: f32,
    ) {
        let bc = kc(D);
        // SAFETY: Q at byte 0, K and V at `k_at` and `v_at` (the launch's
        // shared memory); read only here, after the barrier.
        let (qs, ks, vs) = unsafe {
            (
                SharedArray::<u16>::launch_sized(),
                SharedArray::<u16>::launch_sized_at(k_at),
                SharedArray::<u16>::launch_sized_at(v_at),
            )
        };
        // ldmatrix rows: lane l gives row l % 8 of matrix l / 8.
        // Q (A fragment): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
        // (rows 0-7, k 8-15), (rows 8-15, k 8-15).
        // K (B fragments of two key tiles): (keys 0-7, k 0-7), (keys 0-7,
        // k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15).
        // V (.trans, B fragments of two column tiles): (keys 0-7, columns
        // 0-7), (keys 8-15, 0-7), (keys 0-7, 8-15), (keys 8-15, 8-15).
        //
        // Each lane's rows are `r = lane % 8` mod 8, and it reads chunk `2 j
        // + x` of 16 columns `j` (x = lane / 16 for Q and V, lane / 8 % 2
        // for K). Its swizzled place, `(2 j + x) ^ r`, is `8 (j / 4) + ((2
        // (j % 4) + x) ^ r)`: four offsets per lane, `lo[j % 4]`, plus a
        // constant (a row tile further down Q is 16 rows on: a constant
        // too). Every address is then a lane's base plus a constant, which
        // `ldmatrix` takes as its immediate offset (below, `j >> 2` for `j /
        // 4`: `seq!`'s literals would make `4 / 4`); the bases are
        // recomputed per tile (`zero` is 0, but not to LLVM), so that no
        // loop-invariant address of the 16 x 16 x ... unrolled products
        // is hoisted out of the tile loop to hold a register through it.
        let zero = opaque(key0) - key0;
        let lane = at.lane() + zero;
        let r = lane % 8;
        let lo = |x: usize| -> [usize; 4] { core::array::from_fn(|j| 8 * ((2 * j + x) ^ r)) };
        let (lo_qv, lo_k) = (lo(lane / 16), lo(lane / 8 % 2));
        let q_base = (16 * mt(D) * at.warp() + lane % 8 + 8 * (lane / 8 % 2)) * D;
        let k_base = (lane % 8 + 8 * (lane / 16)) * D;
        // Four bases per operand, each a plain number to LLVM: otherwise
        // it ORs the constants into the (disjoint) low bits, and ptxas,
        // which folds an added constant into `ldmatrix`'s immediate
        // offset, cannot fold an OR (two integer instructions an
        // `ldmatrix`).
        let at_q: [usize; 4] = core::array::from_fn(|j| opaque(q_base + lo_qv[j]));
        let at_k: [usize; 4] = core::array::from_fn(|j| opaque(k_base + lo_k[j]));
        let mut s = [[[0.0f32; 4]; 8]; 2];
        seq!(KK in 0..16 {
            if KK < D / 16 {
                let qa: [[u32; 4]; 2] = core::array::from_fn(|i| {
                    if i < mt(D) {
                        // SAFETY: row < br(D), 16 bytes inside a chunk;
                        // converged.
                        unsafe { qs.ldmatrix_x4(0, at_q[KK % 4] + 16 * i * D + 64 * (KK >> 2)) }
                    } else {
                        [0; 4]
                    }
                });
                seq!(P in 0..4 {
                    if P < bc / 16 {
                        // SAFETY: key row < bc, as above.
                        let kb = unsafe { ks.ldmatrix_x4(0, at_k[KK % 4] + 16 * P * D + 64 * (KK >> 2)) };
                        seq!(I in 0..2 {
                            if I < mt(D) {
                                // SAFETY: the whole warp, converged.
                                unsafe {
                                    s[I][2 * P] = mma_m16n8k16::<T>(qa[I], [kb[0], kb[1]], s[I][2 * P]);
                                    s[I][2 * P + 1] = mma_m16n8k16::<T>(qa[I], [kb[2], kb[3]], s[I][2 * P + 1]);
                                }
                            }
                        });
                    }
                });
            }
        });
        seq!(I in 0..2 {
            if I < mt(D) {
                self.tiles[I].softmax(&mut s[I], Self::first_row(at, I), (at, lane), (key0, masked), c);
            }
        });
        // O += P V: P's A fragments straight from the score registers (see
        // this function's documentation); V's B fragments by ldmatrix.trans.
        // (V's bases only now: through `Q Kᵀ` and the softmax they would
        // hold four registers where S's are live.)
        let v_base = (lane % 8 + 8 * (lane / 8 % 2)) * D;
        let at_v: [usize; 4] = core::array::from_fn(|j| opaque(v_base + lo(lane / 16)[j]));
        seq!(KT in 0..4 {
            if KT < bc / 16 {
                let pa: [[u32; 4]; 2] = core::array::from_fn(|i| [
                    pack::<T>(s[i][2 * KT][0], s[i][2 * KT][1]),
                    pack::<T>(s[i][2 * KT][2], s[i][2 * KT][3]),
                    pack::<T>(s[i][2 * KT + 1][0], s[i][2 * KT + 1][1]),
                    pack::<T>(s[i][2 * KT + 1][2], s[i][2 * KT + 1][3]),
                ]);
                seq!(P in 0..16 {
                    if P < D / 16 {
                        // SAFETY: key row < bc, column < D, 16 bytes; converged.
                        let vb = unsafe { vs.ldmatrix_x4_trans(0, at_v[P % 4] + 16 * KT * D + 64 * (P >> 2)) };
                        seq!(I in 0..2 {
                            if I < mt(D) {
                                let acc = &mut self.tiles[I].acc;
                                // SAFETY: the whole warp, converged.
                                unsafe {
                                    acc[2 * P] = mma_m16n8k16::<T>(pa[I], [vb[0], vb[1]], acc[2 * P]);
                                    acc[2 * P + 1] = mma_m16n8k16::<T>(pa[I], [vb[2], vb[3]], acc[2 * P + 1]);
                                }
                            }
                        });
                    }
                });
            }
        });
    }

    /// Every row tile's O and lse ([`Rows::store`]).
    ///
    /// # Safety
    /// As for [`Rows::store`].
    #[inline(always)]
    unsafe fn store<T: Element>(&mut self, at: &Block, o: Out<T>, lse: Out<f32>, c: f32) {
        seq!(I in 0..2 {
            if I < mt(D) {
                // SAFETY: the caller's contract.
                unsafe { self.tiles[I].store::<T>(at, Self::first_row(at, I), (&o, &lse), c) };
            }
        });
    }
}

impl<const D: usize> Rows<D> {
    /// The scores `s` of one key tile at `key0` for the 16 rows from
    /// `row0`: the mask where `masked`, then the online softmax, O
    /// rescaled; `s` becomes P.
    #[inline(always)]
    fn softmax(
        &mut self,
        s: &mut [[f32; 4]; 8],
        row0: usize,
        (at, lane): (&Block, usize),
        (key0, masked): (usize, bool),
        c: f32,
    ) {
        let bc = kc(D);
        let (g, q) = (lane / 4, lane % 4);
        if masked {
            // Element e of key tile j: row g + 8 (e / 2), key 8 j + 2 q + e % 2.
            let row0 = row0 + g;
            seq!(J in 0..8 {
                if J < bc / 8 {
                    seq!(E in 0..4 {{
                        let (row, key) = (row0 + 8 * (E >> 1), key0 + 8 * J + 2 * q + E % 2);
                        let limit = super::visible_keys(row.min(at.s_q() - 1), at.s_q(), at.s_k(), at.causal);
                        // Rows past s_q are never stored: any limit will do.
                        if key >= limit {
                            s[J][E] = f32::NEG_INFINITY;
                        }
                    }});
                }
            });
        }
        // The online softmax, row by row (r = 0: row g, elements 0 and 1;
        // r = 1: row g + 8, elements 2 and 3).
        seq!(R in 0..2 {{
            let mut v = [f32::NEG_INFINITY; 32];
            seq!(J in 0..8 {
                if J < bc / 8 {
                    v[2 * J] = s[J][2 * R];
                    v[2 * J + 1] = s[J][2 * R + 1];
                }
            });
            let mut top = tree32(v, f32::max);
            // The row's four lanes (one quad) agree.
            // SAFETY: every lane of the warp is here.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1) });
            // SAFETY: as above.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 2) });
            let m = self.m[R].max(top);
            // The reference point in log2 units; 0 while the row has seen
            // no key (then every p is 2^-inf = 0, and so is `alpha`).
            let reference = if m == f32::NEG_INFINITY { 0.0 } else { m * c };
            let alpha = ex2_approx(fma(self.m[R], c, -reference));
            self.m[R] = m;
            let mut v = [-0.0f32; 32];
            seq!(J in 0..8 {
                if J < bc / 8 {
                    seq!(E in 0..2 {{
                        let p = ex2_approx(fma(s[J][2 * R + E], c, -reference));
                        s[J][2 * R + E] = p;
                        v[2 * J + E] = p;
                    }});
                }
            });
            self.l[R] = self.l[R] * alpha + tree32(v, |a, b| a + b);
            seq!(N in 0..32 {
                if N < D / 8 {
                    self.acc[N][2 * R] *= alpha;
                    self.acc[N][2 * R + 1] *= alpha;
                }
            });
        }});
    }

    /// O = acc / l into the rows from `row0` below `s_q` (two elements of one row per 4-byte
    /// store), and `lse` by the quad's first lane.
    ///
    /// # Safety
    /// `o` holds the head's `s_q` rows of `D` at `at.q_rows`, `lse` its
    /// `s_q` values; every lane of the warp calls it.
    #[inline(always)]
    unsafe fn store<T: Element>(&mut self, at: &Block, row0: usize, (o, lse): (&Out<T>, &Out<f32>), c: f32) {
        let (g, q) = (at.lane() / 4, at.lane() % 4);
        let o = o.recast::<u32>();
        seq!(R in 0..2 {{
            // The row's sum over its quad.
            let mut l = self.l[R];
            // SAFETY: every lane of the warp is here.
            l += unsafe { shfl_xor_f32(FULL_MASK, l, 1) };
            // SAFETY: as above.
            l += unsafe { shfl_xor_f32(FULL_MASK, l, 2) };
            let row = row0 + g + 8 * R;
            if row < at.s_q() {
                let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
                let first = (at.q_rows() + row) * D;
                seq!(N in 0..32 {
                    if N < D / 8 {
                        let pair = pack::<T>(self.acc[N][2 * R] * inv, self.acc[N][2 * R + 1] * inv);
                        // SAFETY: inside the row (column 8 N + 2 q + 1 < D),
                        // 4 bytes on 4; this lane's two elements.
                        unsafe { o.store((first + 8 * N + 2 * q) / 2, pair) };
                    }
                });
                if q == 0 {
                    let value = log_sum_exp(self.m[R] * c, l);
                    // SAFETY: row < s_q; one lane per row.
                    unsafe { lse.store(at.q_rows() + row, value) };
                }
            }
        }});
    }
}

/// One kernel per head dimension `$d` (the body is [`flash`]'s), each
/// with its doc.
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal);)*) => {$(
        $(#[$doc])*
        #[kernel(block = THREADS, shared = shared_bytes($d), tile = [br($d), 1], types = [bf16, f16])]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Element>(
            q: In<T>,
            k: In<T>,
            v: In<T>,
            o: Out<T>,
            lse: Out<f32>,
            heads: u32,
            kv_heads: u32,
            s_q: u32,
            s_k: u32,
            scale: f32,
            causal: u32,
        ) {
            flash::<T, $d>(q, k, v, o, lse, (heads, kv_heads, s_q, s_k), scale, causal);
        }
    )*};
}

head_dims! {
    /// 2. Fused attention, FlashAttention-2 style, `d = 64`: S and P never
    /// leave registers (the module documentation has the idea, the fragment
    /// mapping, the swizzle and the arithmetic).
    ///
    /// Launch: Q, O `[b, heads, s_q, 64]`, K, V `[b, kv_heads, s_k, 64]`, lse
    /// `[b, heads, s_q]`; the grid is `ceil(s_q / 64)` x `b heads` blocks of
    /// 128 threads; `kv_heads` divides `heads`; `scale > 0`.
    /// Measured: `BENCHMARKS.md`, rows `attention_flash_d64`.
    attention_flash_d64(64);
    /// 2. Fused attention at `d = 128`: as [`attention_flash_d64()`].
    ///
    /// Launch: as [`attention_flash_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_flash_d128`.
    attention_flash_d128(128);
    /// 2. Fused attention at `d = 256`: as [`attention_flash_d64()`], with key
    /// tiles of 32 (the O accumulator is 128 registers a thread).
    ///
    /// Launch: as [`attention_flash_d64()`], rows of 256.
    /// Measured: `BENCHMARKS.md`, rows `attention_flash_d256`.
    attention_flash_d256(256);
}
