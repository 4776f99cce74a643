//! Benign races: threads write the *same value* to one word with nothing
//! ordering them. The result is the same whoever wins, so the emulator
//! does not report them (GPUVerify's default policy); writes of different
//! values are races ([`super::race_shared::every_thread_writes_one_word()`]).

use crate::dev::{Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};
use crate::kernel;

/// Every thread of both blocks sets one global flag to 1.
#[kernel(block = 64)]
pub fn same_flag_from_every_thread(_a: Out<u32>, b: Out<u32>) {
    // SAFETY: one word.
    unsafe { b.store(0, 1) };
}

/// Every thread writes 42 to one shared word, then all read it after a
/// barrier.
#[kernel(block = 64, shared = 4)]
pub fn same_value_in_shared(a: Out<u32>, _b: Out<u32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: one word; one output per thread.
    unsafe {
        let s = SharedArray::<u32>::launch_sized();
        s.set(0, 42);
        sync_threads();
        a.store(block_idx_x() as usize * 64 + t, s.get(0));
    }
}
