//! The cache's side of a decode block: where each key's row lies (a table
//! load a stage ahead), the stages' `cp.async` copies, and an FP8 cache's
//! widening to f16 (with Q's rounding to f16 for its products).

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::THREADS;
use crate::attention::flash::{bc, swz};
use crate::dev::In;
use crate::dev::SharedArray;
use crate::dev::math::{e4m3x2_to_f16x2, f16x2_bits, unpack};
use crate::dev::registers::opaque;
use half::bf16;
use seq_macro::seq;

/// How a sequence's keys map to cache elements: key `j` of page `p` at
/// `base + p page_stride + j row_stride` (a contiguous cache's one page
/// folded into `base`, its pages all 0).
#[derive(Clone, Copy)]
pub(super) struct Cache {
    /// The sequence's first entry of the table.
    pub(super) table_at: u32,
    pub(super) paged: bool,
    pub(super) page_shift: u32,
    /// Elements between pages and between rows of a page, and the K/V
    /// head's first element (in the sequence's page, when contiguous).
    pub(super) page_stride: usize,
    pub(super) row_stride: u32,
    pub(super) base: usize,
}

/// Pages a stage's keys lie in, at most: a stage is 64 keys (32 at `d` =
/// 256) from a multiple of its size, and a page at least 16, so its
/// 16-key blocks `j` lie in at most four pages (one where pages hold 64
/// or more).
pub(super) const STAGE_PAGES: usize = 4;

/// 16-byte chunks of a cache row of `D` elements of `E` bytes.
const fn row_chunks(d: usize, e: usize) -> usize {
    d * e / 16
}

impl Cache {
    /// The pages of the stage of keys from `key0` (a multiple of the
    /// stage's size), one per 16-key block (0 past `end`): table loads,
    /// every thread's alike (one broadcast), issued a stage ahead of the
    /// copies that use them, so that their latency passes while the warps
    /// multiply (contiguous: 0, its one page in `base`, no load). Four
    /// registers, not one per row a thread copies (eight).
    ///
    /// # Safety
    /// The sequence's table holds the page of every key below `end`.
    #[inline(always)]
    pub(super) unsafe fn pages<const D: usize>(
        &self,
        table: In<u32>,
        (key0, end): (u32, u32),
    ) -> [u32; STAGE_PAGES] {
        core::array::from_fn(|j| {
            let key = key0 + 16 * j as u32;
            if !self.paged {
                0
            } else if j < bc(D) / 16 && key < end {
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
        // (64-bit: a contiguous cache's head offset is `kvh P d`, past 2^32
        // at 32 heads of a million keys.)
        self.base + page as usize * self.page_stride + row as usize * self.row_stride as usize
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
/// `end` zero-filled), their pages in `pages` ([`Cache::pages`]),
/// into the stage at byte `at` (V's tile `bc(D) D E` bytes after K's),
/// uncommitted. Thread `t` copies 16-byte chunk `t mod chunks` of rows `t /
/// chunks + n step` ([`copy_to`] says where).
///
/// # Safety
/// The launch passes `shared_bytes(D)`, the stage at `at`; the cache holds
/// every key below `end`, in the pages given; nobody reads the stage until
/// the copies are waited for (and, for other threads, a barrier passed).
#[inline(always)]
pub(super) unsafe fn copy_stage<const D: usize, const E: usize>(
    (k, v): (In<u16>, In<u16>),
    (cache, pages): (&Cache, &[u32; STAGE_PAGES]),
    (key0, end, at): (u32, u32, usize),
    t: usize,
) {
    // SAFETY: the caller's contract.
    let (k_tile, v_tile) = unsafe {
        (SharedArray::<f32>::launch_sized_at(at), SharedArray::<f32>::launch_sized_at(at + bc(D) * D * E))
    };
    // The thread's index through `opaque` with the stage's key (0, but not
    // to LLVM): its chunks' offsets are recomputed each stage, not hoisted
    // out of the key loop to hold registers through it (O's).
    let t = (opaque(t as u32 + key0) - key0) as usize;
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
            // The row's 16-key block, `r / 16`, as a constant index (a
            // runtime one would put `pages` on the stack): `r0 < step`, so
            // it is `N step / 16`, plus one where a step spans two blocks
            // (FP8 at `d` = 64) and `r0` lies in the second.
            let j = N * step / 16;
            let page = if step > 16 && r0 >= 16 { pages[(j + 1) % STAGE_PAGES] } else { pages[j % STAGE_PAGES] };
            let from = if inside { (cache.row(page, key) * E + 16 * c) / 4 } else { 0 };
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
pub(super) unsafe fn widen_stage<const D: usize>(raw: usize, to: usize, t: usize) {
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

/// Q's tile: the block's `rows` rows of Q ([`super::RowMap::q_row`]; those
/// past the group's zero-filled) into the swizzled tile at byte 0, 16-byte
/// `cp.async` copies, uncommitted: thread `t` takes chunk `t mod (D / 8)`
/// of rows `t / (D / 8) + n step`, as `flash::copy_tile`
/// does (each row's address its own: packed Q's rows of a group are not
/// evenly spaced).
///
/// # Safety
/// The launch passes the tile's bytes; Q holds every valid row; nobody
/// touches the tile until the copies are waited for and a barrier passed.
#[inline(always)]
pub(super) unsafe fn copy_q<const D: usize>(
    q: In<u16>,
    (at, map): (&super::Block, &super::RowMap),
    rows: usize,
    t: usize,
) {
    // SAFETY: the caller's contract.
    let tile = unsafe { SharedArray::<f32>::launch_sized() };
    let chunks = D / 8;
    let step = THREADS / chunks;
    let (r0, c) = (t / chunks, t % chunks);
    let words = q.words();
    seq!(N in 0..32 {
        if N < rows / step {
            let r = r0 + N * step;
            let inside = r < at.valid_rows as usize;
            let from = if inside { (map.q_row(r) * D + 8 * c) / 2 } else { 0 };
            // SAFETY: inside Q when `inside`; a whole chunk of the tile. A
            // row past the group copies nothing (source size 0).
            unsafe { tile.copy_async4_or_zero(0, swz(D, r, 8 * c) / 2, words, from, inside) };
        }
    });
}

/// Q's tile (rows of `T`, bf16), this thread's chunks of it as
/// [`copy_q`] copied them, rounded to f16 in place, for
/// the FP8 cache's f16 products: f16's 10-bit significand holds bf16's 8
/// exactly in f16's normal range, values below 2^-14 round to f16's
/// subnormals, and values past its range saturate to ±65504 (the
/// reference rounds them alike).
///
/// # Safety
/// This thread's copies of Q landed; nobody reads Q before the next
/// barrier.
#[inline(always)]
pub(super) unsafe fn q_to_f16<const D: usize>(rows: usize, t: usize) {
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
