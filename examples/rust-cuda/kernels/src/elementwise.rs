//! Element-wise kernels: one thread per element, a guard for the tail.

use cuda_std::glam;
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

/// `out[i] = m * p[i] + shift` for every point `p[i] = points[3i..3i+3]`:
/// glam's `Mat3` and `Vec3` as parameters by value, as rust-cuda passes
/// them. Each component is three products and an add in `f32`.
///
/// # Safety
/// `out` holds as many elements as `points`.
#[kernel]
#[allow(improper_ctypes_definitions)]
pub unsafe fn affine3(m: glam::Mat3, shift: glam::Vec3, points: &[f32], out: *mut f32) {
    let i = thread::index_1d() as usize;
    if 3 * i + 2 >= points.len() {
        return;
    }
    let p = glam::Vec3::new(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
    let q = m * p + shift;
    unsafe {
        out.add(3 * i).write(q.x);
        out.add(3 * i + 1).write(q.y);
        out.add(3 * i + 2).write(q.z);
    }
}
