//! [`Gpu`]: where kernels run. Either a CUDA device with a crate's PTX
//! loaded, or the CPU emulator (the `emu` crate) running the same kernels
//! from their host build. `Gpu` is the [`Launcher`] every typed
//! launcher takes, so the back end is a choice made when the `Gpu` is
//! opened, not a second API.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx as CudarcPtx;
use emu::Analysis;
use gpu_launch::{Arg, Dim3, Kernel, Launcher};

use super::error::{CudaContext as _, Error, Result};
use super::ptx::{self, Ptx};

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
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0 (0 for the emulator).
    pub driver_version: i32,
    /// The embedded PTX chosen for this device (`emulator` for the CPU).
    pub ptx_arch: &'static str,
}

/// A CUDA device, its stream and our PTX (each kernel loaded from its own
/// module on its first launch).
pub struct Cuda {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub ptx: Ptx,
    /// Every embedded PTX (to say where a missing kernel is).
    archs: &'static [Ptx],
    /// Each kernel's function, loaded on its first launch, and the most
    /// dynamic shared memory it was allowed so far (setting the attribute
    /// is a driver call: once, not every launch).
    functions: RefCell<HashMap<&'static str, (CudaFunction, u32)>>,
    /// The PTX's entry names, read once (tens of MB of PTX: milliseconds
    /// a read, too slow for every call of a library).
    entries: std::cell::OnceCell<std::collections::HashSet<&'static str>>,
}

enum Backend {
    Cuda(Cuda),
    Emulator,
}

/// Where kernels run: a CUDA device or the CPU emulator.
pub struct Gpu {
    backend: Backend,
    pub info: DeviceInfo,
    /// Emulator: record accesses for the bank/sector analysis.
    analyze: Cell<bool>,
    analysis: RefCell<Analysis>,
    /// Emulator: check races and uninitialized reads ([`Gpu::set_checks`]).
    checks: Cell<bool>,
    /// Launch `dependent = true` kernels as such (sm_90 and later; see
    /// [`Gpu::set_dependent_launches`]).
    dependent_launches: Cell<bool>,
}

/// Device memory: a CUDA allocation, or 256-byte-aligned host memory for
/// the emulator (the same alignment `cuMemAlloc` gives, so sector and
/// bank arithmetic match).
pub struct DeviceBuffer<T> {
    inner: BufferInner<T>,
}

enum BufferInner<T> {
    Cuda(CudaSlice<T>),
    Host { ptr: *mut T, len: usize },
}

const HOST_ALIGN: usize = 256;

