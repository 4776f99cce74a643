//! The runtime layer: where kernels run (the `lab-runtime` crate), with
//! the PTX `build.rs` compiled from `gpu/`.
//!
//! - [`device`]: [`Gpu`], a CUDA device with a PTX module loaded or the
//!   CPU emulator, and its [`DeviceBuffer`]s; `Gpu` is the `gpu` crate's
//!   [`gpu::launch::Launcher`], so every typed launcher runs on either;
//! - [`ptx`]: the PTX `build.rs` compiled, one per architecture;
//! - [`error`]: the one error type, whose message is one line.

pub mod ptx;

pub use lab_runtime::{DeviceBuffer, Error, Gpu, Result, device, error};

/// Opens CUDA device `index` with our kernels' PTX loaded.
pub fn open(index: usize) -> Result<Gpu> {
    Gpu::open(index, ptx::ARCHS)
}
