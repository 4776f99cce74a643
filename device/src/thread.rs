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
                emu::ops::index().$field[$axis]
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

/// A thread's index in a 1-D launch, different for every thread of it. Only
/// [`index`] makes one, from the hardware's registers: that is what lets
/// [`crate::DisjointSlice::get_mut`] give each thread its own element
/// without `unsafe`.
///
/// Every launch of a kernel that has a `DisjointSlice` parameter is 1-D:
/// `#[kernel]` rejects a block with `y` or `z` above 1 for it, its typed
/// launcher takes the grid as one number, and the raw launches
/// (`Typed::launch`, `Launcher::launch`) are `unsafe` with a 1-D grid in
/// their contract. A kernel without one can make `ThreadIndex` values but
/// has nothing to use them on: a `DisjointSlice` exists only as a kernel
/// parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadIndex(usize);

impl ThreadIndex {
    /// The index as a number, to index other buffers with.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.0
    }
}

/// This thread's [`ThreadIndex`]: [`index_1d`], `blockIdx.x * blockDim.x
/// + threadIdx.x`, three special-register reads and one multiply-add.
#[inline(always)]
pub fn index() -> ThreadIndex {
    ThreadIndex(index_1d())
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
    emu::ops::barrier(core::panic::Location::caller());
}
