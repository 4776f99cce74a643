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
//! (Little's law: about 3.4 TB/s by about 1 us of latency is 3.4 MB over
//! 132 SMs, 26 KB an SM, more at 4.8 TB/s). A 16-bit stage is
//! `4 bc d` bytes of K and V (32 KB at `d` = 128, 16 KB at 64) and an
//! FP8 one half that; a block keeps `ring - 1` stages in flight while it
//! multiplies one ([`ring`]), two blocks an SM: 64 KB an SM at `d` = 128
//! and 256, 96 KB at 64, 64 KB (FP8, 48 at 64).
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
//! `cp.async` into swizzled tiles (`flash::swz`); keys past the
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

mod cache;
mod merge;
mod rows;

use super::flash::{bc, mt};
use super::{LOG2_E, visible_keys};
use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::fp8::E4m3;
use crate::dev::registers::opaque;
use crate::dev::{Element, Input};
use crate::dev::{In, Out, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y, sync_threads, thread_idx_x};
use crate::kernel;
use cache::{Cache, copy_q, copy_stage, q_to_f16, widen_stage};
use half::{bf16, f16};
pub use merge::attention_decode_merge;
use rows::{Rows, chunk, merge_warps, store};

/// Threads per block: four warps.
pub const THREADS: usize = 128;
/// Stages of (K tile, V tile) the copies fill in turn for head dimension
/// `d` and cache elements of `e` bytes: as many as two blocks an SM leave
/// shared memory for (at most about 113 KB a block), so that the bytes in
/// flight are the most the SM can hold: four of 16 KB at `d` = 64; two
/// of 32 KB at 128 and 256 (beside Q's 32 KB tile); an FP8 cache's raw
/// stages, half the size, behind the one 16-bit stage the products read,
/// four at 64 and three above.
pub const fn ring(d: usize, e: usize) -> usize {
    match (d, e) {
        (64, _) => 4,
        (_, 2) => 2,
        _ => 3,
    }
}

/// Bit of the kernels' `flags`: causal masking.
pub const CAUSAL: u32 = 1;
/// Bit of the kernels' `flags`: the cache is paged (`[pages, P, kv_heads,
/// d]`); else contiguous (`[b, kv_heads, P, d]`).
pub const PAGED: u32 = 2;
/// The kernels' `flags` from this shift: `log2 wk`, warps per row group
/// (0, 1 or 2).
pub const WK_SHIFT: u32 = 2;
/// Bit of the kernels' `flags`: Q and O are packed, `[tokens, heads, d]`,
/// sequence `b`'s queries from token `lens[batch + b]` to `lens[batch + b
/// + 1]` (variable-length batches: `cu_seqlens`), lse `[tokens, heads]`.
pub const PACKED: u32 = 16;
/// The kernels' `flags` from this shift: `log2 P` of a paged cache.
pub const PAGE_SHIFT: u32 = 8;

/// Rows per block for head dimension `d` with `wk` warps per row group.
pub const fn block_rows(d: usize, wk: usize) -> usize {
    16 * mt(d) * (4 / wk)
}

/// Bytes of a 16-bit stage (a K tile, then a V tile) at head dimension
/// `d`.
const fn stage_bytes(d: usize) -> usize {
    2 * 2 * bc(d) * d
}

/// Bytes of shared memory for head dimension `d` and cache elements of `e`
/// bytes: the most rows' Q tile, then the ring of stages (an FP8 cache's
/// behind the 16-bit stage its products read).
pub const fn shared_bytes(d: usize, e: usize) -> usize {
    let stages =
        if e == 2 { ring(d, e) * stage_bytes(d) } else { stage_bytes(d) + ring(d, e) * stage_bytes(d) / 2 };
    2 * block_rows(d, 1) * d + stages
}

/// `f32` words of one row's state in a split's workspace: O (`d`), the
/// maximum and the sum.
pub const fn part_floats(d: usize) -> usize {
    d + 2
}

