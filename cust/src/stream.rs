//! `Stream`: an ordered queue of work on the device. On the emulator every
//! call runs when it is made, so a stream is already synchronized.

use std::ffi::c_void;

use cudarc::driver::result::stream::StreamKind;
use cudarc::driver::{result, sys};
use gpu_launch::{Dim3, Launcher};

use crate::backend;
use crate::error::{CudaError, CudaResult, DropResult, ToResult};
use crate::event::Event;
use crate::function::{BlockSize, Emulated, FnInner, Function, GridSize, KernelArg, emulator_args};

bitflags::bitflags! {
    /// Stream creation flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct StreamFlags: u32 {
        /// Synchronizes with the default (NULL) stream.
        const DEFAULT = 0x00;
        /// Does not synchronize with the default stream.
        const NON_BLOCKING = 0x01;
    }
}

bitflags::bitflags! {
    /// Flags for [`Stream::wait_event`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct StreamWaitEventFlags: u32 {
        const DEFAULT = 0x0;
    }
}

/// A CUDA stream (nothing on the emulator).
#[derive(Debug)]
pub struct Stream {
    inner: sys::CUstream,
    flags: StreamFlags,
    priority: i32,
}

// SAFETY: a stream handle may be used from any thread.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream; `priority`, where given, is the driver's (lower is
    /// higher priority).
    pub fn new(flags: StreamFlags, priority: Option<i32>) -> CudaResult<Self> {
        let priority_value = priority.unwrap_or(0);
        if !backend::cuda()? {
            return Ok(Stream { inner: std::ptr::null_mut(), flags, priority: priority_value });
        }
        let kind = if flags.contains(StreamFlags::NON_BLOCKING) {
            StreamKind::NonBlocking
        } else {
            StreamKind::Default
        };
        let inner = match priority {
            Some(p) => result::stream::create_with_priority(kind, p),
            None => result::stream::create(kind),
        }
        .to_result()?;
        Ok(Stream { inner, flags, priority: priority_value })
    }

    pub fn get_flags(&self) -> CudaResult<StreamFlags> {
        Ok(self.flags)
    }

    pub fn get_priority(&self) -> CudaResult<i32> {
        Ok(self.priority)
    }

    /// Waits until everything queued on the stream has run; a kernel that
    /// failed on the GPU reports here.
    pub fn synchronize(&self) -> CudaResult<()> {
        match self.raw() {
            // SAFETY: our own stream, alive.
            Some(s) => unsafe { result::stream::synchronize(s) }.to_result(),
            None => Ok(()),
        }
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait_event(&self, event: &Event, flags: StreamWaitEventFlags) -> CudaResult<()> {
        match (self.raw(), event.raw()) {
            // SAFETY: our own stream and event, alive.
            (Some(s), Some(e)) => unsafe { sys::cuStreamWaitEvent(s, e, flags.bits()) }.result().to_result(),
            _ => Ok(()),
        }
    }

    /// The driver's handle (null on the emulator).
    pub fn as_inner(&self) -> sys::CUstream {
        self.inner
    }

    pub(crate) fn raw(&self) -> Option<sys::CUstream> {
        (!self.inner.is_null()).then_some(self.inner)
    }

    /// Destroys the stream, returning it with the error on failure.
    pub fn drop(stream: Stream) -> DropResult<Stream> {
        drop(stream);
        Ok(())
    }

    /// What `launch!` expands to: queues `function` on this stream. On the
    /// emulator the arguments are first checked against the kernel's
    /// declaration, then the kernel runs with every check of the emulator.
    ///
    /// # Safety
    /// The arguments are what the kernel takes, and the memory they point
    /// to is alive and large enough until the stream is synchronized.
    #[doc(hidden)]
    pub unsafe fn launch<G: Into<GridSize>, B: Into<BlockSize>>(
        &self,
        function: &Function,
        grid: G,
        block: B,
        shared_mem_bytes: u32,
        args: &[KernelArg<'_>],
    ) -> CudaResult<()> {
        let (grid, block) = (grid.into(), block.into());
        match function.inner {
            FnInner::Cuda(f) => {
                let mut params: Vec<*mut c_void> = args.iter().map(|a| a.ptr()).collect();
                // SAFETY: the caller's contract; each parameter points at a
                // value alive for this call.
                unsafe {
                    result::launch_kernel(
                        f,
                        (grid.x, grid.y, grid.z),
                        (block.x, block.y, block.z),
                        shared_mem_bytes,
                        self.inner,
                        &mut params,
                    )
                }
                .to_result()
            }
            FnInner::Emulator(kernel) => {
                let packed = emulator_args(kernel, args)?;
                let gpu = lab_runtime::Gpu::emulator();
                match kernel {
                    Emulated::Linked(kernel) => {
                        let (g, b) = (
                            Dim3 { x: grid.x, y: grid.y, z: grid.z },
                            Dim3 { x: block.x, y: block.y, z: block.z },
                        );
                        // SAFETY: the caller's contract; the arguments match the
                        // declaration (checked above) and every buffer's extent is
                        // what the emulator lets the kernel touch.
                        unsafe { gpu.launch_with(kernel, g, b, shared_mem_bytes, &packed) }
                            .map_err(|e| CudaError::Emulator(CudaError::leak(e.to_string())))
                    }
                    // SAFETY: as above, in the library's emulator.
                    Emulated::Library(library, kernel) => unsafe {
                        library.launch(
                            kernel,
                            [grid.x, grid.y, grid.z],
                            [block.x, block.y, block.z],
                            shared_mem_bytes,
                            &packed,
                            gpu.checks(),
                        )
                    },
                }
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(s) = self.raw() {
            // SAFETY: our own stream, destroyed once.
            let _ = unsafe { result::stream::destroy(s) };
        }
    }
}
