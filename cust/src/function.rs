//! `Function`: one kernel of a [`Module`], its
//! attributes and occupancy, and `launch!`.

use std::ffi::c_void;
use std::marker::PhantomData;

use cudarc::driver::{result, sys};
use gpu_launch::{Arg, Kernel, Param, Value};

use crate::error::{CudaError, CudaResult, ToResult};
use crate::library::{Library, LibraryKernel};
use crate::memory::{ArgValue, DeviceCopy};
use crate::module::Module;

macro_rules! dims {
    ($($name:ident: $what:literal),*) => {$(
        #[doc = concat!("The ", $what, "'s shape, `x`, `(x, y)` or `(x, y, z)`.")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            pub x: u32,
            pub y: u32,
            pub z: u32,
        }

        impl $name {
            pub fn x(x: u32) -> Self {
                $name { x, y: 1, z: 1 }
            }
            pub fn xy(x: u32, y: u32) -> Self {
                $name { x, y, z: 1 }
            }
            pub fn xyz(x: u32, y: u32, z: u32) -> Self {
                $name { x, y, z }
            }
        }

        impl From<u32> for $name {
            fn from(x: u32) -> Self {
                $name::x(x)
            }
        }

        impl From<(u32, u32)> for $name {
            fn from((x, y): (u32, u32)) -> Self {
                $name::xy(x, y)
            }
        }

        impl From<(u32, u32, u32)> for $name {
            fn from((x, y, z): (u32, u32, u32)) -> Self {
                $name::xyz(x, y, z)
            }
        }

        impl From<&$name> for $name {
            fn from(d: &$name) -> Self {
                *d
            }
        }

        #[cfg(feature = "impl_glam")]
        impl From<glam::UVec2> for $name {
            fn from(v: glam::UVec2) -> Self {
                $name::xy(v.x, v.y)
            }
        }

        #[cfg(feature = "impl_glam")]
        impl From<glam::UVec3> for $name {
            fn from(v: glam::UVec3) -> Self {
                $name::xyz(v.x, v.y, v.z)
            }
        }
    )*};
}

dims!(GridSize: "grid", BlockSize: "block");

/// A kernel's attributes (`CUfunction_attribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionAttribute {
    MaxThreadsPerBlock,
    SharedMemorySizeBytes,
    ConstSizeBytes,
    LocalSizeBytes,
    NumRegisters,
    PtxVersion,
    BinaryVersion,
    CacheModeCa,
}

impl FunctionAttribute {
    fn raw(self) -> sys::CUfunction_attribute {
        use FunctionAttribute::*;
        use sys::CUfunction_attribute as A;
        match self {
            MaxThreadsPerBlock => A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            SharedMemorySizeBytes => A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            ConstSizeBytes => A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
            LocalSizeBytes => A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            NumRegisters => A::CU_FUNC_ATTRIBUTE_NUM_REGS,
            PtxVersion => A::CU_FUNC_ATTRIBUTE_PTX_VERSION,
            BinaryVersion => A::CU_FUNC_ATTRIBUTE_BINARY_VERSION,
            CacheModeCa => A::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum FnInner {
    Cuda(sys::CUfunction),
    /// The kernel's host build, found by its PTX name.
    Emulator(Emulated),
}

/// Where the emulator finds a kernel's host build: linked into the
/// program, or in the host library its PTX names.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Emulated {
    Linked(&'static Kernel),
    Library(&'static Library, &'static LibraryKernel),
}

impl Emulated {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Emulated::Linked(k) => k.name,
            Emulated::Library(_, k) => k.name,
        }
    }

    fn params(self) -> &'static [Param] {
        match self {
            Emulated::Linked(k) => k.params,
            Emulated::Library(_, k) => k.params,
        }
    }

    fn shared_bytes(self) -> u32 {
        match self {
            Emulated::Linked(k) => k.launch.shared_bytes,
            Emulated::Library(_, k) => k.shared_bytes,
        }
    }
}

/// A kernel of a loaded module.
#[derive(Debug)]
pub struct Function<'a> {
    pub(crate) inner: FnInner,
    name: String,
    _module: PhantomData<&'a Module>,
}

