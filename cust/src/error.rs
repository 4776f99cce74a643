//! `CudaError` and `CudaResult`, as cust has them: one variant per CUDA
//! driver error code, plus three of this crate's own that carry the
//! sentence a user needs (no GPU and no kernels for the emulator, a launch
//! whose arguments do not match the kernel, and what the emulator's
//! checks found).

use std::fmt;

use cudarc::driver::DriverError;

pub type CudaResult<T> = Result<T, CudaError>;

/// The result of an explicit `drop`: on failure, the error and the value.
pub type DropResult<T> = Result<(), (CudaError, T)>;

/// An error from the CUDA driver (the variants and codes of `CUresult`) or
/// from this crate's emulator path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaError {
    InvalidValue,
    OutOfMemory,
    NotInitialized,
    Deinitialized,
    ProfilerDisabled,
    ProfilerNotInitialized,
    ProfilerAlreadyStarted,
    ProfilerAlreadyStopped,
    NoDevice,
    InvalidDevice,
    InvalidImage,
    InvalidContext,
    ContextAlreadyCurrent,
    MapFailed,
    UnmapFailed,
    ArrayIsMapped,
    AlreadyMapped,
    NoBinaryForGpu,
    AlreadyAcquired,
    NotMapped,
    NotMappedAsArray,
    NotMappedAsPointer,
    EccUncorrectable,
    UnsupportedLimit,
    ContextAlreadyInUse,
    PeerAccessUnsupported,
    InvalidPtx,
    InvalidGraphicsContext,
    NvlinkUncorrectable,
    UnsupportedPtxVersion,
    InvalidSource,
    FileNotFound,
    SharedObjectSymbolNotFound,
    SharedObjectInitFailed,
    OperatingSystemError,
    InvalidHandle,
    NotFound,
    NotReady,
    IllegalAddress,
    LaunchOutOfResources,
    LaunchTimeout,
    LaunchIncompatibleTexturing,
    PeerAccessAlreadyEnabled,
    PeerAccessNotEnabled,
    PrimaryContextActive,
    ContextIsDestroyed,
    AssertError,
    TooManyPeers,
    HostMemoryAlreadyRegistered,
    HostMemoryNotRegistered,
    HardwareStackError,
    IllegalInstruction,
    MisalignedAddress,
    InvalidAddressSpace,
    InvalidProgramCounter,
    LaunchFailed,
    NotPermitted,
    NotSupported,
    UnknownError,
    InvalidMemoryAllocation,
    /// No GPU, and nothing for the emulator to run: the message says why
    /// and what to add (the kernel crate as a dependency, named once).
    NoGpu(&'static str),
    /// The emulator's check of a launch's arguments against the kernel's
    /// declaration failed: the message names the parameter.
    InvalidLaunch(&'static str),
    /// The emulator stopped a kernel: an out-of-bounds access, a race, a
    /// divergent barrier, an uninitialized shared read, each with its
    /// `file:line`.
    Emulator(&'static str),
}

/// The driver codes, in `CUresult`'s numbering, of the variants that have one.
const CODES: &[(CudaError, u32)] = {
    use CudaError::*;
    &[
        (InvalidValue, 1),
        (OutOfMemory, 2),
        (NotInitialized, 3),
        (Deinitialized, 4),
        (ProfilerDisabled, 5),
        (ProfilerNotInitialized, 6),
        (ProfilerAlreadyStarted, 7),
        (ProfilerAlreadyStopped, 8),
        (NoDevice, 100),
        (InvalidDevice, 101),
        (InvalidImage, 200),
        (InvalidContext, 201),
        (ContextAlreadyCurrent, 202),
        (MapFailed, 205),
        (UnmapFailed, 206),
        (ArrayIsMapped, 207),
        (AlreadyMapped, 208),
        (NoBinaryForGpu, 209),
        (AlreadyAcquired, 210),
        (NotMapped, 211),
        (NotMappedAsArray, 212),
        (NotMappedAsPointer, 213),
        (EccUncorrectable, 214),
        (UnsupportedLimit, 215),
        (ContextAlreadyInUse, 216),
        (PeerAccessUnsupported, 217),
        (InvalidPtx, 218),
        (InvalidGraphicsContext, 219),
        (NvlinkUncorrectable, 220),
        (UnsupportedPtxVersion, 222),
        (InvalidSource, 300),
        (FileNotFound, 301),
        (SharedObjectSymbolNotFound, 302),
        (SharedObjectInitFailed, 303),
        (OperatingSystemError, 304),
        (InvalidHandle, 400),
        (NotFound, 500),
        (NotReady, 600),
        (IllegalAddress, 700),
        (LaunchOutOfResources, 701),
        (LaunchTimeout, 702),
        (LaunchIncompatibleTexturing, 703),
        (PeerAccessAlreadyEnabled, 704),
        (PeerAccessNotEnabled, 705),
        (PrimaryContextActive, 708),
        (ContextIsDestroyed, 709),
        (AssertError, 710),
        (TooManyPeers, 711),
        (HostMemoryAlreadyRegistered, 712),
        (HostMemoryNotRegistered, 713),
        (HardwareStackError, 714),
        (IllegalInstruction, 715),
        (MisalignedAddress, 716),
        (InvalidAddressSpace, 717),
        (InvalidProgramCounter, 718),
        (LaunchFailed, 719),
        (NotPermitted, 800),
        (NotSupported, 801),
        (UnknownError, 999),
        (InvalidMemoryAllocation, 100_100),
    ]
};

impl CudaError {
    /// The driver's code (`CUresult`) for this error; this crate's own
    /// variants have none.
    pub fn code(&self) -> Option<u32> {
        CODES.iter().find(|(e, _)| e == self).map(|&(_, c)| c)
    }

    /// The variant for the driver's code `code` (`UnknownError` for one
    /// cust does not name).
    pub fn from_code(code: u32) -> CudaError {
        CODES.iter().find(|&&(_, c)| c == code).map_or(CudaError::UnknownError, |&(e, _)| e)
    }

    /// A message kept for the life of the program (errors are rare; each
    /// costs its string).
    pub(crate) fn leak(message: String) -> &'static str {
        Box::leak(message.into_boxed_str())
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::NoGpu(m) | CudaError::InvalidLaunch(m) => f.write_str(m),
            CudaError::Emulator(m) => write!(f, "emulator: {m}"),
            CudaError::InvalidMemoryAllocation => f.write_str("invalid memory allocation"),
            other => write!(f, "{other:?} (CUDA error {})", other.code().unwrap_or(999)),
        }
    }
}

impl std::error::Error for CudaError {}

impl From<DriverError> for CudaError {
    fn from(error: DriverError) -> Self {
        CudaError::from_code(error.0 as u32)
    }
}

/// Converts a driver result into a `CudaResult`.
pub trait ToResult<T> {
    fn to_result(self) -> CudaResult<T>;
}

impl<T> ToResult<T> for Result<T, DriverError> {
    fn to_result(self) -> CudaResult<T> {
        self.map_err(CudaError::from)
    }
}
