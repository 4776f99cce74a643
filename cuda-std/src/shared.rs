//! Shared memory, in rust-cuda's two styles: `#[address_space(shared)]
//! static mut` arrays and `shared_array![T; N]` in a kernel's body, plus
//! the launch's dynamic bytes (`dynamic_shared_mem`).
//!
//! Stock rustc cannot place a static in the shared address space, so the
//! kernel attribute lays the statics and arrays out in the block's
//! launch-sized shared memory: `[dynamic bytes, rounded up to 16][region
//! 0][region 1]...`, each region 16-byte aligned. The launch asks for the
//! dynamic bytes plus the regions' total (the registry entry's
//! `shared_bytes`); in the kernel the regions start `%dynamic_smem_size`
//! minus that total into the memory. On the emulator each block has its
//! own copy, and every access is checked like any other shared access.

use core::ops::{Deref, Index, IndexMut};

use gpu_device::check::{self, Space};

pub use crate::ptr::SharedPtr;

/// `shared_array![T; N]`: `N` `T`s of shared memory, as a [`SharedPtr`].
///
/// Supported directly in a `#[kernel]` body, which rewrites each use into
/// its own region; anywhere else it is this compile error.
#[macro_export]
macro_rules! shared_array {
    // The kernel attribute's use of the user's import, after it rewrote
    // the arrays.
    (@used) => {};
    ($($t:tt)*) => {
        ::core::compile_error!(
            "shared_array! is supported directly in a #[kernel] body: stock rustc has no address spaces, so the \
             kernel attribute places each array in the block's shared memory"
        )
    };
}

/// The size of the launch's shared memory (`%dynamic_smem_size`).
#[inline(always)]
fn dynamic_smem_size() -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let size: u32;
        // SAFETY: reading a special register.
        unsafe {
            core::arch::asm!("mov.u32 {s}, %dynamic_smem_size;", s = out(reg32) size, options(pure, nomem, nostack))
        };
        size as usize
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::shared_len()
    }
}

/// Where a kernel's shared regions start: `static_total` bytes before the
/// end of the launch's shared memory.
#[doc(hidden)]
#[inline(always)]
pub fn static_shared_base(static_total: usize) -> *mut u8 {
    // Pointer arithmetic from the shared symbol (no integer round trip),
    // so that LLVM still knows the regions are shared: `ld.shared`.
    gpu_device::shared::launch_sized_base().wrapping_add(dynamic_smem_size() - static_total)
}

/// The launch's dynamic shared memory (the bytes its launch asked for on
/// top of the kernel's own), 16-byte aligned. Every call gives the same
/// address, as in rust-cuda.
#[inline(always)]
pub fn dynamic_shared_mem<T>() -> SharedPtr<T> {
    SharedPtr(gpu_device::shared::launch_sized_base() as *mut T)
}

/// A shared `static mut` array in a kernel's body: `S[i]` and `S[i] = v`,
/// each access seen by the emulator (a compound `S[i] += v` counts as a
/// write). In a nested array (`S[i][j]`) the inner index is Rust's own,
/// bounds-checked but not seen by the emulator.
#[derive(Clone, Copy)]
pub struct SharedStatic<A> {
    base: *mut A,
}

impl<A> SharedStatic<A> {
    /// The region at `at`.
    ///
    /// # Safety
    /// `at` is a region of the launch's shared memory at least `A` long.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn at(at: *mut u8) -> Self {
        SharedStatic { base: at as *mut A }
    }
}

/// Elements larger than 16 bytes are rows of a nested array (`S[i][j]`):
/// the row is not an access, and its elements are indexed without checks.
const fn checked<T>() -> bool {
    size_of::<T>() <= 16
}

impl<T, const N: usize> Index<usize> for SharedStatic<[T; N]> {
    type Output = T;

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self, i: usize) -> &T {
        assert!(i < N, "index out of bounds: the len is {N} but the index is {i}");
        let p = (self.base as *mut T).wrapping_add(i);
        if checked::<T>() {
            check::load(Space::Shared, p, size_of::<T>());
        }
        // SAFETY: `i < N` in the region `at` was given.
        unsafe { &*p }
    }
}

impl<T, const N: usize> IndexMut<usize> for SharedStatic<[T; N]> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < N, "index out of bounds: the len is {N} but the index is {i}");
        let p = (self.base as *mut T).wrapping_add(i);
        if checked::<T>() {
            check::store_unknown(Space::Shared, p, size_of::<T>());
        }
        // SAFETY: as for `index`.
        unsafe { &mut *p }
    }
}

impl<A> Deref for SharedStatic<A> {
    type Target = A;

    /// The whole array (`S.len()`, `S.iter()`): not seen by the emulator.
    #[inline(always)]
    fn deref(&self) -> &A {
        // SAFETY: the region `at` was given.
        unsafe { &*self.base }
    }
}
