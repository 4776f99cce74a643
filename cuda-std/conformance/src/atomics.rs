//! `cuda_std::atomic` on global and shared memory: the float atomics of
//! every scope, the mid-level functions, a shared histogram, and a flag
//! handed between the warps of a block through a shared atomic word.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use cuda_std::atomic::{self, mid};
use cuda_std::prelude::*;
use cuda_std::shared_array;

/// Bins of [`shared_histogram()`].
pub const BINS: usize = 16;

/// `bins[v % 16] += 1` for each `v` of `x`: each block counts into a
/// shared histogram with block-scoped atomic adds, then adds it to the
/// global one with device-scoped ones, with release (as a block would
/// that published its work through the counts; `cpu/tests/ptx.rs` checks the
/// fence the ordering needs).
#[kernel]
pub unsafe fn shared_histogram(x: &[u32], bins: *mut u32) {
    let s = shared_array![u32; BINS];
    let t = thread::thread_idx_x() as usize;
    let i = thread::index_1d() as usize;
    if t < BINS {
        unsafe { *s.add(t) = 0 };
    }
    thread::sync_threads();
    if i < x.len() {
        let bin = x[i] as usize % BINS;
        unsafe { mid::atomic_fetch_add_u32_block(s.add(bin).as_ptr(), Relaxed, 1) };
    }
    thread::sync_threads();
    if t < BINS {
        let count = unsafe { mid::atomic_load_32_block(s.add(t).as_ptr(), Relaxed) };
        unsafe { mid::atomic_fetch_add_u32_device(bins.add(t).as_ptr(), Release, count) };
    }
}

/// Words of [`float_and_integer()`]'s `ints` output.
pub const INTS: usize = 8;

/// Every thread adds `x[i]` to `sums[0]` (an [`atomic::AtomicF32`]),
/// `sums[1]` (a system-scoped one, subtracting) and, through a block's
/// shared [`atomic::BlockAtomicF32`], to `sums[2 + block]`; and `x[i]` as
/// `f64` to `wide[0]` ([`atomic::AtomicF64`]). On the integers:
/// `ints[0]` min, `ints[1]` max (`i64`), `ints[2]` xor (`u64`, both
/// halves), `ints[3]` sub (`i32`), `ints[4]` and, `ints[5]` or (`u32`),
/// `ints[6]` a compare-and-swap ticket, `ints[7]` an exchange.
#[kernel]
pub unsafe fn float_and_integer(x: &[f32], sums: *mut f32, wide: *mut f64, ints: *mut u64) {
    let s = shared_array![f32; 1];
    let t = thread::thread_idx_x();
    let i = thread::index_1d() as usize;
    if t == 0 {
        unsafe { atomic::BlockAtomicF32::from_ptr(s.as_ptr()).store(0.0, Relaxed) };
    }
    thread::sync_threads();
    if i < x.len() {
        let v = x[i];
        unsafe {
            atomic::AtomicF32::from_ptr(sums.as_ptr()).fetch_add(v, Relaxed);
            atomic::SystemAtomicF32::from_ptr(sums.add(1).as_ptr()).fetch_sub(v, Relaxed);
            atomic::BlockAtomicF32::from_ptr(s.as_ptr()).fetch_add(v, Relaxed);
            atomic::AtomicF64::from_ptr(wide.as_ptr()).fetch_add(v as f64, Relaxed);
            let ints = ints.as_ptr();
            let signed = v as i64 * 1_000_003 - 5_000_000;
            mid::atomic_fetch_min_i64_device(ints.cast(), Relaxed, signed);
            mid::atomic_fetch_max_i64_system(ints.add(1).cast(), Relaxed, signed);
            mid::atomic_fetch_xor_u64_device(ints.add(2), Relaxed, (i as u64) << 40 | i as u64);
            mid::atomic_fetch_sub_i32_block(ints.add(3).cast(), Relaxed, i as i32);
            mid::atomic_fetch_and_u32_device(ints.add(4).cast(), Relaxed, !(1u32 << (i % 32)));
            mid::atomic_fetch_or_u32_device(ints.add(5).cast(), Relaxed, 1u32 << (i % 29));
            // A ticket taken by compare-and-swap: counts every thread once.
            let p = ints.add(6).cast::<u32>();
            let mut seen = mid::atomic_load_32_device(p, Relaxed);
            loop {
                let old = mid::atomic_compare_and_swap_u32_device(p, seen, seen + 1, Relaxed);
                if old == seen {
                    break;
                }
                seen = old;
            }
            mid::atomic_fetch_exch_u64_device(ints.add(7), Relaxed, 77);
        }
    }
    thread::sync_threads();
    if t == 0 {
        let block = unsafe { atomic::BlockAtomicF32::from_ptr(s.as_ptr()).load(Relaxed) };
        unsafe { *sums.add(2 + thread::block_idx_x() as usize) = block };
    }
}

/// Thread 0 writes `data = 7` in shared memory, then sets a shared flag;
/// thread 32 (the next warp) reads the flag and, if set, the data, and
/// writes what it read to `out[0]` (`out[1]`: whether it saw the flag).
/// `ordered != 0`: a release store and an acquire load (clean); `0`: both
/// relaxed, which orders nothing (a race on `data`).
#[kernel]
pub unsafe fn shared_flag(out: *mut u32, ordered: u32) {
    let s = shared_array![u32; 2];
    let (flag, data) = (s.as_ptr(), unsafe { s.add(1) });
    let t = thread::thread_idx_x();
    if t == 0 {
        unsafe { mid::atomic_store_32_block(flag, Relaxed, 0) };
    }
    thread::sync_threads();
    let (store, load) = if ordered != 0 { (Release, Acquire) } else { (Relaxed, Relaxed) };
    if t == 0 {
        unsafe {
            *data = 7;
            mid::atomic_store_32_block(flag, store, 1);
        }
    } else if t == 32 {
        let set = unsafe { mid::atomic_load_32_block(flag, load) };
        let v = if set == 1 { unsafe { *data } } else { 0 };
        unsafe {
            *out = v;
            *out.add(1) = set;
        }
    }
}
