//! `DeviceBuffer`, `DeviceSlice`, `DeviceBox` and the copies between them
//! and the host.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut, Index, IndexMut, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo};

use bytemuck::Zeroable;

use super::{DeviceCopy, DevicePointer};
use crate::backend;
use crate::error::{CudaError, CudaResult, DropResult};
use crate::stream::Stream;

/// Copies between device memory and the host, or within the device,
/// waiting for them to finish. Lengths must match (else
/// [`CudaError::InvalidValue`]).
pub trait CopyDestination<O: ?Sized> {
    fn copy_from(&mut self, source: &O) -> CudaResult<()>;
    fn copy_to(&self, dest: &mut O) -> CudaResult<()>;
}

/// Copies queued on a stream.
///
/// # Safety
/// The copy may still run after the call returns: until the stream is
/// synchronized, the source must not be modified or freed, and the
/// destination neither read, written nor freed. (On the emulator the copy
/// is done when the call returns.)
pub trait AsyncCopyDestination<O: ?Sized> {
    /// # Safety
    /// See the trait.
    unsafe fn async_copy_from(&mut self, source: &O, stream: &Stream) -> CudaResult<()>;
    /// # Safety
    /// See the trait.
    unsafe fn async_copy_to(&self, dest: &mut O, stream: &Stream) -> CudaResult<()>;
}

fn same_len(a: usize, b: usize) -> CudaResult<()> {
    if a == b { Ok(()) } else { Err(CudaError::InvalidValue) }
}

/// A slice of device memory: what a [`DeviceBuffer`] dereferences to.
/// Its address is the device address; it is never read on the host.
#[repr(transparent)]
pub struct DeviceSlice<T: DeviceCopy> {
    _marker: PhantomData<T>,
    slice: [()],
}

// SAFETY: device memory, touched only through the driver or the emulator.
unsafe impl<T: Send + DeviceCopy> Send for DeviceSlice<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + DeviceCopy> Sync for DeviceSlice<T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSlice").field("ptr", &self.as_device_ptr()).field("len", &self.len()).finish()
    }
}

impl<T: DeviceCopy> DeviceSlice<T> {
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slice's size in bytes (`size_of_val` sees a zero-sized `[()]`).
    fn bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }

    pub fn as_device_ptr(&self) -> DevicePointer<T> {
        DevicePointer::from_raw(self.slice.as_ptr() as u64)
    }

    /// The slice's contents, copied to the host.
    pub fn as_host_vec(&self) -> CudaResult<Vec<T>> {
        let mut out: Vec<MaybeUninit<T>> = Vec::with_capacity(self.len());
        // SAFETY: `out` has room for `len` T; the copy fills every byte of
        // them before `set_len`.
        unsafe {
            backend::dtoh(out.as_mut_ptr() as *mut u8, self.as_device_ptr().as_raw(), self.bytes(), None)?;
            out.set_len(self.len());
            Ok(std::mem::transmute::<Vec<MaybeUninit<T>>, Vec<T>>(out))
        }
    }

    /// The first `mid` elements and the rest.
    pub fn split_at(&self, mid: usize) -> (&DeviceSlice<T>, &DeviceSlice<T>) {
        (&self[..mid], &self[mid..])
    }

    pub fn split_at_mut(&mut self, mid: usize) -> (&mut DeviceSlice<T>, &mut DeviceSlice<T>) {
        assert!(mid <= self.len(), "mid {mid} beyond a device slice of {}", self.len());
        let (ptr, len) = (self.as_device_ptr(), self.len());
        // SAFETY: two disjoint parts of this slice, borrowed from it.
        unsafe {
            (Self::from_raw_parts_mut(ptr, mid), Self::from_raw_parts_mut(ptr.wrapping_add(mid), len - mid))
        }
    }

    /// The slice of `len` elements at `ptr`.
    ///
    /// # Safety
    /// `ptr` is non-null device memory holding `len` `T`s for `'a`.
    pub unsafe fn from_raw_parts<'a>(ptr: DevicePointer<T>, len: usize) -> &'a DeviceSlice<T> {
        // SAFETY: a `[()]` of any length at a non-null address is a valid
        // reference; its address stands for the device memory.
        unsafe { &*(std::ptr::slice_from_raw_parts(ptr.as_raw() as *const (), len) as *const DeviceSlice<T>) }
    }

    /// # Safety
    /// As for [`DeviceSlice::from_raw_parts`], and nothing else refers to
    /// that memory for `'a`.
    pub unsafe fn from_raw_parts_mut<'a>(ptr: DevicePointer<T>, len: usize) -> &'a mut DeviceSlice<T> {
        // SAFETY: as above.
        unsafe {
            &mut *(std::ptr::slice_from_raw_parts_mut(ptr.as_raw() as *mut (), len) as *mut DeviceSlice<T>)
        }
    }

    /// Sets every byte to `value`.
    pub fn set_8(&mut self, value: u8) -> CudaResult<()> {
        // SAFETY: the slice's own bytes.
        unsafe { backend::memset(self.as_device_ptr().as_raw(), value, self.bytes(), None) }
    }

    /// # Safety
    /// As for [`AsyncCopyDestination`]: the memory is written after the call.
    pub unsafe fn set_8_async(&mut self, value: u8, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the slice's own bytes; the caller's contract.
        unsafe { backend::memset(self.as_device_ptr().as_raw(), value, self.bytes(), stream.raw()) }
    }
}

