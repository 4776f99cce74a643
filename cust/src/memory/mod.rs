//! Device memory, as cust has it: [`DeviceBuffer`] (owned, `Deref`s to a
//! [`DeviceSlice`]), [`DeviceBox`] (one value), [`DevicePointer`], the
//! [`CopyDestination`]/[`AsyncCopyDestination`] copies, page-locked host
//! memory ([`LockedBuffer`], [`LockedBox`]) and [`DeviceCopy`], the types
//! that may cross to the device.
//!
//! On the emulator the same types hold host memory; a buffer made with
//! `uninitialized` holds the poison pattern (`0x7fc0dead` words, a NaN as
//! `f32`), so reading what nobody wrote shows in the results.

mod device;
mod locked;
mod pointer;

pub use bytemuck;

pub use self::device::{AsyncCopyDestination, CopyDestination, DeviceBox, DeviceBuffer, DeviceSlice};
pub use self::locked::{LockedBox, LockedBuffer};
pub use self::pointer::DevicePointer;
pub use crate::DeviceCopy;

use crate::backend;
use crate::error::{CudaResult, ToResult};

/// A value as the emulator needs it to check a launch against the kernel's
/// declaration. Hidden: what `launch!` reads of each argument.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum ArgValue {
    /// A device address, of elements of `elem` (`size` bytes each).
    Ptr {
        addr: u64,
        elem: &'static str,
        size: usize,
    },
    /// An integer of `bytes` bytes, zero- or sign-extended, named `ty`.
    Int {
        value: u64,
        bytes: usize,
        ty: &'static str,
    },
    F32(f32),
    F64(f64),
    /// Anything else (a struct): the emulator does not take it.
    Other(&'static str),
}

/// Types whose values may be copied to the device bit for bit: no host
/// references, no `Drop`. `#[derive(DeviceCopy)]` implements it for a type
/// whose fields all are.
///
/// # Safety
/// The type holds no references or pointers to host memory and no
/// resources; any bit pattern the device writes back is one it accepts.
pub unsafe trait DeviceCopy: Copy {
    #[doc(hidden)]
    fn __arg_value(&self) -> ArgValue {
        ArgValue::Other(std::any::type_name::<Self>())
    }
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        // SAFETY: plain bits.
        unsafe impl DeviceCopy for $t {
            fn __arg_value(&self) -> ArgValue {
                ArgValue::Int { value: *self as i128 as u64, bytes: size_of::<$t>(), ty: stringify!($t) }
            }
        }
    )*};
}

ints!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, bool, char);

// SAFETY: plain bits.
unsafe impl DeviceCopy for f32 {
    fn __arg_value(&self) -> ArgValue {
        ArgValue::F32(*self)
    }
}

// SAFETY: plain bits.
unsafe impl DeviceCopy for f64 {
    fn __arg_value(&self) -> ArgValue {
        ArgValue::F64(*self)
    }
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        // SAFETY: plain bits.
        unsafe impl DeviceCopy for $t {}
    )*};
}

plain!(u128, i128, (), half::f16, half::bf16);

// SAFETY: an address, never dereferenced on the host.
unsafe impl<T> DeviceCopy for *const T {
    fn __arg_value(&self) -> ArgValue {
        ArgValue::Ptr { addr: *self as u64, elem: std::any::type_name::<T>(), size: size_of::<T>() }
    }
}

// SAFETY: as above.
unsafe impl<T> DeviceCopy for *mut T {
    fn __arg_value(&self) -> ArgValue {
        ArgValue::Ptr { addr: *self as u64, elem: std::any::type_name::<T>(), size: size_of::<T>() }
    }
}

// SAFETY: arrays, options and tuples of DeviceCopy values are plain bits.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> DeviceCopy for Option<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> DeviceCopy for std::mem::MaybeUninit<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> DeviceCopy for std::num::Wrapping<T> {}
// SAFETY: zero-sized.
unsafe impl<T> DeviceCopy for std::marker::PhantomData<T> {}

// SAFETY: glam's vectors and matrices are plain `f32`, `f64`, `u32` and
// `i32` fields.
#[cfg(feature = "impl_glam")]
mod glam_types {
    use super::DeviceCopy;
    use glam::*;

    macro_rules! plain_glam {
        ($($t:ty),*) => {$(
            // SAFETY: plain fields (above).
            unsafe impl DeviceCopy for $t {}
        )*};
    }

    plain_glam!(
        Vec2, Vec3, Vec3A, Vec4, Mat2, Mat3, Mat3A, Mat4, Quat, DVec2, DVec3, DVec4, DMat2, DMat3, DMat4
    );
    plain_glam!(UVec2, UVec3, UVec4, IVec2, IVec3, IVec4);
}

macro_rules! tuples {
    ($(($($p:ident),+))*) => {$(
        // SAFETY: a tuple of DeviceCopy values is plain bits.
        unsafe impl<$($p: DeviceCopy),+> DeviceCopy for ($($p,)+) {}
    )*};
}

tuples!((A)(A, B)(A, B, C)(A, B, C, D)(A, B, C, D, E)(A, B, C, D, E, F));

/// Device memory that can be passed around as a pointer and a length.
pub trait GpuBuffer<T: DeviceCopy> {
    fn as_device_ptr(&self) -> DevicePointer<T>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: DeviceCopy> GpuBuffer<T> for DeviceBuffer<T> {
    fn as_device_ptr(&self) -> DevicePointer<T> {
        DeviceSlice::as_device_ptr(self)
    }
    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }
}

/// One value in device memory.
pub trait GpuBox<T: DeviceCopy> {
    fn as_device_ptr(&self) -> DevicePointer<T>;
}

impl<T: DeviceCopy> GpuBox<T> for DeviceBox<T> {
    fn as_device_ptr(&self) -> DevicePointer<T> {
        DeviceBox::as_device_ptr(self)
    }
}

/// Device memory's raw address and size.
pub trait DeviceMemory {
    fn as_raw_ptr(&self) -> u64;
    fn size_in_bytes(&self) -> usize;
}

impl<T: DeviceCopy> DeviceMemory for DeviceBuffer<T> {
    fn as_raw_ptr(&self) -> u64 {
        self.as_device_ptr().as_raw()
    }
    fn size_in_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
}

impl<T: DeviceCopy> DeviceMemory for DeviceSlice<T> {
    fn as_raw_ptr(&self) -> u64 {
        self.as_device_ptr().as_raw()
    }
    fn size_in_bytes(&self) -> usize {
        self.len() * size_of::<T>()
    }
}

impl<T: DeviceCopy> DeviceMemory for DeviceBox<T> {
    fn as_raw_ptr(&self) -> u64 {
        self.as_device_ptr().as_raw()
    }
    fn size_in_bytes(&self) -> usize {
        size_of::<T>()
    }
}

/// Free and total device memory, in bytes (`cuMemGetInfo`; the emulator
/// reports 4 GiB of each).
pub fn mem_get_info() -> CudaResult<(usize, usize)> {
    if backend::cuda()? {
        return cudarc::driver::result::mem_get_info().to_result();
    }
    Ok((4 << 30, 4 << 30))
}
