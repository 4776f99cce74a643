//! CUDA kernels written in plain Rust.
//!
//! This crate is `no_std` and builds for two targets:
//! - `nvptx64-nvidia-cuda`: the kernels themselves, compiled to PTX by the
//!   host package's `build.rs` with rustc's own NVPTX backend;
//! - the host: the same kernels, run by the CPU emulator (the `emu`
//!   crate), with each kernel's registry entry and typed launcher (their
//!   types are the `gpu-launch` crate's, re-exported as [`launch`]).
//!
//! [`dev`] is the device layer (thread indices, barriers, shared memory,
//! warp shuffles, checked and unchecked global memory, `cp.async`). Each
//! kernel family is one module; each kernel in it is one `#[kernel]`
//! function that teaches one idea and says so in its doc comment.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]
// `#[inline(always)]` on the closures of a warp-specialized kernel's roles
// (`dev::roles::specialize`).
#![feature(stmt_expr_attributes)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// Kernel docs start with their step number ("3. Each thread ..."), which
// is a heading, not a markdown list.
#![allow(clippy::doc_lazy_continuation)]

// `#[kernel]` names this crate `::gpu`, here as in any other crate.
extern crate self as gpu;

// The host build links std for the emulator and the registry; the kernels
// use core only.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub use gpu_macros::kernel;

/// The device layer (the `gpu-device` crate).
pub use gpu_device as dev;
/// The registry and the types of typed launches (host builds only; the
/// `gpu-launch` crate).
#[cfg(not(target_arch = "nvptx64"))]
pub use gpu_launch as launch;

// The sm_90a PTX is built in four parts at once (`cpu/build.rs`), most
// of it the GEMM library's `wgmma` instances: `"dense"` (bf16, f16 and
// tf32), `"fp8"` (E4M3 and E5M2), `"moe"` (the grouped and block-scaled
// kernels), and `"rest"`, every other kernel. Each part leaves out what
// the others hold (`ptx_parts` is set in each), so that an edit rebuilds
// only the parts that read the file, and the parts share the cores. The
// host and the other architectures build everything.
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod attention;
pub mod gemm;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod hazards;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod lab;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod reduce;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod scale;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod sgemm;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod tensor;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod transpose;

/// What generated code needs; not an API.
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub mod __private {
    pub use gpu_launch::inventory;
}

/// A panic in a kernel (only a failed bounds check can cause one) traps:
/// the launch fails with `CUDA_ERROR_ILLEGAL_INSTRUCTION` on the host.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}
