//! The runtime layer: where kernels run.
//!
//! - [`device`]: [`Gpu`], a CUDA device with our PTX loaded or the CPU
//!   emulator, and its [`DeviceBuffer`]s; `Gpu` is the `gpu` crate's
//!   [`gpu::launch::Launcher`], so every typed launcher runs on either;
//! - [`ptx`]: the PTX `build.rs` compiled, one per architecture;
//! - [`error`]: the one error type, whose message is one line.

pub mod device;
pub mod error;
pub mod ptx;

pub use device::{DeviceBuffer, Gpu};
pub use error::{Error, Result};