impl<T> DeviceBuffer<T> {
    pub fn len(&self) -> usize {
        match &self.inner {
            BufferInner::Cuda(s) => s.len(),
            BufferInner::Host { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address (the emulator's host address).
    pub fn address(&self) -> u64 {
        match &self.inner {
            // cudarc's own stream tracking is off.
            BufferInner::Cuda(s) => s.cu_device_ptr_raw(),
            BufferInner::Host { ptr, .. } => *ptr as u64,
        }
    }

    fn host_slice(&self) -> &[T] {
        match &self.inner {
            // SAFETY: `ptr` holds `len` initialised (zeroed or written) T.
            BufferInner::Host { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
            BufferInner::Cuda(_) => unreachable!("a CUDA buffer on the host path"),
        }
    }

    fn host_slice_mut(&mut self) -> &mut [T] {
        match &mut self.inner {
            // SAFETY: as above, and `&mut self` is exclusive.
            BufferInner::Host { ptr, len } => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
            BufferInner::Cuda(_) => unreachable!("a CUDA buffer on the host path"),
        }
    }

    /// The CUDA allocation (for cuBLAS), if this is one.
    pub fn as_cuda(&self) -> Option<&CudaSlice<T>> {
        match &self.inner {
            BufferInner::Cuda(s) => Some(s),
            BufferInner::Host { .. } => None,
        }
    }

    /// As [`DeviceBuffer::as_cuda`], mutably.
    pub fn as_cuda_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.inner {
            BufferInner::Cuda(s) => Some(s),
            BufferInner::Host { .. } => None,
        }
    }

    fn cuda(&self) -> &CudaSlice<T> {
        match &self.inner {
            BufferInner::Cuda(s) => s,
            BufferInner::Host { .. } => unreachable!("a host buffer on the CUDA path"),
        }
    }

    fn cuda_mut(&mut self) -> &mut CudaSlice<T> {
        match &mut self.inner {
            BufferInner::Cuda(s) => s,
            BufferInner::Host { .. } => unreachable!("a host buffer on the CUDA path"),
        }
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if let BufferInner::Host { ptr, len } = self.inner {
            let bytes = (len * size_of::<T>()).max(1);
            emu::freed(ptr as usize);
            // SAFETY: allocated in `Gpu::alloc` with this layout.
            unsafe { dealloc(ptr as *mut u8, Layout::from_size_align(bytes, HOST_ALIGN).unwrap()) };
        }
    }
}

/// The raw device address of a cudarc slice.
trait RawPtr {
    fn cu_device_ptr_raw(&self) -> u64;
}

impl<T> RawPtr for CudaSlice<T> {
    fn cu_device_ptr_raw(&self) -> u64 {
        let stream = self.stream().clone();
        let (ptr, _sync) = self.device_ptr(&stream);
        ptr
    }
}

impl Gpu {
    /// Opens CUDA device `index` and loads the one of `archs` that suits it
    /// (a crate's `include_ptx!`). Without a driver or device this is an
    /// [`Error::NoDriver`] / [`Error::NoDevice`], never a panic.
    pub fn open(index: usize, archs: &'static [Ptx]) -> Result<Gpu> {
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
        let ptx = ptx::for_device(archs, major, minor).ok_or_else(|| Error::NoPtxFor {
            major,
            minor,
            built: archs.iter().map(|p| p.arch).collect::<Vec<_>>().join(", "),
        })?;
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
        Ok(Gpu {
            backend: Backend::Cuda(Cuda {
                ctx,
                stream,
                ptx,
                archs,
                functions: Default::default(),
                entries: Default::default(),
            }),
            dependent_launches: Cell::new(major >= 9),
            info,
            analyze: Cell::new(false),
            analysis: RefCell::new(Analysis::default()),
            checks: Cell::new(true),
        })
    }

    /// Whether kernels declared `dependent = true` start while the kernel
    /// ahead of them finishes (CUDA's programmatic dependent launch; on by
    /// default from sm_90), or after it as every other launch does: for
    /// A/B timing. Devices before sm_90 and the emulator launch them as
    /// ordinary kernels either way (the emulator still checks that they
    /// wait before touching global memory).
    pub fn set_dependent_launches(&self, on: bool) {
        self.dependent_launches.set(on && self.info.major >= 9);
    }

    /// Opens CUDA device `index` as [`Gpu::open`] does, or on a machine
    /// with no GPU (no driver, or no device) the CPU emulator, which is
    /// device 0 alone, with the reason there was no GPU. Any other failure,
    /// or a device index past 0 where there is no GPU, is an error.
    pub fn open_or_emulator(index: usize, archs: &'static [Ptx]) -> Result<(Gpu, Option<Error>)> {
        match Gpu::open(index, archs) {
            Ok(gpu) => Ok((gpu, None)),
            Err(e @ (Error::NoDriver | Error::NoDevice { count: 0, .. })) if index == 0 => {
                Ok((Gpu::emulator(), Some(e)))
            }
            Err(e @ (Error::NoDriver | Error::NoDevice { count: 0, .. })) => Err(Error::InvalidInput(
                format!("no device {index}: {e}; the emulator, which runs instead, is device 0"),
            )),
            Err(e) => Err(e),
        }
    }

    /// The CPU emulator: the same kernels, from their host build.
    pub fn emulator() -> Gpu {
        Gpu::emulator_with_sms(1)
    }

    /// The emulator as a device of `sms` multiprocessors: what a persistent
    /// kernel's grid is sized by ([`Gpu::resident_blocks`]), so that a test
    /// can run its blocks' shares of the work as a GPU would deal them.
    pub fn emulator_with_sms(sms: i32) -> Gpu {
        Gpu {
            backend: Backend::Emulator,
            info: DeviceInfo {
                index: 0,
                name: "CPU emulator".into(),
                major: 0,
                minor: 0,
                multiprocessors: sms.max(1),
                total_memory: 4 << 30,
                driver_version: 0,
                ptx_arch: "emulator",
            },
            analyze: Cell::new(false),
            analysis: RefCell::new(Analysis::default()),
            checks: Cell::new(checks_from_env()),
            dependent_launches: Cell::new(false),
        }
    }

    /// Emulator: whether the following launches check races and reads of
    /// shared memory nothing wrote (on by default; `KERNEL_LAB_EMU_CHECKS=off`
    /// turns them off for the process). Off, a launch only verifies what it
    /// computes, several times faster: bounds, barriers, warp collectives,
    /// deadlocks and the asynchronous copies' misuse are still errors.
    pub fn set_checks(&self, on: bool) {
        self.checks.set(on);
    }

    /// Whether the emulator's launches check races and uninitialized
    /// shared reads ([`Gpu::set_checks`]).
    pub fn checks(&self) -> bool {
        self.checks.get()
    }

    pub fn is_emulator(&self) -> bool {
        matches!(self.backend, Backend::Emulator)
    }

    /// The CUDA device, for what only it has (events, cuBLAS).
    pub fn cuda(&self) -> Option<&Cuda> {
        match &self.backend {
            Backend::Cuda(c) => Some(c),
            Backend::Emulator => None,
        }
    }

    fn need_cuda(&self, what: &str) -> Result<&Cuda> {
        self.cuda()
            .ok_or_else(|| Error::InvalidInput(format!("{what} needs a GPU; the emulator has no timing")))
    }

    /// Emulator: record the bank-conflict and coalescing analysis of the
    /// following launches (read it with [`Gpu::take_analysis`]).
    pub fn set_analysis(&self, on: bool) {
        self.analyze.set(on);
    }

    /// The analysis accumulated since the last call.
    pub fn take_analysis(&self) -> Analysis {
        self.analysis.take()
    }

    /// Fails with [`Error::OutOfMemory`] unless `bytes` more fit on the device now.
    pub fn check_fits(&self, bytes: usize) -> Result<()> {
        let free = match &self.backend {
            Backend::Cuda(c) => c.ctx.mem_get_info().during("cuMemGetInfo")?.0,
            Backend::Emulator => self.info.total_memory,
        };
        // Leave room for the context's own allocations.
        let headroom = 64 << 20;
        if bytes.saturating_add(headroom) > free {
            return Err(Error::OutOfMemory { needed: bytes, free });
        }
        Ok(())
    }

    /// An uninitialised device buffer of `len` elements (poison or fill it).
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.check_fits(len * size_of::<T>())?;
        let inner = match &self.backend {
            // SAFETY: callers poison or overwrite the buffer before reading it.
            Backend::Cuda(c) => BufferInner::Cuda(unsafe { c.stream.alloc::<T>(len) }.during("cuMemAlloc")?),
            Backend::Emulator => {
                let layout = Layout::from_size_align((len * size_of::<T>()).max(1), HOST_ALIGN).unwrap();
                // SAFETY: non-zero size; zeroed memory is a valid T (ValidAsZeroBits).
                let ptr = unsafe { alloc_zeroed(layout) } as *mut T;
                if ptr.is_null() {
                    return Err(Error::OutOfMemory { needed: layout.size(), free: 0 });
                }
                // What the copy engine may read through a tensor map.
                emu::allocated(ptr as usize, layout.size());
                BufferInner::Host { ptr, len }
            }
        };
        Ok(DeviceBuffer { inner })
    }

    /// A device buffer of `len` zeros.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.alloc(len)?;
        self.zero(&mut buffer)?;
        Ok(buffer)
    }

    /// A device copy of `host`.
    pub fn upload<T: DeviceRepr + ValidAsZeroBits + Copy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.alloc(host.len())?;
        match &self.backend {
            Backend::Cuda(c) => c.stream.memcpy_htod(host, buffer.cuda_mut()).during("cuMemcpyHtoD")?,
            Backend::Emulator => buffer.host_slice_mut().copy_from_slice(host),
        }
        Ok(buffer)
    }

    /// The contents of `buffer`.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, buffer: &DeviceBuffer<T>) -> Result<Vec<T>> {
        match &self.backend {
            Backend::Cuda(c) => c.stream.clone_dtoh(buffer.cuda()).during("cuMemcpyDtoH"),
            Backend::Emulator => Ok(buffer.host_slice().to_vec()),
        }
    }

