// As in cuda_std: outputs are `*mut T`, not `&mut [T]`.
extern crate lab_cuda_std as cuda_std;
use cuda_std::prelude::*;

#[kernel]
pub unsafe fn k(out: &mut [f32]) {
    out[0] = 1.0;
}

fn main() {}
