//! Epilogues: what a consumer does with its results for each unit of work
//! it finishes.
//!
//! A persistent Hopper kernel is assembled from three parts that each
//! role walks together: the ring of stages ([`crate::pipeline`]), the
//! schedule of work ([`crate::schedule::TileScheduler`]) and the epilogue.
//! The consumers' loop is the same whatever the stores are: for each unit
//! of work, its products, then [`Epilogue::store`] of the accumulators;
//! after the block's last, [`Epilogue::finish`]. A kernel with another way
//! to store (through shared memory and TMA, partial sums and tickets, a
//! split tile's state for a merge) is another type, not another branch of
//! the loop.

/// What a consumer warpgroup does with its results of each unit of work
/// (`Work`, a scheduler's), and once after the block's last. Each thread
/// of a consumer holds its own, made knowing its warpgroup and its place
/// in it.
pub trait Epilogue<Work> {
    /// The consumer's results for one unit: its accumulators, and
    /// whatever the kernel keeps beside them.
    type Results;

    /// The consumer's results of `work`.
    ///
    /// # Safety
    /// The warpgroup runs it converged, with the unit's results; the
    /// buffers hold what the launch's contract says.
    unsafe fn store(&mut self, results: &Self::Results, work: Work);

    /// After the block's last unit: whatever must complete before the
    /// block exits.
    fn finish(self);
}
