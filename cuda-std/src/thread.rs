//! `cuda_std::thread`: indices (all `u32`, as in rust-cuda), the block
//! barrier and memory fences.

pub use gpu_device::thread::{
    block_dim_x, block_dim_y, block_dim_z, block_idx_x, block_idx_y, block_idx_z, grid_dim_x, grid_dim_y,
    grid_dim_z, thread_idx_x, thread_idx_y, thread_idx_z,
};

/// Two `u32`s, as rust-cuda's `glam::UVec2` (`.x`, `.y`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UVec2 {
    pub x: u32,
    pub y: u32,
}

/// Three `u32`s, as rust-cuda's `glam::UVec3` (`.x`, `.y`, `.z`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UVec3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// `threadIdx`.
#[inline(always)]
pub fn thread_idx() -> UVec3 {
    UVec3 { x: thread_idx_x(), y: thread_idx_y(), z: thread_idx_z() }
}

/// `blockIdx`.
#[inline(always)]
pub fn block_idx() -> UVec3 {
    UVec3 { x: block_idx_x(), y: block_idx_y(), z: block_idx_z() }
}

/// `blockDim`.
#[inline(always)]
pub fn block_dim() -> UVec3 {
    UVec3 { x: block_dim_x(), y: block_dim_y(), z: block_dim_z() }
}

/// `gridDim`.
#[inline(always)]
pub fn grid_dim() -> UVec3 {
    UVec3 { x: grid_dim_x(), y: grid_dim_y(), z: grid_dim_z() }
}

/// `threadIdx.x + blockIdx.x * blockDim.x`.
#[inline(always)]
pub fn index_1d() -> u32 {
    thread_idx_x() + block_idx_x() * block_dim_x()
}

/// [`index_1d`] in x and in y.
#[inline(always)]
pub fn index_2d() -> UVec2 {
    UVec2 { x: index_1d(), y: thread_idx_y() + block_idx_y() * block_dim_y() }
}

/// [`index_1d`] in x, y and z.
#[inline(always)]
pub fn index_3d() -> UVec3 {
    let xy = index_2d();
    UVec3 { x: xy.x, y: xy.y, z: thread_idx_z() + block_idx_z() * block_dim_z() }
}

/// The thread's index in the whole launch: its block's linear index times
/// the block's threads, plus its linear index in the block.
#[inline(always)]
pub fn index() -> u32 {
    let block = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
    block * (block_dim_x() * block_dim_y() * block_dim_z()) + gpu_device::thread::thread_rank()
}

/// Whether this is thread 0 of block 0.
#[inline(always)]
pub fn first() -> bool {
    block_idx() == UVec3::default() && thread_idx() == UVec3::default()
}

/// 32.
#[inline(always)]
pub fn warp_size() -> u32 {
    32
}

/// `__syncthreads()`: every thread of the block must reach the same call.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    gpu_device::sync_threads();
}

/// `__threadfence()`.
#[inline(always)]
pub fn device_fence() {
    gpu_device::atomic::fence();
}

/// `__threadfence()` (rust-cuda's name for a grid-wide fence).
#[inline(always)]
pub fn grid_fence() {
    gpu_device::atomic::fence();
}

/// `__threadfence_system()`: the same `fence.sc.sys` here.
#[inline(always)]
pub fn system_fence() {
    gpu_device::atomic::fence();
}
