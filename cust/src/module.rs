//! `Module`: loaded PTX (or a cubin/fatbin on a GPU) and its kernels.
//!
//! On the emulator a module is the PTX's entry names, each found among the
//! kernels whose host build is linked into the program (the kernel crate,
//! a dependency named once), else in the host library the PTX names (the
//! crate built for the host by `lab-cuda-builder`, beside the PTX): the
//! PTX and the host build are the same source, so the same names.

use std::ffi::{CStr, CString, c_void};
use std::path::Path;

use cudarc::driver::{result, sys};
use gpu_launch::registry;

use crate::backend;
use crate::error::{CudaError, CudaResult, DropResult, ToResult};
use crate::function::{Emulated, FnInner, Function};
use crate::library;

/// JIT options for loading a module. Accepted and ignored: the driver's
/// defaults apply, and the emulator compiles nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModuleJitOption {
    MaxRegisters(u32),
    OptLevel(OptLevel),
    DetermineTargetFromContext,
    Fallback(JitFallback),
    GenerateDebugInfo(bool),
    GenerateLineInfo(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptLevel {
    O0,
    O1,
    O2,
    O3,
    O4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JitFallback {
    PreferPtx,
    PreferCompatibleBinary,
}

#[derive(Debug)]
enum Inner {
    Cuda(sys::CUmodule),
    Emulator(Vec<Emulated>),
}

/// A loaded module.
#[derive(Debug)]
pub struct Module {
    inner: Inner,
}

// SAFETY: a module handle may be used from any thread.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// Loads PTX text.
    pub fn from_ptx<T: AsRef<str>>(string: T, _options: &[ModuleJitOption]) -> CudaResult<Module> {
        let text = string.as_ref();
        if !backend::cuda()? {
            return Module::emulated(text);
        }
        let image = CString::new(text).map_err(|_| CudaError::InvalidPtx)?;
        Module::load_image(image.as_ptr() as *const c_void)
    }

    /// Loads PTX text from a C string.
    pub fn from_ptx_cstr(cstr: &CStr, options: &[ModuleJitOption]) -> CudaResult<Module> {
        Module::from_ptx(cstr.to_str().map_err(|_| CudaError::InvalidPtx)?, options)
    }

    /// Loads PTX text (cust's older name).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str<T: AsRef<str>>(string: T) -> CudaResult<Module> {
        Module::from_ptx(string, &[])
    }

    /// Loads PTX text (cust's older name).
    pub fn load_from_string(image: &CStr) -> CudaResult<Module> {
        Module::from_ptx_cstr(image, &[])
    }

    /// Loads a PTX, cubin or fatbin file (on the emulator: PTX).
    pub fn from_file<P: AsRef<Path>>(path: P) -> CudaResult<Module> {
        let path = path.as_ref();
        if !backend::cuda()? {
            let text = std::fs::read_to_string(path).map_err(|_| CudaError::FileNotFound)?;
            return Module::emulated(&text);
        }
        let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| CudaError::InvalidValue)?;
        Ok(Module { inner: Inner::Cuda(result::module::load(name).to_result()?) })
    }

    /// Loads a cubin (GPU only: the emulator needs the PTX's names).
    pub fn from_cubin<T: AsRef<[u8]>>(bytes: T, _options: &[ModuleJitOption]) -> CudaResult<Module> {
        Module::binary(bytes.as_ref())
    }

    /// Loads a fatbin (GPU only, as [`Module::from_cubin`]).
    pub fn from_fatbin<T: AsRef<[u8]>>(bytes: T, _options: &[ModuleJitOption]) -> CudaResult<Module> {
        Module::binary(bytes.as_ref())
    }

    fn binary(bytes: &[u8]) -> CudaResult<Module> {
        if !backend::cuda()? {
            return Err(CudaError::NoGpu(
                "a cubin or fatbin module needs a GPU: the emulator finds kernels by the PTX's names (load the PTX)",
            ));
        }
        Module::load_image(bytes.as_ptr() as *const c_void)
    }

    fn load_image(image: *const c_void) -> CudaResult<Module> {
        // SAFETY: `image` is a NUL-terminated PTX or a binary image, alive
        // for this call.
        Ok(Module { inner: Inner::Cuda(unsafe { result::module::load_data(image) }.to_result()?) })
    }

    /// The emulator's module: each entry of the PTX, found by name among
    /// the linked kernels, else in the host library the PTX names.
    fn emulated(text: &str) -> CudaResult<Module> {
        let entries = lab_runtime::ptx::entries(text);
        if entries.is_empty() {
            return Err(CudaError::InvalidPtx);
        }
        let library = match lab_runtime::ptx::named_library(text) {
            Some(path) if entries.iter().any(|e| registry::find(e).is_none()) => Some(library::load(path)?),
            _ => None,
        };
        let find = |entry: &str| {
            registry::find(entry).map(Emulated::Linked).or_else(|| {
                let library = library?;
                library.kernels.iter().find(|k| k.name == entry).map(|k| Emulated::Library(library, k))
            })
        };
        let missing: Vec<&str> = entries.iter().copied().filter(|e| find(e).is_none()).collect();
        if !missing.is_empty() {
            return Err(CudaError::NoGpu(CudaError::leak(format!(
                "no GPU found, and the emulator has no host build of the PTX's kernel(s) {}: build the PTX with \
                 lab-cuda-builder (which builds the kernel crate for the host too), or add the kernel crate as a \
                 dependency of this program and name it once (`use kernels as _;`), or run on a GPU",
                missing.join(", ")
            ))));
        }
        Ok(Module { inner: Inner::Emulator(entries.iter().filter_map(|e| find(e)).collect()) })
    }

    /// The kernel named `name` (its PTX entry).
    pub fn get_function<T: AsRef<str>>(&self, name: T) -> CudaResult<Function<'_>> {
        let name = name.as_ref();
        let inner = match &self.inner {
            Inner::Cuda(module) => {
                let c_name = CString::new(name).map_err(|_| CudaError::InvalidValue)?;
                // SAFETY: our own loaded module.
                FnInner::Cuda(unsafe { result::module::get_function(*module, c_name) }.to_result()?)
            }
            Inner::Emulator(kernels) => FnInner::Emulator(
                kernels.iter().copied().find(|k| k.name() == name).ok_or(CudaError::NotFound)?,
            ),
        };
        Ok(Function::new(inner, name, self))
    }

    /// The driver's handle (null on the emulator).
    pub fn as_inner(&self) -> sys::CUmodule {
        match self.inner {
            Inner::Cuda(m) => m,
            Inner::Emulator(_) => std::ptr::null_mut(),
        }
    }

    /// Unloads the module, returning it with the error on failure.
    pub fn drop(module: Module) -> DropResult<Module> {
        drop(module);
        Ok(())
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Inner::Cuda(m) = self.inner {
            // SAFETY: our own module, unloaded once.
            let _ = unsafe { result::module::unload(m) };
        }
    }
}
