//! The types the device layer and the launcher hand the emulator: what to
//! launch, the buffers it may touch, and what each device operation is
//! (its memory space, access, shuffle and source site).

use std::panic::Location;
use std::sync::atomic::Ordering;

/// What to launch: the kernel's name (for error messages), its block and
/// grid, the bytes of launch-sized shared memory per block, and the device
/// buffers it may touch.
#[derive(Clone, Debug)]
pub struct LaunchSpec<'a> {
    pub name: &'a str,
    pub block: [u32; 3],
    pub grid: [u32; 3],
    /// Blocks per thread-block cluster (`[1, 1, 1]`: none). The blocks of a
    /// cluster run together, each with its own shared memory.
    pub cluster: [u32; 3],
    pub shared_bytes: usize,
    /// Launched to overlap the kernel ahead of it in the stream
    /// (programmatic dependent launch): every thread must pass
    /// `griddepcontrol.wait` before it touches global memory.
    pub dependent: bool,
    /// Every buffer passed to the launch: the only global memory the
    /// kernel may touch.
    pub buffers: &'a [Buffer<'a>],
    /// Record accesses for the bank-conflict and coalescing analysis
    /// (slower).
    pub analyze: bool,
    /// Check races, and reads of shared words nothing wrote (the default).
    /// Off, for runs that only verify results: bounds, barriers, warp
    /// collectives, deadlocks and the asynchronous copies' misuse are
    /// still checked, and a launch runs several times faster
    /// (`docs/sanitizers.md`).
    pub checks: bool,
}

/// A device buffer passed to a launch, named as the kernel's parameter.
#[derive(Clone, Copy, Debug)]
pub struct Buffer<'a> {
    pub name: &'a str,
    pub addr: usize,
    pub bytes: usize,
}

/// Which memory an access is to (the ISA's state spaces).
pub use gpu_isa::Space;

/// What an access does.
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    Read,
    /// A read the kernel declares may see a word nobody wrote (no
    /// uninitialized-read report).
    ReadMaybeUninit,
    /// A write of these bytes.
    Write(&'a [u8]),
    /// A write whose bytes the hook does not see (through a `&mut`).
    WriteUnknown,
    /// An atomic load (`write: false`), store or read-modify-write.
    Atomic {
        write: bool,
        order: Ordering,
    },
}

/// The shuffle a lane asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflOp {
    /// Lane `i` gets lane `i + delta` (its own past the warp).
    Down(u32),
    /// Lane `i` gets lane `i - delta` (its own below lane 0).
    Up(u32),
    /// Lane `i` gets lane `i ^ mask`.
    Xor(u32),
    /// Every lane gets lane `src`.
    Idx(u32),
    /// `shfl.sync.{mode}.b32 d|p, a, b, c, mask` exactly as the PTX ISA
    /// defines it (`mode`: 0 up, 1 down, 2 bfly, 3 idx; `c` packs the
    /// clamp and the segment mask): the lane receives the 32-bit value
    /// with the predicate in bit 32.
    Sync { mode: u32, b: u32, c: u32 },
    /// `vote.sync.ballot.b32`: every lane receives the mask of lanes whose
    /// value (bit 0) is 1.
    Ballot,
}

/// Where in the kernel source a device operation is.
pub type Site = &'static Location<'static>;
