//! Decode: a few queries against a long KV cache (sm_80 and later), with
//! the keys split across blocks (flash-decoding) and the cache contiguous
//! or paged.
//!
//! **What bounds it.** A decode step reads each sequence's whole cache for
//! `s_q` (1 to 16) queries per query head: per key, `2 x 2 d` bytes of K
//! and V for `4 group s_q d` FLOPs (`group` query heads per K/V head), 8
//! FLOPs a byte at `group s_q = 8`, where Hopper's tensor cores need
//! about 300 (989 dense bf16 TFLOP/s over 3.35 TB/s of HBM3) to be kept
//! busy. So the kernel's one job is to keep DRAM busy:
//! enough blocks (the keys split across them, [`attention_decode_merge()`]
//! combining the chunks), and enough bytes in flight on each SM
//! (Little's law: about 3 TB/s by about 1 us of latency is 3 MB over 132
//! SMs, 23 KB an SM; each block keeps a stage of `2 bc d` bytes, 32 KB at
//! `d = 128`, in flight while it multiplies the other, two blocks an SM).
//!
//! **Rows.** The queries of one K/V head's group are consecutive rows of
//! Q (`[b, heads, s_q, d]`: heads `kvh group..` of one sequence, each
//! `s_q` rows), so a block takes up to `16 mt(d) 4 / wk` of them as the
//! rows of one `mma.sync` product, the grouped heads packed as queries
//! are: each K and V fragment loaded once serves every query head of the
//! group. Rows past the group are Q's zero fill and never stored.
//!
//! **Warps split the keys.** With `wk` ([`WK_SHIFT`]: 1, 2 or 4) warps
//! per row group, warp `w` takes rows `16 mt(d) (w / wk)..` and of each
//! stage the 16-key chunks `c` with `c mod wk = w mod wk`, each chunk the
//! online softmax of [`super::flash`] on 16 keys (S is two `m16n8`
//! fragments per row tile, P their A fragment as they lie). A warp's
//! running maximum rarely grows after its first chunks; when no lane's
//! did, the rescale of O (`mt d / 2` multiplications a thread) is skipped
//! (one `vote`). After the last stage the warps of a row group merge their
//! states through shared memory (the stages' bytes, free by then), lane by
//! lane: the warps' fragments share one layout.
//!
//! **The cache** (K and V alike). Key `j` of sequence `b`, K/V head `h`
//! lives in page `table[b pages + j / P]` at row `j mod P`. Paged
//! ([`PAGED`]: vLLM's and FlashAttention's layout `[pages, P, kv_heads,
//! d]`, `P` a power of two): rows `kv_heads d` apart, heads `d`.
//! Contiguous: `[b, kv_heads, P, d]` (the forward's K and V with `P =
//! s_k`), one page per sequence (`table[b] = b`), rows `d` apart, heads `P
//! d`. Each sequence has its own length (`lens[b]`); appending a token
//! writes one row and moves none. Rows are whole 16-byte chunks, copied by
//! `cp.async` into swizzled tiles ([`super::flash::swz`]); keys past the
//! split's end are the copies' zero fill.
//!
//! **Splits.** Block `(x, y)`: `y` is `(b, kvh)`, `x` is `(split, row
//! tile)`, row tiles fastest, so the blocks reading one chunk of keys run
//! together and share its L2 lines. A split takes `split_keys` keys (a
//! multiple of [`super::flash::bc`]). With one split the block writes O
//! and lse; with more, each writes its rows' state (O unnormalized, the
//! maximum and the sum, `f32`: [`part_floats`]) and the merge finishes
//! them as the Hopper step's merge does.
//!
//! **Causal** (bottom-right, per sequence): query `t` sees keys `j < t +
//! len - s_q + 1`; only chunks past the first query's limit compare keys.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::flash::{bc, mt, swz};
use super::{LOG2_E, log_sum_exp, visible_keys};
use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::fp8::E4m3;
use crate::dev::math::{e4m3x2_to_f16x2, ex2_approx, f16x2_bits, fma, pack, unpack};
use crate::dev::mma::mma_m16n8k16;
use crate::dev::warp::{FULL_MASK, ballot, shfl_xor_f32};
use crate::dev::{Element, Input};
use crate::dev::{
    In, Out, SharedArray, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, index_1d, sync_threads,
    thread_idx_x,
};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Threads per block: four warps.
pub const THREADS: usize = 128;
/// Stages of (K tile, V tile) in shared memory.
const STAGES: usize = 2;

/// Bit of the kernels' `flags`: causal masking.
pub const CAUSAL: u32 = 1;
/// Bit of the kernels' `flags`: the cache is paged (`[pages, P, kv_heads,
/// d]`); else contiguous (`[b, kv_heads, P, d]`).
pub const PAGED: u32 = 2;
/// The kernels' `flags` from this shift: `log2 wk`, warps per row group
/// (0, 1 or 2).
pub const WK_SHIFT: u32 = 2;
/// The kernels' `flags` from this shift: `log2 P` of a paged cache.
pub const PAGE_SHIFT: u32 = 8;

/// Rows per block for head dimension `d` with `wk` warps per row group.
pub const fn block_rows(d: usize, wk: usize) -> usize {
    16 * mt(d) * (4 / wk)
}

