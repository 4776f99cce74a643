//! The handles a rust-cuda kernel's parameters become in its body: same
//! ABI as rust-cuda's (`&[T]` is an address and a length, `*mut T` and
//! `*const T` an address), same use, but every access goes through the
//! emulator's checks on the host. On the GPU each compiles to the plain
//! load or store.
//!
//! The pointers are in [`crate::ptr`].

use core::ops::{Deref, Index};

use gpu_dev::check::{self, Mem};

/// `&[T]`: an input buffer and its length. `a[i]` is bounds-checked and
/// seen by the emulator; `Deref` gives the `&[T]` itself.
#[derive(Clone, Copy)]
pub struct GlobalSlice<T> {
    ptr: *const T,
    len: usize,
}

impl<T> GlobalSlice<T> {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }
}

impl<T: Copy> GlobalSlice<T> {
    /// Element `i`, or `None` past the end.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: usize) -> Option<T> {
        (i < self.len).then(|| self[i])
    }
}

impl<T> Index<usize> for GlobalSlice<T> {
    type Output = T;

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn index(&self, i: usize) -> &T {
        assert!(i < self.len, "index out of bounds: the len is {} but the index is {i}", self.len);
        let p = self.ptr.wrapping_add(i);
        check::load(Mem::Global, p, size_of::<T>());
        // SAFETY: the launch passed `len` elements at `ptr` (the kernel ABI);
        // `i < len`.
        unsafe { &*p }
    }
}

impl<T> Deref for GlobalSlice<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: as for `index`: `len` elements at `ptr`.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> gpu_dev::SliceParam for GlobalSlice<T> {
    type Elem = T;

    unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        GlobalSlice { ptr, len }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::GlobalSlice;
    use crate::ptr::{DeviceConstPtr, DevicePtr};
    use gpu_launch::{Arg, KernelParam, Launcher};

    fn address(arg: &Arg) -> (u64, u64) {
        match *arg {
            Arg::Ptr { addr, bytes } => (addr, bytes as u64),
            Arg::Slice { addr, len, .. } => (addr, len),
            ref other => panic!("a pointer parameter got {other:?}"),
        }
    }

    impl<T: 'static> KernelParam for GlobalSlice<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&R::Buffer<T>) -> Arg {
            let (addr, len) = R::address::<T>(host);
            Arg::Slice { addr, len: len as u64, bytes: len * size_of::<T>() }
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            let (addr, len) = address(arg);
            GlobalSlice { ptr: addr as usize as *const T, len: len as usize }
        }
    }

    impl<T: 'static> KernelParam for DevicePtr<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a mut R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&mut R::Buffer<T>) -> Arg {
            let (addr, len) = R::address::<T>(host);
            Arg::Ptr { addr, bytes: len * size_of::<T>() }
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            DevicePtr(address(arg).0 as usize as *mut T)
        }
    }

    impl<T: 'static> KernelParam for DeviceConstPtr<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&R::Buffer<T>) -> Arg {
            let (addr, len) = R::address::<T>(host);
            Arg::Ptr { addr, bytes: len * size_of::<T>() }
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            DeviceConstPtr(address(arg).0 as usize as *const T)
        }
    }
}
