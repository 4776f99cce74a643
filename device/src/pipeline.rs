//! Where a ring of buffers stands: the stage the next use takes and the
//! phase of its mbarriers to wait for.
//!
//! A ring of `S` stages in shared memory, each with a "full" mbarrier (the
//! producer's copies have landed) and an "empty" one (its readers are done
//! with it). The `i`-th use takes stage `i mod S`, in round `r = i / S`.
//! An mbarrier completes one phase per round and a waiter names the phase
//! by its parity, so:
//!
//! - a reader waits on "full" with parity `r mod 2` ([`PipelineState::phase`]);
//! - the producer, before refilling the stage for round `r >= 1`, waits on
//!   "empty" with the last round's parity, `(r - 1) mod 2`
//!   ([`PipelineState::refill_phase`]).
//!
//! Every role counts the same uses in the same order, so all of them agree
//! on a stage's round without talking. The stage and phase are computed in
//! 32 bits (a block uses a ring fewer than 2^32 times): the consumers
//! compute them beside their accumulators, where a 64-bit division by a
//! stage count known only at run time is a chain of wide multiplies.

/// A ring of `stages` buffers, at its `count`-th use.
#[derive(Clone, Copy)]
pub struct PipelineState {
    count: usize,
    stages: usize,
}

impl PipelineState {
    /// The first use of a ring of `stages` stages (a constant where the
    /// kernel knows it, which the divisions then fold).
    #[inline(always)]
    pub fn new(stages: usize) -> PipelineState {
        PipelineState { count: 0, stages }
    }

    /// The same ring at use `count`.
    #[inline(always)]
    pub fn at(self, count: usize) -> PipelineState {
        PipelineState { count, ..self }
    }

    /// Uses so far.
    #[inline(always)]
    pub fn count(self) -> usize {
        self.count
    }

    /// The stage this use takes.
    #[inline(always)]
    pub fn stage(self) -> usize {
        (self.count as u32 % self.stages as u32) as usize
    }

    /// The parity of the stage's "full" phase this use waits for.
    #[inline(always)]
    pub fn phase(self) -> u32 {
        (self.count as u32 / self.stages as u32) % 2
    }

    /// The parity of the stage's "empty" phase a refill for this use waits
    /// for (its readers' release of the last round), or `None` in the
    /// first round, when the stage has never been filled.
    #[inline(always)]
    pub fn refill_phase(self) -> Option<u32> {
        (self.count >= self.stages).then(|| self.phase() ^ 1)
    }

    /// Moves to the next use.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.count += 1;
    }

    /// The use before this one (wrapping before the first, whose stage
    /// nobody then waits on).
    #[inline(always)]
    pub fn previous(self) -> PipelineState {
        PipelineState { count: self.count.wrapping_sub(1), ..self }
    }
}
