//! rust-cuda's `cust` host API over cudarc: the same module paths and
//! names, so that a host program written for cust builds with one line of
//! its `Cargo.toml` changed:
//!
//! ```toml
//! cust = { package = "lab-cust", path = "../kernel-lab/cust" }
//! ```
//!
//! On a GPU every call is the CUDA driver call cust makes (`cuMemAlloc`,
//! `cuModuleLoadData`, `cuOccupancyMaxPotentialBlockSize`,
//! `cuLaunchKernel`, ...). Without one, where the program links its kernel
//! crate's host build (a dependency named once, `use kernels as _;`),
//! [`quick_init`] opens the CPU emulator instead: [`Module::from_ptx`]
//! finds the PTX's kernels by name among the linked ones, and every
//! `launch!` runs them with the emulator's checks (bounds, races,
//! barriers, uninitialized shared reads), its arguments first checked
//! against the kernel's declaration. Without either, `quick_init` is one
//! [`CudaError::NoGpu`] saying what to add.
//!
//! [`Module::from_ptx`]: module::Module::from_ptx
//! [`CudaError::NoGpu`]: error::CudaError::NoGpu

// `::cust` in what the derive generates, inside this crate too.
extern crate self as cust;

mod backend;
pub mod context;
pub mod device;
pub mod error;
pub mod event;
pub mod function;
mod library;
pub mod memory;
pub mod module;
pub mod prelude;
pub mod stream;
pub mod util;

pub use lab_cust_derive::DeviceCopy;

use context::Context;
use device::Device;
use error::CudaResult;

bitflags::bitflags! {
    /// Flags for [`init`]: none are defined, as in CUDA.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct CudaFlags: u32 {
        #[doc(hidden)]
        const _ZERO = 0;
    }
}

/// `cuInit`: the CUDA driver where it sees a device; without one, the CPU
/// emulator where a kernel crate's host build is linked (said in one line
/// on stderr); without either, [`error::CudaError::NoGpu`].
pub fn init(_flags: CudaFlags) -> CudaResult<()> {
    backend::init().map(drop)
}

/// Initializes CUDA (or the emulator), and makes a context on device 0:
/// keep it alive while the program uses the device.
#[must_use = "The CUDA Context must be kept alive or errors will be issued for any CUDA function that is run"]
pub fn quick_init() -> CudaResult<Context> {
    init(CudaFlags::empty())?;
    let device = Device::get_device(0)?;
    Context::new(device)
}

/// Whether [`init`] chose the CPU emulator (no GPU). Not in cust: for a
/// program that prints where it ran, or skips timing there.
pub fn is_emulator() -> bool {
    backend::is_emulator().unwrap_or(false)
}

/// The CUDA version the driver supports (`cuDriverGetVersion`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaApiVersion {
    version: i32,
}

impl CudaApiVersion {
    /// The driver's version; `0.0` on the emulator.
    pub fn get() -> CudaResult<CudaApiVersion> {
        if !backend::cuda_driver()? {
            return Ok(CudaApiVersion { version: 0 });
        }
        let mut version = 0;
        // SAFETY: writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(error::CudaError::from)?;
        Ok(CudaApiVersion { version })
    }

    pub fn major(self) -> i32 {
        self.version / 1000
    }

    pub fn minor(self) -> i32 {
        (self.version % 1000) / 10
    }
}
