//! The example's kernels, in rust-cuda's style: `cuda_std`'s prelude,
//! `#[kernel] pub unsafe fn`, slices and raw pointers as parameters,
//! shared statics and `shared_array!`. `upstream` holds rust-cuda's own
//! vecadd example, unchanged.

mod gemm;
mod reduce;
mod upstream;

pub use gemm::{gemm_naive, gemm_tiled};
pub use reduce::block_sum;
pub use upstream::vecadd::vecadd;
