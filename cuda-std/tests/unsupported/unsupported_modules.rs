// cuda_std's float atomics, allocator and OptiX are not here.
extern crate lab_cuda_std as cuda_std;
use cuda_std::atomic::AtomicF32;
use cuda_std::mem::CUDAAllocator;

fn main() {
    let _ = core::mem::size_of::<AtomicF32>();
    let _ = cuda_std::optix::TraversableHandle::default();
}