/// Words a lane keeps for the merge of a row group's warps: O, then two
/// rows' maximum and sum per row tile.
pub(super) const fn lane_floats(d: usize) -> usize {
    mt(d) * (d / 2 + 4)
}

/// Where this block works and on what (32-bit words: they live through
/// the key loop). Rows are numbered within the K/V head's group, `gr`
/// ([`RowMap`] says where each lies in Q).
#[derive(Clone, Copy)]
pub(super) struct Block {
    /// The group's row of the block's first row, and the group's heads.
    gr0: u32,
    group: u32,
    packed: bool,
    /// Rows of the group from the block's first (may exceed the block's).
    valid_rows: u32,
    /// The sequence's keys.
    len: u32,
    /// The end of the split's keys (and, causal, of the block's rows').
    key_end: u32,
    /// The sequence's queries.
    s_q: u32,
    /// The launch's flags: the thread's warp, lane, row group and part are
    /// derived from them and the thread's index where used, not kept in
    /// registers through the key loop (O's).
    flags: u32,
}

impl Block {
    /// This thread's lane.
    #[inline(always)]
    pub(super) fn lane(&self) -> u32 {
        thread_idx_x() % 32
    }

    /// Warps per row group ([`WK_SHIFT`]).
    #[inline(always)]
    pub(super) fn wk(&self) -> u32 {
        1 << ((self.flags >> WK_SHIFT) & 3)
    }

    /// The warp's row group, and its place among the group's warps.
    #[inline(always)]
    pub(super) fn row_group(&self) -> u32 {
        thread_idx_x() / 32 / self.wk()
    }
    #[inline(always)]
    pub(super) fn part(&self) -> u32 {
        thread_idx_x() / 32 % self.wk()
    }

    /// Causal masking ([`CAUSAL`]).
    #[inline(always)]
    pub(super) fn causal(&self) -> bool {
        self.flags & CAUSAL != 0
    }

    /// The query (of the sequence's `s_q`) of the block's row `r`.
    #[inline(always)]
    pub(super) fn query(&self, r: usize) -> usize {
        let gr = self.gr0 as usize + r;
        if self.packed { gr / self.group.max(1) as usize } else { gr % self.s_q.max(1) as usize }
    }

    /// The latest query among the block's rows (the last valid row's,
    /// or with Q's heads outer, the last query if the rows wrap a head).
    #[inline(always)]
    fn last_query(&self, rows: u32) -> usize {
        let last = rows.min(self.valid_rows).saturating_sub(1) as usize;
        let (s_q, first) = (self.s_q.max(1) as usize, self.gr0 as usize);
        if !self.packed && first / s_q != (first + last) / s_q { s_q - 1 } else { self.query(last) }
    }
}

/// Where the block's rows lie in Q (and O, lse): `[b, heads, s_q, d]` Q
/// has the group's row `gr` at `q_base + gr`, query `gr mod s_q` (heads
/// outer); packed Q ([`PACKED`], `[tokens, heads, d]`) at `(q_base + gr /
/// group) heads + head0 + gr mod group`, query `gr / group` (queries outer,
/// so that a block's rows are few queries of every head of the group, and
/// a causal block sees few keys). Computed where Q is read and where O is
/// written, from the launch, not kept through the key loop (its registers
/// are O's).
#[derive(Clone, Copy)]
pub(super) struct RowMap {
    /// Q's row of the group's first row, or (packed) the sequence's first
    /// token.
    q_base: u32,
    /// The group's first head, its heads, every head's.
    head0: u32,
    group: u32,
    heads: u32,
    /// The group's row of the block's first row.
    gr0: u32,
    packed: bool,
}

impl RowMap {
    /// Q's (and O's, lse's) row of the block's row `r`.
    #[inline(always)]
    pub(super) fn q_row(&self, r: usize) -> usize {
        let gr = self.gr0 as usize + r;
        if self.packed {
            let group = self.group.max(1) as usize;
            (self.q_base as usize + gr / group) * self.heads as usize + self.head0 as usize + gr % group
        } else {
            self.q_base as usize + gr
        }
    }
}

