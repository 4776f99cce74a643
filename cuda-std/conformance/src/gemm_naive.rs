//! A kernel in a file named after it, laid out as rust-cuda projects lay
//! them out: `mod gemm_naive; pub use gemm_naive::gemm_naive;` in
//! `lib.rs`. The host build must not define `gemm_naive` twice there (the
//! function and `#[kernel]`'s launch module); the launcher is this
//! module's `gemm_naive::launch`.

use cuda_std::prelude::*;

/// `c = a b` for row-major `a` (`m x k`) and `b` (`k x n`), one thread per
/// element of `c`.
#[kernel]
pub unsafe fn gemm_naive(a: &[f32], b: &[f32], c: *mut f32, m: usize, n: usize, k: usize) {
    let idx = thread::index_1d() as usize;
    if idx < m * n {
        let (i, j) = (idx / n, idx % n);
        let mut acc = 0.0f32;
        for l in 0..k {
            acc += a[i * k + l] * b[l * n + j];
        }
        // SAFETY: the launch gives `c` m * n elements.
        unsafe { *c.add(idx) = acc };
    }
}
