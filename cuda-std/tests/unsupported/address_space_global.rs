// Only shared statics are supported.
extern crate lab_cuda_std as cuda_std;
use cuda_std::address_space;
use cuda_std::prelude::*;

#[kernel]
pub unsafe fn k(out: *mut f32) {
    #[address_space(global)]
    static mut TABLE: [f32; 4] = [0.0; 4];
    unsafe { *out = TABLE[0] };
}

fn main() {}