impl<T: DeviceCopy + Zeroable> DeviceSlice<T> {
    /// Sets every element to zero.
    pub fn set_zero(&mut self) -> CudaResult<()> {
        self.set_8(0)
    }

    /// # Safety
    /// As for [`DeviceSlice::set_8_async`].
    pub unsafe fn set_zero_async(&mut self, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.set_8_async(0, stream) }
    }
}

fn bounds(len: usize, start: usize, end: usize) -> (usize, usize) {
    assert!(start <= end && end <= len, "range {start}..{end} out of a device slice of {len}");
    (start, end - start)
}

macro_rules! index {
    ($($range:ty => |$r:ident, $len:ident| $bounds:expr;)*) => {$(
        impl<T: DeviceCopy> Index<$range> for DeviceSlice<T> {
            type Output = DeviceSlice<T>;
            fn index(&self, $r: $range) -> &DeviceSlice<T> {
                let $len = self.len();
                let (start, len) = $bounds;
                // SAFETY: a part of this slice (checked by `bounds`).
                unsafe { DeviceSlice::from_raw_parts(self.as_device_ptr().wrapping_add(start), len) }
            }
        }
        impl<T: DeviceCopy> IndexMut<$range> for DeviceSlice<T> {
            fn index_mut(&mut self, $r: $range) -> &mut DeviceSlice<T> {
                let $len = self.len();
                let (start, len) = $bounds;
                // SAFETY: a part of this slice, borrowed mutably from it.
                unsafe { DeviceSlice::from_raw_parts_mut(self.as_device_ptr().wrapping_add(start), len) }
            }
        }
    )*};
}

index! {
    usize => |r, len| bounds(len, r, r + 1);
    Range<usize> => |r, len| bounds(len, r.start, r.end);
    RangeFrom<usize> => |r, len| bounds(len, r.start, len);
    RangeTo<usize> => |r, len| bounds(len, 0, r.end);
    RangeFull => |_r, len| bounds(len, 0, len);
    RangeInclusive<usize> => |r, len| bounds(len, *r.start(), *r.end() + 1);
}

impl<T: DeviceCopy, I: AsRef<[T]> + AsMut<[T]> + ?Sized> CopyDestination<I> for DeviceSlice<T> {
    fn copy_from(&mut self, source: &I) -> CudaResult<()> {
        let source = source.as_ref();
        same_len(self.len(), source.len())?;
        // SAFETY: `source` holds as many bytes as this slice (checked).
        unsafe {
            backend::htod(
                self.as_device_ptr().as_raw(),
                source.as_ptr() as *const u8,
                size_of_val(source),
                None,
            )
        }
    }

