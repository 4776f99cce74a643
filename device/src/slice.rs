//! Checked global memory: the parameter types of kernels that need no
//! `unsafe` at all.
//!
//! A [`Slice<T>`] is a read-only buffer with its length: [`Slice::get`]
//! returns `None` past the end. A [`DisjointSlice<T>`] is an output each
//! thread writes only its own element of: [`DisjointSlice::get_mut`] takes
//! a [`ThreadIndex`], which only [`crate::thread::index`] makes and
//! which differs for every thread of the (1-D) launch, so no two threads can
//! get the same element (the idea of NVIDIA cuda-oxide's `DisjointSlice`). The
//! host passes `&Buffer<T>` for a `Slice<T>` and `&mut Buffer<T>` for a
//! `DisjointSlice<T>`, so no launch aliases an output.
//!
//! Each is two PTX parameters, the address and the length (as rust-cuda
//! passes slices). A bounds check is one compare and branch; the load or
//! store is the same `ld.global`/`st.global` as through an unchecked
//! pointer.

use super::check::{self, Space};

use core::ptr::NonNull;

use super::thread::ThreadIndex;

/// A read-only device buffer of `len` elements.
#[derive(Clone, Copy)]
pub struct Slice<T> {
    ptr: *const T,
    len: usize,
}

/// A device buffer each thread writes only its own element of.
pub struct DisjointSlice<T> {
    /// Never null (an empty buffer's is dangling), so that LLVM knows an
    /// element's address is not either: `get_mut`'s `Option` costs no test.
    ptr: NonNull<T>,
    len: usize,
}

impl<T: Copy> Slice<T> {
    /// Elements in the buffer.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's address (unchecked from here on).
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Element `i`, or `None` past the end.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get(&self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        let p = self.ptr.wrapping_add(i);
        check::load(Space::Global, p, size_of::<T>());
        // SAFETY: `i < len`, and the launch passed a whole buffer of `len`
        // elements that no thread writes during the launch (it is borrowed
        // shared by the host for the launch).
        Some(unsafe { p.read() })
    }
}

impl Slice<f32> {
    /// Elements `i..i + 4` with one 16-byte load (`ld.global.v4.f32`), or
    /// `None` when `i` is not a multiple of 4 or `i + 4` is past the end.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get4(&self, i: usize) -> Option<[f32; 4]> {
        if !i.is_multiple_of(4) || i.checked_add(4).is_none_or(|end| end > self.len) {
            return None;
        }
        let p = self.ptr.wrapping_add(i);
        check::load(Space::Global, p, 16);
        // SAFETY: in bounds as above; 16-byte aligned because a buffer
        // starts 256-byte aligned (cuMemAlloc's, and the emulator's,
        // alignment) and `i` is a multiple of 4 `f32`.
        Some(unsafe { (p as *const super::mem::F32x4).read().0 })
    }
}

impl<T> DisjointSlice<T> {
    /// Elements in the buffer.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// This thread's element `i`, or `None` past the end. The emulator
    /// counts the call as one write of the element.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn get_mut(&mut self, i: ThreadIndex) -> Option<&mut T> {
        let i = i.get();
        if i >= self.len {
            return None;
        }
        // SAFETY: `i < len` in a buffer of `len` elements that the host
        // lent to this launch alone (`&mut`). No other thread gets element
        // `i`: `ThreadIndex` values differ between the threads of a 1-D
        // launch, and a kernel with a `DisjointSlice` is only launched 1-D
        // (see `ThreadIndex`). This thread cannot get it twice at once: the
        // result borrows `self` mutably, and `DisjointSlice` is neither
        // `Copy` nor `Clone`.
        unsafe {
            let p = self.ptr.add(i);
            check::store_unknown(Space::Global, p.as_ptr(), size_of::<T>());
            Some(&mut *p.as_ptr())
        }
    }
}

/// How a typed launcher's two PTX parameters (address, length) become a
/// slice parameter again in the kernel's entry. Generated code only.
#[doc(hidden)]
pub trait SliceParam {
    type Elem;
    /// # Safety
    /// `ptr` and `len` are a whole device buffer passed by the typed
    /// launcher for this parameter.
    unsafe fn from_raw_parts(ptr: *mut Self::Elem, len: usize) -> Self;
}

impl<T> SliceParam for Slice<T> {
    type Elem = T;
    unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        Slice { ptr, len }
    }
}

impl<T> SliceParam for DisjointSlice<T> {
    type Elem = T;
    unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        DisjointSlice { ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()), len }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{DisjointSlice, Slice, SliceParam};
    use gpu_launch::{Arg, KernelParam, Launcher};

    fn slice<R: Launcher + ?Sized, T: 'static>(buffer: &R::Buffer<T>) -> Arg {
        let (addr, len) = R::address::<T>(buffer);
        Arg::Slice { addr, len: len as u64, bytes: len * size_of::<T>() }
    }

    fn parts<T>(arg: &Arg) -> (*mut T, usize) {
        match arg {
            Arg::Slice { addr, len, .. } => (*addr as usize as *mut T, *len as usize),
            other => panic!("a slice parameter got {other:?}"),
        }
    }

    impl<T: Copy + 'static> KernelParam for Slice<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&R::Buffer<T>) -> Arg {
            slice::<R, T>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            let (ptr, len) = parts(arg);
            // SAFETY: the caller's contract: a whole buffer of the launch.
            unsafe { Slice::from_raw_parts(ptr, len) }
        }
    }

    impl<T: 'static> KernelParam for DisjointSlice<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a mut R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&mut R::Buffer<T>) -> Arg {
            slice::<R, T>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            let (ptr, len) = parts(arg);
            // SAFETY: as above.
            unsafe { DisjointSlice::from_raw_parts(ptr, len) }
        }
    }
}