/// Bytes of shared memory for head dimension `d`: the most rows' Q tile,
/// then the stages.
pub const fn shared_bytes(d: usize) -> usize {
    2 * block_rows(d, 1) * d + STAGES * 2 * 2 * bc(d) * d
}

/// `f32` words of one row's state in a split's workspace: O (`d`), the
/// maximum and the sum.
pub const fn part_floats(d: usize) -> usize {
    d + 2
}

/// Words a lane keeps for the merge of a row group's warps: O, then two
/// rows' maximum and sum per row tile.
const fn lane_floats(d: usize) -> usize {
    mt(d) * (d / 2 + 4)
}

/// Where this block works and on what (32-bit words: they live through
/// the key loop).
#[derive(Clone, Copy)]
struct Block {
    /// Q's (and O's) row of the block's first row.
    q_row0: u32,
    /// Rows of the group from the block's first (may exceed the block's).
    valid_rows: u32,
    /// The sequence's keys.
    len: u32,
    /// The end of the split's keys.
    key_end: u32,
    s_q: u32,
    causal: bool,
    lane: u32,
    /// The warp's row group and its place among the row group's warps.
    row_group: u32,
    part: u32,
    wk: u32,
}

/// How a sequence's keys map to cache elements.
#[derive(Clone, Copy)]
struct Cache {
    /// The sequence's first entry of the table, and (contiguous) its page.
    table_at: u32,
    page0: u32,
    paged: bool,
    page_shift: u32,
    /// Elements between pages, between rows of a page, and the K/V head's
    /// offset in a row's page.
    page_stride: usize,
    row_stride: u32,
    head_at: u32,
}

/// Rows of a stage each thread copies, at most (`bc(D) / (THREADS /
/// chunks)` with `D E / 16` chunks a row: 4 at `d = 64` and 8 at 128 and
/// 256 for a 16-bit cache, half of that for FP8).
const ROWS_A_THREAD: usize = 8;

/// 16-byte chunks of a cache row of `D` elements of `E` bytes.
const fn row_chunks(d: usize, e: usize) -> usize {
    d * e / 16
}

impl Cache {
    /// The pages of this thread's rows of the stage of keys from `key0`
    /// (0 past `end`) in a cache of `E`-byte elements: table loads, issued
    /// a stage ahead of the copies that use them, so that their latency
    /// passes while the warps multiply (contiguous: the sequence's one
    /// page, no load).
    ///
    /// # Safety
    /// The sequence's table holds the page of every key below `end`.
    #[inline(always)]
    unsafe fn pages<const D: usize, const E: usize>(
        &self,
        table: In<u32>,
        (key0, end): (u32, u32),
        t: usize,
    ) -> [u32; ROWS_A_THREAD] {
        let step = THREADS / row_chunks(D, E);
        let r0 = (t / row_chunks(D, E)) as u32;
        core::array::from_fn(|n| {
            let key = key0 + r0 + (n * step) as u32;
            if !self.paged {
                self.page0
            } else if n < bc(D) / step && key < end {
                // SAFETY: the caller's contract.
                unsafe { table.load((self.table_at + (key >> self.page_shift)) as usize) }
            } else {
                0
            }
        })
    }

    /// Element index of key `key`'s row, in page `page`.
    #[inline(always)]
    fn row(&self, page: u32, key: u32) -> usize {
        let row = if self.paged { key & ((1 << self.page_shift) - 1) } else { key };
        page as usize * self.page_stride + (row * self.row_stride + self.head_at) as usize
    }
}

/// Where a stage's copies go: a 16-bit cache's rows straight into the
/// swizzled tile the products read; an FP8 cache's into a raw tile (rows
/// of `D` bytes in order), which the thread that copied each chunk widens
/// into the products' tile ([`widen_stage`]).
#[inline(always)]
const fn copy_to<const D: usize, const E: usize>(r: usize, c: usize) -> usize {
    if E == 2 { swz(D, r, 8 * c) / 2 } else { (r * D + 16 * c) / 4 }
}

/// A stage's K and V tiles: `bc(D)` keys from `key0` (those at or past
/// `end` zero-filled), this thread's rows in `pages` ([`Cache::pages`]),
/// into the stage at byte `at` (V's tile `bc(D) D E` bytes after K's),
/// uncommitted. Thread `t` copies 16-byte chunk `t mod chunks` of rows `t /
/// chunks + n step` ([`copy_to`] says where).
///
/// # Safety
/// The launch passes `shared_bytes(D)`, the stage at `at`; the cache holds
/// every key below `end`, in the pages given; nobody reads the stage until
/// the copies are waited for (and, for other threads, a barrier passed).
#[inline(always)]
unsafe fn copy_stage<const D: usize, const E: usize>(
    (k, v): (In<u16>, In<u16>),
    (cache, pages): (&Cache, &[u32; ROWS_A_THREAD]),
    (key0, end, at): (u32, u32, usize),
    t: usize,
) {
    // SAFETY: the caller's contract.
    let (k_tile, v_tile) = unsafe {
        (SharedArray::<f32>::launch_sized_at(at), SharedArray::<f32>::launch_sized_at(at + bc(D) * D * E))
    };
    let chunks = row_chunks(D, E);
    let step = THREADS / chunks;
    let (r0, c) = (t / chunks, t % chunks);
    let (k, v) = (k.words(), v.words());
    seq!(N in 0..8 {
        if N < bc(D) / step {
            let r = r0 + N * step;
            let key = key0 + r as u32;
            let inside = key < end;
            // The chunk's first byte over 4: a word of `k` and `v`.
            let from = if inside { (cache.row(pages[N], key) * E + 16 * c) / 4 } else { 0 };
            let to = copy_to::<D, E>(r, c);
            // SAFETY: inside the cache when `inside` (a whole row of D
            // elements, 16 bytes on 16); a whole chunk of the tile.
            unsafe {
                k_tile.copy_async4_or_zero(0, to, k, from, inside);
                v_tile.copy_async4_or_zero(0, to, v, from, inside);
            }
        }
    });
}

