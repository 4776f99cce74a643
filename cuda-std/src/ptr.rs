//! Checked pointers: what rust-cuda's raw pointers become in a kernel's
//! body, used the same way (`p.add(i)`, `*p = v`, `p.read()`,
//! `p.write(v)`), each access seen by the emulator on the host and a plain
//! load or store on the GPU.
//!
//! Like the raw pointers they replace, they trust the kernel. Every way to
//! make a new address (`add`, `offset`, `wrapping_add`) is `unsafe`, and
//! the handles exist only as kernel parameters and as shared memory the
//! kernel attribute hands out; but `*p` and `*p = v` go through `Deref` and
//! `DerefMut`, which are safe functions: a kernel that copies a handle and
//! holds two `&mut *p` at once is wrong as it would be with rust-cuda's raw
//! pointers, and the compiler does not stop it. That is the price of
//! compiling rust-cuda's `*p = v` unchanged; our own device layer (`In`,
//! `Out`, `Slice`) has no such hole.

use core::ops::{Deref, DerefMut};

use gpu_device::check::{self, Space};

macro_rules! pointer {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $mem:expr) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy)]
        pub struct $name<T>(pub(crate) $raw);

        impl<T> $name<T> {
            /// `ptr.add(count)`.
            ///
            /// # Safety
            /// As for `pointer::add`: the result stays in the buffer.
            #[inline(always)]
            pub unsafe fn add(self, count: usize) -> Self {
                // SAFETY: the caller's contract.
                Self(unsafe { self.0.add(count) })
            }

            /// `ptr.offset(count)`.
            ///
            /// # Safety
            /// As for `pointer::offset`.
            #[inline(always)]
            pub unsafe fn offset(self, count: isize) -> Self {
                // SAFETY: the caller's contract.
                Self(unsafe { self.0.offset(count) })
            }

            /// `ptr.wrapping_add(count)`.
            ///
            /// # Safety
            /// The result is only dereferenced where it is in the buffer
            /// (the handle's `Deref` cannot check that).
            #[inline(always)]
            pub unsafe fn wrapping_add(self, count: usize) -> Self {
                Self(self.0.wrapping_add(count))
            }

            #[inline(always)]
            pub fn is_null(self) -> bool {
                self.0.is_null()
            }

            /// The raw pointer (unchecked from here on).
            #[inline(always)]
            pub fn as_ptr(self) -> $raw {
                self.0
            }

            /// `ptr.read()`, checked.
            ///
            /// # Safety
            /// As for `pointer::read`.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn read(self) -> T {
                check::load($mem, self.0, size_of::<T>());
                // SAFETY: the caller's contract.
                unsafe { self.0.read() }
            }
        }

        impl<T> Deref for $name<T> {
            type Target = T;

            /// `*p`, read, checked by the emulator.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn deref(&self) -> &T {
                check::load($mem, self.0, size_of::<T>());
                // SAFETY: the kernel's own address, as with rust-cuda's raw
                // pointer (see the module documentation).
                unsafe { &*self.0 }
            }
        }
    };
}

/// The writes of a `*mut T`-like pointer.
macro_rules! writable {
    ($name:ident, $mem:expr) => {
        impl<T> $name<T> {
            /// `ptr.write(value)`, checked.
            ///
            /// # Safety
            /// As for `pointer::write`.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub unsafe fn write(self, value: T) {
                // Not `check::store`: `T` may have padding, whose bytes
                // must not be read.
                check::store_unknown($mem, self.0, size_of::<T>());
                // SAFETY: the caller's contract.
                unsafe { self.0.write(value) }
            }
        }

        impl<T> DerefMut for $name<T> {
            /// `*p = v` (and `&mut *p`): a write, checked by the emulator.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn deref_mut(&mut self) -> &mut T {
                check::store_unknown($mem, self.0, size_of::<T>());
                // SAFETY: as for `deref`.
                unsafe { &mut *self.0 }
            }
        }
    };
}

pointer!(
    /// `*mut T`: a buffer the kernel writes. `*p.add(i) = v`, `p.write(v)`.
    DevicePtr,
    *mut T,
    Space::Global
);
writable!(DevicePtr, Space::Global);

pointer!(
    /// `*const T`: a buffer the kernel reads.
    DeviceConstPtr,
    *const T,
    Space::Global
);

pointer!(
    /// A pointer into shared memory, what `shared_array!` and
    /// `dynamic_shared_mem` give: used like rust-cuda's `*mut T`.
    SharedPtr,
    *mut T,
    Space::Shared
);
writable!(SharedPtr, Space::Shared);

impl<T> SharedPtr<T> {
    /// The region at `at`.
    ///
    /// # Safety
    /// `at` is a region of the launch's shared memory.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn at(at: *mut u8) -> Self {
        SharedPtr(at as *mut T)
    }

    #[inline(always)]
    pub fn cast<U>(self) -> SharedPtr<U> {
        SharedPtr(self.0 as *mut U)
    }
}
