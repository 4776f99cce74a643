//! CUDA kernels written in plain Rust.
//!
//! This crate is `no_std` and builds for two targets:
//! - `nvptx64-nvidia-cuda`: the kernels themselves, compiled to PTX by the
//!   host package's `build.rs` with rustc's own NVPTX backend;
//! - the host: the constants and launch descriptions ([`launch::Kernel`])
//!   that the host side uses, so the two can never disagree.
//!
//! [`dev`] is the device-support layer (thread indices, barriers, shared
//! memory, warp shuffles, typed global pointers). Each kernel family is one
//! module; each kernel in it teaches one idea and says so in its doc comment.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        link_llvm_intrinsics,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
// Kernel docs start with their step number ("3. Each thread ..."), which
// is a heading, not a markdown list.
#![allow(clippy::doc_lazy_continuation)]

/// Declares a kernel: on `nvptx64` an exported `extern "ptx-kernel"` entry
/// point named after the function (the name the host's [`launch::Kernel`]
/// constant gives). Its parameters are [`dev::In`], [`dev::Out`] and plain
/// scalars; its body is an `unsafe` context, each kernel's doc comment says
/// how it keeps its accesses in bounds.
#[macro_export]
macro_rules! kernel {
    ($(#[$attr:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$attr])*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
            #[allow(unused_unsafe)]
            unsafe { $body }
        }

        $(#[$attr])*
        ///
        /// (Host build: runs on the emulator, the `emu` crate.)
        ///
        /// # Safety
        /// Only the emulator may call it, inside a launch whose buffers
        /// match the parameters; it checks every access the kernel makes.
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name($($arg: $ty),*) {
            #[allow(unused_unsafe)]
            unsafe { $body }
        }

        #[cfg(not(target_arch = "nvptx64"))]
        $crate::launch::__submit! {
            $crate::launch::HostKernel {
                name: stringify!($name),
                call: |args| {
                    let mut args = args.iter();
                    let mut next = || args.next().expect("too few kernel arguments");
                    // SAFETY: the emulator checks every access the kernel makes.
                    unsafe { $name($(<$ty as $crate::launch::FromArg>::from_arg(next())),*) }
                },
            }
        }
    };
}

// The host build links std for the emulator; the kernels use core only.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

#[cfg(not(target_arch = "nvptx64"))]
pub mod checks;
pub mod dev;
pub mod lab;
pub mod launch;
pub mod reduce;
pub mod sgemm;
pub mod transpose;

/// A panic in a kernel (only a failed bounds check can cause one) traps:
/// the launch fails with `CUDA_ERROR_ILLEGAL_INSTRUCTION` on the host.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}

/// Calls `f` with every kernel the host can launch (each family's kernels,
/// and the test-only seed bugs): for `build.rs` (launch bounds) and tests.
pub fn for_each_kernel(mut f: impl FnMut(&launch::Kernel)) {
    transpose::ALL.iter().for_each(&mut f);
    for v in reduce::ALL.iter().chain(&reduce::seed_bugs::ALL) {
        [v.i32, v.f32, v.f64].iter().flatten().for_each(&mut f);
    }
    sgemm::ALL.iter().for_each(&mut f);
    lab::LAYOUT.iter().chain(&[lab::COPY_OFFSET, lab::COPY_STRIDE]).chain(&lab::BANKS).for_each(&mut f);
}
