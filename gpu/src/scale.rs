//! The example family: `y = a x`, the smallest complete kernel, and the one
//! README.md's "Adding a kernel" shows (a test keeps the two identical).

use crate::dev::{DisjointSlice, Slice, thread};
use crate::kernel;

/// `y[i] = a x[i]`, one thread per element. A warp reads 32 consecutive
/// `f32` and writes 32 (128 bytes each way, 4 sectors per request), so the
/// kernel moves 8 bytes per element and its ceiling is the copy's
/// bandwidth. With one 4-byte load in flight per thread it keeps fewer
/// bytes in flight than the copy does, so expect it below the copy
/// (`transpose_fast` shows the cure: more elements per thread). No
/// `unsafe`: `get` checks the bound, and `get_mut` gives each thread its
/// own element of `y`.
///
/// Measured: `BENCHMARKS.md`, rows `scale`.
#[kernel(block = 256)]
pub fn scale(x: Slice<f32>, mut y: DisjointSlice<f32>, a: f32) {
    let i = thread::index();
    if let (Some(y), Some(x)) = (y.get_mut(i), x.get(i.get())) {
        *y = a * x;
    }
}
