//! Correct kernels, some of them tricky: each must pass every check with
//! nothing reported.

use crate::dev::atomic::{Ordering, fence};
use crate::dev::warp::{FULL_MASK, shfl_xor_f32, sync_warp};
use crate::dev::{Out, SharedArray, block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use crate::kernel;

/// A tree reduction with its barriers: the reference the racy and
/// uninitialized variants break.
#[kernel(block = 64, shared = 64 * 4)]
pub fn tree_reduction(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    let block = block_idx_x() as usize;
    // SAFETY: 64 words, indices below 64; each step's words are written
    // before a barrier and read after it.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, a.load(block * 64 + t));
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
            a.store(1000 + block, s.get(0));
        }
    }
}

/// A barrier under a condition that is the same for the whole block
/// (`blockIdx.x == 0`): allowed, since every thread of a block agrees.
#[kernel(block = 64, shared = 64 * 4)]
pub fn barrier_under_a_block_uniform_condition(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    if block_idx_x() == 0 {
        // SAFETY: 64 words, written before the barrier, read after it.
        unsafe {
            let s = SharedArray::<u32>::launch_sized();
            s.set(t, t as u32);
            sync_threads();
            a.store(t, s.get(63 - t));
        }
    }
}

/// The warp scan of [`super::race_shared::warp_scan_without_sync_warp()`]
/// done right: each step reads, `sync_warp`s, writes, `sync_warp`s.
#[kernel(block = 32, shared = 32 * 4)]
pub fn warp_scan_with_sync_warp(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 32 words, indices below 32; every read and write of a step
    // is separated from the others' by a full-warp sync_warp.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(t, 1);
        sync_warp(FULL_MASK);
        let mut d = 1;
        while d < 32 {
            let v = if t >= d { s.get(t - d) } else { 0 };
            sync_warp(FULL_MASK);
            s.set(t, s.get(t) + v);
            sync_warp(FULL_MASK);
            d *= 2;
        }
        a.store(block_idx_x() as usize * 32 + t, s.get(t));
    }
}

/// The one-pass reduction's ticket: each block's thread 0 writes its
/// partial, fences, takes a ticket; the block that draws the last one
/// fences again and reads every partial. Release and acquire order them.
#[kernel(block = 32)]
pub fn ticket_with_fences(a: Out<u32>, b: Out<u32>) {
    let block = block_idx_x() as usize;
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: b[0] is the ticket, b[1..=2] the partials; the fences order
    // each partial before the ticket that publishes it.
    unsafe {
        b.store(1 + block, 10 + block as u32);
        fence();
        if b.atomic_add(0, 1, Ordering::Relaxed) == grid_dim_x() - 1 {
            fence();
            a.store(0, b.load(1) + b.load(2));
            b.store(0, 0);
        }
    }
}

/// A histogram with shared-memory atomics, merged into global memory with
/// global atomics.
#[kernel(block = 64, shared = 8 * 4)]
pub fn atomic_histogram(a: Out<u32>, b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 8 bins; bins zeroed before the first barrier, counted
    // atomically, read after the second.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        if t < 8 {
            s.set(t, 0);
        }
        sync_threads();
        let bin = a.load(block_idx_x() as usize * 64 + t) as usize % 8;
        s.atomic_add(bin, 1, Ordering::Relaxed);
        sync_threads();
        if t < 8 {
            b.atomic_add(t, s.get(t), Ordering::Relaxed);
        }
    }
}

/// Tiles through two alternating buffers with *one* barrier per tile: the
/// buffer a step writes was last read before the previous step's barrier.
#[kernel(block = 64, shared = 2 * 64 * 4)]
pub fn double_buffer_with_one_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    let mut acc = 0u32;
    // SAFETY: 128 words; tile words below 256 in `a`.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        for tile in 0..4 {
            let buffer = tile % 2 * 64;
            s.set(buffer + t, a.load(tile * 64 + t));
            sync_threads();
            acc = acc.wrapping_add(s.get(buffer + 63 - t));
        }
        a.store(512 + block_idx_x() as usize * 64 + t, acc);
    }
}

/// Half the block exits after the last barrier: nobody is left waiting.
#[kernel(block = 64, shared = 64 * 4)]
pub fn exit_after_the_last_barrier(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words, written before the barrier.
    let s = unsafe { SharedArray::<u32>::launch_sized() };
    // SAFETY: t < 64.
    unsafe { s.set(t, t as u32) };
    sync_threads();
    if t >= 32 {
        return;
    }
    // SAFETY: written before the barrier; one output per thread.
    unsafe { a.store(block_idx_x() as usize * 64 + t, s.get(63 - t)) };
}

/// A warp sum by butterfly shuffles: registers only, nothing to race on.
#[kernel(block = 64)]
pub fn shuffle_reduction(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    let mut v = t as f32;
    let mut m = 16;
    while m > 0 {
        // SAFETY: every lane of both full warps takes every step.
        v += unsafe { shfl_xor_f32(FULL_MASK, v, m) };
        m /= 2;
    }
    if t.is_multiple_of(32) {
        // SAFETY: one output per warp.
        unsafe { a.store(2000 + block_idx_x() as usize * 2 + t / 32, v as u32) };
    }
}

/// Doubles `a` in place, grid-stride: each word has one owner.
#[kernel(block = 64)]
pub fn grid_stride_in_place(a: Out<u32>, _b: Out<u32>) {
    let mut i = block_idx_x() as usize * 64 + thread_idx_x() as usize;
    while i < 1024 {
        // SAFETY: i < 1024 < WORDS, and only this thread touches a[i].
        unsafe { a.store(i, a.load(i) * 2) };
        i += grid_dim_x() as usize * 64;
    }
}

/// Message passing done right: block 0 writes the data, then the flag with
/// a release store; block 1 reads the flag with an acquire load and, if
/// set, the data.
#[kernel(block = 32)]
pub fn flag_with_release_and_acquire(a: Out<u32>, b: Out<u32>) {
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: indices 0 and 100.
    unsafe {
        if block_idx_x() == 0 {
            a.store(100, 7);
            b.atomic_store(0, 1, Ordering::Release);
        } else if b.atomic_load(0, Ordering::Acquire) == 1 {
            a.store(0, a.load(100));
        }
    }
}

/// Every thread of both blocks reads one word: reads never race.
#[kernel(block = 64)]
pub fn everyone_reads_one_word(a: Out<u32>, b: Out<u32>) {
    let i = block_idx_x() as usize * 64 + thread_idx_x() as usize;
    // SAFETY: i < 128.
    unsafe { b.store(i, a.load(7)) };
}

/// Threads write neighbouring 16-bit halves of shared words (two threads
/// per 4-byte word): different bytes, no race.
#[kernel(block = 64, shared = 64 * 2)]
pub fn neighbouring_halfwords(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 halfwords, one per thread, read back after the barrier.
    unsafe {
        let s = SharedArray::<u16>::launch_sized();
        s.set(t, t as u16);
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, u32::from(s.get(63 - t)));
    }
}
