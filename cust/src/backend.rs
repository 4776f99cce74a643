//! Where cust's calls go: the CUDA driver (through cudarc's `result` and
//! `sys` layers, which are cust's own driver calls) or the CPU emulator.
//! cust keeps its state in the driver (the current context); this crate
//! keeps the same in one process-wide choice made by `init`.
//!
//! On the emulator, "device memory" is host memory aligned as `cuMemAlloc`
//! aligns it (256 bytes), remembered by address, so that a raw
//! `DevicePointer` passed to a kernel can be given the extent of its
//! allocation: the bounds the emulator checks.

use std::alloc::{Layout, dealloc};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, RwLock};

use cudarc::driver::{result, sys};

use crate::error::{CudaError, CudaResult, ToResult};

/// A context handle the driver gave us; usable from any thread once made
/// current there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawContext(pub sys::CUcontext);

// SAFETY: a CUcontext is a handle the driver lets any thread make current.
unsafe impl Send for RawContext {}
// SAFETY: as above; the handle is never dereferenced here.
unsafe impl Sync for RawContext {}

/// The choice `init` made.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Backend {
    /// The driver is initialized; `context` is set by `Context::new`.
    Cuda {
        context: Option<RawContext>,
    },
    Emulator,
}

static BACKEND: RwLock<Option<Backend>> = RwLock::new(None);

/// Whether `libcuda.so` can be loaded (cudarc panics where it cannot, so
/// every driver call is behind this).
pub(crate) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen libcuda.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// How many devices the driver sees (0 without a driver, or where `cuInit`
/// reports none).
fn driver_devices() -> usize {
    if !driver_present() || result::init().is_err() {
        return 0;
    }
    result::device::get_count().map_or(0, |n| n.max(0) as usize)
}

/// `cuInit`: the driver where it sees a device, else the emulator (which
/// runs the kernels linked into the program, or those of the host library
/// a loaded PTX names: `Module::from_ptx` says if it finds neither).
pub(crate) fn init() -> CudaResult<Backend> {
    if let Some(backend) = *BACKEND.read().unwrap() {
        return Ok(backend);
    }
    let backend = if driver_devices() > 0 {
        Backend::Cuda { context: None }
    } else {
        eprintln!("no GPU found: running the kernels on the CPU emulator (lab-cust)");
        Backend::Emulator
    };
    *BACKEND.write().unwrap() = Some(backend);
    Ok(backend)
}

/// The backend, once `init` (or `quick_init`) has run.
pub(crate) fn get() -> CudaResult<Backend> {
    BACKEND.read().unwrap().ok_or(CudaError::NotInitialized)
}

pub(crate) fn is_emulator() -> CudaResult<bool> {
    Ok(matches!(get()?, Backend::Emulator))
}

/// Records the context `Context::new` made current.
pub(crate) fn set_context(context: RawContext) {
    *BACKEND.write().unwrap() = Some(Backend::Cuda { context: Some(context) });
}

/// Makes the context current on this thread (a no-op where it is), for a
/// driver call; `Ok(false)` on the emulator.
pub(crate) fn cuda() -> CudaResult<bool> {
    match get()? {
        Backend::Emulator => Ok(false),
        Backend::Cuda { context: None } => Err(CudaError::InvalidContext),
        Backend::Cuda { context: Some(RawContext(ctx)) } => {
            if result::ctx::get_current().to_result()? != Some(ctx) {
                // SAFETY: `ctx` is a primary context retained by `Context::new`
                // and never released.
                unsafe { result::ctx::set_current(ctx) }.to_result()?;
            }
            Ok(true)
        }
    }
}

/// What the emulator's allocations hold: address to byte count.
static HOST_ALLOCATIONS: Mutex<BTreeMap<u64, usize>> = Mutex::new(BTreeMap::new());

/// `cuMemAlloc`'s alignment, which the emulator's allocations keep so that
/// sector and bank arithmetic match.
const ALIGN: usize = 256;

/// The bit pattern an uninitialized allocation holds on the emulator (a
/// quiet NaN as `f32`), so that a kernel reading memory nobody wrote shows.
pub(crate) const UNINIT_BITS: u32 = lab_runtime::POISON_BITS;

/// `bytes` of device memory (uninitialized: on the emulator, the poison
/// pattern). Zero bytes is a dangling, never-freed address on the GPU.
pub(crate) fn alloc(bytes: usize) -> CudaResult<u64> {
    if cuda()? {
        if bytes == 0 {
            return Ok(ALIGN as u64);
        }
        // SAFETY: the caller treats the memory as uninitialized.
        return unsafe { result::malloc_sync(bytes) }.to_result();
    }
    let layout =
        Layout::from_size_align(bytes.max(1), ALIGN).map_err(|_| CudaError::InvalidMemoryAllocation)?;
    // SAFETY: non-zero size.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        return Err(CudaError::OutOfMemory);
    }
    // SAFETY: `ptr` holds `layout.size()` bytes, a multiple of 4 or fewer.
    unsafe {
        let words = std::slice::from_raw_parts_mut(ptr as *mut u32, layout.size() / 4);
        words.fill(UNINIT_BITS);
    }
    HOST_ALLOCATIONS.lock().unwrap().insert(ptr as u64, bytes);
    Ok(ptr as u64)
}