    /// Copies all of `src` into `dst` (same length) on the device.
    pub fn copy<T: DeviceRepr + Copy>(&self, src: &DeviceBuffer<T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::InvalidInput(format!("copy of {} elements into {}", src.len(), dst.len())));
        }
        match &self.backend {
            Backend::Cuda(c) => c.stream.memcpy_dtod(src.cuda(), dst.cuda_mut()).during("cuMemcpyDtoDAsync"),
            Backend::Emulator => {
                dst.host_slice_mut().copy_from_slice(src.host_slice());
                Ok(())
            }
        }
    }

    /// Sets every byte of `buffer` to zero.
    pub fn zero<T: DeviceRepr + ValidAsZeroBits>(&self, buffer: &mut DeviceBuffer<T>) -> Result<()> {
        match &self.backend {
            Backend::Cuda(c) => c.stream.memset_zeros(buffer.cuda_mut()).during("cuMemsetD8Async"),
            Backend::Emulator => {
                let bytes = buffer.len() * size_of::<T>();
                if let BufferInner::Host { ptr, .. } = buffer.inner {
                    // SAFETY: the buffer owns `bytes` bytes at `ptr`.
                    unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, bytes) };
                }
                Ok(())
            }
        }
    }

    /// Overwrites every 4-byte word of `buffer` with [`POISON_BITS`].
    pub fn poison<T: DeviceRepr>(&self, buffer: &mut DeviceBuffer<T>) -> Result<()> {
        let words = buffer.len() * size_of::<T>() / 4;
        match &self.backend {
            Backend::Cuda(c) => {
                let (ptr, _sync) = buffer.cuda().device_ptr(&c.stream);
                // SAFETY: `ptr` addresses `words` 4-byte words owned by `buffer`.
                unsafe {
                    cudarc::driver::sys::cuMemsetD32Async(ptr, POISON_BITS, words, c.stream.cu_stream())
                }
                .result()
                .during("cuMemsetD32Async")
            }
            Backend::Emulator => {
                if let BufferInner::Host { ptr, .. } = buffer.inner {
                    // SAFETY: the buffer owns `words` aligned 4-byte words.
                    unsafe { std::slice::from_raw_parts_mut(ptr as *mut u32, words) }.fill(POISON_BITS);
                }
                Ok(())
            }
        }
    }

    /// Waits for all queued work; reports a failed kernel here.
    pub fn sync(&self) -> Result<()> {
        match &self.backend {
            Backend::Cuda(c) => c.stream.synchronize().during("kernel execution (cuStreamSynchronize)"),
            Backend::Emulator => Ok(()),
        }
    }

    /// `kernel`'s function, loaded on first use, with its dynamic
    /// shared-memory limit raised where a launch needs more than the
    /// default 48 KiB.
    fn function(&self, c: &Cuda, kernel: &'static Kernel, shared: u32) -> Result<CudaFunction> {
        let cached = c.functions.borrow().get(kernel.name).cloned();
        let (function, allowed) = match cached {
            Some(f) => f,
            None => {
                // Each kernel from its own module ([`ptx::entry_module`]):
                // the driver compiles what it loads.
                let text = c.ptx.module(kernel.name).ok_or_else(|| self.missing(c, kernel))?;
                let module = c.ctx.load_module(CudarcPtx::from_src(text)).during("cuModuleLoadData")?;
                let f = module.load_function(kernel.name).map_err(|_| self.missing(c, kernel))?;
                c.functions.borrow_mut().insert(kernel.name, (f.clone(), 48 * 1024));
                (f, 48 * 1024)
            }
        };
        if shared > allowed {
            function
                .set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
                .during("cuFuncSetAttribute")?;
            c.functions.borrow_mut().insert(kernel.name, (function.clone(), shared));
        }
        Ok(function)
    }

    /// The error for `kernel` missing from the device's PTX.
    fn missing(&self, c: &Cuda, kernel: &'static Kernel) -> Error {
        let elsewhere: Vec<&str> =
            c.archs.iter().filter(|p| p.entries().contains(&kernel.name)).map(|p| p.arch).collect();
        Error::MissingKernel {
            name: kernel.name,
            arch: c.ptx.arch,
            device: format!("{} (compute {}.{})", self.info.name, self.info.major, self.info.minor),
            elsewhere: elsewhere.join(" or "),
        }
    }

    /// Whether the device can run `kernel`: `Err` says why not (its PTX
    /// lacks it; an sm_90a kernel on another device). Always `Ok` on the
    /// emulator, which runs every kernel.
    pub fn has_kernel(&self, kernel: &'static Kernel) -> Result<()> {
        match &self.backend {
            // A kernel loaded before is there; else look it up among the
            // PTX's entries, read on the first such call.
            Backend::Cuda(c)
                if !c.functions.borrow().contains_key(kernel.name)
                    && !c
                        .entries
                        .get_or_init(|| c.ptx.entries().into_iter().collect())
                        .contains(kernel.name) =>
            {
                Err(self.missing(c, kernel))
            }
            _ => Ok(()),
        }
    }

    /// How many blocks of `kernel` run at once on the whole device, for a
    /// persistent kernel's grid (`Launch::persistent_grid`): one per SM
    /// times its declared minimum per SM, or for a clustered kernel whole
    /// clusters as the driver counts them (`cuOccupancyMaxActiveClusters`:
    /// a cluster's blocks share one GPC, and a GPC's SMs need not divide
    /// evenly into clusters). On the emulator, one SM's worth.
    pub fn resident_blocks(&self, kernel: &'static Kernel) -> Result<u32> {
        let launch = kernel.launch;
        let per_sm = launch.min_blocks_per_sm.max(1);
        let size = launch.cluster.count();
        match &self.backend {
            Backend::Cuda(c) if size > 1 => {
                let function = self.function(c, kernel, launch.shared_bytes)?;
                let (cluster, block) = (launch.cluster, launch.block);
                let config = LaunchConfig {
                    grid_dim: (cluster.x, cluster.y, cluster.z),
                    block_dim: (block.x, block.y, block.z),
                    shared_mem_bytes: launch.shared_bytes,
                };
                let clusters = function
                    .occupancy_max_active_clusters(config, &c.stream)
                    .during("cuOccupancyMaxActiveClusters")?;
                Ok(clusters * size)
            }
            _ => Ok(self.info.multiprocessors.max(1) as u32 * per_sm),
        }
    }

    /// Events for timing (CUDA only).
    #[doc(hidden)]
    pub fn timing_events(&self) -> Result<(&Cuda, cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)> {
        let c = self.need_cuda("timing")?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok((
            c,
            c.ctx.new_event(flags).during("cuEventCreate")?,
            c.ctx.new_event(flags).during("cuEventCreate")?,
        ))
    }
}

