//! Where kernels run: [`Gpu`], a CUDA device (through cudarc) with a
//! crate's PTX loaded, or the CPU emulator running the same kernels from
//! their host build; its [`DeviceBuffer`]s; the one [`Error`] type, whose
//! message is one line.
//!
//! `Gpu` is the [`gpu_launch::Launcher`] every typed launcher takes, and
//! [`launch!`] launches by name, so a host crate of any kernel crate
//! verifies its kernels on the emulator where no GPU is:
//!
//! ```ignore
//! static PTX: &[Ptx] = lab_runtime::include_ptx!("kernels");
//! let (gpu, no_gpu) = Gpu::open_or_emulator(0, PTX)?;
//! ```

mod by_name;
pub mod error;
pub mod gpu;
pub mod ptx;
mod tma;
pub use tma::MapElement;

pub use by_name::{LaunchArg, launch_by_name, launch_kernel};
pub use error::{Error, Result};
pub use gpu::{DeviceBuffer, Gpu, POISON_BITS, check_host_fits};
pub use gpu_launch::Dim3;
pub use ptx::Ptx;