/// An FP8 stage's chunks this thread copied (from the raw tiles at byte
/// `raw`, K then V), widened to f16 into the products' swizzled tiles at
/// byte `to`: 16 E4M3 values a chunk, two 16-byte f16 chunks out, each
/// value exact (`cvt.rn.f16x2.e4m3x2`).
///
/// # Safety
/// This thread's copies of the stage landed (waited for); every warp is
/// done with the tiles at `to` (a barrier), and none reads them before the
/// next barrier.
#[inline(always)]
unsafe fn widen_stage<const D: usize>(raw: usize, to: usize, t: usize) {
    let chunks = row_chunks(D, 1);
    let step = THREADS / chunks;
    let (r0, c) = (t / chunks, t % chunks);
    seq!(X in 0..2 {{
        // SAFETY: the caller's contract: K's tiles, then V's.
        let (from, into) = unsafe {
            (
                SharedArray::<f32>::launch_sized_at(raw + X * bc(D) * D),
                SharedArray::<f32>::launch_sized_at(to + X * 2 * bc(D) * D),
            )
        };
        seq!(N in 0..8 {
            if N < bc(D) / step {
                let r = r0 + N * step;
                // SAFETY: this thread's own copied chunk.
                let words = unsafe { from.load_x4(0, copy_to::<D, 1>(r, c)) };
                let mut half = [0.0f32; 8];
                seq!(W in 0..4 {{
                    let w = words[W].to_bits();
                    half[2 * W] = f32::from_bits(e4m3x2_to_f16x2(w as u16));
                    half[2 * W + 1] = f32::from_bits(e4m3x2_to_f16x2((w >> 16) as u16));
                }});
                // SAFETY: inside the tile, this thread's two chunks.
                unsafe {
                    into.store_x4(0, swz(D, r, 16 * c) / 2, [half[0], half[1], half[2], half[3]]);
                    into.store_x4(0, swz(D, r, 16 * c + 8) / 2, [half[4], half[5], half[6], half[7]]);
                }
            }
        });
    }});
}

/// Q's tile (rows of `T`, bf16), this thread's chunks of it as
/// [`super::flash::copy_tile`] copied them, rounded to f16 in place, for
/// the FP8 cache's f16 products: f16's 10-bit significand holds bf16's 8
/// exactly, and values past f16's range saturate to ±65504.
///
/// # Safety
/// This thread's copies of Q landed; nobody reads Q before the next
/// barrier.
#[inline(always)]
unsafe fn q_to_f16<const D: usize>(rows: usize, t: usize) {
    let chunks = D / 8;
    let step = THREADS / chunks;
    let (r0, c) = (t / chunks, t % chunks);
    // SAFETY: Q's tile at byte 0.
    let q = unsafe { SharedArray::<f32>::launch_sized() };
    seq!(N in 0..32 {
        if N < rows / step {
            let at = swz(D, r0 + N * step, 8 * c) / 2;
            // SAFETY: this thread's own chunk.
            let words = unsafe { q.load_x4(0, at) };
            let f16x2 = |w: f32| {
                let (lo, hi) = unpack::<bf16>(w.to_bits());
                let clamp = |x: f32| x.clamp(-65504.0, 65504.0);
                f32::from_bits(f16x2_bits(clamp(lo), clamp(hi)))
            };
            // SAFETY: as above.
            unsafe { q.store_x4(0, at, words.map(f16x2)) };
        }
    });
}

/// One row tile's running state: O's accumulators (`D / 8` m16n8
/// fragments; the array holds the largest `D`), and for this lane's two
/// rows the running maximum (score units) and its part of the sum.
#[derive(Clone, Copy)]
struct Rows {
    acc: [[f32; 4]; 32],
    m: [f32; 2],
    l: [f32; 2],
}