/// `cuLaunchKernelEx` of `function` with `words` as its parameters, its
/// programmatic stream serialization allowed ([`Launch::dependent`]): the
/// grid may start once the kernel ahead of it on the stream lets it, and
/// waits for that kernel itself (`griddepcontrol.wait`).
///
/// # Safety
/// As for [`Launcher::launch_with`]; the kernel waits before it touches
/// global memory.
///
/// [`Launch::dependent`]: gpu_launch::Launch::dependent
unsafe fn launch_dependent(
    c: &Cuda,
    function: &CudaFunction,
    config: LaunchConfig,
    words: &[Arg],
) -> std::result::Result<(), cudarc::driver::DriverError> {
    use cudarc::driver::sys;
    // Each parameter in the low bytes of a word of its own (the driver
    // reads each parameter's size from its pointer, little-endian).
    let mut values: Vec<u64> = words
        .iter()
        .map(|w| match *w {
            Arg::U32(v) => u64::from(v),
            Arg::I32(v) => u64::from(v as u32),
            Arg::U64(v) => v,
            Arg::I64(v) => v as u64,
            Arg::F32(v) => u64::from(v.to_bits()),
            Arg::F64(v) => v.to_bits(),
            Arg::Value(_) => 0,
            Arg::Ptr { .. } | Arg::Slice { .. } => unreachable!("expanded by the caller"),
        })
        .collect();
    // A value by value: a pointer to its own bytes, which the driver reads
    // as many of as the parameter declares.
    let mut params: Vec<*mut std::ffi::c_void> = (values.iter_mut().zip(words))
        .map(|(v, w)| match w {
            Arg::Value(value) => value.bytes().as_ptr().cast_mut().cast(),
            _ => (v as *mut u64).cast(),
        })
        .collect();
    // SAFETY: a plain C union; zero is a valid value of every member.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attribute = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let (grid, block) = (config.grid_dim, config.block_dim);
    let launch = sys::CUlaunchConfig {
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: block.0,
        blockDimY: block.1,
        blockDimZ: block.2,
        sharedMemBytes: config.shared_mem_bytes,
        hStream: c.stream.cu_stream(),
        attrs: &mut attribute,
        numAttrs: 1,
    };
    c.ctx.bind_to_thread()?;
    // SAFETY: the caller's contract; `params` points at one value per
    // parameter, alive until the call returns (the driver copies them).
    unsafe {
        sys::cuLaunchKernelEx(&launch, function.cu_function(), params.as_mut_ptr(), std::ptr::null_mut())
    }
    .result()
}

