use gpu::dev::{Out, Slice};
use gpu::kernel;

// No block shape.
#[kernel(shared = 64)]
pub fn no_block(y: Out<f32>) {}

// A key the attribute does not know.
#[kernel(block = 32, threads = 64)]
pub fn unknown_key(y: Out<f32>) {}

// A generic kernel must name its instances.
#[kernel(block = 32)]
pub fn generic<T: Copy + 'static>(y: Out<T>) {}

// Slices are `Slice<T>` / `DisjointSlice<T>`.
#[kernel(block = 32)]
pub fn plain_slice(x: &[f32]) {}

// A kernel is a safe function.
#[kernel(block = 32)]
pub unsafe fn unsafe_kernel(x: Slice<f32>) {}

// And it returns nothing.
#[kernel(block = 32)]
pub fn returns(x: Slice<f32>) -> f32 {
    0.0
}

fn main() {}
