// Kernels cannot print here (no vprintf).
extern crate lab_cuda_std as cuda_std;
use cuda_std::prelude::*;

#[kernel]
pub unsafe fn hello(out: *mut f32) {
    println!("hello from the GPU");
    unsafe { *out = 1.0 };
}

fn main() {}