// SAFETY: a function handle may be used from any thread.
unsafe impl Send for Function<'_> {}
// SAFETY: as above.
unsafe impl Sync for Function<'_> {}

/// Threads one SM of the emulator's device holds, for its occupancy
/// answers (a Hopper SM's).
const EMULATED_THREADS_PER_SM: u32 = 2048;

impl Function<'_> {
    pub(crate) fn new<'m>(inner: FnInner, name: &str, _module: &'m Module) -> Function<'m> {
        Function { inner, name: name.to_string(), _module: PhantomData }
    }

    /// The kernel's name in the PTX.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn get_attribute(&self, attr: FunctionAttribute) -> CudaResult<i32> {
        match self.inner {
            // SAFETY: a function of a live module.
            FnInner::Cuda(f) => {
                unsafe { result::function::get_function_attribute(f, attr.raw()) }.to_result()
            }
            FnInner::Emulator(kernel) => Ok(match attr {
                FunctionAttribute::MaxThreadsPerBlock => 1024,
                FunctionAttribute::SharedMemorySizeBytes => kernel.shared_bytes() as i32,
                _ => 0,
            }),
        }
    }

    /// The driver's handle (null on the emulator).
    pub fn to_raw(&self) -> sys::CUfunction {
        match self.inner {
            FnInner::Cuda(f) => f,
            FnInner::Emulator(_) => std::ptr::null_mut(),
        }
    }

    /// How many blocks of `block_size` threads fit on one SM at once with
    /// `dynamic_smem_size` bytes of dynamic shared memory each
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`; the emulator counts
    /// threads only).
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: BlockSize,
        dynamic_smem_size: usize,
    ) -> CudaResult<u32> {
        let threads = block_size.x * block_size.y * block_size.z;
        match self.inner {
            // SAFETY: a function of a live module.
            FnInner::Cuda(f) => unsafe {
                result::occupancy::max_active_block_per_multiprocessor(f, threads as i32, dynamic_smem_size)
            }
            .to_result()
            .map(|n| n.max(0) as u32),
            FnInner::Emulator(_) => Ok(EMULATED_THREADS_PER_SM.checked_div(threads).unwrap_or(0)),
        }
    }

    /// The block size that keeps the most warps resident with the fewest
    /// blocks per SM, and the smallest grid that fills the device at that
    /// size: `(min_grid_size, block_size)`, from the driver's occupancy
    /// calculator (`cuOccupancyMaxPotentialBlockSize`) given the kernel's
    /// registers and shared memory. `block_size_limit` of 0 means no limit.
    /// On the emulator: the largest block (1024 threads, or the limit,
    /// rounded down to whole warps) and one SM's worth of them.
    pub fn suggested_launch_configuration(
        &self,
        dynamic_smem_size: usize,
        block_size_limit: BlockSize,
    ) -> CudaResult<(u32, u32)> {
        let limit = block_size_limit.x * block_size_limit.y * block_size_limit.z;
        match self.inner {
            FnInner::Cuda(f) => {
                // SAFETY: a function of a live module; no size callback.
                let (grid, block) = unsafe {
                    result::occupancy::max_potential_block_size(f, None, dynamic_smem_size, limit as i32)
                }
                .to_result()?;
                Ok((grid as u32, block as u32))
            }
            FnInner::Emulator(_) => {
                let block = if limit == 0 { 1024 } else { limit.min(1024) };
                let block = if block >= 32 { block / 32 * 32 } else { block };
                Ok(((EMULATED_THREADS_PER_SM / block).max(1), block))
            }
        }
    }
}

/// One argument of a launch: a pointer to its value (what the driver
/// takes) and the value as the emulator checks it. What `launch!` builds
/// from each argument.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct KernelArg<'a> {
    ptr: *const c_void,
    bytes: usize,
    value: ArgValue,
    _value: PhantomData<&'a ()>,
}

impl<'a> KernelArg<'a> {
    pub fn new<T: DeviceCopy>(value: &'a T) -> Self {
        KernelArg {
            ptr: value as *const T as *const c_void,
            bytes: size_of::<T>(),
            value: value.__arg_value(),
            _value: PhantomData,
        }
    }

    /// The value's bytes.
    fn bytes(&self) -> &'a [u8] {
        // SAFETY: `ptr` is a live `&'a T` of `bytes` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.bytes) }
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.ptr as *mut c_void
    }
}