/// This block's place from the launch: its sequence `b`, K/V head, split
/// and row tile, rows a block, the sequence's keys and queries, and its
/// [`RowMap`].
#[inline(always)]
fn place<const D: usize>(
    lens: In<u32>,
    (heads, kv_heads, s_q): (u32, u32, u32),
    flags: u32,
) -> ((u32, u32, u32), u32, (u32, u32), RowMap) {
    // (`max(1)`: the launch's contract makes them at least 1; said so,
    // the divisions need no divide-by-zero branch.)
    let (kv_heads, s_q) = (kv_heads.max(1), s_q.max(1));
    let group = (heads / kv_heads).max(1);
    let wk = 1u32 << ((flags >> WK_SHIFT) & 3);
    let rows = block_rows(D, wk as usize) as u32;
    let row_tiles = (group * s_q).div_ceil(rows).max(1);
    let (split, row_tile) = (block_idx_x() / row_tiles, block_idx_x() % row_tiles);
    let (b, kvh) = (block_idx_y() / kv_heads, block_idx_y() % kv_heads);
    let batch = grid_dim_y() / kv_heads;
    let packed = flags & PACKED != 0;
    // SAFETY: `lens` holds a length per sequence, then (packed) the
    // sequences' first tokens and the tokens' count (the launch's
    // contract).
    let (len, q_base, s_q) = unsafe {
        let len = lens.load(b as usize);
        if packed {
            let (first, end) = (lens.load((batch + b) as usize), lens.load((batch + b + 1) as usize));
            (len, first, end - first)
        } else {
            (len, (b * heads + kvh * group) * s_q, s_q)
        }
    };
    let map = RowMap { q_base, head0: kvh * group, group, heads, gr0: row_tile * rows, packed };
    ((b, kvh, split), rows, (len, s_q), map)
}

