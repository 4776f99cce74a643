//! Data races in shared memory: two threads of a block touch one word
//! between the same two barriers, and one of them writes.

use crate::dev::{Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};
use crate::kernel;

/// Thread `t` writes `s[t]`, then reads `s[t + 1]` with no barrier between:
/// thread `t + 1`'s write races with that read (GPUVerify's neighbour).
#[kernel(block = 64, shared = 64 * 4)]
pub fn neighbour_read(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words, t < 64; one output per thread. The race is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, t as u32);
        a.store(block_idx_x() as usize * 64 + t, s.get((t + 1) % 64));
    }
}

/// A tree reduction with the barrier inside its loop removed (GPURepair's
/// most common repair): step `stride` reads what step `2 stride` wrote.
#[kernel(block = 64, shared = 64 * 4)]
pub fn tree_without_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words, indices below 64; the missing barrier is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, a.load(t));
        sync_threads();
        let mut stride = 32;
        while stride > 0 {
            if t < stride {
                s.set(t, s.get(t) + s.get(t + stride));
            }
            stride /= 2;
        }
        if t == 0 {
            a.store(block_idx_x() as usize, s.get(0));
        }
    }
}

/// A loop over tiles with its trailing barrier removed: the next tile's
/// store overwrites words other threads still read from this one.
#[kernel(block = 64, shared = 64 * 4)]
pub fn missing_trailing_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    let mut acc = 0u32;
    // SAFETY: 64 words; tiles 0 and 1 lie in `a`. The race is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        for tile in 0..2 {
            s.set(t, a.load(tile * 64 + t));
            sync_threads();
            acc = acc.wrapping_add(s.get(63 - t));
        }
        a.store(256 + block_idx_x() as usize * 64 + t, acc);
    }
}

/// A warp-synchronous inclusive scan in shared memory without
/// `sync_warp` between its steps: correct only if a warp's lanes ran in
/// lock step, which CUDA has not promised since Volta.
#[kernel(block = 32, shared = 32 * 4)]
pub fn warp_scan_without_sync_warp(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 32 words, indices below 32. The race is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, 1);
        let mut d = 1;
        while d < 32 {
            let v = if t >= d { s.get(t - d) } else { 0 };
            s.set(t, s.get(t) + v);
            d *= 2;
        }
        a.store(block_idx_x() as usize * 32 + t, s.get(t));
    }
}

/// Every thread writes its own index to one word: a write-write race
/// whose winner decides what everyone reads after the barrier.
#[kernel(block = 64, shared = 4)]
pub fn every_thread_writes_one_word(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: one word; one output per thread. The race is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(0, t as u32);
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, s.get(0));
    }
}

/// A histogram in shared memory with plain `+=`: two threads that read a
/// bin before either writes it lose a count.
#[kernel(block = 64, shared = 8 * 4)]
pub fn histogram_without_atomics(a: Out<u32>, b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 8 bins, indices below 8; 8 outputs per block. The race is the point.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        if t < 8 {
            s.set(t, 0);
        }
        sync_threads();
        let bin = a.load(t) as usize % 8;
        s.set(bin, s.get(bin) + 1);
        sync_threads();
        if t < 8 {
            b.store(block_idx_x() as usize * 8 + t, s.get(t));
        }
    }
}
