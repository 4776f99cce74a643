//! A labelled suite of small kernels for race and barrier checkers: the
//! emulator's sanitizer is asserted against their labels in CI, and the GPU
//! run puts the same kernels under compute-sanitizer's tools to show which
//! tool catches what.
//!
//! They are written in the spirit of public suites: GPUVerify's testsuite
//! (races on neighbours, barriers under `tid == 3`), NVIDIA's
//! compute-sanitizer samples (a barrier some threads skip in a loop's last
//! iteration), GPURepair's bugged kernels (reductions and scans with a
//! barrier removed). Each submodule is one verdict, which is the label of
//! every kernel in it:
//!
//! - [`race_shared`]: a data race in shared memory;
//! - [`race_global`]: a data race in global memory, within a block or
//!   across blocks;
//! - [`benign`]: threads write the same value to one word. Our policy, as
//!   GPUVerify's by default: not reported;
//! - [`divergent`]: a barrier (`sync_threads`) or warp barrier
//!   (`sync_warp`) that not every thread it names reaches;
//! - [`uninit`]: a read of a shared-memory word no thread of the block
//!   wrote;
//! - [`clean`]: correct, including tricky cases (a barrier under a
//!   block-uniform condition, one barrier per step of a double buffer, an
//!   exit after the last barrier, a fence-and-atomic ticket).
//!
//! Every kernel takes `(a, b)`, two buffers of [`WORDS`] `u32`s with
//! `a[i] = i` and `b` zero at launch, and runs as [`BLOCKS`] blocks. None
//! hangs a GPU or leaves its buffers, so compute-sanitizer can run each.

pub mod benign;
pub mod clean;
pub mod divergent;
pub mod race_global;
pub mod race_shared;
pub mod uninit;

/// `u32`s in each of a hazard kernel's two buffers.
pub const WORDS: usize = 4096;

/// Blocks in a hazard kernel's grid: two, so that races across blocks can
/// happen.
pub const BLOCKS: u32 = 2;