impl Rows {
    const EMPTY: Rows = Rows { acc: [[0.0; 4]; 32], m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
}

/// What the decode reads: Q, the cache's K and V (their bytes), its
/// table, the sequences' lengths, and the K/V heads' descales (K's, then
/// V's).
type Inputs<T> = (In<T>, In<u8>, In<u8>, In<u32>, In<u32>, In<f32>);

/// The decode body for head dimension `D`: Q and O in `T`, the cache in
/// elements of `E` bytes (2: `T`; 1: E4M3), the products in `P` (`T`, or
/// f16 for an FP8 cache).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn decode<T: Element, P: Element, const D: usize, const E: usize>(
    (q, k, v, table, lens, scales): Inputs<T>,
    (o, lse, parts): (Out<T>, Out<f32>, Out<f32>),
    (heads, kv_heads, s_q): (u32, u32, u32),
    (page_rows, table_stride, split_keys): (u32, u32, u32),
    scale: f32,
    flags: u32,
) {
    // (`max(1)`: the launch's contract makes them at least 1; said so,
    // the divisions need no divide-by-zero branch.)
    let (kv_heads, s_q) = (kv_heads.max(1), s_q.max(1));
    let group = (heads / kv_heads).max(1);
    let wk = 1u32 << ((flags >> WK_SHIFT) & 3);
    let rows = block_rows(D, wk as usize) as u32;
    let row_tiles = (group * s_q).div_ceil(rows).max(1);
    let (split, row_tile) = (block_idx_x() / row_tiles, block_idx_x() % row_tiles);
    let splits = grid_dim_x() / row_tiles;
    let (b, kvh) = (block_idx_y() / kv_heads, block_idx_y() % kv_heads);
    // SAFETY: `lens` holds a length per sequence (the launch's contract).
    let len = unsafe { lens.load(b as usize) };
    let key_begin = split * split_keys;
    let t = thread_idx_x();
    let warp = t / 32;
    let at = Block {
        q_row0: (b * heads + kvh * group) * s_q + row_tile * rows,
        valid_rows: group * s_q - row_tile * rows,
        len,

        key_end: len.min(key_begin.saturating_add(split_keys)),
        s_q,
        causal: flags & CAUSAL != 0,
        lane: t % 32,
        row_group: warp / wk,
        part: warp % wk,
        wk,
    };
    let paged = flags & PAGED != 0;
    let page_shift = (flags >> PAGE_SHIFT) & 31;
    // SAFETY: the table holds `table_stride` entries a sequence (the
    // launch's contract); a contiguous cache's first is its one page.
    let page0 = if paged { 0 } else { unsafe { table.load((b * table_stride) as usize) } };
    let cache = Cache {
        table_at: b * table_stride,
        page0,
        paged,
        page_shift,
        page_stride: page_rows as usize * (kv_heads as usize * D),
        row_stride: if paged { kv_heads * D as u32 } else { D as u32 },
        head_at: kvh * if paged { D as u32 } else { page_rows * D as u32 },
    };
    let t = t as usize;
    let (qh, kh, vh) = (q.same_bytes::<u16>(), k.recast::<u16>(), v.recast::<u16>());
    let bc = bc(D) as u32;
    let tiles = at.key_end.saturating_sub(key_begin).div_ceil(bc);
    // Shared memory: Q, then two stages of 16-bit K and V tiles; an FP8
    // cache's products read the first stage always, and its copies land
    // in the second, as two raw stages of bytes.
    let stage_at = |s: u32| 2 * block_rows(D, 1) * D + (s as usize % STAGES) * 2 * 2 * bc as usize * D;
    let copy_at =
        |s: u32| if E == 2 { stage_at(s) } else { stage_at(1) + (s as usize % 2) * 2 * bc as usize * D };
    let read_at = |s: u32| if E == 2 { stage_at(s) } else { stage_at(0) };
    if tiles > 0 {
        // SAFETY: Q's tile at byte 0, the group's rows of this sequence.
        unsafe {
            super::flash::copy_tile::<D>(qh, at.q_row0 as usize, at.valid_rows as usize, rows as usize, 0, t)
        };
    }
    // SAFETY: (both) the table holds the pages of the sequence's keys.
    let mut pages = unsafe { cache.pages::<D, E>(table, (key_begin, at.key_end), t) };
    if tiles > 0 {
        // SAFETY: as `copy_stage` says; the stages are not read yet.
        unsafe { copy_stage::<D, E>((kh, vh), (&cache, &pages), (key_begin, at.key_end, copy_at(0)), t) };
        commit_copies();
        // SAFETY: as above.
        pages = unsafe { cache.pages::<D, E>(table, (key_begin + bc, at.key_end), t) };
    }
    // SAFETY: `scales` holds both descales of every K/V head.
    let (k_scale, v_scale) = unsafe { (scales.load(kvh as usize), scales.load((kv_heads + kvh) as usize)) };
    // The scores' scale with K's descale: `c s` in log2 units is the true
    // score's.
    let c = scale * LOG2_E * k_scale;
    let mut state = [Rows::EMPTY; 2];
    for tile in 0..tiles {
        // This thread's copies landed; after the barrier, everyone's, and
        // every warp is past the stage the next copies overwrite.
        wait_copies::<0>();
        sync_threads();
        if tile + 1 < tiles {
            let key0 = key_begin + (tile + 1) * bc;
            // SAFETY: as `copy_stage` says; the barrier freed the stage.
            unsafe {
                copy_stage::<D, E>((kh, vh), (&cache, &pages), (key0, at.key_end, copy_at(tile + 1)), t)
            };
            commit_copies();
            // SAFETY: the table holds the pages of the sequence's keys.
            pages = unsafe { cache.pages::<D, E>(table, (key0 + bc, at.key_end), t) };
        }
        if E == 1 {
            if tile == 0 && T::INPUT == Input::Bf16 {
                // SAFETY: this thread's copies of Q landed (the wait); the
                // products read Q after the barrier below.
                unsafe { q_to_f16::<D>(rows as usize, t) };
            }
            // SAFETY: this thread's copies of the stage landed; the
            // barrier above freed the products' tiles, the one below
            // orders their reads.
            unsafe { widen_stage::<D>(copy_at(tile), read_at(tile), t) };
            sync_threads();
        }
        seq!(CH in 0..4 {
            let ch: u32 = CH;
            let key0 = key_begin + tile * bc + 16 * ch;
            if ch < bc / 16 && ch % at.wk == at.part && key0 < at.key_end {
                // SAFETY: the stage's copies landed (the wait and the
                // barrier); the warp runs this alike.
                unsafe { chunk::<P, D>(&mut state, &at, read_at(tile) + 2 * 16 * CH * D, key0, c) };
            }
        });
    }
    // The row group's warps meet: each warp past the first leaves its
    // state in shared memory (the stages', now free), the first takes
    // them in.
    if at.wk > 1 {
        sync_threads();
        // SAFETY: past the barrier nobody reads the stages; each lane of
        // each warp writes its own words, read after the next barrier.
        unsafe { merge_warps::<D>(&mut state, &at, c) };
    }
    if at.part != 0 {
        return;
    }
    let rows_all = grid_dim_y() / kv_heads * heads * s_q;
    // SAFETY: O, lse and the workspace hold the launch's rows (its
    // contract); each lane stores its own elements.
    unsafe { store::<T, D>(&mut state, &at, (o, lse, parts), (split, splits, rows_all), (c, v_scale)) };
}

