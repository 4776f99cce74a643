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
    /// `threadIdx.z`
    thread_idx_z => _thread_idx_z, 0, 2;
    /// `blockIdx.x`
    block_idx_x => _block_idx_x, 1, 0;
    /// `blockIdx.y`
    block_idx_y => _block_idx_y, 1, 1;
    /// `blockIdx.z`
    block_idx_z => _block_idx_z, 1, 2;
    /// `blockDim.x`
    block_dim_x => _block_dim_x, 2, 0;
    /// `blockDim.y`
    block_dim_y => _block_dim_y, 2, 1;
    /// `blockDim.z`
    block_dim_z => _block_dim_z, 2, 2;
    /// `gridDim.x`
    grid_dim_x => _grid_dim_x, 3, 0;
    /// `gridDim.y`
    grid_dim_y => _grid_dim_y, 3, 1;
    /// `gridDim.z`
    grid_dim_z => _grid_dim_z, 3, 2;
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
    (thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()
}

/// A thread's position in the whole launch, different for every thread of
/// it. Only [`index`] makes one, from the hardware's registers: that is
/// what lets [`crate::dev::DisjointSlice::get_mut`] give each thread its
/// own element without `unsafe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a number, to index other buffers with.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.0
    }
}

/// This thread's [`ThreadIndex`]: its block's linear index in the grid (x
/// fastest) times the threads per block, plus its [`thread_rank`]. Every
/// thread of the launch gets a different one, whatever the grid and block
/// shapes; in a 1-D launch it equals [`index_1d`].
#[inline(always)]
pub fn index() -> ThreadIndex {
    let block = (block_idx_z() as usize * grid_dim_y() as usize + block_idx_y() as usize)
        * grid_dim_x() as usize
        + block_idx_x() as usize;
    let threads = block_dim_x() as usize * block_dim_y() as usize * block_dim_z() as usize;
    ThreadIndex(block * threads + thread_rank() as usize)
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
