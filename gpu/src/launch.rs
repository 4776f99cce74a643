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
}

impl Kernel {
    /// The grid that covers a `cols` x `rows` problem with this kernel's block tile.
    pub const fn grid(&self, cols: u32, rows: u32) -> Dim3 {
        Dim3::xy(cols.div_ceil(self.tile[0]), rows.div_ceil(self.tile[1]))
    }
}