/// The first query row of row tile `i` of this warp (block rows).
#[inline(always)]
fn first_row<const D: usize>(at: &Block, i: usize) -> usize {
    16 * (mt(D) * at.row_group as usize + i)
}

/// One chunk of 16 keys from `key0`, its K and V rows at byte `kv_at` of
/// the stage (V's `2 bc d` bytes after K's): S = Q Kᵀ, the mask where some
/// key is past some row's limit, the online softmax, O += P V.
///
/// # Safety
/// The stage and Q's tile hold their data (after the barrier); the whole
/// warp calls it alike.
#[inline(always)]
unsafe fn chunk<T: Element, const D: usize>(
    state: &mut [Rows; 2],
    at: &Block,
    kv_at: usize,
    key0: u32,
    c: f32,
) {
    // SAFETY: Q at byte 0, K at `kv_at`, V `2 bc d` bytes on (the launch's
    // shared memory); read only here, after the barrier.
    let (qs, ks, vs) = unsafe {
        (
            SharedArray::<u16>::launch_sized(),
            SharedArray::<u16>::launch_sized_at(kv_at),
            SharedArray::<u16>::launch_sized_at(kv_at + 2 * bc(D) * D),
        )
    };
    let lane = at.lane as usize;
    // ldmatrix rows: lane l gives row l % 8 of matrix l / 8 (as in
    // `flash`). Q: (rows 0-7, k 0-7), (8-15, k 0-7), (0-7, k 8-15), (8-15,
    // k 8-15); K: (keys 0-7, k 0-7), (0-7, k 8-15), (8-15, k 0-7), (8-15,
    // k 8-15); V (.trans): (keys 0-7, columns 0-7), (8-15, 0-7), (0-7,
    // 8-15), (8-15, 8-15). The chunk's rows are the stage's `16 ch..`:
    // `kv_at` already points there.
    let q_row = lane % 8 + 8 * (lane / 8 % 2);
    let (k_row, v_row) = (lane % 8 + 8 * (lane / 16), lane % 8 + 8 * (lane / 8 % 2));
    let mut s = [[[0.0f32; 4]; 2]; 2];
    seq!(KK in 0..16 {
        if KK < D / 16 {
            // SAFETY: key row < 16, 16 bytes inside a chunk; converged.
            let kb = unsafe { ks.ldmatrix_x4(0, swz(D, k_row, 8 * (2 * KK + lane / 8 % 2))) };
            seq!(I in 0..2 {
                if I < mt(D) {
                    let row = first_row::<D>(at, I) + q_row;
                    // SAFETY: row < block_rows(D, 1), as above.
                    let qa = unsafe { qs.ldmatrix_x4(0, swz(D, row, 8 * (2 * KK + lane / 16))) };
                    // SAFETY: the whole warp, converged.
                    unsafe {
                        s[I][0] = mma_m16n8k16::<T>(qa, [kb[0], kb[1]], s[I][0]);
                        s[I][1] = mma_m16n8k16::<T>(qa, [kb[2], kb[3]], s[I][1]);
                    }
                }
            });
        }
    });
    // Whether some key of the chunk is past some row's limit: the split's
    // end, or (causal) the first query's limit `len - s_q + 1`.
    let masked = key0 + 16 > at.key_end || (at.causal && key0 + 16 + at.s_q > at.len + 1);
    let mut grew = false;
    let mut alpha = [[1.0f32; 2]; 2];
    seq!(I in 0..2 {
        if I < mt(D) {
            let rows = &mut state[I];
            let (g, q) = (lane / 4, lane % 4);
            if masked {
                // Element e of key tile j: row g + 8 (e / 2), key 8 j + 2 q + e % 2.
                seq!(J in 0..2 {
                    seq!(E in 0..4 {{
                        let row = at.q_row0 as usize + first_row::<D>(at, I) + g + 8 * (E >> 1);
                        let query = row % at.s_q as usize;
                        let key = key0 as usize + 8 * J + 2 * q + E % 2;
                        let limit = visible_keys(query, at.s_q as usize, at.len as usize, at.causal);
                        if key >= limit.min(at.key_end as usize) {
                            s[I][J][E] = f32::NEG_INFINITY;
                        }
                    }});
                });
            }
            seq!(R in 0..2 {{
                let mut top = s[I][0][2 * R].max(s[I][0][2 * R + 1]).max(s[I][1][2 * R].max(s[I][1][2 * R + 1]));
                // SAFETY: every lane of the warp is here.
                top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1) });
                // SAFETY: as above.
                top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 2) });
                let m = rows.m[R].max(top);
                grew |= m != rows.m[R];
                // The reference point in log2 units; 0 while the row has
                // seen no key (then every p is 2^-inf = 0, and so is alpha).
                let reference = if m == f32::NEG_INFINITY { 0.0 } else { m * c };
                alpha[I][R] = ex2_approx(fma(rows.m[R], c, -reference));
                rows.m[R] = m;
                let mut sum = 0.0f32;
                seq!(J in 0..2 {
                    seq!(E in 0..2 {{
                        let p = ex2_approx(fma(s[I][J][2 * R + E], c, -reference));
                        s[I][J][2 * R + E] = p;
                        sum += p;
                    }});
                });
                rows.l[R] = fma(rows.l[R], alpha[I][R], sum);
            }});
        }
    });
    // The rescale of O, where some lane's maximum grew (alpha < 1).
    // SAFETY: every lane of the warp is here.
    if unsafe { ballot(FULL_MASK, grew) } != 0 {
        seq!(I in 0..2 {
            if I < mt(D) {
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {
                            state[I].acc[N][E] *= alpha[I][E >> 1];
                        });
                    }
                });
            }
        });
    }
    // O += P V: the scores of key tiles 0 and 1 are the A fragment of the
    // chunk's one k-step as they lie (`flash`'s `Warp::tile` says why).
    let pa: [[u32; 4]; 2] = core::array::from_fn(|i| {
        [
            pack::<T>(s[i][0][0], s[i][0][1]),
            pack::<T>(s[i][0][2], s[i][0][3]),
            pack::<T>(s[i][1][0], s[i][1][1]),
            pack::<T>(s[i][1][2], s[i][1][3]),
        ]
    });
    seq!(P in 0..16 {
        if P < D / 16 {
            // SAFETY: key row < 16, column < D, 16 bytes; converged.
            let vb = unsafe { vs.ldmatrix_x4_trans(0, swz(D, v_row, 8 * (2 * P + lane / 16))) };
            seq!(I in 0..2 {
                if I < mt(D) {
                    let acc = &mut state[I].acc;
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

/// The merge of a row group's `wk` warps: warps past the first write their
/// state (thread-minor: word `f` of lane `l` in slot `s` at `(s
/// lane_floats + f) 32 + l`, a warp's 32 stores one conflict-free pass),
/// a barrier, then the first warp rescales its own and their states to
/// the largest maximum and adds them (`2^((m_w - m) c)`, as the online
/// softmax does).
///
/// # Safety
/// Every thread of the block calls it, after a barrier past every read of
/// the stages; the launch passes `shared_bytes(D)`.
#[inline(always)]
unsafe fn merge_warps<const D: usize>(state: &mut [Rows; 2], at: &Block, c: f32) {
    let lane = at.lane as usize;
    let f = lane_floats(D);
    // SAFETY: the stages' bytes (after Q's): `3 lane_floats(D) 32` words
    // fit in them (`lane_floats` is at most 136 words, the stages 16 K).
    let scratch = unsafe { SharedArray::<f32>::launch_sized_at(2 * block_rows(D, 1) * D) };
    let slot = |part: u32| ((at.row_group * (at.wk - 1) + part - 1) as usize) * f;
    let word = |base: usize, i: usize| (base + i) * 32 + lane;
    if at.part != 0 {
        let base = slot(at.part);
        seq!(I in 0..2 {
            if I < mt(D) {
                let first = I * (D / 2 + 4);
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {
                            // SAFETY: inside the scratch; this lane's word.
                            unsafe { scratch.store(0, word(base, first + 4 * N + E), state[I].acc[N][E]) };
                        });
                    }
                });
                seq!(R in 0..2 {
                    // SAFETY: as above.
                    unsafe {
                        scratch.store(0, word(base, first + D / 2 + R), state[I].m[R]);
                        scratch.store(0, word(base, first + D / 2 + 2 + R), state[I].l[R]);
                    }
                });
            }
        });
    }
    sync_threads();
    if at.part != 0 {
        return;
    }
    for part in 1..at.wk {
        let base = slot(part);
        seq!(I in 0..2 {
            if I < mt(D) {
                let first = I * (D / 2 + 4);
                let mut scales = [[0.0f32; 2]; 2];
                seq!(R in 0..2 {{
                    // SAFETY: the other warp wrote these before the barrier.
                    let (m, l) = unsafe {
                        (scratch.load(0, word(base, first + D / 2 + R)), scratch.load(0, word(base, first + D / 2 + 2 + R)))
                    };
                    let rows = &mut state[I];
                    let new = rows.m[R].max(m);
                    let reference = if new == f32::NEG_INFINITY { 0.0 } else { new * c };
                    scales[R] = [ex2_approx(fma(rows.m[R], c, -reference)), ex2_approx(fma(m, c, -reference))];
                    rows.l[R] = fma(rows.l[R], scales[R][0], scales[R][1] * l);
                    rows.m[R] = new;
                }});
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {{
                            // SAFETY: as above.
                            let x = unsafe { scratch.load(0, word(base, first + 4 * N + E)) };
                            let acc = &mut state[I].acc[N][E];
                            *acc = fma(*acc, scales[E >> 1][0], scales[E >> 1][1] * x);
                        }});
                    }
                });
            }
        });
    }
}

