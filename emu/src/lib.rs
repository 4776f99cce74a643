//! A CPU emulator of the CUDA execution model, and a sanitizer.
//!
//! Kernels written against the device layer of the `gpu` crate run here
//! unchanged: on the host, that layer's thread indices, barriers, shuffles,
//! `cp.async` copies, atomics, fences and every shared- and global-memory
//! access call the hooks in `device`. [`launch`] runs a grid.
//!
//! A launch runs its blocks (or its thread-block clusters, the blocks of
//! a cluster together) on a pool of OS threads, one per core
//! (`KERNEL_LAB_EMU_THREADS` sets how many), each block with its own
//! shared memory. Within a cluster every CUDA thread is a stackful
//! coroutine on one OS thread; the scheduler resumes each until it
//! reaches a barrier, a `sync_warp`, a shuffle, an mbarrier wait or its
//! end, in a deterministic order. A launch whose parallel run finds a
//! fault runs again cluster after cluster, from its inputs as they were,
//! so that what it reports is the same on every run ([`launch`]). Warp
//! collectives, `cp.async`, TMA copies, `mma.sync` and `wgmma` follow the
//! `gpu-isa` crate's lane maps, descriptors and swizzles, products in
//! `f64`, rounded once to `f32`. `docs/emulator.md` says what each
//! mechanism does and which misuse of it is an error (divergent barriers,
//! deadlocks, masks naming exited lanes, copies in flight at exit).
//!
//! What it checks on every access, and reports with the kernel, block,
//! thread(s), word and the `file:line` of each access involved:
//!
//! - bounds: shared memory against the launch's size, global memory
//!   against the buffers passed to the launch (the copy engine's accesses
//!   through a tensor map against the live allocations, [`allocated`]);
//! - races, in shared *and* global memory, within a block and across
//!   blocks, per byte, with happens-before from barriers, `sync_warp`, and
//!   fences with atomics ([`order`] says what is modelled);
//! - reads of shared-memory words no thread of the block has written
//!   (a kernel opts out per read, where it means to read garbage).
//!
//! What it measures (see [`Analysis`]): bank conflicts per warp request,
//! and global sectors per warp request.
//!
//! What it does not model: timing, caches, and lock-step warps (lanes run
//! one at a time, so code that relies on implicit warp synchrony shows up
//! as a race: CUDA has not promised it since Volta). Its known gaps, each
//! a missed report rather than a false one, are listed in
//! `docs/emulator.md`.
//!
//! This crate knows nothing of kernels' parameters or of the `gpu` crate:
//! the caller hands [`launch`] the body one thread runs and the buffers the
//! kernel may touch.

#![feature(thread_local)]

mod abi;
mod allocations;
mod analysis;
mod async_hooks;
mod context;
mod hooks;
mod memory;
pub mod order;
mod proxy;
mod report;
mod resolve;
mod scheduler;
mod tensor_core;
pub mod tma;

pub use abi::{Buffer, LaunchSpec};
pub use allocations::{allocated, freed};
pub use analysis::{AccessStats, Analysis};
pub use report::{Actor, EmuError, Race};
pub use scheduler::{launch, set_threads, threads};

/// What the device layer's host back end calls: one function per device
/// operation, each acting on the emulated thread that is running.
pub mod ops {
    pub use crate::abi::{Op, ShflOp, Site, Space};
    pub use crate::async_hooks::{
        async_read, bulk_commit, bulk_wait, copy_async, copy_commit, copy_wait, mbarrier_arrive,
        mbarrier_arrive_peer, mbarrier_init, mbarrier_wait, tma_copy, tma_copy_multicast, tma_read,
        tma_store, wgmma_commit, wgmma_read, wgmma_wait,
    };
    pub use crate::hooks::{
        access, active_mask, barrier, cluster, cluster_barrier, fence, grid_dependency_wait, index,
        shared_base, shared_len, shuffle, warp_sync,
    };
    pub use crate::tensor_core::{WgmmaA, ldmatrix_x4, mma_sync, stmatrix_x4, wgmma};
    pub use std::sync::atomic::Ordering;

    /// `a * b + c` with one rounding (std's `f32::mul_add`), as `fma.rn.f32`.
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }

    /// `tanh.approx.f32`, as the host's correctly rounded `tanh` (the
    /// device's lies within the instruction's documented error of it).
    pub fn tanh(x: f32) -> f32 {
        x.tanh()
    }

    /// `ex2.approx.ftz.f32`, as the host's `exp2` with the instruction's
    /// flush to zero of subnormal inputs and results (the device's result
    /// lies within 2 ulp of the exact power).
    pub fn ex2(x: f32) -> f32 {
        let x = if x.is_subnormal() { 0.0 } else { x };
        let r = x.exp2();
        if r.is_subnormal() { 0.0 } else { r }
    }

    /// `lg2.approx.ftz.f32`, as the host's `log2` (subnormal inputs flushed
    /// to zero, whose logarithm is `-inf`).
    pub fn lg2(x: f32) -> f32 {
        if x.is_subnormal() { f32::NEG_INFINITY } else { x.log2() }
    }

    /// `cvt.rn.bf16.f32`: to nearest, ties to even (the `half` crate's
    /// conversion), as bits.
    pub fn bf16_bits(x: f32) -> u16 {
        half::bf16::from_f32(x).to_bits()
    }

    /// `cvt.rn.f16.f32`, likewise.
    pub fn f16_bits(x: f32) -> u16 {
        half::f16::from_f32(x).to_bits()
    }

    /// `cvt.f32.f16`: exact.
    pub fn f16_to_f32(bits: u16) -> f32 {
        half::f16::from_bits(bits).to_f32()
    }
}