/// Waits for this thread's oldest copy group of a ring of `ring` stages:
/// with `ring - 1` groups committed ahead of the one the next tile reads,
/// `ring - 2` may stay pending.
#[inline(always)]
fn wait_ring(ring: u32) {
    match ring {
        2 => wait_copies::<0>(),
        3 => wait_copies::<1>(),
        _ => wait_copies::<2>(),
    }
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
    (heads, kv_heads, s_q_launch): (u32, u32, u32),
    (page_rows, table_stride, split_keys): (u32, u32, u32),
    scale: f32,
    flags: u32,
) {
    let ((b, kvh, split), rows, (len, s_q), map) = place::<D>(lens, (heads, kv_heads, s_q_launch), flags);
    let kv_heads = kv_heads.max(1);
    let group = map.group;
    let key_begin = split * split_keys;
    let t = thread_idx_x();
    let mut at = Block {
        gr0: map.gr0,
        group,
        packed: map.packed,
        valid_rows: (group * s_q).saturating_sub(map.gr0),
        len,
        key_end: len.min(key_begin.saturating_add(split_keys)),
        s_q,
        flags,
    };
    if at.causal() {
        // Keys past the block's latest query's limit are never loaded.
        let limit = visible_keys(at.last_query(rows), s_q as usize, len as usize, true);
        at.key_end = at.key_end.min(limit as u32);
    }
    let paged = flags & PAGED != 0;
    let page_shift = (flags >> PAGE_SHIFT) & 31;
    // SAFETY: the table holds `table_stride` entries a sequence (the
    // launch's contract); a contiguous cache's first is its one page.
    let page0 = if paged { 0 } else { unsafe { table.load((b * table_stride) as usize) } };
    let page_stride = page_rows as usize * (kv_heads as usize * D);
    let cache = Cache {
        table_at: b * table_stride,
        paged,
        page_shift,
        page_stride,
        row_stride: if paged { kv_heads * D as u32 } else { D as u32 },
        base: page0 as usize * page_stride + kvh as usize * if paged { D } else { page_rows as usize * D },
    };
    let t = t as usize;
    let (qh, kh, vh) = (q.same_bytes::<u16>(), k.recast::<u16>(), v.recast::<u16>());
    let bc = bc(D) as u32;
    let tiles = at.key_end.saturating_sub(key_begin).div_ceil(bc);
    // Shared memory: Q, then the ring of 16-bit stages; an FP8 cache's
    // products read one 16-bit stage always, its copies land in the ring
    // of raw stages behind it.
    let ring = ring(D, E) as u32;
    let first_stage = 2 * block_rows(D, 1) * D;
    let copy_at = |s: u32| {
        let slot = (s % ring) as usize;
        if E == 2 {
            first_stage + slot * stage_bytes(D)
        } else {
            first_stage + (2 + slot) * stage_bytes(D) / 2
        }
    };
    let read_at = |s: u32| if E == 2 { copy_at(s) } else { first_stage };
    if tiles > 0 {
        // SAFETY: Q's tile at byte 0, the group's rows of this sequence.
        unsafe { copy_q::<D>(qh, (&at, &map), rows as usize, t) };
    }
    // The ring's first `ring - 1` stages, a copy group each (empty past the
    // split's tiles, so that every thread counts groups alike), then the
    // pages of the next.
    let mut pages = [0; cache::STAGE_PAGES];
    for s in 0..ring - 1 {
        let key0 = key_begin + s * bc;
        if s < tiles {
            // SAFETY: the table holds the pages of the sequence's keys;
            // as `copy_stage` says, the stages are not read yet.
            unsafe {
                pages = cache.pages::<D>(table, (key0, at.key_end));
                copy_stage::<D, E>((kh, vh), (&cache, &pages), (key0, at.key_end, copy_at(s)), t);
            }
        }
        commit_copies();
    }
    if ring - 1 < tiles {
        // SAFETY: as above.
        pages = unsafe { cache.pages::<D>(table, (key_begin + (ring - 1) * bc, at.key_end)) };
    }
    // SAFETY: `scales` holds both descales of every K/V head.
    let k_scale = unsafe { scales.load(kvh as usize) };
    // The scores' scale with K's descale: `c s` in log2 units is the true
    // score's.
    let c = scale * LOG2_E * k_scale;
    let mut state = [Rows::EMPTY; 2];
    if E == 1 && T::INPUT == Input::Bf16 && tiles > 0 {
        // Q rounded to f16 for an FP8 cache's products, once its copies
        // landed (the first group's: `ring - 2` of the `ring - 1` may stay
        // pending); the products read it after the loop's barriers.
        wait_ring(ring);
        // SAFETY: this thread's copies of Q landed; nobody reads Q before
        // the first tile's barrier.
        unsafe { q_to_f16::<D>(rows as usize, t) };
    }
    for tile in 0..tiles {
        // This thread's copies of the tile landed (of its `ring - 1 +
        // tile` groups, at most `ring - 2` are pending); after the
        // barrier, everyone's, and every warp is past the stage the next
        // copies overwrite (the tile before's).
        wait_ring(ring);
        sync_threads();
        let next = tile + ring - 1;
        if next < tiles {
            let key0 = key_begin + next * bc;
            // SAFETY: as `copy_stage` says; the barrier freed the stage.
            unsafe { copy_stage::<D, E>((kh, vh), (&cache, &pages), (key0, at.key_end, copy_at(next)), t) };
            if next + 1 < tiles {
                // SAFETY: the table holds the pages of the sequence's keys.
                pages = unsafe { cache.pages::<D>(table, (key0 + bc, at.key_end)) };
            }
        }
        commit_copies();
        if E == 1 {
            // SAFETY: this thread's copies of the stage landed; the
            // barrier above freed the products' tiles, the one below
            // orders their reads.
            unsafe { widen_stage::<D>(copy_at(tile), read_at(tile), t) };
            sync_threads();
        }
        // The warp's 16-key chunks of the stage: `part, part + wk, ...`
        // (one body, not one per chunk: four copies of the products held
        // more registers than O leaves).
        let mut ch = at.part();
        while ch < bc / 16 && key_begin + tile * bc + 16 * ch < at.key_end {
            let key0 = key_begin + tile * bc + 16 * ch;
            // SAFETY: the stage's copies landed (the wait and the barrier);
            // the warp runs this alike.
            unsafe { chunk::<P, D>(&mut state, &at, read_at(tile) + 2 * 16 * ch as usize * D, key0, c) };
            ch += at.wk();
        }
    }
    // The row group's warps meet: each warp past the first leaves its
    // state in shared memory (the stages', now free), the first takes
    // them in.
    if at.wk() > 1 {
        sync_threads();
        // SAFETY: past the barrier nobody reads the stages; each lane of
        // each warp writes its own words, read after the next barrier.
        unsafe { merge_warps::<D>(&mut state, &at, c) };
    }
    if at.part() != 0 {
        return;
    }
    // The block's rows in O, recomputed (`opaque`: not kept from the
    // start through the loop), and Q's: every sequence's queries of every
    // head.
    let s_q_launch = opaque(s_q_launch);
    let ((_, kvh, split), rows, _, map) = place::<D>(lens, (heads, kv_heads, s_q_launch), flags);
    let batch = grid_dim_y() / kv_heads;
    // SAFETY: (packed) the tokens' count after the first tokens; V's
    // descale of the K/V head (as above).
    let (tokens, v_scale) = unsafe {
        let tokens = if map.packed { lens.load((2 * batch) as usize) } else { batch * s_q_launch };
        (tokens, scales.load((kv_heads + kvh) as usize))
    };
    let rows_all = tokens * heads;
    let splits = grid_dim_x() / (map.group * s_q_launch.max(1)).div_ceil(rows).max(1);
    // SAFETY: O, lse and the workspace hold the launch's rows (its
    // contract); each lane stores its own elements.
    unsafe {
        store::<T, D>(&mut state, (&at, &map), (o, lse, parts), (split, splits, rows_all), (c, v_scale))
    };
}

