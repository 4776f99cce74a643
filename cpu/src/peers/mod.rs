//! The peers every measurement is a ratio to, run in the same process on
//! the same buffers:
//!
//! - [`cublas`]: cuBLAS, SGEMM in FP32 for `sgemm`, `cublasGemmEx` and
//!   `cublasGemmStridedBatchedEx` in the tensor-core call's precision;
//! - [`lt`]: cuBLASLt's `cublasLtMatmul`, for FP8 and the epilogues.

pub mod cublas;
pub mod lt;

pub use cublas::Cublas;
pub use lt::Lt;
