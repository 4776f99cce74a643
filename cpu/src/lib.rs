//! Host side of the kernel lab: launches the kernels of the `gpu` crate
//! (cudarc, driver API, dynamic loading) or runs them on the CPU emulator,
//! verifies them against host references, and measures them against the
//! device's own ceilings. One folder per layer, each importing only those
//! below it:
//!
//! - [`runtime`]: where kernels run ([`runtime::Gpu`]), the embedded PTX,
//!   the error type;
//! - [`files`]: reading the inputs a user names, writing the outputs
//!   where they asked;
//! - [`measure`]: inputs, verification, timing, records;
//! - [`attention`]: attention as a library call;
//! - [`dispatch`]: the dispatcher model the libraries' plans share;
//! - [`blas`]: `sgemm` with BLAS semantics and its dispatcher;
//! - [`gemm`]: the tensor-core GEMM as one library call;
//! - [`peers`]: cuBLAS and cuBLASLt, the in-run peers;
//! - [`families`]: one host file per kernel family, behind one trait;
//! - [`report`]: the suite, tables, `BENCHMARKS.md`, plots;
//! - [`cli`]: the command-line skeleton every binary shares.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod attention;
pub mod blas;
pub mod cli;
pub mod dispatch;
pub mod families;
pub mod files;
pub mod gemm;
pub mod measure;
pub mod peers;
pub mod report;
pub mod runtime;
pub mod sanitize;

pub use runtime::{Error, Result};
