//! `cuda_std::glam` and `cuda_std::vek` in a kernel.

use cuda_std::prelude::*;
use cuda_std::{glam, vek};

/// Outputs per thread of [`vector_math()`].
pub const VECTOR_VALUES: usize = 4;

/// Thread `i` takes `u = a[6i..6i+3]` and `v = a[6i+3..6i+6]` and writes
/// glam's `u.dot(v)` and `u.length()`, vek's `u.cross(v).x` and
/// `u.dot(v)`, to `out[4i..4i+4]`, for `i < n`.
#[kernel]
pub unsafe fn vector_math(a: &[f32], n: usize, out: *mut f32) {
    let i = thread::index_1d() as usize;
    if i < n {
        let k = 6 * i;
        let u = glam::Vec3::new(a[k], a[k + 1], a[k + 2]);
        let v = glam::Vec3::new(a[k + 3], a[k + 4], a[k + 5]);
        let (p, q) = (vek::Vec3::new(u.x, u.y, u.z), vek::Vec3::new(v.x, v.y, v.z));
        let values = [u.dot(v), u.length(), p.cross(q).x, p.dot(q)];
        for (j, value) in values.iter().enumerate() {
            unsafe { *out.add(VECTOR_VALUES * i + j) = *value };
        }
    }
}

/// Thread `i` maps point `p = points[3i..3i+3]` by the affine `m` (glam's
/// `transform_point3`), then scales by `s.x` and adds `offset + s.y`, to
/// `out[3i..3i+3]`, for `i < n`: glam's matrix and vectors as parameters
/// by value (a `Mat4` is 64 bytes, one PTX parameter).
#[kernel]
pub unsafe fn transform_points(
    m: glam::Mat4,
    offset: glam::Vec3,
    s: glam::Vec2,
    points: &[f32],
    n: usize,
    out: *mut f32,
) {
    let i = thread::index_1d() as usize;
    if i < n {
        let p = glam::Vec3::new(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
        let q = m.transform_point3(p) * s.x + offset + s.y;
        for (j, value) in q.to_array().into_iter().enumerate() {
            unsafe { *out.add(3 * i + j) = value };
        }
    }
}
