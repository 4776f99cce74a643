// shared_array! works directly in a #[kernel] body only.
extern crate lab_cuda_std as cuda_std;

pub fn helper() -> f32 {
    let s = cuda_std::shared_array![f32; 32];
    unsafe { *s }
}

fn main() {}
