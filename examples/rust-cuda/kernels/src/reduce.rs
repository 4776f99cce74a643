//! Block sums: each block of 256 threads adds 256 elements of `x` into
//! `sums[block]`, in shared memory and then with warp shuffles.

use cuda_std::prelude::*;
use cuda_std::{shared_array, warp};

/// Threads per block the kernel is written for.
pub const BLOCK: usize = 256;

/// A tree in shared memory down to one warp (128, 64, 32 partial sums, a
/// barrier after each step), then five `warp_shuffle_down` steps among the
/// 32 survivors. Elements past `x.len()` count as zero. Launch with 256
/// threads per block and `sums` of one element per block.
///
/// # Safety
/// `sums` holds one element per block of the launch.
#[kernel]
#[allow(improper_ctypes_definitions)]
pub unsafe fn block_sum(x: &[f32], sums: *mut f32) {
    let partial = shared_array![f32; BLOCK];
    let t = thread::thread_idx_x() as usize;
    let i = thread::index_1d() as usize;
    unsafe { *partial.add(t) = if i < x.len() { x[i] } else { 0.0 } };
    thread::sync_threads();
    let mut half = BLOCK / 2;
    while half >= 32 {
        if t < half {
            unsafe { *partial.add(t) = *partial.add(t) + *partial.add(t + half) };
        }
        thread::sync_threads();
        half /= 2;
    }
    if t < 32 {
        let mut v = unsafe { *partial.add(t) };
        let mut delta = 16;
        while delta > 0 {
            let (other, _) = unsafe { warp::warp_shuffle_down(0xffff_ffff, v, delta, 32) };
            v += other;
            delta /= 2;
        }
        if t == 0 {
            unsafe { *sums.add(thread::block_idx_x() as usize) = v };
        }
    }
}
