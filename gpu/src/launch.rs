//! Launch descriptions shared by the kernels and the host.
//!
//! Each kernel has a [`Kernel`] constant next to it: its PTX name, its block
//! shape, the dynamic shared memory it needs and the block tile (the part of
//! the problem one block covers). The host derives the grid from the problem
//! size and the block tile, and passes exactly `shared_bytes` at launch.

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
    /// Threads in a block of this shape.
    pub const fn count(self) -> u32 {
        self.x * self.y * self.z
    }
}

/// How a kernel is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The symbol in the PTX (`.entry` name).
    pub name: &'static str,
    /// Threads per block.
    pub block: Dim3,
    /// Bytes of launch-sized (dynamic) shared memory per block.
    pub shared_bytes: u32,
    /// Elements of the problem one block covers, in x (columns) and y (rows).
    pub tile: [u32; 2],
    /// CUDA's `__launch_bounds__(threads, min_blocks)`: when non-zero,
    /// `build.rs` writes `.maxntid` (the block shape) and `.minnctapersm`
    /// into this kernel's PTX, so ptxas keeps registers low enough for that
    /// many blocks per SM (e.g. 2 blocks of 256 threads: at most 128
    /// registers a thread). Rust has no attribute for it.
    pub min_blocks_per_sm: u32,
}

impl Kernel {
    /// A kernel with no launch bounds.
    pub const fn new(name: &'static str, block: Dim3, shared_bytes: u32, tile: [u32; 2]) -> Self {
        Kernel { name, block, shared_bytes, tile, min_blocks_per_sm: 0 }
    }

    /// The same kernel asking for at least `blocks` resident blocks per SM.
    pub const fn min_blocks(self, blocks: u32) -> Self {
        Kernel { min_blocks_per_sm: blocks, ..self }
    }

    /// The PTX performance directives for this kernel (empty when none).
    pub fn ptx_directives(&self) -> Option<(Dim3, u32)> {
        (self.min_blocks_per_sm > 0).then_some((self.block, self.min_blocks_per_sm))
    }

    /// The grid that covers a `cols` x `rows` problem with this kernel's block tile.
    pub const fn grid(&self, cols: u32, rows: u32) -> Dim3 {
        Dim3::xy(cols.div_ceil(self.tile[0]), rows.div_ceil(self.tile[1]))
    }
}
