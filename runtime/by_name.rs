//! Launching by name, as `cust`'s `launch!` does: the kernel is found in
//! the registry by its PTX name, and the arguments are checked against its
//! declared parameters before anything runs. A wrong count, a buffer where
//! a scalar is due, a read-only buffer for an output, or a wrong element
//! type is one [`Error::InvalidInput`] naming the parameter.

use gpu_launch::{Arg, Dim3, Kernel, Launcher, registry};

use crate::error::{Error, Result};
use crate::gpu::{DeviceBuffer, Gpu};

/// One argument of a launch by name: `&buffer` (read), `&mut buffer`
/// (written) or a scalar, converted by `From`.
#[derive(Clone, Copy, Debug)]
pub enum LaunchArg {
    Read { addr: u64, len: usize, elem: &'static str, size: usize },
    Write { addr: u64, len: usize, elem: &'static str, size: usize },
    Scalar { arg: Arg, ty: &'static str },
}

impl<T: 'static> From<&DeviceBuffer<T>> for LaunchArg {
    fn from(buffer: &DeviceBuffer<T>) -> Self {
        let (addr, len) = <Gpu as Launcher>::address(buffer);
        LaunchArg::Read { addr, len, elem: short_type_name::<T>(), size: size_of::<T>() }
    }
}

impl<T: 'static> From<&mut DeviceBuffer<T>> for LaunchArg {
    fn from(buffer: &mut DeviceBuffer<T>) -> Self {
        let (addr, len) = <Gpu as Launcher>::address(buffer);
        LaunchArg::Write { addr, len, elem: short_type_name::<T>(), size: size_of::<T>() }
    }
}

macro_rules! scalar_args {
    ($($t:ty => $v:ident $(as $as:ty)?),*) => {$(
        impl From<$t> for LaunchArg {
            fn from(value: $t) -> Self {
                LaunchArg::Scalar { arg: Arg::$v(value $(as $as)?), ty: stringify!($t) }
            }
        }
    )*};
}

scalar_args!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64, usize => U64 as u64);

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

