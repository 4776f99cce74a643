//! The device-support layer: the small vocabulary every kernel is written in.
//!
//! - [`thread`]: thread, block and grid indices, [`thread::sync_threads`],
//!   and [`thread::index`], a thread's unique index in the launch;
//! - [`slice`](mod@slice): checked global memory ([`Slice`],
//!   [`DisjointSlice`]), the parameters of kernels that need no `unsafe`;
//! - [`mem`]: unchecked global-memory pointers ([`In`], [`Out`]), with
//!   scalar and 8- and 16-byte vector accesses;
//! - [`shared`]: typed views over the block's launch-sized shared memory;
//! - [`warp`]: warp shuffles and `sync_warp`;
//! - [`atomic`]: atomics and fences, for blocks that hand each other data;
//! - [`math`]: floating-point operations with an explicit rounding;
//! - [`copy`]: asynchronous global-to-shared copies (`cp.async`);
//! - [`mma`] and [`matrix`]: warp-level tensor cores (`mma.sync`) and the
//!   `ldmatrix`/`stmatrix` that feed them;
//! - [`barrier`], [`tma`], [`wgmma`], [`registers`], [`cluster`]: Hopper's
//!   mbarriers, tensor-memory copies, warpgroup MMA, `setmaxnreg` and
//!   thread-block clusters;
//! - [`pipeline`], [`roles`], [`schedule`], [`epilogue`]: the building
//!   blocks of a Hopper kernel: a ring's stage and phase, the producer and
//!   consumer warpgroups, the tile schedulers of persistent blocks, what
//!   the consumers do with each unit's results;
//! - [`grid`]: programmatic dependent launch (a kernel that starts while
//!   the one ahead of it finishes);
//! - `check` (hidden): the host build's calls into the emulator before each
//!   access.
//!
//! What each instruction computes (fragment lane maps, descriptors,
//! swizzles) is defined once, in the `gpu-isa` crate, which this layer and
//! the emulator both use.
//!
//! On `nvptx64` each function is one or two PTX instructions. On the host
//! each calls the emulator (the `emu` crate), which checks it and runs it.
//!
//! # Safety model
//!
//! What the types can promise, they do: a [`DisjointSlice`] hands each
//! thread its own element (by a [`thread::ThreadIndex`], unique in the 1-D
//! launches such a kernel is limited to), a [`Slice`] checks its bounds, so
//! element-wise kernels are safe Rust and their typed launchers safe
//! functions. What
//! they cannot is `unsafe`, with the contract in the function's `# Safety`
//! section: unchecked loads and stores through [`In`]/[`Out`] and shared
//! memory (the index is in bounds, no other thread writes the word between
//! two barriers), and warp shuffles (every lane of the mask takes part).
//! Each `unsafe` block in a kernel says why its contract holds. A kernel
//! with any `unsafe` gets an `unsafe` typed launcher, whose caller
//! promises the buffer lengths the kernel relies on.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

// The host build calls the emulator, which uses std.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod atomic;
pub mod barrier;
#[doc(hidden)]
pub mod check;
pub mod cluster;
pub mod copy;
pub mod epilogue;
pub mod grid;
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub mod library;
pub mod math;
pub mod matrix;
pub mod mem;
pub mod mma;
pub mod pipeline;
pub mod registers;
pub mod roles;
pub mod schedule;
pub mod shared;
pub mod slice;
pub mod thread;
pub mod tma;
pub mod warp;
pub mod wgmma;

pub use gpu_isa::fp8;
pub use gpu_isa::{Element, Input, Tf32};
pub use mem::{In, Out};
pub use shared::{SharedArray, SharedTile};
pub use slice::{DisjointSlice, Slice, SliceParam};
#[allow(unused_imports)]
pub use thread::*;
