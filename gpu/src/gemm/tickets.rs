//! The split-k epilogue: each k-split's partial sums land in an `f32`
//! workspace, and the last split to finish a tile finishes it, in the
//! same launch.
//!
//! Split `s` of matrix `z` writes its sums at `(z splits + s) m n` (rows
//! `n` apart, 8-byte pairs when `n` is even). Then each thread draws a
//! ticket for its place in the tile: an `atom.add` with release, one word
//! per tile and thread, publishing its writes. The thread that draws the
//! last one acquires the others' (a fence), adds the splits' sums in
//! split order (the same bits whoever comes last), applies the epilogue,
//! stores D and resets the ticket for the next launch. No block waits for
//! another, so no order of blocks can deadlock; the partial sums, written
//! and read within microseconds, mostly stay in L2.

use super::epilogue::Output;
use super::schedule::{GemmArgs, Item};
use super::store::{Scalars, store_at, store_through};
use super::tile::Tile;
use crate::dev::atomic::{Ordering, fence};
use crate::dev::epilogue::Epilogue;
use crate::dev::wgmma::{Accumulators, d_f32};
use crate::dev::{In, Out};
use core::marker::PhantomData;
use seq_macro::seq;

/// The split-k epilogue of a launch: D, the partial sums' workspace, the
/// tickets.
pub(crate) struct Tickets<T, L> {
    d: Out<T>,
    sums: Out<f32>,
    tickets: Out<u32>,
    w: GemmArgs,
    e: Scalars,
    /// The consumer warpgroup and the thread's index in it.
    me: (usize, u32),
    tile: PhantomData<L>,
}

impl<T, L> Tickets<T, L> {
    /// Consumer `me.0`'s epilogue into `d` through the workspace `sums`
    /// and `tickets`, thread `me.1`.
    #[inline(always)]
    pub fn new(
        (d, sums, tickets): (Out<T>, Out<f32>, Out<u32>),
        w: GemmArgs,
        e: Scalars,
        me: (usize, u32),
    ) -> Tickets<T, L> {
        Tickets { d, sums, tickets, w, e, me, tile: PhantomData }
    }
}

impl<T: Output, L: Tile> Epilogue<Item> for Tickets<T, L> {
    type Results = L::Acc;

    #[inline(always)]
    unsafe fn store(&mut self, acc: &L::Acc, item: Item) {
        let (consumer, t) = self.me;
        let (w, e, d) = (self.w, self.e, &self.d);
        // The same words, read (the last split of a tile reads them all).
        let sums_in = In::from_out(self.sums.recast::<f32>());
        let base = (item.z() * w.splits() + item.s as usize) * w.m() * w.n();
        let part = L::part_at(item.origin(), consumer);
        // SAFETY: the caller's contract: `sums` holds `batch splits m n`
        // values, rows `n` apart; pairs only when `n` (so every base) is
        // even; the tickets `tiles 256` words, zero at the launch.
        unsafe {
            if w.n().is_multiple_of(2) {
                store_at::<true, _>(&self.sums, acc, part, t, (w.m(), w.n()), (base, w.n()));
            } else {
                store_at::<false, _>(&self.sums, acc, part, t, (w.m(), w.n()), (base, w.n()));
            }
            // The thread's ticket for its place in the tile, drawn with
            // release (its partial sums published): the last of the splits
            // to draw it acquires everyone's with a fence (the others go on
            // to their next item without one).
            let ticket = item.tile as usize * 256 + 128 * consumer + t as usize;
            if self.tickets.atomic_add(ticket, 1, Ordering::Release) as usize + 1 == w.splits() {
                fence();
                self.tickets.atomic_store(ticket, 0, Ordering::Relaxed);
                // At most 32 of the thread's sums at a time (a quarter of
                // a wide tile's; a short tile's 32 in the first part, the
                // rest return at once): 32 running totals and their loads
                // in flight fit beside the loop's state, where a wide
                // tile's whole 128 and theirs would not (ptxas spilled).
                finish_part::<T, L::Acc, 0, 16>(d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 16, 32>(d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 32, 48>(d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 48, 64>(d, sums_in, item, part, w, t, e);
            }
        }
    }

    fn finish(self) {}
}

/// The last split's fix-up of the thread's places `LO..HI` of its
/// warpgroup's part (at `part` in D) of `item`'s tile: every split's
/// partial sums added in split order (the same bits whoever finishes),
/// then the epilogue and the store to D.
///
/// # Safety
/// As for [`add_partial`] for each split's sums, and [`store_through`].
#[inline(always)]
unsafe fn finish_part<T: Output, A: Accumulators, const LO: usize, const HI: usize>(
    d: &Out<T>,
    sums: In<f32>,
    item: Item,
    part: (usize, usize),
    w: GemmArgs,
    t: u32,
    e: Scalars,
) {
    if LO >= A::N / 4 {
        // Past a narrow or short tile's pairs.
        return;
    }
    let mut total = A::zeroed();
    for s in 0..w.splits() {
        let at = (part, t, (w.m(), w.n()), (item.z() * w.splits() + s) * w.m() * w.n());
        // SAFETY: the caller's contract.
        unsafe {
            if w.n().is_multiple_of(2) {
                add_partial::<A, true, LO, HI>(&mut total, sums, at);
            } else {
                add_partial::<A, false, LO, HI>(&mut total, sums, at);
            }
        }
    }
    let at = (item.z() * w.d_batch(), w.ldd());
    // SAFETY: the caller's contract.
    unsafe { store_through::<T, A, LO, HI>(d, &total, part, t, (w.m(), w.n()), at, e) };
}

/// Adds the partial sums at `base` (an `m x n` matrix, rows `n` apart, as
/// [`store_at`] wrote them) of the thread's places `LO..HI` (pairs, of
/// 64) in the warpgroup's part of a tile, at `(m0, n0)` in D, to `acc`: each pair one
/// 8-byte load when `PAIRS` (`n` even).
///
/// # Safety
/// `sums` holds the matrix at `base`; with `PAIRS`, `n` and `base` are
/// even; what this reads was written before (this thread, or published to
/// it through its ticket).
#[inline(always)]
unsafe fn add_partial<A: Accumulators, const PAIRS: bool, const LO: usize, const HI: usize>(
    acc: &mut A,
    sums: In<f32>,
    ((m0, n0), t, (m, n), base): ((usize, usize), u32, (usize, usize), usize),
) {
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + r as usize, n0 + col as usize);
    seq!(J in 0..64 {{
        let j: usize = J;
        let (row, col) = (row + 8 * (j % 2), col + 8 * (j / 2));
        if j < A::N / 4 && (LO..HI).contains(&j) && row < m && col < n {
            let at = base + row * n + col;
            // SAFETY: inside the matrix (with PAIRS, n even: col + 1 < n
            // too, and `at` even).
            let v = unsafe {
                if PAIRS {
                    sums.load8::<2>(at)
                } else if col + 1 < n {
                    [sums.load(at), sums.load(at + 1)]
                } else {
                    [sums.load(at), 0.0]
                }
            };
            acc[2 * j] += v[0];
            acc[2 * j + 1] += v[1];
        }
    }});
}
