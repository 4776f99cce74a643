//! Thread-block clusters (sm_90): the blocks of a cluster run at the same
//! time on one GPC, and each can reach the others' shared memory
//! ("distributed shared memory"): arrive on their mbarriers, and receive
//! one TMA copy in all of them at once (multicast, `tma` module).
//!
//! A kernel states its cluster shape in its declaration (`#[kernel(cluster
//! = [2, 1, 1])]`), which becomes `.reqnctapercluster` in its PTX, so an
//! ordinary launch makes the clusters; the grid must be a whole number of
//! them. A block's rank in its cluster (`%cluster_ctarank`, `0..size`)
//! names it to the others.
//!
//! Before a block uses a peer's mbarriers, the peer must have initialized
//! them: initialize, `fence_init` (its `.release.cluster`), then
//! [`cluster_sync`]. And a block must not exit while a peer may still
//! touch its shared memory: a final [`cluster_sync`].
//!
//! PTX ISA: "Cluster of Cooperative Thread Arrays", `barrier.cluster`,
//! `mapa`, `mbarrier.arrive` on `.shared::cluster`. On the host the
//! emulator runs a cluster's blocks together; an arrival on a block that
//! has exited, a rank outside the cluster, or threads at different
//! cluster barriers are errors.

use super::barrier::Mbarrier;

/// A `u32` special register of the cluster, by its PTX name; on the host,
/// `$host` of the emulator's `(rank, shape)`.
macro_rules! cluster_register {
    ($(#[$doc:meta])* $name:ident, $reg:literal, $host:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let r: u32;
                // SAFETY: reading a special register has no preconditions.
                unsafe { core::arch::asm!(concat!("mov.u32 {r}, ", $reg, ";"), r = out(reg32) r, options(nostack, nomem, pure)) };
                r
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                let host: fn((u32, [u32; 3])) -> u32 = $host;
                host(emu::ops::cluster())
            }
        }
    };
}

cluster_register!(
    /// This block's rank in its cluster (`%cluster_ctarank`).
    cluster_rank, "%cluster_ctarank", |(rank, _)| rank
);
cluster_register!(
    /// Blocks in this block's cluster (`%cluster_nctarank`).
    cluster_size, "%cluster_nctarank", |(_, shape)| shape.iter().product()
);

/// The cluster's barrier: every thread of every block of the cluster
/// arrives (`barrier.cluster.arrive.release`) and waits for all the others
/// (`barrier.cluster.wait.acquire`); what any of them wrote before is then
/// visible to all, mbarrier initializations included.
///
/// Every thread of the cluster calls it, converged in its warp (`.aligned`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cluster_sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier; every thread of the cluster reaches it (the
    // function's contract, checked by the emulator).
    unsafe {
        core::arch::asm!(
            "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;",
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::cluster_barrier(core::panic::Location::caller());
}

impl Mbarrier {
    /// Arrives on this mbarrier's counterpart in block `rank` of the
    /// cluster, the mbarrier at the same offset of that block's shared
    /// memory (`mapa` gives its address in the cluster's window):
    /// `mbarrier.arrive.shared::cluster`, with the default `.release.cta`
    /// semantics. That is enough to say "done reading my own shared
    /// memory" (a stage whose `wgmma` reads have completed) to a peer that
    /// will then overwrite it; a `.release.cluster` arrival would also
    /// order this thread's earlier writes for the whole cluster, at the
    /// price of a cluster-wide fence on every arrival.
    ///
    /// # Safety
    /// Block `rank` exists, has initialized its mbarrier (a cluster barrier
    /// since), has not exited, and its phase expects this arrival.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn arrive_in(self, rank: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b32 remote; mapa.shared::cluster.u32 remote, {a}, {rank}; \
                 mbarrier.arrive.shared::cluster.b64 _, [remote]; }}",
                a = in(reg32) crate::shared::window_address(self.ptr()), rank = in(reg32) rank,
                options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::mbarrier_arrive_peer(self.ptr() as usize, rank, core::panic::Location::caller());
    }
}