impl Launcher for Gpu {
    type Buffer<T: 'static> = DeviceBuffer<T>;
    type Error = Error;

    fn address<T: 'static>(buffer: &DeviceBuffer<T>) -> (u64, usize) {
        (buffer.address(), buffer.len())
    }

    /// Queues the kernel on the GPU's stream; on the emulator it runs now,
    /// and an out-of-bounds access, race or deadlock is an error naming it.
    unsafe fn launch_with(
        &self,
        kernel: &'static Kernel,
        grid: Dim3,
        block: Dim3,
        dynamic_shared: u32,
        args: &[Arg],
    ) -> Result<()> {
        let shared_bytes = gpu_launch::shared_bytes(kernel, dynamic_shared);
        match &self.backend {
            Backend::Cuda(c) => {
                let function = self.function(c, kernel, shared_bytes)?;
                let config = LaunchConfig {
                    grid_dim: (grid.x, grid.y, grid.z),
                    block_dim: (block.x, block.y, block.z),
                    shared_mem_bytes: shared_bytes,
                };
                // The parameters as the driver takes them: a buffer is its
                // address, a slice its address and then its length. (One
                // allocation: `builder` keeps references into it.)
                let mut words: Vec<Arg> = Vec::with_capacity(2 * args.len());
                for arg in args {
                    match *arg {
                        Arg::Ptr { addr, .. } => words.push(Arg::U64(addr)),
                        Arg::Slice { addr, len, .. } => words.extend([Arg::U64(addr), Arg::U64(len)]),
                        scalar => words.push(scalar),
                    }
                }
                if kernel.launch.dependent && self.dependent_launches.get() {
                    // SAFETY: as below.
                    return unsafe { launch_dependent(c, &function, config, &words) }.during(kernel.name);
                }
                let mut builder = c.stream.launch_builder(&function);
                for word in &words {
                    match word {
                        Arg::U32(v) => builder.arg(v),
                        Arg::I32(v) => builder.arg(v),
                        Arg::U64(v) => builder.arg(v),
                        Arg::I64(v) => builder.arg(v),
                        Arg::F32(v) => builder.arg(v),
                        Arg::F64(v) => builder.arg(v),
                        Arg::Value(v) => builder.arg(ByValue::new(v)),
                        Arg::Ptr { .. } | Arg::Slice { .. } => unreachable!("expanded above"),
                    };
                }
                // SAFETY: the caller's contract: `args` are the kernel's
                // parameters in order (a typed launcher packed them), and the
                // buffers are as long as the kernel needs.
                unsafe { builder.launch(config) }.during(kernel.name)?;
                Ok(())
            }
            Backend::Emulator => {
                let (g, b) = ([grid.x, grid.y, grid.z], [block.x, block.y, block.z]);
                // SAFETY: the caller's contract, as above.
                let analysis = unsafe {
                    kernel.emulate(g, b, dynamic_shared, args, self.analyze.get(), self.checks.get())
                }
                .map_err(Error::Emulator)?;
                self.analysis.borrow_mut().add(&analysis);
                Ok(())
            }
        }
    }
}

