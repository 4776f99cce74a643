//! `C = alpha A B + beta C`, row-major, `A` m x k, `B` k x n: one thread
//! per element of `C`, `x` along columns and `y` along rows.

use cuda_std::address_space;
use cuda_std::prelude::*;

/// Each thread walks a row of `A` and a column of `B` in global memory:
/// `2 k` loads per 2 k FLOPs.
///
/// # Safety
/// `a`, `b` and `c` hold `m x k`, `k x n` and `m x n` elements.
#[kernel]
#[allow(improper_ctypes_definitions, clippy::too_many_arguments)]
pub unsafe fn gemm_naive(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) {
    let col = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    let row = (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) as usize;
    if row < m && col < n {
        let mut sum = 0.0f32;
        for i in 0..k {
            sum += a[row * k + i] * b[i * n + col];
        }
        let out = unsafe { c.add(row * n + col) };
        unsafe { *out = alpha * sum + beta * *out };
    }
}

/// Tile edge: a 16 x 16 block computes a 16 x 16 tile of `C`.
const TILE: usize = 16;

/// Tiled in shared memory: the block stages a 16 x 16 tile of `A` and one
/// of `B` per step (2 loads per thread), then each thread reads 16 of each
/// from shared memory, so global traffic falls 16-fold. Tiles past the
/// matrix edges are zero-filled, so any `m`, `n`, `k` works. Launch with
/// 16 x 16 blocks.
///
/// # Safety
/// As for [`gemm_naive`].
#[kernel]
#[allow(improper_ctypes_definitions, clippy::too_many_arguments)]
pub unsafe fn gemm_tiled(
    a: &[f32],
    b: &[f32],
    c: *mut f32,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) {
    #[address_space(shared)]
    static mut A_TILE: [f32; TILE * TILE] = [0.0; TILE * TILE];
    #[address_space(shared)]
    static mut B_TILE: [f32; TILE * TILE] = [0.0; TILE * TILE];

    let (tx, ty) = (thread::thread_idx_x() as usize, thread::thread_idx_y() as usize);
    let col = thread::block_idx_x() as usize * TILE + tx;
    let row = thread::block_idx_y() as usize * TILE + ty;
    let mut sum = 0.0f32;
    let mut base = 0;
    while base < k {
        unsafe {
            A_TILE[ty * TILE + tx] = if row < m && base + tx < k { a[row * k + base + tx] } else { 0.0 };
            B_TILE[ty * TILE + tx] = if col < n && base + ty < k { b[(base + ty) * n + col] } else { 0.0 };
        }
        thread::sync_threads();
        for i in 0..TILE {
            sum += unsafe { A_TILE[ty * TILE + i] * B_TILE[i * TILE + tx] };
        }
        thread::sync_threads();
        base += TILE;
    }
    if row < m && col < n {
        let out = unsafe { c.add(row * n + col) };
        unsafe { *out = alpha * sum + beta * *out };
    }
}