    fn copy_to(&self, dest: &mut I) -> CudaResult<()> {
        let dest = dest.as_mut();
        same_len(self.len(), dest.len())?;
        // SAFETY: `dest` holds as many bytes as this slice (checked).
        unsafe {
            backend::dtoh(
                dest.as_mut_ptr() as *mut u8,
                self.as_device_ptr().as_raw(),
                size_of_val(dest),
                None,
            )
        }
    }
}

impl<T: DeviceCopy> CopyDestination<DeviceSlice<T>> for DeviceSlice<T> {
    fn copy_from(&mut self, source: &DeviceSlice<T>) -> CudaResult<()> {
        same_len(self.len(), source.len())?;
        let (dst, src) = (self.as_device_ptr().as_raw(), source.as_device_ptr().as_raw());
        // SAFETY: both hold `source.bytes()` bytes (checked).
        unsafe { backend::dtod(dst, src, source.bytes(), None) }
    }

    fn copy_to(&self, dest: &mut DeviceSlice<T>) -> CudaResult<()> {
        dest.copy_from(self)
    }
}

impl<T: DeviceCopy> CopyDestination<DeviceBuffer<T>> for DeviceSlice<T> {
    fn copy_from(&mut self, source: &DeviceBuffer<T>) -> CudaResult<()> {
        self.copy_from(&**source)
    }

    fn copy_to(&self, dest: &mut DeviceBuffer<T>) -> CudaResult<()> {
        self.copy_to(&mut **dest)
    }
}

impl<T: DeviceCopy, I: AsRef<[T]> + AsMut<[T]> + ?Sized> AsyncCopyDestination<I> for DeviceSlice<T> {
    unsafe fn async_copy_from(&mut self, source: &I, stream: &Stream) -> CudaResult<()> {
        let source = source.as_ref();
        same_len(self.len(), source.len())?;
        let (dst, src, bytes) =
            (self.as_device_ptr().as_raw(), source.as_ptr() as *const u8, size_of_val(source));
        // SAFETY: lengths checked; the caller keeps both alive and alone
        // until the stream is synchronized.
        unsafe { backend::htod(dst, src, bytes, stream.raw()) }
    }

    unsafe fn async_copy_to(&self, dest: &mut I, stream: &Stream) -> CudaResult<()> {
        let dest = dest.as_mut();
        same_len(self.len(), dest.len())?;
        let (dst, src, bytes) =
            (dest.as_mut_ptr() as *mut u8, self.as_device_ptr().as_raw(), size_of_val(dest));
        // SAFETY: as above.
        unsafe { backend::dtoh(dst, src, bytes, stream.raw()) }
    }
}

impl<T: DeviceCopy> AsyncCopyDestination<DeviceSlice<T>> for DeviceSlice<T> {
    unsafe fn async_copy_from(&mut self, source: &DeviceSlice<T>, stream: &Stream) -> CudaResult<()> {
        same_len(self.len(), source.len())?;
        let (dst, src) = (self.as_device_ptr().as_raw(), source.as_device_ptr().as_raw());
        // SAFETY: as above.
        unsafe { backend::dtod(dst, src, source.bytes(), stream.raw()) }
    }

    unsafe fn async_copy_to(&self, dest: &mut DeviceSlice<T>, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the caller's contract.
        unsafe { dest.async_copy_from(self, stream) }
    }
}

impl<T: DeviceCopy> AsyncCopyDestination<DeviceBuffer<T>> for DeviceSlice<T> {
    unsafe fn async_copy_from(&mut self, source: &DeviceBuffer<T>, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.async_copy_from(&**source, stream) }
    }

    unsafe fn async_copy_to(&self, dest: &mut DeviceBuffer<T>, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.async_copy_to(&mut **dest, stream) }
    }
}

