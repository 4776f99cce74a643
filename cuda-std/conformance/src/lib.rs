//! `cuda_std`'s API, exercised: each kernel covers one area of what a
//! rust-cuda kernel uses, and [`check`] runs it and compares every output
//! with what CUDA's semantics give, computed on the host independently.

#![allow(improper_ctypes_definitions, clippy::missing_safety_doc)]

use cuda_std::prelude::*;
use cuda_std::{address_space, shared, shared_array, warp};

pub mod atomics;
#[cfg(not(target_arch = "nvptx64"))]
pub mod check;
pub mod foreign;
// A kernel named like its file, re-exported beside its (private) module as
// rust-cuda projects do; `#[kernel]`'s launch module must not clash.
mod gemm_naive;
pub use gemm_naive::gemm_naive;
#[cfg(not(target_arch = "nvptx64"))]
pub mod bessel_check;
pub mod math;
#[cfg(not(target_arch = "nvptx64"))]
pub mod math_check;
#[cfg(not(target_arch = "nvptx64"))]
mod math_inputs;
pub mod vectors;

/// Values each thread of [`indices()`] writes.
pub const INDEX_VALUES: usize = 20;

/// Every index function, per thread: `out[index() * 20 + j]`.
#[kernel]
pub unsafe fn indices(out: *mut u32) {
    let i = thread::index() as usize * INDEX_VALUES;
    let (t, b, d, g) = (thread::thread_idx(), thread::block_idx(), thread::block_dim(), thread::grid_dim());
    let (i2, i3) = (thread::index_2d(), thread::index_3d());
    let values = [
        thread::thread_idx_x(),
        thread::thread_idx_y(),
        thread::thread_idx_z(),
        thread::block_idx_x(),
        thread::block_idx_y(),
        thread::block_idx_z(),
        thread::block_dim_x(),
        thread::block_dim_y(),
        thread::block_dim_z(),
        thread::grid_dim_x(),
        thread::grid_dim_y(),
        thread::grid_dim_z(),
        thread::index_1d(),
        i2.x * 1000 + i2.y,
        i3.z,
        thread::first() as u32,
        thread::warp_size(),
        warp::lane_id(),
        t.x + t.y + t.z + b.x + b.y + b.z,
        d.x * d.y * d.z + g.x * g.y * g.z,
    ];
    for (j, v) in values.iter().enumerate() {
        unsafe { *out.add(i + j) = *v };
    }
}

/// Widths the shuffle kernels take.
pub const WIDTHS: [u32; 5] = [32, 16, 8, 4, 2];
/// Outputs per thread of [`shuffles()`]: per width, 4 modes x (value,
/// predicate), then `f64`, `i128`, `u8`, `f16` and `bf16` shuffles.
pub const SHUFFLE_VALUES: usize = WIDTHS.len() * 8 + 8;

/// `warp_shuffle_{down,up,xor,idx}` at every width, with the predicate,
/// on `u32`; then `f64`, `i128`, `u8`, `f16` and `bf16` values (two,
/// four, one, one and one 32-bit shuffles).
#[kernel]
pub unsafe fn shuffles(out: *mut u32) {
    let t = thread::thread_idx_x();
    let base = t as usize * SHUFFLE_VALUES;
    let v = t * 7 + 1;
    // One width's four shuffles, written at `out[k..k + 8]`.
    let four = |w: u32, k: usize| {
        let results = unsafe {
            [
                warp::warp_shuffle_down(u32::MAX, v, 1, w),
                warp::warp_shuffle_up(u32::MAX, v, 1, w),
                warp::warp_shuffle_xor(u32::MAX, v, 1, w),
                warp::warp_shuffle_idx(u32::MAX, v, 3, w),
            ]
        };
        unsafe {
            *out.add(k) = results[0].0;
            *out.add(k + 1) = results[0].1 as u32;
            *out.add(k + 2) = results[1].0;
            *out.add(k + 3) = results[1].1 as u32;
            *out.add(k + 4) = results[2].0;
            *out.add(k + 5) = results[2].1 as u32;
            *out.add(k + 6) = results[3].0;
            *out.add(k + 7) = results[3].1 as u32;
        }
    };
    four(WIDTHS[0], base);
    four(WIDTHS[1], base + 8);
    four(WIDTHS[2], base + 16);
    four(WIDTHS[3], base + 24);
    four(WIDTHS[4], base + 32);
    let k = base + WIDTHS.len() * 8;
    let (f, fok) = unsafe { warp::warp_shuffle_down(u32::MAX, t as f64 + 0.25, 2, 32) };
    let (wide, _) = unsafe { warp::warp_shuffle_xor(u32::MAX, (t as i128) << 70 | 5, 3, 32) };
    let (small, _) = unsafe { warp::warp_shuffle_up(u32::MAX, t as u8, 4, 8) };
    let (half, _) =
        unsafe { warp::warp_shuffle_xor(u32::MAX, cuda_std::f16::from_f32(t as f32 * 0.5), 1, 32) };
    let (brain, _) =
        unsafe { warp::warp_shuffle_idx(u32::MAX, cuda_std::bf16::from_f32(t as f32 + 0.5), 5, 16) };
    let f_bits = f.to_bits();
    unsafe {
        *out.add(k) = f_bits as u32;
        *out.add(k + 1) = (f_bits >> 32) as u32;
        *out.add(k + 2) = fok as u32;
        *out.add(k + 3) = (wide >> 70) as u32;
        *out.add(k + 4) = wide as u32;
        *out.add(k + 5) = small as u32;
        *out.add(k + 6) = half.to_bits() as u32;
        *out.add(k + 7) = brain.to_bits() as u32;
    }
}

