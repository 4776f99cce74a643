//! `Context`: the device's primary context, made current (nothing on the
//! emulator). As in cust, keep it alive while the program uses the device.

use cudarc::driver::{result, sys};

use crate::backend::{self, RawContext};
use crate::device::Device;
use crate::error::{CudaResult, DropResult, ToResult};

bitflags::bitflags! {
    /// Scheduling flags (`CUctx_flags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ContextFlags: u32 {
        const SCHED_SPIN = 0x01;
        const SCHED_YIELD = 0x02;
        const SCHED_BLOCKING_SYNC = 0x04;
        const SCHED_AUTO = 0x00;
        const MAP_HOST = 0x08;
        const LMEM_RESIZE_TO_MAX = 0x10;
    }
}

/// A context: on a GPU, the device's primary context (retained and made
/// current on this thread; every call of this crate makes it current on
/// its own thread too); on the emulator, nothing.
#[derive(Debug, Clone)]
pub struct Context {
    raw: Option<RawContext>,
    device: Device,
}

impl Context {
    /// Retains `device`'s primary context and makes it current.
    pub fn new(device: Device) -> CudaResult<Self> {
        if !backend::cuda_driver()? {
            return Ok(Context { raw: None, device });
        }
        // SAFETY: `device` is a device the driver gave.
        let ctx = unsafe { result::primary_ctx::retain(device.as_raw()) }.to_result()?;
        // SAFETY: `ctx` was just retained.
        unsafe { result::ctx::set_current(ctx) }.to_result()?;
        backend::set_context(RawContext(ctx));
        Ok(Context { raw: Some(RawContext(ctx)), device })
    }

    /// Sets the scheduling flags (ignored on the emulator).
    pub fn set_flags(&self, flags: ContextFlags) -> CudaResult<()> {
        if self.raw.is_none() {
            return Ok(());
        }
        // SAFETY: the flags are CUctx_flags' own bits, device-wide.
        unsafe { sys::cuDevicePrimaryCtxSetFlags_v2(self.device.as_raw(), flags.bits()) }.result().to_result()
    }

    /// The driver's handle (null on the emulator).
    pub fn as_raw(&self) -> sys::CUcontext {
        self.raw.map_or(std::ptr::null_mut(), |r| r.0)
    }

    /// The context's device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Drops the context, returning it with the error on failure (never
    /// fails here: the primary context stays retained until exit, so
    /// buffers that outlive it stay valid).
    pub fn drop(_ctx: Context) -> DropResult<Context> {
        Ok(())
    }
}

/// The calling thread's current context.
pub struct CurrentContext;

impl CurrentContext {
    /// Waits for all work on the device.
    pub fn synchronize() -> CudaResult<()> {
        if backend::cuda()? {
            result::ctx::synchronize().to_result()?;
        }
        Ok(())
    }

    /// The current context's device.
    pub fn get_device() -> CudaResult<Device> {
        if !backend::cuda()? {
            return Device::get_device(0);
        }
        let mut raw = 0;
        // SAFETY: writes one device handle.
        unsafe { sys::cuCtxGetDevice(&mut raw) }.result().to_result()?;
        let count = Device::num_devices()?;
        (0..count)
            .map(Device::get_device)
            .find(|d| d.as_ref().is_ok_and(|d| d.as_raw() == raw))
            .unwrap_or(Err(crate::error::CudaError::InvalidDevice))
    }

    /// Makes `context` current on this thread.
    pub fn set_current(context: &Context) -> CudaResult<()> {
        if let Some(RawContext(ctx)) = context.raw {
            // SAFETY: a retained primary context.
            unsafe { result::ctx::set_current(ctx) }.to_result()?;
        }
        Ok(())
    }
}
