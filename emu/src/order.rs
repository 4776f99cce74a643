//! Happens-before: when an earlier access is ordered before a later one, so
//! that the two cannot race.
//!
//! Two accesses of one thread are ordered by program order. Across threads
//! the emulator knows five orderings:
//!
//! - **`sync_threads`**: every access of a block before a barrier is
//!   ordered before every access of the block after it, in shared and in
//!   global memory. The block counts the barriers it has passed (its
//!   *epoch*); an access records the epoch it happened in.
//! - **`sync_warp(mask)`**: orders the accesses of the lanes it names, as
//!   a barrier does for the block. Each warp counts its completed
//!   `sync_warp`s; an access records that count, and a 32 × 32 table
//!   holds, per pair of lanes, the last `sync_warp` both took part in.
//!   Lane `a`'s access is ordered before lane `b`'s if `a` and `b` synced
//!   together after it.
//! - **Release and acquire through an atomic**, across blocks: a thread
//!   that issues a fence (`__threadfence`) and then an atomic on a word,
//!   or an atomic with release ordering, *publishes* on that word what it
//!   has done so far: its own accesses up to the release, and everything
//!   its block did before its last barrier. A thread whose atomic on the
//!   word has acquire ordering (or is followed by a fence) learns what was
//!   published there, and a barrier passes what any thread of the block
//!   knows to all of them. That is the one-pass reduction's ticket.
//! - **Mbarriers**, within a block: an arrival releases on the
//!   mbarrier's word as a release atomic does, and a wait that saw its
//!   phase complete acquires what every arrival so far published (PTX's
//!   default `.release` and `.acquire` semantics at the block's scope).
//!   That orders a consumer warpgroup's reads of a buffer before another
//!   warpgroup's writes to it, across the mbarrier that hands it over.
//! - Blocks are otherwise unordered: the emulator runs them one after
//!   another, but a GPU runs them in any order, at once.
//!
//! Not modelled: shuffles order no memory (CUDA says they need not), a
//! relaxed atomic's release sequence is the whole history of its word,
//! and fence scopes (block, device, system) are not told apart.

use std::collections::BTreeMap;
use std::panic::Location;

/// What an access does, as the race rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// An atomic operation; `write` tells a load from a store or
    /// read-modify-write. Two atomics never race.
    Atomic {
        write: bool,
    },
}

impl Kind {
    pub(crate) fn writes(self) -> bool {
        matches!(self, Kind::Write | Kind::Atomic { write: true })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Atomic { write: false } => "atomic read",
            Kind::Atomic { write: true } => "atomic",
        }
    }
}

/// One access to one 4-byte word: who, when, what and where.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    /// The block's linear index in the grid.
    pub block: u32,
    /// The thread's linear index in the block.
    pub thread: u32,
    /// Barriers the block had passed.
    pub epoch: u32,
    /// `sync_warp`s the thread's warp had completed.
    pub warp_gen: u32,
    /// The thread's count of fences and atomics before the access.
    pub seq: u32,
    pub kind: Kind,
    /// The bytes of the word it touches (bit `i`: byte `i`): accesses to
    /// different bytes of one word (two `f16`, four `u8`) never race.
    pub bytes: u8,
    pub site: &'static Location<'static>,
}

/// A release a thread made: its accesses with `seq` up to `seq`, and its
/// block's accesses in epochs before `epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Release {
    pub epoch: u32,
    pub seq: u32,
}

/// What a thread has acquired: the latest release of each (block, thread)
/// it has learned of.
#[derive(Clone, Debug, Default)]
pub(crate) struct Knowledge(BTreeMap<(u32, u32), Release>);

impl Knowledge {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn insert(&mut self, block: u32, thread: u32, release: Release) {
        let slot = self.0.entry((block, thread)).or_insert(release);
        if release.seq > slot.seq {
            *slot = release;
        }
    }

    pub(crate) fn merge(&mut self, other: &Knowledge) {
        for (&(block, thread), &release) in &other.0 {
            self.insert(block, thread, release);
        }
    }

