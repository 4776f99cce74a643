// The launch gives grid, block and shared memory; the attribute takes none.
extern crate lab_cuda_std as cuda_std;
use cuda_std::prelude::*;

#[kernel(block_dim = 1d)]
pub unsafe fn k(out: *mut f32) {
    unsafe { *out = 1.0 };
}

fn main() {}
