//! Divergent barriers: a `sync_threads` that some threads of the block
//! reach while others do not (they exit, or wait at another one), and
//! `sync_warp`s whose masks name lanes that never arrive. The CUDA
//! programming guide: a barrier in conditional code must see the
//! condition evaluate the same across the block.

use crate::dev::warp::{FULL_MASK, sync_warp};
use crate::dev::{Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};
use crate::kernel;

/// compute-sanitizer synccheck's sample, in Rust: in the last iteration
/// threads 48..63 skip the barrier that threads 0..47 wait at, leave the
/// loop and exit.
#[kernel(block = 64, shared = 64 * 4)]
pub fn skipped_in_the_last_iteration(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words, one per thread, read back by the same thread.
    let s = unsafe { SharedArray::<u32>::launch_sized() };
    for i in 0..4 {
        // SAFETY: as above.
        unsafe { s.set(t, i) };
        if i < 3 || t < 48 {
            sync_threads();
        }
    }
    // SAFETY: one output per thread; its own word.
    unsafe { a.store(block_idx_x() as usize * 64 + t, s.get(t)) };
}

/// GPUVerify's barrier under `tid == 3`: one thread waits, the rest exit.
#[kernel(block = 64)]
pub fn barrier_for_thread_three(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    if t == 3 {
        sync_threads();
        // SAFETY: one word per block.
        unsafe { a.store(block_idx_x() as usize, 3) };
    }
}

/// The two halves of the block wait at two different barriers.
#[kernel(block = 64)]
#[allow(clippy::if_same_then_else)]
pub fn a_barrier_in_each_branch(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    if t < 32 {
        sync_threads();
    } else {
        sync_threads();
    }
    // SAFETY: one output per thread.
    unsafe { a.store(block_idx_x() as usize * 64 + t, 1) };
}

/// Threads past the first 16 return before the barrier the first 16 use
/// to share their words.
#[kernel(block = 64, shared = 16 * 4)]
pub fn early_return_before_the_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    if t >= 16 {
        return;
    }
    // SAFETY: 16 words, t < 16; one output per thread.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, t as u32);
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, s.get(15 - t));
    }
}

/// Lane 31 exits; the others call `sync_warp` with a mask naming it.
#[kernel(block = 32)]
pub fn sync_warp_names_an_exited_lane(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    if t == 31 {
        return;
    }
    sync_warp(FULL_MASK);
    // SAFETY: one output per thread.
    unsafe { a.store(block_idx_x() as usize * 32 + t, 1) };
}

/// Every lane calls `sync_warp` with the mask of lanes 16..31: a mask must
/// name the lane that calls it, and lanes 0..15 are not in it.
#[kernel(block = 32)]
pub fn sync_warp_without_the_caller(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    sync_warp(0xffff_0000);
    // SAFETY: one output per thread.
    unsafe { a.store(block_idx_x() as usize * 32 + t, 1) };
}