    /// Whether some release this thread learned of covers `a`.
    pub(crate) fn covers(&self, a: &Access) -> bool {
        self.0
            .range((a.block, 0)..=(a.block, u32::MAX))
            .any(|(&(_, thread), r)| a.epoch < r.epoch || (thread == a.thread && a.seq <= r.seq))
    }
}

/// One warp's `sync_warp` history.
pub(crate) struct WarpSyncs {
    /// `sync_warp`s completed.
    pub generation: u32,
    /// `paired[a][b]`: the generation of the last `sync_warp` lanes `a`
    /// and `b` both took part in (0: none).
    pub paired: [[u32; 32]; 32],
}

impl WarpSyncs {
    pub(crate) fn new() -> Box<Self> {
        Box::new(WarpSyncs { generation: 0, paired: [[0; 32]; 32] })
    }

    /// Completes a `sync_warp` of the lanes in `mask`.
    pub(crate) fn sync(&mut self, mask: u32) {
        self.generation += 1;
        for a in (0..32).filter(|a| mask & (1 << a) != 0) {
            for b in (0..32).filter(|b| mask & (1 << b) != 0) {
                self.paired[a][b] = self.generation;
            }
        }
    }
}

/// What a later access `me` needs to decide whether `prev` is ordered
/// before it.
pub(crate) struct Observer<'a> {
    pub warps: &'a [Option<Box<WarpSyncs>>],
    pub knowledge: &'a Knowledge,
}

impl Observer<'_> {
    /// Whether `prev` happens before `me`.
    pub(crate) fn ordered(&self, prev: &Access, me: &Access) -> bool {
        if prev.block == me.block {
            if prev.thread == me.thread || prev.epoch < me.epoch {
                return true;
            }
            let warp = (prev.thread / 32) as usize;
            if warp == (me.thread / 32) as usize
                && let Some(Some(w)) = self.warps.get(warp)
                && w.paired[(prev.thread % 32) as usize][(me.thread % 32) as usize] > prev.warp_gen
            {
                return true;
            }
        }
        self.knowledge.covers(prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(block: u32, thread: u32, epoch: u32, seq: u32) -> Access {
        Access {
            block,
            thread,
            epoch,
            warp_gen: 0,
            seq,
            kind: Kind::Write,
            bytes: 0xf,
            site: Location::caller(),
        }
    }

    #[test]
    fn a_release_covers_its_thread_up_to_it_and_its_block_before_its_epoch() {
        let mut k = Knowledge::default();
        k.insert(3, 0, Release { epoch: 2, seq: 5 });
        assert!(k.covers(&access(3, 0, 2, 5)), "the releasing thread's own access at the release");
        assert!(!k.covers(&access(3, 0, 2, 6)), "after the release");
        assert!(k.covers(&access(3, 9, 1, 40)), "another thread, before the barrier preceding the release");
        assert!(!k.covers(&access(3, 9, 2, 0)), "another thread, in the release's epoch");
        assert!(!k.covers(&access(4, 0, 0, 0)), "another block");
        // The later release of a thread replaces its earlier one.
        k.insert(3, 0, Release { epoch: 3, seq: 9 });
        k.insert(3, 0, Release { epoch: 1, seq: 2 });
        assert!(k.covers(&access(3, 0, 3, 9)) && k.covers(&access(3, 9, 2, 0)));
    }

    #[test]
    fn sync_warp_orders_only_the_lanes_it_names() {
        let mut warps = vec![Some(WarpSyncs::new())];
        let before = Access { warp_gen: 0, ..access(0, 1, 0, 0) };
        warps[0].as_mut().unwrap().sync(0b0111);
        let knowledge = Knowledge::default();
        let o = Observer { warps: &warps, knowledge: &knowledge };
        assert!(o.ordered(&before, &access(0, 2, 0, 0)), "lanes 1 and 2 synced after the access");
        assert!(!o.ordered(&before, &access(0, 3, 0, 0)), "lane 3 was not in the mask");
        let after = Access { warp_gen: 1, ..access(0, 1, 0, 0) };
        assert!(!o.ordered(&after, &access(0, 2, 0, 0)), "an access after the last sync_warp");
        assert!(o.ordered(&after, &access(0, 2, 1, 0)), "a later epoch");
    }
}
