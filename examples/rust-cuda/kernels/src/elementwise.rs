//! Element-wise kernels: one thread per element, a guard for the tail.

use cuda_std::prelude::*;

/// `c[i] = a[i] + b[i]` for every `i` of `a`: one thread per element, the
/// threads past the end of `a` doing nothing. `b` must be at least as long
/// as `a`, and `c` hold as many elements. One rounding per element, the
/// same as the host's `a + b`, so the result is exact.
///
/// # Safety
/// `b` and `c` hold at least `a.len()` elements.
#[kernel]
#[allow(improper_ctypes_definitions)]
pub unsafe fn vecadd(a: &[f32], b: &[f32], c: *mut f32) {
    let i = thread::index_1d() as usize;
    if i >= a.len() {
        return;
    }
    let sum = a[i] + b[i];
    unsafe { c.add(i).write(sum) };
}