/// Outputs per thread of [`votes()`].
pub const VOTE_VALUES: usize = 6;

/// Ballots, `all`, `any` over whole warps, a vote over the first 16 lanes
/// only (the others skip it), and `activemask` where every lane runs.
#[kernel]
pub unsafe fn votes(out: *mut u32) {
    let t = thread::thread_idx_x();
    let lane = warp::lane_id();
    let i = t as usize * VOTE_VALUES;
    let ballot = unsafe { warp::warp_vote_ballot(u32::MAX, lane.is_multiple_of(3)) };
    let all = unsafe { warp::warp_vote_all(u32::MAX, t < 40) };
    let any = unsafe { warp::warp_vote_any(u32::MAX, t == 37) };
    let half = if lane < 16 { unsafe { warp::warp_vote_ballot(0xffff, lane % 2 == 1) } } else { 7 };
    // Reconverged, every lane is active.
    unsafe { warp::sync_warp(u32::MAX) };
    let active = warp::activemask();
    unsafe {
        *out.add(i) = ballot;
        *out.add(i + 1) = all as u32;
        *out.add(i + 2) = any as u32;
        *out.add(i + 3) = half;
        *out.add(i + 4) = active;
        *out.add(i + 5) = lane;
    }
}

/// An inclusive scan of each warp's 32 values in a `shared_array!`, with
/// `sync_warp` between each step's reads and writes.
#[kernel]
pub unsafe fn warp_scan(x: &[u32], out: *mut u32) {
    let s = shared_array![u32; 64];
    let t = thread::thread_idx_x() as usize;
    let lane = t % 32;
    unsafe { *s.add(t) = x[thread::index_1d() as usize] };
    unsafe { warp::sync_warp(u32::MAX) };
    let mut d = 1;
    while d < 32 {
        let v = if lane >= d { unsafe { *s.add(t - d) } } else { 0 };
        unsafe { warp::sync_warp(u32::MAX) };
        unsafe { *s.add(t) = *s.add(t) + v };
        unsafe { warp::sync_warp(u32::MAX) };
        d *= 2;
    }
    unsafe { *out.add(thread::index_1d() as usize) = *s.add(t) };
}

/// Threads per block of [`shared_styles()`].
pub const STYLES_BLOCK: usize = 64;

/// The three kinds of shared memory at once, and a launch of several
/// blocks: a `#[address_space(shared)] static mut`, a `shared_array!` and
/// the launch's dynamic bytes (`STYLES_BLOCK` `f32`). Thread `t` stores
/// `x`, `2x`, `3x` of its element in each, and after a barrier reads
/// thread `63 - t`'s three: `out[i] = s[63-t] + a[63-t] + d[63-t]`.
#[kernel]
pub unsafe fn shared_styles(x: &[f32], out: *mut f32) {
    // Items of the body may size the shared statics and arrays.
    type Elem = f32;
    const HALF: usize = STYLES_BLOCK / 2;
    #[address_space(shared)]
    static mut STATIC: [Elem; STYLES_BLOCK] = [0.0; STYLES_BLOCK];
    let array = shared_array![Elem; 2 * HALF];
    let dynamic = shared::dynamic_shared_mem::<f32>();
    let t = thread::thread_idx_x() as usize;
    let i = thread::index_1d() as usize;
    let v = x[i];
    unsafe {
        STATIC[t] = v;
        *array.add(t) = 2.0 * v;
        *dynamic.add(t) = 3.0 * v;
    }
    thread::sync_threads();
    let r = STYLES_BLOCK - 1 - t;
    unsafe { *out.add(i) = STATIC[r] + *array.add(r) + *dynamic.add(r) };
}

/// Parameters of every kind: `*const T` and `&[T]` inputs, a `*mut f64`
/// output, `usize`, `i32` and `f64` scalars; and the three fences.
/// `out[i] = a[i] * s + b[i] + k` for `i < n`.
#[kernel]
pub unsafe fn parameters(a: *const f32, b: &[f32], out: *mut f64, n: usize, k: i32, s: f64) {
    let i = thread::index_1d() as usize;
    if i < n {
        let value = unsafe { *a.add(i) } as f64 * s + b[i] as f64 + k as f64;
        thread::device_fence();
        thread::grid_fence();
        thread::system_fence();
        unsafe { out.add(i).write(value) };
    }
}
