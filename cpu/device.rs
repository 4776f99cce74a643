//! [`Gpu`]: one CUDA device with the embedded PTX loaded, and the few
//! operations every family needs (checked allocation, upload, download,
//! poisoning, typed launch configuration).

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx as CudarcPtx;
use gpu::launch::{Dim3, Kernel};

use crate::error::{CudaContext as _, Error, Result};
use crate::ptx::{self, Ptx};

/// The bit pattern written over outputs before each run: a quiet NaN with a
/// recognisable payload, so an element the kernel never wrote cannot pass.
pub const POISON_BITS: u32 = 0x7fc0_dead;

/// What the host knows about the device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    pub major: i32,
    pub minor: i32,
    pub multiprocessors: i32,
    pub total_memory: usize,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
    /// The embedded PTX chosen for this device.
    pub ptx_arch: &'static str,
}

/// A device, its stream and our PTX module.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    pub info: DeviceInfo,
    pub ptx: Ptx,
}

impl Gpu {
    /// Opens device `index` and loads the PTX that suits it. Without a
    /// driver or device this is an [`Error::NoDriver`] / [`Error::NoDevice`],
    /// never a panic.
    pub fn open(index: usize) -> Result<Gpu> {
        // SAFETY: only tries to dlopen libcuda; cudarc would panic instead.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let count = match CudaContext::device_count() {
            Ok(n) => n.max(0) as usize,
            Err(_) => 0, // cuInit fails with CUDA_ERROR_NO_DEVICE where the driver sees none
        };
        if index >= count {
            return Err(Error::NoDevice { index, count });
        }
        let ctx = CudaContext::new(index).during("cuCtxCreate")?;
        // One stream, ordered by hand: no per-argument event tracking, which
        // would also add event records to every timed launch.
        // SAFETY: every buffer is used on `stream` only.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability().during("cuDeviceGetAttribute")?;
        let ptx = ptx::for_device(major, minor).ok_or(Error::NoPtxFor { major, minor })?;
        let module = ctx.load_module(CudarcPtx::from_src(ptx.text)).during("cuModuleLoadData")?;
        let mut driver_version = 0;
        // SAFETY: writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) };
        let info = DeviceInfo {
            index,
            name: ctx.name().during("cuDeviceGetName")?,
            major,
            minor,
            multiprocessors: ctx
                .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .during("cuDeviceGetAttribute")?,
            total_memory: ctx.total_mem().during("cuDeviceTotalMem")?,
            driver_version,
            ptx_arch: ptx.arch,
        };
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream, module, info, ptx })
    }

    /// The kernel's function, with its dynamic shared-memory limit raised
    /// where it needs more than the default 48 KiB.
    pub fn function(&self, kernel: &Kernel) -> Result<CudaFunction> {
        let function = self
            .module
            .load_function(kernel.name)
            .map_err(|_| Error::MissingKernel { name: kernel.name, arch: self.ptx.arch })?;
        if kernel.shared_bytes > 48 * 1024 {
            function
                .set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel.shared_bytes as i32)
                .during("cuFuncSetAttribute")?;
        }
        Ok(function)
    }

    /// Fails with [`Error::OutOfMemory`] unless `bytes` more fit on the device now.
    pub fn check_fits(&self, bytes: usize) -> Result<()> {
        let (free, _total) = self.ctx.mem_get_info().during("cuMemGetInfo")?;
        // Leave room for the context's own allocations.
        let headroom = 64 << 20;
        if bytes.saturating_add(headroom) > free {
            return Err(Error::OutOfMemory { needed: bytes, free });
        }
        Ok(())
    }

    /// An uninitialised device buffer of `len` elements (poison or fill it).
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.check_fits(len * size_of::<T>())?;
        // SAFETY: callers poison or overwrite the buffer before reading it.
        unsafe { self.stream.alloc::<T>(len) }.during("cuMemAlloc")
    }

    /// A device copy of `host`.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(&self, host: &[T]) -> Result<CudaSlice<T>> {
        let mut buffer = self.alloc(host.len())?;
        self.stream.memcpy_htod(host, &mut buffer).during("cuMemcpyHtoD")?;
        Ok(buffer)
    }

    /// The contents of `buffer`.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, buffer: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream.clone_dtoh(buffer).during("cuMemcpyDtoH")
    }

    /// Overwrites every 4-byte word of `buffer` with [`POISON_BITS`].
    pub fn poison<T: DeviceRepr>(&self, buffer: &mut CudaSlice<T>) -> Result<()> {
        let words = buffer.len() * size_of::<T>() / 4;
        let (ptr, _sync) = buffer.device_ptr(&self.stream);
        // SAFETY: `ptr` addresses `words` 4-byte words owned by `buffer`.
        unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, POISON_BITS, words, self.stream.cu_stream()) }
            .result()
            .during("cuMemsetD32Async")
    }

    /// Waits for all work on the stream; reports a failed kernel here.
    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().during("kernel execution (cuStreamSynchronize)")
    }

    /// The launch configuration of `kernel` over `grid`.
    pub fn config(kernel: &Kernel, grid: Dim3) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (grid.x, grid.y, grid.z),
            block_dim: (kernel.block.x, kernel.block.y, kernel.block.z),
            shared_mem_bytes: kernel.shared_bytes,
        }
    }
}