/// The row group's rows: with one split, O (`acc v_scale / l`, two
/// elements of a row a 4-byte store) and lse; with more, the state (O's
/// accumulators times V's descale, the maximum in log2 units `m c`, and
/// the whole sum) into the split's workspace, row `q_row` at word `(split
/// rows_all + q_row) part_floats(D)`.
///
/// # Safety
/// O, lse and the workspace hold the launch's rows; every lane of the
/// warp calls it.
#[inline(always)]
unsafe fn store<T: Element, const D: usize>(
    state: &mut [Rows; 2],
    at: &Block,
    (o, lse, parts): (Out<T>, Out<f32>, Out<f32>),
    (split, splits, rows_all): (u32, u32, u32),
    (c, v_scale): (f32, f32),
) {
    let lane = at.lane as usize;
    let (g, q) = (lane / 4, lane % 4);
    let o = o.recast::<u32>();
    let (split, rows_all) = (split as usize, rows_all as usize);
    seq!(I in 0..2 {
        if I < mt(D) {
            seq!(R in 0..2 {{
                let rows = &state[I];
                // The row's sum over its quad.
                let mut l = rows.l[R];
                // SAFETY: every lane of the warp is here.
                l += unsafe { shfl_xor_f32(FULL_MASK, l, 1) };
                // SAFETY: as above.
                l += unsafe { shfl_xor_f32(FULL_MASK, l, 2) };
                let r = first_row::<D>(at, I) + g + 8 * R;
                if r < at.valid_rows as usize {
                    let row = at.q_row0 as usize + r;
                    if splits == 1 {
                        let inv = if l > 0.0 { v_scale / l } else { 0.0 };
                        seq!(N in 0..32 {
                            if N < D / 8 {
                                let pair = pack::<T>(rows.acc[N][2 * R] * inv, rows.acc[N][2 * R + 1] * inv);
                                // SAFETY: inside the row, 4 bytes on 4; this lane's two elements.
                                unsafe { o.store((row * D + 8 * N + 2 * q) / 2, pair) };
                            }
                        });
                        if q == 0 {
                            // SAFETY: one lane per row.
                            unsafe { lse.store(row, log_sum_exp(rows.m[R] * c, l)) };
                        }
                    } else {
                        let base = (split * rows_all + row) * part_floats(D);
                        seq!(N in 0..32 {
                            if N < D / 8 {
                                // SAFETY: inside the workspace (the launch's contract).
                                unsafe {
                                    parts.store(base + 8 * N + 2 * q, rows.acc[N][2 * R] * v_scale);
                                    parts.store(base + 8 * N + 2 * q + 1, rows.acc[N][2 * R + 1] * v_scale);
                                }
                            }
                        });
                        if q == 0 {
                            // SAFETY: as above.
                            unsafe {
                                parts.store(base + D, rows.m[R] * c);
                                parts.store(base + D + 1, l);
                            }
                        }
                    }
                }
            }});
        }
    });
}

