//! The device-support layer: the small vocabulary every kernel is written in.
//!
//! - [`thread`]: thread, block and grid indices, [`thread::sync_threads`];
//! - [`mem`]: typed global-memory pointers ([`In`], [`Out`]) that kernels
//!   take as parameters, with scalar and 16-byte vector accesses;
//! - [`shared`]: typed views over the block's launch-sized shared memory;
//! - [`warp`]: warp shuffles;
//! - [`copy`]: asynchronous global-to-shared copies (`cp.async`).
//!
//! On `nvptx64` each function is one or two PTX instructions. On the host
//! only the types exist (for the constants and signatures).

pub mod copy;
pub mod math;
pub mod mem;
pub mod shared;
pub mod thread;
pub mod warp;

pub use mem::{In, Out};
pub use shared::{SharedArray, SharedTile};
#[allow(unused_imports)]
pub use thread::*;
