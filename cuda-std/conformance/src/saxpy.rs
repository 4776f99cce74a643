//! A kernel in a file named after it, re-exported beside its module as
//! rust-cuda projects lay them out (`mod saxpy; pub use saxpy::saxpy;`):
//! the host build must not see two items named `saxpy`.

use cuda_std::prelude::*;

/// `out[i] = a * x[i] + out[i]` for `i < x.len()`.
#[kernel]
pub unsafe fn saxpy(a: f32, x: &[f32], out: *mut f32) {
    let i = thread::index_1d() as usize;
    if i < x.len() {
        unsafe { *out.add(i) = a * x[i] + *out.add(i) };
    }
}