/// 5b. The merge of a split decode launch's chunks: a warp per row of Q,
/// a lane two columns of each 64; the splits' states combined as the
/// online softmax does (`M = max m_s`, `O = sum 2^(m_s - M) O_s / sum
/// 2^(m_s - M) l_s`, the maxima in log2 units and O already descaled:
/// [`store`]), then lse. A row no split saw a key of is 0,
/// with lse `+inf`.
///
/// **Arithmetic.** Per split a row reads `4 (d + 2)` bytes (whole 128-byte
/// lines, a warp's loads consecutive) for `d` FMAs: bound by L2, a small
/// share of the decode's bytes (`splits (d + 2) 4` against the cache's `4
/// d` a key, with each split at least 256 keys).
///
/// Launch: one warp per row (`rows` of them), blocks of 128 threads;
/// `parts` as the decode launch of `splits` splits left it; O and lse as
/// the decode's.
/// Measured: `BENCHMARKS.md`, rows `attention_decode_merge`.
#[kernel(block = THREADS, tile = THREADS, types = [bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn attention_decode_merge<T: Element>(
    parts: In<f32>,
    o: Out<T>,
    lse: Out<f32>,
    rows: u32,
    d: u32,
    splits: u32,
) {
    let g = index_1d();
    let (row, lane) = (g / 32, g % 32);
    if row >= rows as usize {
        return;
    }
    let d = d as usize;
    let f = d + 2;
    let stride = rows as usize * f;
    let mut top = f32::NEG_INFINITY;
    for s in 0..splits as usize {
        // SAFETY: each split's state of the row (the launch's contract).
        top = top.max(unsafe { parts.load(s * stride + row * f + d) });
    }
    let reference = if top == f32::NEG_INFINITY { 0.0 } else { top };
    let mut sum = 0.0f32;
    let mut acc = [0.0f32; 8];
    for s in 0..splits as usize {
        let base = s * stride + row * f;
        // SAFETY: as above.
        let (m, l) = unsafe { (parts.load(base + d), parts.load(base + d + 1)) };
        let w = ex2_approx(m - reference);
        sum = fma(l, w, sum);
        seq!(N in 0..4 {
            if 64 * N < d {
                seq!(E in 0..2 {{
                    // SAFETY: column 64 N + 2 lane + E < d.
                    let x = unsafe { parts.load(base + 64 * N + 2 * lane + E) };
                    acc[2 * N + E] = fma(x, w, acc[2 * N + E]);
                }});
            }
        });
    }
    let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
    let o = o.recast::<u32>();
    seq!(N in 0..4 {
        if 64 * N < d {
            let pair = pack::<T>(acc[2 * N] * inv, acc[2 * N + 1] * inv);
            // SAFETY: inside the row, 4 bytes on 4.
            unsafe { o.store((row * d + 64 * N + 2 * lane) / 2, pair) };
        }
    });
    if lane == 0 {
        // SAFETY: the row's lse.
        unsafe { lse.store(row, log_sum_exp(reference, sum)) };
    }
}

