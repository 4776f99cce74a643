//! A CPU emulator of the CUDA execution model.
//!
//! Kernels written against the device layer of the `gpu` crate run here
//! unchanged: on the host, that layer's thread indices, barriers, shuffles,
//! `cp.async` copies and every shared- and global-memory access call the
//! hooks in [`device`]. [`launch`] runs a grid.
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
//! - Shared memory is a per-block buffer of the launch's size, filled with a
//!   NaN pattern: an access outside it, or a global access outside the
//!   buffers passed to the launch, is an error naming the kernel, block and
//!   thread.
//!
//! What it measures (see [`Analysis`]): shared-memory races between
//! barriers, bank conflicts per warp request, and global sectors per warp
//! request.
//!
//! What it does not model: timing, caches, the memory ordering of global
//! memory between blocks (blocks run one at a time, each to completion, so
//! inter-block communication such as the one-pass reduction's ticket always
//! sees earlier blocks finished), and warp-synchronous code without
//! `__syncwarp` (the lanes of a warp do not run in lock step here).
//!
//! This crate knows nothing of kernels' parameters or of the `gpu` crate:
//! the caller hands [`launch`] the body one thread runs and the buffers the
//! kernel may touch.

mod analysis;
mod runtime;

pub use analysis::{AccessStats, Analysis};
pub use runtime::{EmuError, Launch, launch};

/// What the device layer's host back end calls: one function per device
/// operation, each acting on the emulated thread that is running.
pub mod device {
    pub use crate::runtime::{
        ShflOp, barrier, copy_async, copy_commit, copy_wait, global_access, index, shared_access,
        shared_base, shuffle,
    };

    /// `a * b + c` with one rounding (std's `f32::mul_add`), as `fma.rn.f32`.
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}
