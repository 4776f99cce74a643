//! The CPU emulator of the CUDA execution model (host builds only).
//!
//! The same kernel source runs here unchanged: the device-support layer's
//! host back end ([`crate::dev`]) calls into this module for indices,
//! barriers, shuffles and every shared- and global-memory access.
//!
//! - A launch runs its blocks one after another. In a block every CUDA
//!   thread is a stackful coroutine on one OS thread; the scheduler resumes
//!   each until it reaches a barrier, a shuffle or its end. The order is
//!   deterministic.
//! - `sync_threads` releases when every thread that has not exited has
//!   reached it (CUDA's rule on Volta and later). Threads waiting at
//!   different `sync_threads` call sites are an error (divergent barrier),
//!   and so is a state where nobody can move (a deadlock): both are
//!   reported at once, never a hang.
//! - Shuffles exchange values among the lanes of a warp named in the mask;
//!   a mask lane that has exited is an error.
//! - `cp.async` copies read global memory when issued and land in shared
//!   memory at the `wait_group` that covers them; a thread that exits with
//!   copies in flight is an error.
//! - Shared memory is a per-block buffer of the launch's size: an access
//!   outside it, or a global access outside the buffers passed to the
//!   launch, is an error naming the kernel, block and thread.
//!
//! What it measures (see [`Analysis`]): shared-memory races between
//! barriers, bank conflicts per warp request, and global sectors per warp
//! request.
//!
//! What it does not model: timing, caches, the memory ordering of global
//! memory between blocks (blocks run one at a time, each to completion, so
//! inter-block communication such as kernel 6's ticket always sees earlier
//! blocks finished), and warp-synchronous code without `__syncwarp` (the
//! lanes of a warp do not run in lock step here).

mod analysis;
mod runtime;

pub use analysis::{AccessStats, Analysis};
pub use runtime::{Arg, EmuError, FromArg, HostKernel, LaunchSpec, launch};

// Hooks the device-support layer calls.
pub(crate) use runtime::{
    ShflOp, barrier, buffer_address, copy_async, copy_commit, copy_wait, global_access, index, shared_access,
    shared_base, shuffle,
};

/// `a * b + c` with one rounding (std's `f32::mul_add`).
pub(crate) fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// The kernels the host build registered (every `kernel!`), by name.
pub fn kernel(name: &str) -> Option<&'static HostKernel> {
    inventory::iter::<HostKernel>.into_iter().find(|k| k.name == name)
}

/// Every registered kernel.
pub fn kernels() -> impl Iterator<Item = &'static HostKernel> {
    inventory::iter::<HostKernel>.into_iter()
}

#[doc(hidden)]
pub use inventory::submit as __submit;