/// A value passed by value, as the driver takes a parameter: a pointer
/// to its bytes (the first field of a `Value`).
#[repr(transparent)]
struct ByValue(gpu_launch::Value);

impl ByValue {
    fn new(value: &gpu_launch::Value) -> &ByValue {
        // SAFETY: `ByValue` is a transparent wrapper of `Value`.
        unsafe { &*(value as *const gpu_launch::Value).cast::<ByValue>() }
    }
}

// SAFETY: the default `as_kernel_param` is the value's address, which is
// its bytes' (`Value` is `repr(C)` with the bytes first).
unsafe impl cudarc::driver::DeviceRepr for ByValue {}

/// Fails with [`Error::InvalidInput`] unless `bytes` of host memory
/// (a problem's inputs and its reference, or on the emulator its device
/// buffers too) are available now, so that a problem too large for the
/// host is one line before any work rather than an abort mid-run.
pub fn check_host_fits(bytes: usize) -> Result<()> {
    // Linux's estimate of what can be allocated without swapping; where
    // it cannot be read, allocation is left to fail as it does.
    let Some(available) = host_memory_available() else { return Ok(()) };
    if bytes > available {
        return Err(Error::InvalidInput(format!(
            "the problem needs {} of host memory but only {} is available",
            crate::error::human_bytes(bytes),
            crate::error::human_bytes(available)
        )));
    }
    Ok(())
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn host_memory_available() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// `KERNEL_LAB_EMU_CHECKS`: `off` (or `0`) turns the emulator's race and
/// initialization checks off; anything else, or nothing, leaves them on.
fn checks_from_env() -> bool {
    !matches!(std::env::var("KERNEL_LAB_EMU_CHECKS").as_deref().map(str::trim), Ok("off" | "0"))
}