/// How a declared parameter is passed, from its type as written.
enum Param<'a> {
    /// `&[T]` (`GlobalSlice`), `Slice<T>`: read, address and length.
    ReadSlice(&'a str),
    /// `DisjointSlice<T>`: written, address and length.
    WriteSlice(&'a str),
    /// `*const T`, `In<T>`: read, an address.
    ReadPtr(&'a str),
    /// `*mut T`, `Out<T>`: written, an address.
    WritePtr(&'a str),
    Scalar(&'a str),
}

fn classify(ty: &str) -> Param<'_> {
    let Some((head, rest)) = ty.split_once('<') else { return Param::Scalar(ty) };
    let elem = rest.trim_end_matches('>');
    match head.rsplit("::").next().unwrap_or(head) {
        "GlobalSlice" | "Slice" => Param::ReadSlice(elem),
        "DisjointSlice" => Param::WriteSlice(elem),
        "DeviceConstPtr" | "In" => Param::ReadPtr(elem),
        _ => Param::WritePtr(elem),
    }
}

/// Launches the kernel named `name` (its PTX entry) from the kernels
/// declared under the module path `module` (the kernel crate's name, say
/// `kernels`), over `grid` blocks of `block` threads with `dynamic_shared`
/// bytes of dynamic shared memory, on `gpu`. What `launch!` expands to.
///
/// # Safety
/// As for the kernel: the arguments satisfy its contract for this grid
/// and block (their count, kinds and element types are checked here).
pub unsafe fn launch_by_name(
    gpu: &Gpu,
    module: &str,
    name: &str,
    grid: impl Into<Dim3>,
    block: impl Into<Dim3>,
    dynamic_shared: u32,
    args: &[LaunchArg],
) -> Result<()> {
    let in_module = |k: &&Kernel| k.path == module || k.path.starts_with(&format!("{module}::"));
    let kernel = registry::all().into_iter().filter(in_module).find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = registry::all().into_iter().filter(in_module).map(|k| k.name).collect();
        Error::InvalidInput(format!("no kernel `{name}` in `{module}`; it declares: {}", names.join(", ")))
    })?;
    // SAFETY: the caller's contract.
    unsafe { launch_kernel(gpu, kernel, grid, block, dynamic_shared, args) }
}

/// Launches `kernel` (a kernel's `KERNEL` entry) with its arguments
/// checked against its declaration: what `launch!` expands to.
///
/// # Safety
/// As for [`launch_by_name`].
pub unsafe fn launch_kernel(
    gpu: &Gpu,
    kernel: &'static Kernel,
    grid: impl Into<Dim3>,
    block: impl Into<Dim3>,
    dynamic_shared: u32,
    args: &[LaunchArg],
) -> Result<()> {
    let packed = check(kernel, args)?;
    // SAFETY: the caller's contract; the arguments match the declaration.
    unsafe { gpu.launch_with(kernel, grid.into(), block.into(), dynamic_shared, &packed) }
}

/// The launch arguments for `kernel`, or the first mismatch.
fn check(kernel: &Kernel, args: &[LaunchArg]) -> Result<Vec<Arg>> {
    let wrong = |message: String| Error::InvalidInput(format!("launch of `{}`: {message}", kernel.name));
    if args.len() != kernel.params.len() {
        let declared: Vec<String> = kernel.params.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect();
        return Err(wrong(format!(
            "{} arguments for {} parameters ({})",
            args.len(),
            kernel.params.len(),
            declared.join(", ")
        )));
    }
    kernel
        .params
        .iter()
        .zip(args)
        .map(|(param, arg)| {
            let mismatch = |want: &str| {
                wrong(format!("parameter `{}: {}` takes {want}, got {}", param.name, param.ty, describe(arg)))
            };
            let buffer = |elem: &str, got: &str, write_wanted: bool, is_write: bool| {
                if elem != got {
                    return Err(mismatch(&format!("a buffer of `{elem}`")));
                }
                if write_wanted && !is_write {
                    return Err(mismatch("`&mut buffer` (the kernel writes it)"));
                }
                Ok(())
            };
            Ok(match (classify(param.ty), *arg) {
                (Param::ReadSlice(e), LaunchArg::Read { addr, len, elem, size })
                | (Param::ReadSlice(e), LaunchArg::Write { addr, len, elem, size }) => {
                    buffer(e, elem, false, false)?;
                    Arg::Slice { addr, len: len as u64, bytes: len * size }
                }
                (Param::WriteSlice(e), LaunchArg::Write { addr, len, elem, size }) => {
                    buffer(e, elem, true, true)?;
                    Arg::Slice { addr, len: len as u64, bytes: len * size }
                }
                (Param::ReadPtr(e), LaunchArg::Read { addr, len, elem, size })
                | (Param::ReadPtr(e), LaunchArg::Write { addr, len, elem, size }) => {
                    buffer(e, elem, false, false)?;
                    Arg::Ptr { addr, bytes: len * size }
                }
                (Param::WritePtr(e), LaunchArg::Write { addr, len, elem, size }) => {
                    buffer(e, elem, true, true)?;
                    Arg::Ptr { addr, bytes: len * size }
                }
                (Param::WritePtr(e) | Param::WriteSlice(e), LaunchArg::Read { elem, .. }) => {
                    buffer(e, elem, true, false)?;
                    unreachable!("a read-only buffer for an output is rejected above")
                }
                (Param::Scalar(t), LaunchArg::Scalar { arg, ty }) if t == ty => arg,
                (Param::Scalar(t), _) => return Err(mismatch(&format!("a `{t}`"))),
                (_, LaunchArg::Scalar { .. }) => return Err(mismatch("a buffer")),
            })
        })
        .collect()
}

fn describe(arg: &LaunchArg) -> String {
    match arg {
        LaunchArg::Read { elem, .. } => format!("`&` a buffer of `{elem}`"),
        LaunchArg::Write { elem, .. } => format!("`&mut` a buffer of `{elem}`"),
        LaunchArg::Scalar { ty, .. } => format!("a `{ty}`"),
    }
}

/// `cust`'s launch syntax on a [`Gpu`]:
///
/// ```ignore
/// launch!(kernels.vecadd<<<grid, block, 0, gpu>>>(&a, &b, &mut c))?;
/// ```
///
/// `kernels` is the kernel crate (or a module path in it), `vecadd` the
/// kernel: `kernels::vecadd::KERNEL` is what launches, so a kernel that
/// does not exist is a compile error, and naming it links the kernel
/// crate's host build (its emulator entry). `gpu` is a variable holding a
/// `Gpu` (a device or the emulator: the same call runs on both). Buffers go as `&buffer` for `&[T]`/`*const T` parameters and
/// `&mut buffer` for `*mut T` ones (one argument per parameter, not
/// rust-cuda's address and length), scalars by value. Arguments that do
/// not match the kernel are an error, checked before the launch. Unsafe,
/// as in `cust`: the kernel trusts its arguments.
#[macro_export]
macro_rules! launch {
    ($module:ident $(:: $rest:ident)* . $function:ident <<<$grid:expr, $block:expr, $shared:expr, $gpu:ident>>>( $($arg:expr),* $(,)? )) => {
        $crate::launch_kernel(
            &$gpu,
            &$module $(:: $rest)* :: $function :: KERNEL,
            $grid,
            $block,
            $shared,
            &[$($crate::LaunchArg::from($arg)),*],
        )
    };
}
