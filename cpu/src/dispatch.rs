//! The dispatcher model every library call shares: a kernel kind offers
//! the plans it could run a call with, a model of the device prices each,
//! and the call takes the cheapest. Each kind says what its plan is, which
//! candidates it weighs and what its model charges:
//!
//! - the FFMA `sgemm` (`blas::plan`): square block tiles and
//!   k-splits, priced in SM cycles (occupancy, waves, the reduction);
//! - the tensor-core GEMM (`gemm::plan`): 128-row tile widths, short
//!   tiles and k-splits, priced in microseconds (waves of ring k-steps,
//!   the memory floor, the split fix-up).
//!
//! What both count the same way is here: [`waves`] of work on the SMs.

/// A kernel kind's plans for one call, priced by a model of the device.
pub trait Dispatch {
    /// What the dispatcher decides.
    type Plan: Copy;
    /// A plan's modelled cost; the lower wins.
    type Cost: Copy + PartialOrd;

    /// The plans weighed, in order of preference: an earlier plan wins a
    /// tie.
    fn candidates(&self) -> impl Iterator<Item = Self::Plan>;

    /// `plan`'s modelled cost.
    fn cost(&self, plan: &Self::Plan) -> Self::Cost;

    /// Whether `cost` is enough to displace `best` (by default, strictly
    /// lower).
    fn beats(cost: Self::Cost, best: Self::Cost) -> bool {
        cost < best
    }
}

/// The cheapest of `kind`'s candidates, the earliest among those that
/// cannot beat each other; `None` when it offers none.
pub fn cheapest<D: Dispatch>(kind: &D) -> Option<D::Plan> {
    let mut best: Option<(D::Cost, D::Plan)> = None;
    for plan in kind.candidates() {
        let cost = kind.cost(&plan);
        if best.is_none_or(|(b, _)| D::beats(cost, b)) {
            best = Some((cost, plan));
        }
    }
    best.map(|(_, plan)| plan)
}

/// The rounds `items` units of work take on `slots` places that run at
/// once (SMs, or SMs times resident blocks): the last one partly empty
/// unless the count divides.
pub fn waves(items: usize, slots: usize) -> usize {
    items.div_ceil(slots.max(1))
}
