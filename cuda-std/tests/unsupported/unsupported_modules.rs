// cuda_std's allocator, OptiX, counting barriers, warp
// reductions and matches, and its gpu_only attribute are not here.
extern crate lab_cuda_std as cuda_std;
use cuda_std::mem::CUDAAllocator;

#[cuda_std::gpu_only]
fn only_on_the_gpu() {}

fn main() {
    let _ = cuda_std::optix::TraversableHandle::default();
    let _ = cuda_std::thread::sync_threads_count(1);
    let _ = unsafe { cuda_std::warp::warp_reduce(u32::MAX, 1u32) };
    let _ = unsafe { cuda_std::warp::warp_match_any(u32::MAX, 1u32) };
}
