//! The handles a rust-cuda kernel's parameters become in its body: same
//! ABI as rust-cuda's (`&[T]` is an address and a length, `*mut T` and
//! `*const T` an address), same use, but every access goes through the
//! emulator's checks on the host. On the GPU each compiles to the plain
//! load or store.
//!
//! The pointers are in [`crate::ptr`].

use core::ops::{Deref, Index};

use gpu_device::Slice;
use gpu_device::check::{self, Space};

/// `&[T]`: an input buffer and its length, the device layer's checked
/// [`Slice`] with what rust-cuda code does with a slice: `a[i]` (bounds-
/// checked, seen by the emulator) and `Deref` to the `&[T]` itself.
#[derive(Clone, Copy)]
pub struct GlobalSlice<T>(Slice<T>);

impl<T: Copy> GlobalSlice<T> {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.0.as_ptr()
    }

    /// Element `i`, or `None` past the end.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: usize) -> Option<T> {
        self.0.get(i)
    }
}

impl<T: Copy> Index<usize> for GlobalSlice<T> {
    type Output = T;

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self, i: usize) -> &T {
        let len = self.len();
        assert!(i < len, "index out of bounds: the len is {len} but the index is {i}");
        let p = self.as_ptr().wrapping_add(i);
        check::load(Space::Global, p, size_of::<T>());
        // SAFETY: the launch passed `len` elements at the slice's address
        // (the kernel ABI); `i < len`.
        unsafe { &*p }
    }
}

impl<T: Copy> Deref for GlobalSlice<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        if self.is_empty() {
            return &[];
        }
        // SAFETY: as for `index`: `len` elements at the slice's address.
        unsafe { core::slice::from_raw_parts(self.as_ptr(), self.len()) }
    }
}

/// `&[T]` for code written against slices (a crates.io `no_std` crate's
/// `fn f(data: impl AsRef<[u8]>)`), as `Deref` gives `&*a`.
///
/// What the emulator sees through it: nothing. Accesses through the plain
/// `&[T]` bypass the device layer's hooks: their bounds are Rust's own
/// (an index past the end panics, which traps on the GPU and names the
/// line on the emulator), but the emulator records no access, so it
/// reports no race and no uninitialized read on them. Inputs are read
/// only, so two kernels' reads never race; a race needs a writer, which
/// goes through `*mut T` and is seen.
impl<T: Copy> AsRef<[T]> for GlobalSlice<T> {
    #[inline(always)]
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T> gpu_device::SliceParam for GlobalSlice<T> {
    type Elem = T;

    unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        // SAFETY: the caller's contract, forwarded.
        GlobalSlice(unsafe { Slice::from_raw_parts(ptr, len) })
    }
}

/// A parameter passed by value that is not one of the scalars a launch
/// types (`u32`, `i32`, `u64`, `i64`, `usize`, `f32`, `f64`): a
/// `glam::Vec3`, a `Mat4`, a struct of plain fields. The same bytes as the
/// value (one PTX parameter of its size and alignment); `#[kernel]` binds
/// the value back to its name, as its own type, first in the body. On the
/// emulator it passes as its bytes, up to 64.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct ByValue<T>(T);

impl<T: Copy> ByValue<T> {
    #[inline(always)]
    pub fn get(self) -> T {
        self.0
    }
}

/// On the host each handle launches as the device layer's parameter of the
/// same kind: `&[T]` as a `Slice<T>`, `*mut T` as an `Out<T>`, `*const T`
/// as an `In<T>`.
#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{ByValue, GlobalSlice};
    use crate::ptr::{DeviceConstPtr, DevicePtr};
    use gpu_device::{In, Out, Slice};
    use gpu_launch::{Arg, KernelParam, Launcher, Value};

    impl<T: Copy + 'static> KernelParam for ByValue<T> {
        type Host<'a, R: Launcher + ?Sized> = T;
        fn arg<R: Launcher + ?Sized>(host: &T) -> Arg {
            Arg::Value(Value::of(host))
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            match arg {
                // SAFETY: packed by `arg` from a `T` (the caller's contract).
                Arg::Value(v) => ByValue(unsafe { v.read::<T>() }),
                other => panic!("a value parameter got {other:?}"),
            }
        }
    }

    impl<T: Copy + 'static> KernelParam for GlobalSlice<T> {
        type Host<'a, R: Launcher + ?Sized> = <Slice<T> as KernelParam>::Host<'a, R>;
        fn arg<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Arg {
            <Slice<T> as KernelParam>::arg::<R>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            // SAFETY: the caller's contract, forwarded.
            GlobalSlice(unsafe { Slice::from_arg(arg) })
        }
    }

    impl<T: 'static> KernelParam for DevicePtr<T> {
        type Host<'a, R: Launcher + ?Sized> = <Out<T> as KernelParam>::Host<'a, R>;
        fn arg<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Arg {
            <Out<T> as KernelParam>::arg::<R>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            // SAFETY: the caller's contract, forwarded.
            DevicePtr(unsafe { Out::<T>::from_arg(arg) }.as_ptr())
        }
    }

    impl<T: Copy + 'static> KernelParam for DeviceConstPtr<T> {
        type Host<'a, R: Launcher + ?Sized> = <In<T> as KernelParam>::Host<'a, R>;
        fn arg<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Arg {
            <In<T> as KernelParam>::arg::<R>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            // SAFETY: the caller's contract, forwarded.
            DeviceConstPtr(unsafe { In::<T>::from_arg(arg) }.as_ptr())
        }
    }
}
