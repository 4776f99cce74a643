// A shared static outside a kernel body has nowhere to live.
extern crate lab_cuda_std as cuda_std;
use cuda_std::address_space;

#[address_space(shared)]
static mut TILE: [f32; 256] = [0.0; 256];

fn main() {}
