// Shared statics go at the top level of the kernel body.
extern crate lab_cuda_std as cuda_std;
use cuda_std::address_space;
use cuda_std::prelude::*;

#[kernel]
pub unsafe fn k(out: *mut f32) {
    if thread::thread_idx_x() == 0 {
        #[address_space(shared)]
        static mut FLAG: [f32; 1] = [0.0];
        unsafe { *out = FLAG[0] };
    }
}

fn main() {}