/// How a kernel parameter is passed (rust-cuda's ABI): `&[T]` as a pointer
/// and a length, `*mut T`/`*const T` as a pointer, scalars by value.
enum ParamKind<'a> {
    Slice(&'a str),
    Ptr(&'a str),
    Scalar(&'a str),
    /// Any other value by value (`ByValue<glam::Vec3>`): its bytes.
    Value(&'a str),
}

fn classify(ty: &str) -> ParamKind<'_> {
    let Some((head, rest)) = ty.split_once('<') else { return ParamKind::Scalar(ty) };
    let elem = rest.strip_suffix('>').unwrap_or(rest);
    match head.rsplit("::").next().unwrap_or(head) {
        "GlobalSlice" | "Slice" => ParamKind::Slice(elem),
        "ByValue" => ParamKind::Value(elem),
        _ => ParamKind::Ptr(elem),
    }
}

/// A parameter as its kernel declares it, in rust-cuda's words.
fn declared(name: &str, ty: &str) -> String {
    match (classify(ty), ty.contains("ConstPtr") || ty.starts_with("In<")) {
        (ParamKind::Slice(e), _) => format!("{name}: &[{e}] (a pointer, then a length)"),
        (ParamKind::Ptr(e), true) => format!("{name}: *const {e}"),
        (ParamKind::Ptr(e), false) => format!("{name}: *mut {e}"),
        (ParamKind::Scalar(t) | ParamKind::Value(t), _) => format!("{name}: {t}"),
    }
}

fn short(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

const PRIMITIVES: &[&str] =
    &["u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64", "bool"];

fn describe(value: &ArgValue) -> String {
    match value {
        ArgValue::Ptr { elem, .. } => format!("a pointer to `{}`", short(elem)),
        ArgValue::Int { ty, .. } => format!("a `{ty}`"),
        ArgValue::F32(_) => "an `f32`".into(),
        ArgValue::F64(_) => "an `f64`".into(),
        ArgValue::Other(ty) => format!("a `{}`", short(ty)),
    }
}

/// The emulator's arguments for `kernel` from a `launch!`'s, checked
/// against the declaration: the count (a slice is two), pointers where
/// pointers are due (of the same element type, where both are
/// primitives), a `usize` length after each slice's pointer, and scalars
/// of the declared type (an integer of the same size passes, as its bits
/// would on the GPU). Each pointer is given the extent of its allocation,
/// which the emulator lets the kernel touch and no more.
pub(crate) fn emulator_args(kernel: Emulated, args: &[KernelArg<'_>]) -> CudaResult<Vec<Arg>> {
    let wrong = |message: String| {
        CudaError::InvalidLaunch(CudaError::leak(format!("launch of `{}`: {message}", kernel.name())))
    };
    let needed: usize = kernel
        .params()
        .iter()
        .map(|p| if matches!(classify(p.ty), ParamKind::Slice(_)) { 2 } else { 1 })
        .sum();
    if args.len() != needed {
        let params: Vec<String> = kernel.params().iter().map(|p| declared(p.name, p.ty)).collect();
        return Err(wrong(format!(
            "{} arguments for parameters taking {needed} ({})",
            args.len(),
            params.join(", ")
        )));
    }
    let mut values = args.iter();
    let mut packed = Vec::with_capacity(kernel.params().len());
    for param in kernel.params() {
        let mismatch = |want: &str, got: &ArgValue| {
            wrong(format!(
                "parameter `{}` takes {want}, got {}",
                declared(param.name, param.ty),
                describe(got)
            ))
        };
        let pointer = |value: ArgValue, elem: &str| match value {
            ArgValue::Ptr { addr, elem: got, size } => {
                let got = short(got);
                if got != elem && PRIMITIVES.contains(&got) && PRIMITIVES.contains(&elem) {
                    return Err(mismatch(&format!("a pointer to `{elem}`"), &value));
                }
                Ok((addr, size))
            }
            ArgValue::Int { value: addr, bytes: 8, .. } => Ok((addr, 0)),
            other => Err(mismatch("a device pointer", &other)),
        };
        let arg = values.next().expect("counted above");
        let value = arg.value;
        packed.push(match classify(param.ty) {
            ParamKind::Slice(elem) => {
                let (addr, size) = pointer(value, elem)?;
                let len = values.next().expect("counted above").value;
                let ArgValue::Int { value: len, bytes: 8, .. } = len else {
                    return Err(wrong(format!(
                        "parameter `{}` takes its length as a `usize` after the pointer, got {}",
                        declared(param.name, param.ty),
                        describe(&len)
                    )));
                };
                let extent = crate::backend::extent(addr);
                let bytes = (len as usize).saturating_mul(size.max(1)).min(extent);
                Arg::Slice { addr, len, bytes }
            }
            ParamKind::Ptr(elem) => {
                let (addr, _) = pointer(value, elem)?;
                Arg::Ptr { addr, bytes: crate::backend::extent(addr) }
            }
            ParamKind::Value(ty) => {
                let got = match value {
                    ArgValue::Ptr { .. } => "a pointer",
                    ArgValue::Int { ty, .. } => ty,
                    ArgValue::F32(_) => "f32",
                    ArgValue::F64(_) => "f64",
                    ArgValue::Other(ty) => ty,
                };
                if short(got) != short(ty) || arg.bytes > Value::MAX_BYTES {
                    return Err(mismatch(&format!("a `{ty}` by value (at most 64 bytes)"), &value));
                }
                Arg::Value(Value::from_bytes(arg.bytes()))
            }
            ParamKind::Scalar(ty) => match (ty, value) {
                ("f32", ArgValue::F32(v)) => Arg::F32(v),
                ("f64", ArgValue::F64(v)) => Arg::F64(v),
                ("u32", ArgValue::Int { value, bytes: 4, .. }) => Arg::U32(value as u32),
                ("i32", ArgValue::Int { value, bytes: 4, .. }) => Arg::I32(value as u32 as i32),
                ("u64" | "usize", ArgValue::Int { value, bytes: 8, .. }) => Arg::U64(value),
                ("i64" | "isize", ArgValue::Int { value, bytes: 8, .. }) => Arg::I64(value as i64),
                ("f32" | "f64" | "u32" | "i32" | "u64" | "usize" | "i64" | "isize", other) => {
                    return Err(mismatch(&format!("a `{ty}`"), &other));
                }
                (_, other) => {
                    return Err(mismatch(
                        "a value the emulator cannot pass (it takes `&[T]`, pointers, and \
                         u32, i32, u64, i64, usize, f32, f64 scalars)",
                        &other,
                    ));
                }
            },
        });
    }
    Ok(packed)
}

/// Launches a kernel, in CUDA C's triple-chevron form, as cust's `launch!`:
///
/// ```ignore
/// launch!(module.vecadd<<<grid, block, shared_bytes, stream>>>(a.as_device_ptr(), a.len(), ...))?;
/// launch!(function<<<grid, block, shared_bytes, stream>>>(...))?;
/// ```
///
/// `module`, `function` and `stream` are variables; `grid` and `block`
/// anything `Into<GridSize>`/`Into<BlockSize>` (`u32`, `(u32, u32)`,
/// `(u32, u32, u32)`); each argument is a `DeviceCopy` value, passed as the
/// kernel's PTX parameters are (a slice is its pointer and its length).
/// Unsafe: the kernel trusts its arguments. On the emulator they are
/// checked against the kernel's declaration first, and the kernel runs at
/// once with every check of the emulator.
#[macro_export]
macro_rules! launch {
    ($module:ident . $function:ident <<<$grid:expr, $block:expr, $shared:expr, $stream:ident>>>( $($arg:expr),* $(,)?)) => {
        match $module.get_function(stringify!($function)) {
            Ok(function) => $crate::launch!(function<<<$grid, $block, $shared, $stream>>>( $($arg),* )),
            Err(e) => Err(e),
        }
    };
    ($function:ident <<<$grid:expr, $block:expr, $shared:expr, $stream:ident>>>( $($arg:expr),* $(,)?)) => {
        $stream.launch(&$function, $grid, $block, $shared, &[ $($crate::function::KernelArg::new(&$arg)),* ])
    };
}