/// An owned array of `T` in device memory.
#[derive(Debug)]
pub struct DeviceBuffer<T: DeviceCopy> {
    buf: DevicePointer<T>,
    len: usize,
}

// SAFETY: device memory, touched only through the driver or the emulator.
unsafe impl<T: Send + DeviceCopy> Send for DeviceBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + DeviceCopy> Sync for DeviceBuffer<T> {}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Room for `size` `T`s, not initialized (on the emulator, the poison
    /// pattern).
    ///
    /// # Safety
    /// Nothing reads the memory before it is written.
    pub unsafe fn uninitialized(size: usize) -> CudaResult<Self> {
        let bytes = size.checked_mul(size_of::<T>()).ok_or(CudaError::InvalidMemoryAllocation)?;
        Ok(DeviceBuffer { buf: DevicePointer::from_raw(backend::alloc(bytes)?), len: size })
    }

    /// As [`DeviceBuffer::uninitialized`] (allocated at once, not in
    /// stream order).
    ///
    /// # Safety
    /// As for [`DeviceBuffer::uninitialized`].
    pub unsafe fn uninitialized_async(size: usize, _stream: &Stream) -> CudaResult<Self> {
        // SAFETY: the caller's contract.
        unsafe { Self::uninitialized(size) }
    }

    /// A device copy of `slice`.
    pub fn from_slice(slice: &[T]) -> CudaResult<Self> {
        // SAFETY: written in full at once.
        let mut buffer = unsafe { Self::uninitialized(slice.len())? };
        buffer.copy_from(slice)?;
        Ok(buffer)
    }

    /// A device copy of `slice`, queued on `stream`.
    ///
    /// # Safety
    /// `slice` stays unchanged until the stream is synchronized.
    pub unsafe fn from_slice_async(slice: &[T], stream: &Stream) -> CudaResult<Self> {
        // SAFETY: written in full by the copy, which the caller waits for.
        let mut buffer = unsafe { Self::uninitialized(slice.len())? };
        // SAFETY: the caller's contract.
        unsafe { buffer.async_copy_from(slice, stream)? };
        Ok(buffer)
    }

    pub fn as_slice(&self) -> &DeviceSlice<T> {
        self
    }

    /// Takes ownership of `capacity` `T`s at `ptr`.
    ///
    /// # Safety
    /// `ptr` was allocated by this crate for exactly `capacity` `T`s and
    /// is owned by nothing else.
    pub unsafe fn from_raw_parts(ptr: DevicePointer<T>, capacity: usize) -> DeviceBuffer<T> {
        DeviceBuffer { buf: ptr, len: capacity }
    }

    /// Frees the buffer, returning it with the error on failure.
    pub fn drop(mut buffer: DeviceBuffer<T>) -> DropResult<DeviceBuffer<T>> {
        match buffer.free() {
            Ok(()) => {
                std::mem::forget(buffer);
                Ok(())
            }
            Err(e) => Err((e, buffer)),
        }
    }

    /// Frees the buffer (at once: stream-ordered frees are cust's).
    pub fn drop_async(self, _stream: &Stream) -> CudaResult<()> {
        DeviceBuffer::drop(self).map_err(|(e, _)| e)
    }

    fn free(&mut self) -> CudaResult<()> {
        let bytes = self.len * size_of::<T>();
        let addr = std::mem::replace(&mut self.buf, DevicePointer::null()).as_raw();
        if addr == 0 { Ok(()) } else { backend::free(addr, bytes) }
    }
}

impl<T: DeviceCopy + Zeroable> DeviceBuffer<T> {
    /// `size` zeros.
    pub fn zeroed(size: usize) -> CudaResult<Self> {
        // SAFETY: written in full at once.
        let mut buffer = unsafe { Self::uninitialized(size)? };
        buffer.set_zero()?;
        Ok(buffer)
    }

