//! One error type whose `Display` is one line a user can act on.

use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub enum Error {
    /// `libcuda.so` could not be loaded: no NVIDIA driver on this machine.
    NoDriver,
    /// The driver is there but reports no device with this index.
    NoDevice { index: usize, count: usize },
    /// A CUDA call failed.
    Cuda { call: &'static str, error: cudarc::driver::DriverError },
    /// No embedded PTX suits the device.
    NoPtxFor { major: i32, minor: i32, built: String },
    /// The PTX the device runs lacks a kernel the host expects: `elsewhere`
    /// names the embedded architectures that have it (empty: none does).
    MissingKernel { name: &'static str, arch: &'static str, device: String, elsewhere: String },
    /// A problem size or argument the kernels cannot take.
    InvalidInput(String),
    /// The problem does not fit in device memory.
    OutOfMemory { needed: usize, free: usize },
    /// A kernel's result differs from the host reference.
    Mismatch(String),
    /// The emulator stopped a kernel (out of bounds, race, deadlock, ...).
    Emulator(emu::EmuError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => {
                write!(f, "no GPU found: the CUDA driver (libcuda.so) could not be loaded on this machine")
            }
            Error::NoDevice { index, count: 0 } => {
                write!(f, "no GPU found: the CUDA driver reports no devices (asked for device {index})")
            }
            Error::NoDevice { index, count } => write!(
                f,
                "no device {index}: the CUDA driver reports {count} device(s), indices 0..{}",
                count - 1
            ),
            Error::Cuda { call, error } => write!(f, "CUDA error in {call}: {error:?}"),
            Error::NoPtxFor { major, minor, built } => {
                write!(f, "no embedded PTX runs on compute capability {major}.{minor} (built for: {built})")
            }
            Error::MissingKernel { name, arch, device, elsewhere } if elsewhere.is_empty() => write!(
                f,
                "the {arch} PTX {device} runs has no kernel named {name}: was the kernel crate rebuilt?"
            ),
            Error::MissingKernel { name, arch, device, elsewhere } => write!(
                f,
                "{name} needs {elsewhere} (it is compiled for that only); {device} runs the {arch} PTX"
            ),
            Error::InvalidInput(message) => f.write_str(message),
            Error::OutOfMemory { needed, free } => write!(
                f,
                "the problem needs {} of device memory but only {} is free",
                human_bytes(*needed),
                human_bytes(*free)
            ),
            Error::Mismatch(message) => write!(f, "verification failed: {message}"),
            Error::Emulator(e) => write!(f, "emulator: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The exit code a binary ends with for this error: 2 for a user's
    /// mistake (bad input, a problem that does not fit, an absent device
    /// index), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::InvalidInput(_) | Error::OutOfMemory { .. } => 2,
            Error::NoDevice { count, .. } if *count > 0 => 2,
            _ => 1,
        }
    }
}

/// Attaches the name of the failing call to a driver error.
pub trait CudaContext<T> {
    fn during(self, call: &'static str) -> Result<T>;
}

impl<T> CudaContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn during(self, call: &'static str) -> Result<T> {
        self.map_err(|error| Error::Cuda { call, error })
    }
}

/// `1.5 GiB`, `256 MiB`, `12 KiB`, `7 B`.
pub fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}
