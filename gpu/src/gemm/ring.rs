//! The ring of the Hopper GEMM: stages of A and B in shared memory that the
//! copy engine fills (TMA) and the consumer warpgroups multiply (`wgmma`),
//! with a "full" and an "empty" mbarrier per stage. A [`PipelineState`]
//! names each use's stage and phase ([`crate::dev::pipeline`]).
//!
//! The producer, one thread, takes a stage ([`Ring::acquire`]: its readers
//! released the last round) and fills it ([`Ring::fill_from`]); each
//! consumer warpgroup waits for it, multiplies it and releases it
//! ([`consume`]).

use super::element::RingElement;
use super::tile::{SPAN, Tile, Wide, stage_bytes};
use crate::dev::barrier::{Mbarrier, fence_init};
use crate::dev::pipeline::PipelineState;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, copy_2d};
use crate::dev::wgmma::{self, Accumulators, shared_address};
use crate::dev::{In, SharedArray, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use core::marker::PhantomData;

/// The ring of stages in shared memory, its mbarriers, and what one thread
/// needs to fill a stage: the maps and the block tile's origin.
pub(crate) struct Ring<E, T = Wide> {
    stages: *mut u8,
    bars: SharedArray<u64>,
    pub(crate) maps: In<u64>,
    /// The origin in C of the block's tile, for one-tile launches.
    pub(crate) origin: (usize, usize),
    element: PhantomData<(E, T)>,
}

impl<E, T> Clone for Ring<E, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, T> Copy for Ring<E, T> {}

impl<E: RingElement, T: Tile> Ring<E, T> {
    /// The ring of this launch: stages from the first 1024-byte boundary,
    /// the mbarriers after them.
    #[inline(always)]
    pub(crate) fn new(maps: In<u64>) -> Ring<E, T> {
        let raw = launch_sized_base();
        let stages = raw.wrapping_add((1024 - shared_address(raw) as usize % 1024) % 1024);
        Ring {
            stages,
            // SAFETY: 2 T::STAGES mbarriers after the stages and the
            // slack, 8-aligned (the declaration's bytes).
            bars: unsafe {
                SharedArray::<u64>::launch_sized_at(1024 + T::STAGES * stage_bytes(T::BM, T::BN))
            },
            maps,
            origin: (block_idx_y() as usize * T::BM, block_idx_x() as usize * T::BN),
            element: PhantomData,
        }
    }

    /// The byte offset, in the launch's shared memory, of what a kernel
    /// places after the ring: the first 1024-byte boundary past the stages
    /// and the mbarriers (at most `1024 + T::STAGES` stages `+ 2048`
    /// bytes in).
    #[inline(always)]
    pub(crate) fn after(self) -> usize {
        let start = self.stages as usize - launch_sized_base() as usize;
        start + T::STAGES * stage_bytes(T::BM, T::BN) + 2048
    }

    #[inline(always)]
    pub(crate) fn stage(self, s: usize) -> *mut u8 {
        self.stages.wrapping_add(s * stage_bytes(T::BM, T::BN))
    }

    /// Stage `s`'s "full" mbarrier: one arrival (the filling thread's)
    /// and the stage's bytes.
    #[inline(always)]
    pub(crate) fn full(self, s: usize) -> Mbarrier {
        // SAFETY: s < T::STAGES, inside the ring's mbarriers.
        unsafe { Mbarrier::at(self.bars, s) }
    }

    /// Stage `s`'s "empty" mbarrier: one arrival per consumer warpgroup
    /// done with it (per block of the cluster, where blocks share stages).
    #[inline(always)]
    pub(crate) fn empty(self, s: usize) -> Mbarrier {
        // SAFETY: as for `full`.
        unsafe { Mbarrier::at(self.bars, T::STAGES + s) }
    }

    /// One thread, before the block's barrier: the mbarriers (`empty`
    /// expecting `consumers` arrivals) and the maps made visible.
    ///
    /// # Safety
    /// Thread 0 alone; a `sync_threads` follows before any use.
    #[inline(always)]
    pub(crate) unsafe fn init(self, consumers: u32) {
        for s in 0..T::STAGES {
            // SAFETY: one thread, before any use (the caller's contract).
            unsafe { (self.full(s).init(1), self.empty(s).init(consumers)) };
        }
        fence_init();
        // SAFETY: the launch passes two maps.
        unsafe { (acquire_map(self.maps, 0), acquire_map(self.maps, 1)) };
    }

    /// Fills stage `s` with k-step `step` of the block tile at `(m0, n0)`:
    /// TMA copies (A's `T::BM`-row box, then B's `T::BN` columns: 48, 32
    /// or 24 KB in all) counting their bytes on `full(s)`.
    ///
    /// # Safety
    /// One thread; nothing reads or writes the stage until `full(s)`'s
    /// phase is observed complete.
    #[inline(always)]
    pub(crate) unsafe fn fill(self, s: usize, step: usize, origin: (usize, usize)) {
        // SAFETY: the caller's contract; maps 0 and 1 are A's and B's.
        unsafe { self.fill_from(s, step, origin, (0, 1)) }
    }

    /// [`Ring::fill`] from the maps `(a, b)` of the launch's (a batched
    /// launch has a pair per matrix of the batch).
    ///
    /// # Safety
    /// As for [`Ring::fill`]; the maps exist, A's and B's.
    #[inline(always)]
    pub(crate) unsafe fn fill_from(
        self,
        s: usize,
        step: usize,
        origin: (usize, usize),
        (a, b): (usize, usize),
    ) {
        let (maps, full) = (self.maps, self.full(s));
        // SAFETY: the caller's contract; B's boxes land in the stage.
        let copy_b = |to: *mut u8, xy: (i32, i32)| unsafe { copy_2d(to, maps, b, xy, full) };
        // SAFETY: the caller's contract.
        unsafe { self.fill_by(s, step, origin, a, copy_b) }
    }

    /// [`Ring::fill`] with A's box through map `a` and B's boxes through
    /// `copy_b(to, (x, y))` ([`RingElement::copy_b`]).
    ///
    /// # Safety
    /// As for [`Ring::fill`]; map `a` is A's; `copy_b` copies B's boxes
    /// counting their bytes on `full(s)`.
    #[inline(always)]
    pub(crate) unsafe fn fill_by(
        self,
        s: usize,
        step: usize,
        (m0, n0): (usize, usize),
        a: usize,
        copy_b: impl Fn(*mut u8, (i32, i32)),
    ) {
        let (at, k0) = (self.stage(s), (step * E::BK) as i32);
        // SAFETY: the stage is 1024-aligned with room for the boxes; the
        // maps are the launch's; the phase expects one arrival, with the
        // boxes' bytes (out-of-bounds elements are zeros, and count).
        unsafe {
            self.full(s).arrive_expect_tx(stage_bytes(T::BM, T::BN) as u32);
            copy_2d(at, self.maps, a, (k0, m0 as i32), self.full(s));
            E::copy_b(at.wrapping_add(T::BM * SPAN), k0, (n0, T::BN), copy_b);
        }
    }

    /// Warpgroup `wg`'s part ([`Tile::part`]: 64 x `N` x `BK`) of stage
    /// `s`, added to `acc`: four `wgmma`s ([`RingElement::multiply`]), issued
    /// (not waited for).
    ///
    /// Row `r` of A lies `128 r` bytes into the stage; B's column `c` (a
    /// multiple of 64) `128 c` bytes into B's part in either layout: a
    /// K-major B row per column, or an MN-major box (`B_BOX_BYTES`) per 64
    /// columns.
    ///
    /// # Safety
    /// The warpgroup runs it converged; the stage's bytes have landed.
    #[inline(always)]
    pub(crate) unsafe fn multiply(self, s: usize, wg: usize, acc: T::Acc) -> T::Acc {
        let base = shared_address(self.stage(s));
        let (row, col) = T::part(wg);
        let (a, b) = (base + (row * SPAN) as u32, base + ((T::BM + col) * SPAN) as u32);
        wgmma::fence();
        // SAFETY: the caller's contract; the part's rows of A and columns
        // of B lie inside the stage.
        let acc = unsafe { E::multiply(a, b, acc) };
        wgmma::commit();
        acc
    }
    /// The producer's next stage, `state`'s: once its readers have released
    /// the last round (not waited for in the first).
    ///
    /// # Safety
    /// The producer's thread; the ring initialized, "empty" counting every
    /// consumer that releases the stage.
    #[inline(always)]
    pub(crate) unsafe fn acquire(self, state: PipelineState) -> usize {
        let s = state.stage();
        if let Some(phase) = state.refill_phase() {
            // SAFETY: the caller's contract.
            unsafe { self.empty(s).wait(phase) };
        }
        s
    }
}

/// The ring of this launch on tiles `T`, its mbarriers initialized by
/// thread 0 ("empty" counting `consumers` arrivals) and visible to every
/// thread after the block's barrier.
#[inline(always)]
pub(crate) fn start_ring<E: RingElement, T: Tile>(maps: In<u64>, consumers: u32) -> Ring<E, T> {
    let ring = Ring::<E, T>::new(maps);
    if thread_idx_x() == 0 {
        // SAFETY: thread 0, the barrier follows.
        unsafe { ring.init(consumers) };
    }
    sync_threads();
    ring
}

/// A consumer warpgroup's sums for one tile: `steps` uses of the ring from
/// `state` on. Each stage is waited for on "full", multiplied, and
/// released on "empty" (one arrival per warpgroup) once the next stage's
/// group is queued behind it (`wait_group 1`), the last after `wait_group
/// 0`.
///
/// # Safety
/// The warpgroup runs it converged; the ring initialized, with the
/// producer filling these uses.
#[inline(always)]
pub(crate) unsafe fn consume<E: RingElement, T: Tile>(
    ring: Ring<E, T>,
    consumer: usize,
    steps: usize,
    state: &mut PipelineState,
) -> T::Acc {
    // SAFETY: the caller's contract; initialized, and this is the
    // warpgroup's one arrival for the stage's round, after its `wgmma`
    // reads of it completed.
    unsafe { consume_with(ring, consumer, steps, state, |empty| empty.arrive()) }
}

/// [`consume`], releasing each stage with `release(its "empty")` from the
/// warpgroup's first thread.
///
/// # Safety
/// As for [`consume`]; `release` is safe to call once per stage and
/// round, after the warpgroup's reads of the stage completed.
#[inline(always)]
pub(crate) unsafe fn consume_with<E: RingElement, T: Tile>(
    ring: Ring<E, T>,
    consumer: usize,
    steps: usize,
    state: &mut PipelineState,
    release: impl Fn(Mbarrier),
) -> T::Acc {
    let leader = thread_idx_x().is_multiple_of(128);
    let release = |state: PipelineState| release(ring.empty(state.stage()));
    let mut acc = T::Acc::zeroed();
    for step in 0..steps {
        let s = state.stage();
        // SAFETY: the caller's contract; the stage has landed after the
        // wait.
        acc = unsafe {
            ring.full(s).wait(state.phase());
            ring.multiply(s, consumer, acc)
        };
        acc = wgmma::wait_for::<1, _>(acc);
        if step > 0 && leader {
            release(state.previous());
        }
        state.advance();
    }
    acc = wgmma::wait_for::<0, _>(acc);
    if steps > 0 && leader {
        release(state.previous());
    }
    acc
}