/// One kernel per head dimension `$d` and cache element `$cache` (the
/// body is [`decode`]'s: products in `$mma`, `$bytes` bytes an element),
/// each with its doc and its attributes (`$attr`: the FP8 cache's are
/// sm_90's, for `cvt.rn.f16x2.e4m3x2`).
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal, $cache:ty, $mma:ty, $bytes:literal $(, $attr:ident = $value:literal)?);)*) => {$(
        $(#[$doc])*
        #[kernel(block = THREADS, shared = shared_bytes($d), tile = [1, 1], min_blocks = 2 $(, $attr = $value)?, types = [bf16, f16])]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Element>(
            q: In<T>,
            k: In<$cache>,
            v: In<$cache>,
            table: In<u32>,
            lens: In<u32>,
            scales: In<f32>,
            o: Out<T>,
            lse: Out<f32>,
            parts: Out<f32>,
            heads: u32,
            kv_heads: u32,
            s_q: u32,
            page_rows: u32,
            table_stride: u32,
            split_keys: u32,
            scale: f32,
            flags: u32,
        ) {
            decode::<T, $mma, $d, $bytes>(
                (q, k.recast::<u8>(), v.recast::<u8>(), table, lens, scales),
                (o, lse, parts),
                (heads, kv_heads, s_q),
                (page_rows, table_stride, split_keys),
                scale,
                flags,
            );
        }
    )*};
}

head_dims! {
    /// 5. Decode at `d = 64`: a few queries per sequence against its KV
    /// cache, contiguous or paged, the keys split across blocks (the module
    /// documentation has the idea and the arithmetic).
    ///
    /// Launch: Q, O `[b, heads, s_q, 64]`, lse `[b, heads, s_q]`; K and V as
    /// the module says (`page_rows` is `P`, `table_stride` the table's
    /// entries per sequence, `lens` the sequences' lengths, `scales` each
    /// K/V head's descale of K, then of V); the grid is `(splits
    /// row_tiles, b kv_heads)` blocks of 128 threads, `row_tiles =
    /// ceil(group s_q / block_rows(64, wk))`; `split_keys` a multiple of 64
    /// with `splits split_keys` covering the longest sequence; `parts`
    /// `splits b heads s_q part_floats(64)` words when `splits > 1`.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_d64`.
    attention_decode_d64(64, T, T, 2);
    /// 5. Decode at `d = 128`: as [`attention_decode_d64()`].
    ///
    /// Launch: as [`attention_decode_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_d128`.
    attention_decode_d128(128, T, T, 2);
    /// 5. Decode at `d = 256`: as [`attention_decode_d64()`], with stages of
    /// 32 keys and one row tile a warp (`wk` at most 2).
    ///
    /// Launch: as [`attention_decode_d64()`], rows of 256, `split_keys` a
    /// multiple of 32.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_d256`.
    attention_decode_d256(256, T, T, 2);
    /// 5c. Decode against an FP8 (E4M3) cache at `d = 64`: half the bytes a
    /// key. Each stage is copied raw, then each thread widens the chunks it
    /// copied to f16 (exact) into the products' tiles, and the products run
    /// in f16, Q rounded to f16 once (`q_to_f16`). K's descale joins the
    /// scores' scale, V's the final division.
    ///
    /// Launch: as [`attention_decode_d64()`], K and V E4M3 (sm_90).
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d64`.
    attention_decode_e4m3_d64(64, E4m3, f16, 1, arch = "sm_90");
    /// 5c. Decode against an FP8 cache at `d = 128`: as
    /// [`attention_decode_e4m3_d64()`].
    ///
    /// Launch: as [`attention_decode_e4m3_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d128`.
    attention_decode_e4m3_d128(128, E4m3, f16, 1, arch = "sm_90");
    /// 5c. Decode against an FP8 cache at `d = 256`: as
    /// [`attention_decode_e4m3_d64()`].
    ///
    /// Launch: as [`attention_decode_e4m3_d64()`], rows of 256.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d256`.
    attention_decode_e4m3_d256(256, E4m3, f16, 1, arch = "sm_90");
}
