//! The example's kernels, in rust-cuda's style: `cuda_std`'s prelude,
//! `#[kernel] pub unsafe fn`, slices and raw pointers as parameters,
//! shared statics and `shared_array!`.

mod elementwise;
mod gemm;
mod hash;
mod reduce;

pub use elementwise::{affine3, vecadd};
pub use gemm::{gemm_naive, gemm_tiled};
pub use hash::{sha256, sha256_chunks};
pub use reduce::block_sum;
