//! Kernels from a host library: without a GPU, a program that loaded a
//! PTX but links no kernel crate (a rust-cuda host, unchanged) runs the
//! kernels in the shared library the builder built from the same crate
//! and named in the PTX (`gpu_launch::library`). Each library is loaded
//! once and stays loaded.

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char};
use std::sync::Mutex;

use gpu_launch::library::{
    ABI, ABI_SYMBOL, Call, KERNELS_SYMBOL, LAUNCH_SYMBOL, LaunchFn, RawArg, RawLaunch,
};
use gpu_launch::{Arg, Param};

use crate::error::{CudaError, CudaResult};

/// A loaded host library of kernels.
pub(crate) struct Library {
    path: String,
    launch: LaunchFn,
    pub(crate) kernels: Vec<LibraryKernel>,
    _library: libloading::Library,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("path", &self.path).finish_non_exhaustive()
    }
}

/// One of its kernels, as the library describes it.
#[derive(Debug)]
pub(crate) struct LibraryKernel {
    pub(crate) name: &'static str,
    pub(crate) shared_bytes: u32,
    pub(crate) params: &'static [Param],
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The library at `path`, loaded on first use.
pub(crate) fn load(path: &str) -> CudaResult<&'static Library> {
    static LOADED: Mutex<BTreeMap<String, &'static Library>> = Mutex::new(BTreeMap::new());
    let mut loaded = LOADED.lock().unwrap();
    if let Some(library) = loaded.get(path) {
        return Ok(library);
    }
    let fail = |why: String| {
        CudaError::NoGpu(CudaError::leak(format!(
            "no GPU found, and the kernels' host library {path} {why}: rebuild the program (its build \
             script builds the library; `touch build.rs` first if cargo finds nothing to do), or run on a GPU"
        )))
    };
    // SAFETY: the library is a kernel crate's host build, whose
    // initializers only register its kernels.
    let library =
        unsafe { libloading::Library::new(path) }.map_err(|e| fail(format!("cannot be loaded ({e})")))?;
    // SAFETY: the symbols have these types in every library of this ABI
    // (the version is read first, with the one type every version keeps).
    let (launch, table) = unsafe {
        let abi = library
            .get::<extern "C" fn() -> u32>(ABI_SYMBOL)
            .map_err(|_| fail("is not a kernel library".into()))?;
        if abi() != ABI {
            return Err(fail(format!(
                "was built by another version of the lab (interface {}, not {ABI})",
                abi()
            )));
        }
        let kernels = library
            .get::<extern "C" fn() -> *const c_char>(KERNELS_SYMBOL)
            .map_err(|_| fail("is not a kernel library".into()))?;
        let launch =
            *library.get::<LaunchFn>(LAUNCH_SYMBOL).map_err(|_| fail("is not a kernel library".into()))?;
        (launch, CStr::from_ptr(kernels()).to_string_lossy().into_owned())
    };
    let described =
        gpu_launch::library::parse_table(&table).ok_or_else(|| fail("lists its kernels wrongly".into()))?;
    let kernels = described
        .into_iter()
        .map(|k| LibraryKernel {
            name: leak(k.name),
            shared_bytes: k.shared_bytes,
            params: Box::leak(
                k.params.into_iter().map(|(name, ty)| Param { name: leak(name), ty: leak(ty) }).collect(),
            ),
        })
        .collect();
    let library: &'static Library =
        Box::leak(Box::new(Library { path: path.to_string(), launch, kernels, _library: library }));
    loaded.insert(path.to_string(), library);
    Ok(library)
}

impl Library {
    /// Runs `kernel` on the library's emulator.
    ///
    /// # Safety
    /// Every buffer an argument names is memory of this process of at
    /// least its extent.
    pub(crate) unsafe fn launch(
        &self,
        kernel: &LibraryKernel,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        args: &[Arg],
        checks: bool,
    ) -> CudaResult<()> {
        let launch = RawLaunch { grid, block, dynamic_shared, checks: checks as u32 };
        let raw: Vec<RawArg> = args.iter().map(RawArg::from).collect();
        let mut message = vec![0u8; 4096];
        let call = Call {
            name: kernel.name.as_ptr(),
            name_len: kernel.name.len(),
            launch,
            args: raw.as_ptr(),
            nargs: raw.len(),
            message: message.as_mut_ptr(),
            capacity: message.len(),
        };
        // SAFETY: every pointer is to a live value of the stated length;
        // the buffers are the caller's contract.
        let written = unsafe { (self.launch)(&call) };
        if written == 0 {
            return Ok(());
        }
        message.truncate(written);
        Err(CudaError::Emulator(CudaError::leak(String::from_utf8_lossy(&message).into_owned())))
    }
}