/// Frees what `alloc` gave.
pub(crate) fn free(addr: u64, bytes: usize) -> CudaResult<()> {
    if cuda()? {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: `addr` came from `malloc_sync` and is freed once.
        return unsafe { result::free_sync(addr) }.to_result();
    }
    let known = HOST_ALLOCATIONS.lock().unwrap().remove(&addr);
    let Some(bytes) = known else { return Err(CudaError::InvalidValue) };
    let layout = Layout::from_size_align(bytes.max(1), ALIGN).unwrap();
    // SAFETY: allocated in `alloc` with this layout, removed from the table
    // above so freed once.
    unsafe { dealloc(addr as *mut u8, layout) };
    Ok(())
}

/// On the emulator: the bytes from `addr` to the end of the allocation
/// holding it (0 where none does).
pub(crate) fn extent(addr: u64) -> usize {
    let table = HOST_ALLOCATIONS.lock().unwrap();
    match table.range(..=addr).next_back() {
        Some((&base, &bytes)) if addr <= base + bytes as u64 => (base + bytes as u64 - addr) as usize,
        _ => 0,
    }
}

/// Whether `[addr, addr + bytes)` lies in one emulator allocation.
fn host_range_ok(addr: u64, bytes: usize) -> bool {
    bytes == 0 || extent(addr) >= bytes
}

/// Copies `bytes` from host memory to device address `dst`, on `stream`
/// where one is given (async).
///
/// # Safety
/// `src` holds `bytes` readable bytes; `dst` is device memory of at least
/// that many, alive (until the stream reaches the copy, if async).
pub(crate) unsafe fn htod(
    dst: u64,
    src: *const u8,
    bytes: usize,
    stream: Option<sys::CUstream>,
) -> CudaResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let src = unsafe { std::slice::from_raw_parts(src, bytes) };
    if cuda()? {
        // SAFETY: the caller's contract.
        return match stream {
            Some(s) => unsafe { result::memcpy_htod_async(dst, src, s) },
            None => unsafe { result::memcpy_htod_sync(dst, src) },
        }
        .to_result();
    }
    if !host_range_ok(dst, bytes) {
        return Err(CudaError::InvalidValue);
    }
    // SAFETY: `dst` is an emulator allocation with `bytes` left (checked).
    unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, bytes) };
    Ok(())
}

/// Copies `bytes` from device address `src` to host memory.
///
/// # Safety
/// `dst` holds `bytes` writable bytes; `src` is device memory of at least
/// that many.
pub(crate) unsafe fn dtoh(
    dst: *mut u8,
    src: u64,
    bytes: usize,
    stream: Option<sys::CUstream>,
) -> CudaResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, bytes) };
    if cuda()? {
        // SAFETY: the caller's contract.
        return match stream {
            Some(s) => unsafe { result::memcpy_dtoh_async(dst, src, s) },
            None => unsafe { result::memcpy_dtoh_sync(dst, src) },
        }
        .to_result();
    }
    if !host_range_ok(src, bytes) {
        return Err(CudaError::InvalidValue);
    }
    // SAFETY: `src` is an emulator allocation with `bytes` left (checked).
    unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), bytes) };
    Ok(())
}

/// Copies `bytes` between device addresses.
///
/// # Safety
/// Both are device memory of at least `bytes`.
pub(crate) unsafe fn dtod(dst: u64, src: u64, bytes: usize, stream: Option<sys::CUstream>) -> CudaResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    if cuda()? {
        // SAFETY: the caller's contract.
        return match stream {
            Some(s) => unsafe { result::memcpy_dtod_async(dst, src, bytes, s) },
            None => unsafe { result::memcpy_dtod_sync(dst, src, bytes) },
        }
        .to_result();
    }
    if !host_range_ok(dst, bytes) || !host_range_ok(src, bytes) {
        return Err(CudaError::InvalidValue);
    }
    // SAFETY: both are emulator allocations with `bytes` left (checked).
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
    Ok(())
}

/// Sets `bytes` bytes at `dst` to `value`.
///
/// # Safety
/// `dst` is device memory of at least `bytes`.
pub(crate) unsafe fn memset(
    dst: u64,
    value: u8,
    bytes: usize,
    stream: Option<sys::CUstream>,
) -> CudaResult<()> {
    if bytes == 0 {
        return Ok(());
    }
    if cuda()? {
        // SAFETY: the caller's contract.
        return match stream {
            Some(s) => unsafe { result::memset_d8_async(dst, value, bytes, s) },
            None => unsafe { result::memset_d8_sync(dst, value, bytes) },
        }
        .to_result();
    }
    if !host_range_ok(dst, bytes) {
        return Err(CudaError::InvalidValue);
    }
    // SAFETY: an emulator allocation with `bytes` left (checked).
    unsafe { std::ptr::write_bytes(dst as *mut u8, value, bytes) };
    Ok(())
}

/// Whether `init` chose the driver (a context may not exist yet).
pub(crate) fn cuda_driver() -> CudaResult<bool> {
    Ok(matches!(get()?, Backend::Cuda { .. }))
}
