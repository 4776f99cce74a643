//! The runtime layer: where kernels run (the `lab-runtime` crate), with
//! the PTX `build.rs` compiled from `gpu/`.
//!
//! - [`gpu`](mod@gpu): [`Gpu`], a CUDA device with a PTX module loaded or the
//!   CPU emulator, and its [`DeviceBuffer`]s; `Gpu` is the `gpu` crate's
//!   `gpu::launch::Launcher`, so every typed launcher runs on either;
//! - [`ptx`]: the PTX `build.rs` compiled, one per architecture;
//! - [`error`]: the one error type, whose message is one line;
//! - [`Unread`]: what a launch passes for a buffer it does not read.

pub mod ptx;
mod unread;

pub use lab_runtime::{DeviceBuffer, Error, Gpu, Result, check_host_fits, error, gpu};
pub use unread::Unread;

/// Opens CUDA device `index` with our kernels' PTX loaded.
pub fn open(index: usize) -> Result<Gpu> {
    Gpu::open(index, ptx::ARCHS)
}

/// Opens CUDA device `index`, or on a machine with no GPU (no driver, or
/// no device) the CPU emulator, which is device 0 alone, with the reason
/// there was no GPU. Any other failure, or a device index the machine
/// does not have, is an error.
pub fn open_or_emulate(index: usize) -> Result<(Gpu, Option<Error>)> {
    Gpu::open_or_emulator(index, ptx::ARCHS)
}
