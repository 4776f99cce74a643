//! `Device`: a CUDA device, or the emulator's one device.

use cudarc::driver::{result, sys};

use crate::backend;
use crate::error::{CudaError, CudaResult, ToResult};

/// Device attributes (`CUdevice_attribute`), the ones programs ask most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceAttribute {
    MaxThreadsPerBlock,
    MaxBlockDimX,
    MaxBlockDimY,
    MaxBlockDimZ,
    MaxGridDimX,
    MaxGridDimY,
    MaxGridDimZ,
    MaxSharedMemoryPerBlock,
    TotalConstantMemory,
    WarpSize,
    MaxRegistersPerBlock,
    ClockRate,
    MultiprocessorCount,
    MemoryClockRate,
    GlobalMemoryBusWidth,
    L2CacheSize,
    MaxThreadsPerMultiprocessor,
    ComputeCapabilityMajor,
    ComputeCapabilityMinor,
    MaxSharedMemoryPerMultiprocessor,
    MaxRegistersPerMultiprocessor,
}

impl DeviceAttribute {
    fn raw(self) -> sys::CUdevice_attribute {
        use DeviceAttribute::*;
        use sys::CUdevice_attribute as A;
        match self {
            MaxThreadsPerBlock => A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            MaxBlockDimX => A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
            MaxBlockDimY => A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
            MaxBlockDimZ => A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
            MaxGridDimX => A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
            MaxGridDimY => A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
            MaxGridDimZ => A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
            MaxSharedMemoryPerBlock => A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            TotalConstantMemory => A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
            WarpSize => A::CU_DEVICE_ATTRIBUTE_WARP_SIZE,
            MaxRegistersPerBlock => A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            ClockRate => A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
            MultiprocessorCount => A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            MemoryClockRate => A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
            GlobalMemoryBusWidth => A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            L2CacheSize => A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            MaxThreadsPerMultiprocessor => A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            ComputeCapabilityMajor => A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            ComputeCapabilityMinor => A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            MaxSharedMemoryPerMultiprocessor => A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            MaxRegistersPerMultiprocessor => A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        }
    }

    /// What the emulator reports: one SM of a Hopper-like device (the
    /// emulator models no timing, caches or registers).
    fn emulated(self) -> i32 {
        use DeviceAttribute::*;
        match self {
            MaxThreadsPerBlock | MaxBlockDimX | MaxBlockDimY => 1024,
            MaxBlockDimZ => 64,
            MaxGridDimX => i32::MAX,
            MaxGridDimY | MaxGridDimZ => 65535,
            MaxSharedMemoryPerBlock => 48 * 1024,
            TotalConstantMemory => 64 * 1024,
            WarpSize => 32,
            MaxRegistersPerBlock | MaxRegistersPerMultiprocessor => 65536,
            ClockRate | MemoryClockRate | GlobalMemoryBusWidth | L2CacheSize => 0,
            MultiprocessorCount => 1,
            MaxThreadsPerMultiprocessor => 2048,
            ComputeCapabilityMajor | ComputeCapabilityMinor => 0,
            MaxSharedMemoryPerMultiprocessor => 228 * 1024,
        }
    }
}

/// A device: its ordinal (0 on the emulator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: u32,
    raw: sys::CUdevice,
}

impl Device {
    /// How many devices there are (1 on the emulator).
    pub fn num_devices() -> CudaResult<u32> {
        if !backend::cuda_driver()? {
            return Ok(1);
        }
        Ok(result::device::get_count().to_result()?.max(0) as u32)
    }

    /// Device `ordinal`.
    pub fn get_device(ordinal: u32) -> CudaResult<Device> {
        if !backend::cuda_driver()? {
            return if ordinal == 0 { Ok(Device { ordinal, raw: 0 }) } else { Err(CudaError::InvalidDevice) };
        }
        let raw = result::device::get(ordinal as i32).to_result()?;
        Ok(Device { ordinal, raw })
    }

    /// Every device.
    pub fn devices() -> CudaResult<Devices> {
        Ok(Devices { next: 0, count: Device::num_devices()? })
    }

    /// Bytes of device memory (the emulator: 4 GiB, a bound it does not
    /// enforce).
    pub fn total_memory(self) -> CudaResult<usize> {
        if !backend::cuda_driver()? {
            return Ok(4 << 30);
        }
        // SAFETY: `raw` is a device the driver gave.
        unsafe { result::device::total_mem(self.raw) }.to_result()
    }

    /// The device's name (`CPU emulator` on the emulator).
    pub fn name(self) -> CudaResult<String> {
        if !backend::cuda_driver()? {
            return Ok("CPU emulator".into());
        }
        result::device::get_name(self.raw).to_result()
    }

    /// The device's UUID (zeros on the emulator).
    pub fn uuid(self) -> CudaResult<[u8; 16]> {
        if !backend::cuda_driver()? {
            return Ok([0; 16]);
        }
        let uuid = result::device::get_uuid(self.raw).to_result()?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    pub fn get_attribute(self, attr: DeviceAttribute) -> CudaResult<i32> {
        if !backend::cuda_driver()? {
            return Ok(attr.emulated());
        }
        // SAFETY: `raw` is a device the driver gave; `attr` a valid attribute.
        unsafe { result::device::get_attribute(self.raw, attr.raw()) }.to_result()
    }

    /// The driver's handle.
    pub fn as_raw(&self) -> sys::CUdevice {
        self.raw
    }

    /// The ordinal this device was got by.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }
}

/// Iterator over [`Device::devices`].
pub struct Devices {
    next: u32,
    count: u32,
}

impl Iterator for Devices {
    type Item = CudaResult<Device>;

    fn next(&mut self) -> Option<Self::Item> {
        (self.next < self.count).then(|| {
            self.next += 1;
            Device::get_device(self.next - 1)
        })
    }
}
