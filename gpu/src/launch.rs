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

/// One kernel argument, as the host passes it (host builds only).
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A buffer: its address and size in bytes (the only global memory the
    /// kernel may touch).
    Buf { addr: usize, bytes: usize },
    U32(u32),
    U64(u64),
    F32(f32),
}

/// Conversion of an [`Arg`] to a kernel parameter type (the emulator's side
/// of a launch).
#[cfg(not(target_arch = "nvptx64"))]
pub trait FromArg {
    fn from_arg(arg: &Arg) -> Self;
}

#[cfg(not(target_arch = "nvptx64"))]
macro_rules! scalar_arg {
    ($($t:ty => $variant:ident),*) => {$(
        impl FromArg for $t {
            fn from_arg(arg: &Arg) -> Self {
                match arg {
                    Arg::$variant(v) => *v,
                    other => panic!("expected {}, got {other:?}", stringify!($t)),
                }
            }
        }
    )*};
}
#[cfg(not(target_arch = "nvptx64"))]
scalar_arg!(u32 => U32, u64 => U64, f32 => F32);

/// A kernel as the host build registers it (`kernel!` does this).
#[cfg(not(target_arch = "nvptx64"))]
pub struct HostKernel {
    pub name: &'static str,
    pub call: fn(&[Arg]),
}

#[cfg(not(target_arch = "nvptx64"))]
inventory::collect!(HostKernel);

/// The kernel the host build registered under `name`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn host_kernel(name: &str) -> Option<&'static HostKernel> {
    inventory::iter::<HostKernel>.into_iter().find(|k| k.name == name)
}

#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub use inventory::submit as __submit;
