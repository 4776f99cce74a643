//! Reads of shared memory that no thread of the block wrote in this
//! launch: shared memory starts with whatever the last block on the SM
//! left there. Every read here is in bounds, so memcheck sees nothing.

use crate::dev::{Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};
use crate::kernel;

/// Half the block fills half a tile; every thread reads the mirror word.
#[kernel(block = 64, shared = 64 * 4)]
pub fn half_written_tile(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words; one output per thread. The unwritten half is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        if t < 32 {
            s.set(t, t as u32);
        }
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, s.get(63 - t));
    }
}

/// A block reduction over `n = 100` elements whose threads past `n` skip
/// their store instead of storing zero; the tree then reads their words.
#[kernel(block = 64, shared = 64 * 4)]
pub fn reduction_without_zero_fill(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    let i = block_idx_x() as usize * 64 + t;
    // SAFETY: 64 words, indices below 64; i < 100 when loaded.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        if i < 100 {
            s.set(t, a.load(i));
        }
        sync_threads();
        let mut stride = 32;
        while stride > 0 {
            if t < stride {
                s.set(t, s.get(t) + s.get(t + stride));
            }
            sync_threads();
            stride /= 2;
        }
        if t == 0 {
            a.store(1000 + block_idx_x() as usize, s.get(0));
        }
    }
}

/// Thread `t` writes `s[t]` and reads `s[t + 1]` after the barrier: the
/// array has 65 words, and nobody writes the last one.
#[kernel(block = 64, shared = 65 * 4)]
pub fn off_by_one_after_the_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 65 words, t + 1 <= 64; one output per thread.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, t as u32);
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, s.get(t + 1));
    }
}