    /// `size` zeros, queued on `stream`.
    ///
    /// # Safety
    /// The buffer is not read before the stream is synchronized.
    pub unsafe fn zeroed_async(size: usize, stream: &Stream) -> CudaResult<Self> {
        // SAFETY: written in full by the memset, which the caller waits for.
        let mut buffer = unsafe { Self::uninitialized(size)? };
        // SAFETY: the caller's contract.
        unsafe { buffer.set_zero_async(stream)? };
        Ok(buffer)
    }
}

impl<T: DeviceCopy> Deref for DeviceBuffer<T> {
    type Target = DeviceSlice<T>;

    fn deref(&self) -> &DeviceSlice<T> {
        // SAFETY: the buffer's own memory, `len` `T`s at a non-null address.
        unsafe { DeviceSlice::from_raw_parts(self.buf, self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for DeviceBuffer<T> {
    fn deref_mut(&mut self) -> &mut DeviceSlice<T> {
        // SAFETY: as above, borrowed mutably from the buffer.
        unsafe { DeviceSlice::from_raw_parts_mut(self.buf, self.len) }
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // A failed free has nowhere to go (cust ignores it too).
        let _ = self.free();
    }
}

/// One `T` in device memory.
#[derive(Debug)]
pub struct DeviceBox<T: DeviceCopy> {
    ptr: DevicePointer<T>,
}

// SAFETY: device memory, touched only through the driver or the emulator.
unsafe impl<T: Send + DeviceCopy> Send for DeviceBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync + DeviceCopy> Sync for DeviceBox<T> {}

impl<T: DeviceCopy> DeviceBox<T> {
    /// A device copy of `val`.
    pub fn new(val: &T) -> CudaResult<Self> {
        // SAFETY: written at once.
        let mut dbox = unsafe { Self::uninitialized()? };
        dbox.copy_from(val)?;
        Ok(dbox)
    }

    /// A device copy of `val`, queued on `stream`.
    ///
    /// # Safety
    /// `val` stays unchanged until the stream is synchronized.
    pub unsafe fn new_async(val: &T, stream: &Stream) -> CudaResult<Self> {
        // SAFETY: written by the copy, which the caller waits for.
        let mut dbox = unsafe { Self::uninitialized()? };
        // SAFETY: the caller's contract.
        unsafe { dbox.async_copy_from(val, stream)? };
        Ok(dbox)
    }

    /// Room for one `T`, not initialized.
    ///
    /// # Safety
    /// Nothing reads it before it is written.
    pub unsafe fn uninitialized() -> CudaResult<Self> {
        Ok(DeviceBox { ptr: DevicePointer::from_raw(backend::alloc(size_of::<T>())?) })
    }

    /// The value, copied to the host.
    pub fn as_host_value(&self) -> CudaResult<T> {
        let mut value = MaybeUninit::<T>::uninit();
        // SAFETY: copies `size_of::<T>()` bytes into `value`, initializing it.
        unsafe {
            backend::dtoh(value.as_mut_ptr() as *mut u8, self.ptr.as_raw(), size_of::<T>(), None)?;
            Ok(value.assume_init())
        }
    }

    pub fn as_device_ptr(&self) -> DevicePointer<T> {
        self.ptr
    }

    /// Takes ownership of the allocation at `ptr`.
    ///
    /// # Safety
    /// `ptr` was allocated by this crate for one `T` and nothing else owns it.
    pub unsafe fn from_device(ptr: DevicePointer<T>) -> Self {
        DeviceBox { ptr }
    }

    /// # Safety
    /// As for [`DeviceBox::from_device`].
    pub unsafe fn from_raw(ptr: u64) -> Self {
        DeviceBox { ptr: DevicePointer::from_raw(ptr) }
    }

    /// Gives up ownership: the caller frees it (through `from_device`).
    pub fn into_device(b: DeviceBox<T>) -> DevicePointer<T> {
        let ptr = b.ptr;
        std::mem::forget(b);
        ptr
    }

    /// Frees the box, returning it with the error on failure.
    pub fn drop(mut b: DeviceBox<T>) -> DropResult<DeviceBox<T>> {
        match b.free() {
            Ok(()) => {
                std::mem::forget(b);
                Ok(())
            }
            Err(e) => Err((e, b)),
        }
    }

    pub fn drop_async(self, _stream: &Stream) -> CudaResult<()> {
        DeviceBox::drop(self).map_err(|(e, _)| e)
    }

    fn free(&mut self) -> CudaResult<()> {
        let addr = std::mem::replace(&mut self.ptr, DevicePointer::null()).as_raw();
        if addr == 0 { Ok(()) } else { backend::free(addr, size_of::<T>()) }
    }
}

impl<T: DeviceCopy + Zeroable> DeviceBox<T> {
    /// A zero `T`.
    pub fn zeroed() -> CudaResult<Self> {
        // SAFETY: written at once.
        let dbox = unsafe { Self::uninitialized()? };
        // SAFETY: the box's own bytes.
        unsafe { backend::memset(dbox.ptr.as_raw(), 0, size_of::<T>(), None)? };
        Ok(dbox)
    }
}

impl<T: DeviceCopy> Drop for DeviceBox<T> {
    fn drop(&mut self) {
        let _ = self.free();
    }
}

impl<T: DeviceCopy> fmt::Pointer for DeviceBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Pointer::fmt(&self.ptr, f)
    }
}

impl<T: DeviceCopy> CopyDestination<T> for DeviceBox<T> {
    fn copy_from(&mut self, val: &T) -> CudaResult<()> {
        // SAFETY: one `T` each side.
        unsafe { backend::htod(self.ptr.as_raw(), val as *const T as *const u8, size_of::<T>(), None) }
    }

    fn copy_to(&self, val: &mut T) -> CudaResult<()> {
        // SAFETY: one `T` each side; any bits are a valid `T` (DeviceCopy).
        unsafe { backend::dtoh(val as *mut T as *mut u8, self.ptr.as_raw(), size_of::<T>(), None) }
    }
}

impl<T: DeviceCopy> CopyDestination<DeviceBox<T>> for DeviceBox<T> {
    fn copy_from(&mut self, val: &DeviceBox<T>) -> CudaResult<()> {
        // SAFETY: one `T` each side.
        unsafe { backend::dtod(self.ptr.as_raw(), val.ptr.as_raw(), size_of::<T>(), None) }
    }

    fn copy_to(&self, val: &mut DeviceBox<T>) -> CudaResult<()> {
        val.copy_from(self)
    }
}

impl<T: DeviceCopy> AsyncCopyDestination<T> for DeviceBox<T> {
    unsafe fn async_copy_from(&mut self, val: &T, stream: &Stream) -> CudaResult<()> {
        // SAFETY: one `T` each side; the caller's contract.
        unsafe {
            backend::htod(self.ptr.as_raw(), val as *const T as *const u8, size_of::<T>(), stream.raw())
        }
    }

    unsafe fn async_copy_to(&self, val: &mut T, stream: &Stream) -> CudaResult<()> {
        // SAFETY: as above.
        unsafe { backend::dtoh(val as *mut T as *mut u8, self.ptr.as_raw(), size_of::<T>(), stream.raw()) }
    }
}

impl<T: DeviceCopy> AsyncCopyDestination<DeviceBox<T>> for DeviceBox<T> {
    unsafe fn async_copy_from(&mut self, val: &DeviceBox<T>, stream: &Stream) -> CudaResult<()> {
        // SAFETY: as above.
        unsafe { backend::dtod(self.ptr.as_raw(), val.ptr.as_raw(), size_of::<T>(), stream.raw()) }
    }

    unsafe fn async_copy_to(&self, val: &mut DeviceBox<T>, stream: &Stream) -> CudaResult<()> {
        // SAFETY: the caller's contract.
        unsafe { val.async_copy_from(self, stream) }
    }
}
