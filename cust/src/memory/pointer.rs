//! `DevicePointer<T>`: a device address of `T`s, never dereferenced on the
//! host.

use std::fmt;
use std::marker::PhantomData;

use super::{ArgValue, DeviceCopy};

/// A device address (on the emulator, the host address of its memory).
#[repr(transparent)]
pub struct DevicePointer<T: ?Sized> {
    ptr: u64,
    _marker: PhantomData<*mut T>,
}

impl<T: ?Sized> Clone for DevicePointer<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for DevicePointer<T> {}

impl<T: ?Sized> PartialEq for DevicePointer<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}

impl<T: ?Sized> Eq for DevicePointer<T> {}

impl<T: ?Sized> std::hash::Hash for DevicePointer<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.ptr.hash(state)
    }
}

impl<T: ?Sized> fmt::Debug for DevicePointer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePointer({:#x})", self.ptr)
    }
}

impl<T: ?Sized> fmt::Pointer for DevicePointer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.ptr)
    }
}

// SAFETY: an address, passed to kernels as one.
unsafe impl<T: DeviceCopy> DeviceCopy for DevicePointer<T> {
    fn __arg_value(&self) -> ArgValue {
        ArgValue::Ptr { addr: self.ptr, elem: std::any::type_name::<T>(), size: size_of::<T>() }
    }
}

impl<T> DevicePointer<T> {
    /// The address as a host pointer type (not dereferenceable on a GPU).
    pub fn as_ptr(&self) -> *const T {
        self.ptr as *const T
    }

    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr as *mut T
    }

    /// The raw address (`CUdeviceptr`).
    pub fn as_raw(&self) -> u64 {
        self.ptr
    }

    pub fn from_raw(ptr: u64) -> Self {
        DevicePointer { ptr, _marker: PhantomData }
    }

    pub fn is_null(self) -> bool {
        self.ptr == 0
    }

    pub fn null() -> Self {
        Self::from_raw(0)
    }

    /// The pointer `count` elements on.
    ///
    /// # Safety
    /// The result lies in (or one past) the same allocation.
    pub unsafe fn offset(self, count: isize) -> Self {
        self.wrapping_offset(count)
    }

    pub fn wrapping_offset(self, count: isize) -> Self {
        Self::from_raw(self.ptr.wrapping_add((count as i64).wrapping_mul(size_of::<T>() as i64) as u64))
    }

    /// # Safety
    /// As for [`DevicePointer::offset`].
    pub unsafe fn add(self, count: usize) -> Self {
        self.wrapping_add(count)
    }

    /// # Safety
    /// As for [`DevicePointer::offset`].
    pub unsafe fn sub(self, count: usize) -> Self {
        self.wrapping_sub(count)
    }

    pub fn wrapping_add(self, count: usize) -> Self {
        self.wrapping_offset(count as isize)
    }

    pub fn wrapping_sub(self, count: usize) -> Self {
        self.wrapping_offset((count as isize).wrapping_neg())
    }

    /// The same address, of `U`s.
    pub fn cast<U>(self) -> DevicePointer<U> {
        DevicePointer::from_raw(self.ptr)
    }
}
