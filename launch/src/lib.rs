//! How the `gpu` crate's kernels are launched, on the host side. The
//! `gpu` crate's host build re-exports this crate as `gpu::launch`.
//!
//! Each `#[kernel]` declaration registers a [`Kernel`]: its PTX name, its
//! [`Launch`] description (block shape, shared memory, block tile, launch
//! bounds), its parameters and the emulator's entry. The registry
//! ([`registry`]) is what `build.rs`, the tests and the suite read; nothing
//! keeps a list of kernels by hand.
//!
//! A launch goes through a [`Launcher`] (the host crate's `Gpu`: a CUDA
//! device or the emulator) with the arguments the kernel's typed launcher
//! packs ([`Arg`], one per parameter, by [`KernelParam`]). [`Typed`] is
//! the same typed launch for code that picks kernels from the registry by
//! their [`Signature`].

mod args;
mod kernel;
pub mod library;

/// What generated code needs; not an API.
#[doc(hidden)]
pub use inventory;

pub use args::{Arg, KernelParam, Launcher, Signature, Typed, Value, shared_bytes};
pub use kernel::{Kernel, Param, Registered, registry};

/// A block or grid shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn x(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
    pub const fn xy(x: u32, y: u32) -> Self {
        Dim3 { x, y, z: 1 }
    }
    /// Threads in a block (or blocks in a grid) of this shape.
    pub const fn count(self) -> u32 {
        self.x * self.y * self.z
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::x(x)
    }
}

/// `(x, y)`, as `cust`'s grid and block sizes take it.
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::xy(x, y)
    }
}

/// `(x, y, z)`, as `cust`'s grid and block sizes take it.
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

impl From<[u32; 2]> for Dim3 {
    fn from([x, y]: [u32; 2]) -> Self {
        Dim3::xy(x, y)
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3 { x, y, z }
    }
}

/// A kernel's launch description, as its `#[kernel(...)]` states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Threads per block.
    pub block: Dim3,
    /// Bytes of launch-sized (dynamic) shared memory per block.
    pub shared_bytes: u32,
    /// Elements of the problem one block covers, in x (columns) and y (rows).
    pub tile: [u32; 2],
    /// CUDA's `__launch_bounds__(threads, min_blocks)`: when non-zero,
    /// `build.rs` writes `.maxntid` (the block shape) and `.minnctapersm`
    /// into the kernel's PTX, so ptxas keeps registers low enough for that
    /// many blocks per SM (2 blocks of 256 threads: at most 128 registers a
    /// thread).
    pub min_blocks_per_sm: u32,
    /// A persistent kernel: one block per SM (times `min_blocks_per_sm`),
    /// each looping over the tiles, rather than one block per tile
    /// ([`Launch::persistent_grid`]).
    pub persistent: bool,
    /// Blocks per thread-block cluster (sm_90): `1, 1, 1` for none. The
    /// blocks of a cluster run at once on one GPC, may use each other's
    /// shared memory and mbarriers, and receive TMA multicasts; `build.rs`
    /// writes the shape into the kernel's PTX (`.reqnctapercluster`), so a
    /// plain launch makes the clusters, and the grid must be a multiple of
    /// it.
    pub cluster: Dim3,
    /// A dependent launch (`dependent = true`; sm_90): the runtime lets
    /// the kernel start while the kernel ahead of it in the stream
    /// finishes (CUDA's programmatic dependent launch), once every block
    /// of that one has allowed it (`gpu::dev::grid::allow_dependents`) or
    /// exited. Its blocks set up what needs no global memory (shared
    /// memory, mbarriers, tensor maps the host wrote before) meanwhile,
    /// and every thread waits for that kernel to finish
    /// (`gpu::dev::grid::wait_for_prerequisites`) before it touches global
    /// memory; the emulator holds it to that.
    pub dependent: bool,
}

impl Launch {
    /// [`Launch::grid`], or for a persistent kernel `resident` blocks (as
    /// many as run at once) but no more than there are tiles, in x; for a
    /// clustered one a whole number of clusters (`resident` rounded down,
    /// the tiles up, at least one cluster).
    pub const fn persistent_grid(&self, cols: u32, rows: u32, resident: u32) -> Dim3 {
        let g = self.grid(cols, rows);
        if !self.persistent {
            return g;
        }
        let size = self.cluster.count();
        let tiles = (g.x * g.y).div_ceil(size) * size;
        let resident = resident / size * size;
        let blocks = if tiles < resident { tiles } else { resident };
        Dim3::xy(if blocks > size { blocks } else { size }, 1)
    }

    /// The grid that covers a `cols` x `rows` problem with the block tile.
    pub const fn grid(&self, cols: u32, rows: u32) -> Dim3 {
        Dim3::xy(cols.div_ceil(self.tile[0]), rows.div_ceil(self.tile[1]))
    }

    /// The blocks of a 1-D grid that covers `n` elements with the tile.
    pub const fn blocks(&self, n: u32) -> u32 {
        n.div_ceil(self.tile[0])
    }
}
