use gpu::dev::{DisjointSlice, Out, Slice};
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

// A disjoint output hands out elements by a 1-D index: a 2-D block would
// give two threads one element.
#[kernel(block = [32, 8])]
pub fn two_dimensional(y: DisjointSlice<f32>) {}

fn main() {}
