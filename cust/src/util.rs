//! Conveniences on host values: `as_dbuf` and `as_dbox`.

use crate::error::CudaResult;
use crate::memory::{DeviceBox, DeviceBuffer, DeviceCopy};

/// `value.as_dbox()`: a [`DeviceBox`] holding a copy of the value.
pub trait DeviceCopyExt: DeviceCopy {
    fn as_dbox(&self) -> CudaResult<DeviceBox<Self>> {
        DeviceBox::new(self)
    }
}

impl<T: DeviceCopy> DeviceCopyExt for T {}

/// `slice.as_dbuf()`: a [`DeviceBuffer`] holding a copy of the slice.
pub trait SliceExt<T: DeviceCopy> {
    fn as_dbuf(&self) -> CudaResult<DeviceBuffer<T>>;
}

impl<T: DeviceCopy> SliceExt<T> for &[T] {
    fn as_dbuf(&self) -> CudaResult<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(self)
    }
}

impl<T: DeviceCopy> SliceExt<T> for [T] {
    fn as_dbuf(&self) -> CudaResult<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(self)
    }
}

impl<T: DeviceCopy, const N: usize> SliceExt<T> for [T; N] {
    fn as_dbuf(&self) -> CudaResult<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(self)
    }
}

impl<T: DeviceCopy> SliceExt<T> for Vec<T> {
    fn as_dbuf(&self) -> CudaResult<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(self)
    }
}
