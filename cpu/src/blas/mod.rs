//! The BLAS layer: `sgemm` with BLAS's semantics (row- or column-major,
//! `op` N or T, leading dimensions, any `m, n, k >= 0`, BLAS's rules for
//! `alpha` and `beta`) over the `gpu::gemm::ffma` kernels, the dispatcher that
//! picks their tile and split-K, cuBLAS on the same call, and the
//! reference BLAS's test criteria.
//!
//! - [`gemm`]: a call ([`Gemm`]), its checks, and the row-major problem the
//!   kernels compute;
//! - [`plan`]: the dispatcher's model and choice;
//! - [`run`]: [`Sgemm`], which launches a call;
//! - [`pack`]: operands copied into a workspace at another row stride,
//!   transposed or not (for `sgemm` and the tensor-core library);
//! - [`mod@reference`]: the f64 reference, test ratio and poison checks.

pub mod gemm;
pub mod pack;
pub mod plan;
pub mod reference;
pub mod run;

pub use gemm::{Gemm, Layout, Op, Operand};
pub use plan::Plan;
pub use run::Sgemm;
