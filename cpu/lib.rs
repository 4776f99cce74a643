//! Host side of the kernel lab: launches the kernels of the `gpu` crate
//! (cudarc, driver API, dynamic loading), computes the same results on the
//! CPU, verifies, and measures against the device's own ceilings.
//!
//! - [`ptx`]: the PTX that `build.rs` compiled from `gpu/`, one per arch;
//! - [`device`]: [`device::Gpu`], a device with our module loaded;
//! - [`bench`]: CUDA-event timing (warm-up, median) and the in-run copy
//!   ceiling;
//! - one module per kernel family ([`transpose`]): host reference, typed
//!   launch, verification and the family's benchmark;
//! - [`report`]: the tables the binaries print.

pub mod bench;
pub mod cli;
pub mod data;
pub mod device;
pub mod error;
pub mod lab;
pub mod ptx;
pub mod publish;
pub mod reduce;
pub mod report;
pub mod sgemm;
pub mod suite;
pub mod transpose;

pub use error::{Error, Result};
