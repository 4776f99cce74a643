//! Page-locked host memory (`cuMemHostAlloc`): what asynchronous copies
//! need to overlap with kernels. On the emulator, ordinary host memory.

use std::alloc::{Layout, alloc, dealloc};
use std::ops::{Deref, DerefMut};

use cudarc::driver::result;

use super::DeviceCopy;
use crate::backend;
use crate::error::{CudaError, CudaResult, DropResult, ToResult};

/// How an allocation was made, to free it the same way.
fn locked_alloc<T>(len: usize) -> CudaResult<(*mut T, bool)> {
    let bytes = len.checked_mul(size_of::<T>()).ok_or(CudaError::InvalidMemoryAllocation)?;
    if bytes == 0 {
        return Ok((std::ptr::NonNull::<T>::dangling().as_ptr(), false));
    }
    if backend::cuda()? {
        // SAFETY: the callers initialize the memory before reading it.
        let ptr = unsafe { result::malloc_host(bytes, 0) }.to_result()?;
        return Ok((ptr as *mut T, true));
    }
    let layout = Layout::from_size_align(bytes, align_of::<T>().max(64))
        .map_err(|_| CudaError::InvalidMemoryAllocation)?;
    // SAFETY: non-zero size.
    let ptr = unsafe { alloc(layout) } as *mut T;
    if ptr.is_null() { Err(CudaError::OutOfMemory) } else { Ok((ptr, false)) }
}

/// Frees what `locked_alloc` gave.
///
/// # Safety
/// `ptr` came from `locked_alloc::<T>(len)` with `pinned`, freed once.
unsafe fn locked_free<T>(ptr: *mut T, len: usize, pinned: bool) -> CudaResult<()> {
    let bytes = len * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    if pinned {
        // SAFETY: the caller's contract: `ptr` came from `malloc_host`.
        return unsafe { result::free_host(ptr as *mut _) }.to_result();
    }
    // SAFETY: the caller's contract: allocated with this layout.
    unsafe { dealloc(ptr as *mut u8, Layout::from_size_align(bytes, align_of::<T>().max(64)).unwrap()) };
    Ok(())
}

/// A page-locked host array of `T`: a slice on the host (`Deref`).
#[derive(Debug)]
pub struct LockedBuffer<T: DeviceCopy> {
    ptr: *mut T,
    len: usize,
    pinned: bool,
}

// SAFETY: owns its memory as a `Vec` does.
unsafe impl<T: Send + DeviceCopy> Send for LockedBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + DeviceCopy> Sync for LockedBuffer<T> {}

impl<T: DeviceCopy> LockedBuffer<T> {
    /// `size` copies of `value`.
    pub fn new(value: &T, size: usize) -> CudaResult<Self> {
        // SAFETY: every element is written before use.
        let mut buffer = unsafe { Self::uninitialized(size)? };
        buffer.iter_mut().for_each(|x| *x = *value);
        Ok(buffer)
    }

    /// A page-locked copy of `slice`.
    pub fn from_slice(slice: &[T]) -> CudaResult<Self> {
        // SAFETY: written in full at once.
        let mut buffer = unsafe { Self::uninitialized(slice.len())? };
        buffer.copy_from_slice(slice);
        Ok(buffer)
    }

    /// Room for `size` `T`s, not initialized.
    ///
    /// # Safety
    /// Nothing reads an element before it is written.
    pub unsafe fn uninitialized(size: usize) -> CudaResult<Self> {
        let (ptr, pinned) = locked_alloc::<T>(size)?;
        Ok(LockedBuffer { ptr, len: size, pinned })
    }

    pub fn as_slice(&self) -> &[T] {
        self
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self
    }

    /// Frees the buffer, returning it with the error on failure.
    pub fn drop(mut buf: LockedBuffer<T>) -> DropResult<LockedBuffer<T>> {
        // SAFETY: our own allocation; the pointer is cleared so it is freed once.
        match unsafe { locked_free(buf.ptr, buf.len, buf.pinned) } {
            Ok(()) => {
                buf.len = 0;
                std::mem::forget(buf);
                Ok(())
            }
            Err(e) => Err((e, buf)),
        }
    }
}

impl<T: DeviceCopy> Deref for LockedBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `len` `T`s owned by the buffer (dangling and 0 when empty).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for LockedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: DeviceCopy> AsRef<[T]> for LockedBuffer<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T: DeviceCopy> AsMut<[T]> for LockedBuffer<T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: DeviceCopy> Drop for LockedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: our own allocation, freed once.
        let _ = unsafe { locked_free(self.ptr, self.len, self.pinned) };
    }
}

/// One page-locked `T` on the host.
#[derive(Debug)]
pub struct LockedBox<T: DeviceCopy> {
    ptr: *mut T,
    pinned: bool,
}

// SAFETY: owns its memory as a `Box` does.
unsafe impl<T: Send + DeviceCopy> Send for LockedBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + DeviceCopy> Sync for LockedBox<T> {}

impl<T: DeviceCopy> LockedBox<T> {
    /// A page-locked copy of `val`.
    pub fn new(val: &T) -> CudaResult<Self> {
        let (ptr, pinned) = locked_alloc::<T>(1)?;
        // SAFETY: room for one `T`.
        unsafe { ptr.write(*val) };
        Ok(LockedBox { ptr, pinned })
    }

    /// # Safety
    /// Nothing reads the value before it is written.
    pub unsafe fn uninitialized() -> CudaResult<Self> {
        let (ptr, pinned) = locked_alloc::<T>(1)?;
        Ok(LockedBox { ptr, pinned })
    }

    pub fn as_raw(&self) -> *mut T {
        self.ptr
    }
}

impl<T: DeviceCopy> Deref for LockedBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: one `T` owned by the box.
        unsafe { &*self.ptr }
    }
}

impl<T: DeviceCopy> DerefMut for LockedBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` is exclusive.
        unsafe { &mut *self.ptr }
    }
}

impl<T: DeviceCopy> Drop for LockedBox<T> {
    fn drop(&mut self) {
        // SAFETY: our own allocation, freed once.
        let _ = unsafe { locked_free(self.ptr, 1, self.pinned) };
    }
}