/// One kernel per head dimension `$d` and cache element `$cache` (the
/// body is [`decode`]'s: products in `$mma`, `$bytes` bytes an element),
/// each with its doc and its attributes (`$attr`: the FP8 cache's are
/// in the sm_90a PTX, which Hopper loads: `cvt.rn.f16x2.e4m3x2` needs sm_89).
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal, $cache:ty, $mma:ty, $bytes:literal $(, $attr:ident = $value:literal)?);)*) => {$(
        $(#[$doc])*
        #[kernel(block = THREADS, shared = shared_bytes($d, $bytes), tile = [1, 1], min_blocks = 2 $(, $attr = $value)?, types = [bf16, f16])]
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
    /// Launch: as [`attention_decode_d64()`], K and V E4M3 (sm_90a).
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d64`.
    attention_decode_e4m3_d64(64, E4m3, f16, 1, arch = "sm_90a");
    /// 5c. Decode against an FP8 cache at `d = 128`: as
    /// [`attention_decode_e4m3_d64()`].
    ///
    /// Launch: as [`attention_decode_e4m3_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d128`.
    attention_decode_e4m3_d128(128, E4m3, f16, 1, arch = "sm_90a");
    /// 5c. Decode against an FP8 cache at `d = 256`: as
    /// [`attention_decode_e4m3_d64()`].
    ///
    /// Launch: as [`attention_decode_e4m3_d64()`], rows of 256.
    /// Measured: `BENCHMARKS.md`, rows `attention_decode_e4m3_d256`.
    attention_decode_e4m3_d256(256, E4m3, f16, 1, arch = "sm_90a");
}
