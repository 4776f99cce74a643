//! Data races in global memory: two threads of one launch touch one word,
//! one of them writes, and neither a barrier (within a block) nor a
//! release and acquire (across blocks) orders them. compute-sanitizer's
//! racecheck looks at shared memory only.

use crate::dev::atomic::Ordering;
use crate::dev::{Out, block_idx_x, sync_threads, thread_idx_x};
use crate::kernel;

/// `a[i] = a[i + 1]` in place: thread `i + 1` overwrites what thread `i`
/// reads, within a block and across the boundary between blocks.
#[kernel(block = 64)]
pub fn shift_left_in_place(a: Out<u32>, _b: Out<u32>) {
    let i = block_idx_x() as usize * 64 + thread_idx_x() as usize;
    // SAFETY: i + 1 < 129 < WORDS. The race is the point.
    unsafe { a.store(i, a.load(i + 1)) };
}

/// Each block writes its own 64 words, passes a barrier, then reads the
/// next block's words: a barrier orders a block, not the grid.
#[kernel(block = 64)]
pub fn halo_from_the_next_block(a: Out<u32>, b: Out<u32>) {
    let (block, t) = (block_idx_x() as usize, thread_idx_x() as usize);
    // SAFETY: indices below 128 in both buffers. The race is the point.
    unsafe {
        a.store(block * 64 + t, 2 * t as u32);
        sync_threads();
        b.store(block * 64 + t, a.load((block + 1) % 2 * 64 + t));
    }
}

/// Every thread increments one counter with a plain load and store.
#[kernel(block = 64)]
pub fn counter_without_atomics(_a: Out<u32>, b: Out<u32>) {
    // SAFETY: one word. The race is the point.
    unsafe { b.store(0, b.load(0) + 1) };
}

/// The one-pass reduction's ticket without its fences: a relaxed atomic
/// neither publishes the block's partial nor acquires the others', so the
/// last block's reads of the partials race with their writes.
#[kernel(block = 32)]
pub fn ticket_without_fence(a: Out<u32>, b: Out<u32>) {
    let block = block_idx_x() as usize;
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: b[0] is the ticket, b[1..=2] the partials. The race is the point.
    unsafe {
        b.store(1 + block, 10 + block as u32);
        if b.atomic_add(0, 1, Ordering::Relaxed) == 1 {
            a.store(0, b.load(1) + b.load(2));
        }
    }
}

/// Message passing with a plain flag: block 0 writes data then the flag,
/// block 1 reads the flag then the data. Nothing orders the two blocks.
#[kernel(block = 32)]
pub fn flag_without_atomics(a: Out<u32>, b: Out<u32>) {
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: indices 0 and 100. The race is the point.
    unsafe {
        if block_idx_x() == 0 {
            a.store(100, 7);
            b.store(0, 1);
        } else if b.load(0) == 1 {
            a.store(0, a.load(100));
        }
    }
}

/// Thread `t` writes `b[t]`, then reads its neighbour's word with no
/// barrier: a race within one block, in global memory.
#[kernel(block = 64)]
pub fn neighbour_read_in_global(a: Out<u32>, b: Out<u32>) {
    let (block, t) = (block_idx_x() as usize, thread_idx_x() as usize);
    // SAFETY: indices below 128. The race is the point.
    unsafe {
        b.store(block * 64 + t, t as u32);
        a.store(block * 64 + t, b.load(block * 64 + (t + 1) % 64));
    }
}

/// Threads increment a counter atomically while thread 0 also reads it
/// with a plain load: an atomic and a plain access race.
#[kernel(block = 64)]
pub fn plain_read_of_an_atomic_counter(a: Out<u32>, b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: b[0] is the counter. The race is the point.
    unsafe {
        b.atomic_add(0, 1, Ordering::Relaxed);
        if t == 0 {
            a.store(block_idx_x() as usize, b.load(0));
        }
    }
}
