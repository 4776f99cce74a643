// As in cuda_std: kernels are `pub unsafe fn`.
extern crate lab_cuda_std as cuda_std;
use cuda_std::prelude::*;

#[kernel]
pub fn k(out: *mut f32) {
    let _ = out;
}

fn main() {}
