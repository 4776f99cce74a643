//! rust-cuda's `cuda_std`, on stock nightly rustc.
//!
//! A kernel crate written for rust-cuda builds unchanged when its
//! `Cargo.toml` maps the name `cuda_std` to this package:
//!
//! ```toml
//! cuda_std = { package = "lab-cuda-std", path = "../../cuda-std" }
//! ```
//!
//! Its `#[kernel] pub unsafe fn`s then compile to PTX with rustc's own
//! NVPTX backend (no LLVM 7, no CUDA toolkit; see `cuda-builder`), and run
//! on the CPU emulator too, where every access through a kernel parameter
//! or shared memory is checked for bounds, races and uninitialized reads,
//! and every barrier and warp operation for divergence.
//!
//! What is here, with rust-cuda's signatures: [`prelude`], [`kernel`],
//! [`thread`] (indices, `index_1d`/`2d`/`3d`, `sync_threads`, fences),
//! [`warp`] (`warp_shuffle_{down,up,xor,idx}` with width and predicate,
//! `lane_id`, `activemask`, `sync_warp`, votes), [`shared`]
//! (`shared_array!`, `dynamic_shared_mem`) and
//! [`address_space`]`(shared)` statics, [`atomic`] (the float
//! atomics of each scope and the mid-level functions, on global and shared
//! memory), and [`float`] ([`GpuFloat`] and [`FloatExt`], from PTX
//! instructions and our own polynomials, each with a measured ulp bound).
//! What is not (`println!`, the allocator, the libdevice functions of
//! [`FloatExt`] listed there, OptiX)
//! is a compile error naming it: an unresolved item, or for the macros a
//! message saying so.
//!
//! # Differences a kernel can see
//!
//! - Kernel parameters keep rust-cuda's ABI (`&[T]` is an address and a
//!   length), but in the body they are checked handles: `&[T]` is a
//!   [`__private::GlobalSlice`] (`a[i]`, `a.len()`, and a real `&[T]`
//!   through `Deref` and `AsRef<[T]>`, for foreign `no_std` code; the
//!   emulator does not see accesses through that `&[T]`), `*mut T` a
//!   [`__private::DevicePtr`] (`p.add(i)`, `*p = v`, `p.read()`,
//!   `p.write(v)`). Code that passes them where a raw pointer
//!   or `&[T]` is expected needs `.as_ptr()` or `&*a`: a compile error
//!   says where.
//! - `shared_array![T; N]` and `dynamic_shared_mem::<T>()` give a
//!   [`__private::SharedPtr`], used like `*mut T`.
//! - Shared statics and `shared_array!` are supported at the top of a
//!   `#[kernel]` body; in other functions they are a compile error.

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch, stdarch_nvptx))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod atomic;
pub mod float;
mod params;
mod ptr;
pub mod shared;
pub mod thread;
pub mod warp;

pub use float::{FloatExt, GpuFloat};
/// The `glam` crate (no std, `libm` floats, CUDA-aligned vectors), as
/// rust-cuda re-exports it.
pub use glam;
/// `#[address_space(shared)]` on a `static mut` array at the top of a
/// kernel's body.
pub use gpu_macros::address_space;
/// The `half` crate and its 16-bit floats, as rust-cuda re-exports them.
pub use half::{self, bf16, f16};
/// The `vek` crate (no std, `libm` floats), as rust-cuda re-exports it.
pub use vek;

/// `#[kernel]` on a `pub unsafe fn`: the PTX entry, the registry entry, the
/// emulator's entry and a typed launcher (see `gpu-macros`).
pub use gpu_macros::cuda_kernel as kernel;

/// What `use cuda_std::prelude::*` brings, as in rust-cuda, less the
/// `alloc` types (no allocator here).
pub mod prelude {
    pub use crate::f16;
    pub use crate::kernel;
    pub use crate::thread;
    pub use crate::{print, println};
    pub use core::{assert_eq, assert_ne};
}

/// `cuda_std::println!`: not supported (no `vprintf` here).
#[macro_export]
macro_rules! println {
    ($($t:tt)*) => {
        ::core::compile_error!(
            "cuda_std::println! is not supported by lab-cuda-std: kernels cannot print here; check results on the \
             host, or run on the emulator, which reports the faulting line"
        )
    };
}

/// `cuda_std::print!`: not supported (no `vprintf` here).
#[macro_export]
macro_rules! print {
    ($($t:tt)*) => {
        ::core::compile_error!("cuda_std::print! is not supported by lab-cuda-std: kernels cannot print here")
    };
}

/// A panic in a kernel (a failed bounds check, an assertion) traps: the
/// launch fails on the host, and the emulator names the line.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}

/// What `#[kernel]`'s expansion names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::params::{ByValue, GlobalSlice};
    pub use crate::ptr::{DeviceConstPtr, DevicePtr, SharedPtr};
    pub use crate::shared::{SharedStatic, static_shared_base};

    /// The paths the common `#[kernel]` expansion takes.
    pub mod gpu {
        pub use gpu_device as dev;
        #[cfg(not(target_arch = "nvptx64"))]
        pub use gpu_launch as launch;
        #[cfg(not(target_arch = "nvptx64"))]
        pub mod __private {
            pub use gpu_launch::inventory;
        }
    }
}
