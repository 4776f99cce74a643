//! Thread, block and grid indices (CUDA's `threadIdx`, `blockIdx`,
//! `blockDim`, `gridDim`) and the block barrier.
//!
//! On the GPU each index is a `u32` special register read (`%tid.x`,
//! `%ctaid.x`, ...); LLVM knows their ranges (`%tid.x` < 1024), which lets
//! it prove some bounds checks away. On the host they come from the
//! emulator (the `emu` crate).

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx as sreg;

macro_rules! special_registers {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident, $field:tt, $axis:tt;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                // SAFETY: reading a special register has no preconditions.
                unsafe { sreg::$intrinsic() as u32 }
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                emu::device::index().$field[$axis]
            }
        }
    )*};
}

special_registers! {
    /// `threadIdx.x`
    thread_idx_x => _thread_idx_x, 0, 0;
    /// `threadIdx.y`
    thread_idx_y => _thread_idx_y, 0, 1;
    /// `blockIdx.x`
    block_idx_x => _block_idx_x, 1, 0;
    /// `blockIdx.y`
    block_idx_y => _block_idx_y, 1, 1;
    /// `blockDim.x`
    block_dim_x => _block_dim_x, 2, 0;
    /// `blockDim.y`
    block_dim_y => _block_dim_y, 2, 1;
    /// `gridDim.x`
    grid_dim_x => _grid_dim_x, 3, 0;
    /// `gridDim.y`
    grid_dim_y => _grid_dim_y, 3, 1;
}

/// The linear index of this thread in a 1-D grid:
/// `blockIdx.x * blockDim.x + threadIdx.x`, widened before the multiply so
/// that grids of more than 2^32 threads index correctly.
#[inline(always)]
pub fn index_1d() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// The linear index of this thread within its block (x fastest).
#[inline(always)]
pub fn thread_rank() -> u32 {
    thread_idx_y() * block_dim_x() + thread_idx_x()
}

/// `__syncthreads()`: waits until every thread of the block has reached this
/// barrier, and makes their shared-memory writes visible to each other.
///
/// Every thread of the block must reach the same barrier: a thread that
/// returns early while others wait here deadlocks or corrupts the block
/// (the seed's `reduceSmem` returned before its barrier). The emulator
/// reports threads waiting at different `sync_threads` calls.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a barrier has no memory-safety preconditions.
        unsafe { sreg::_syncthreads() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emu::device::barrier(core::panic::Location::caller());
}
