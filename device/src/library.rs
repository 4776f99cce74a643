//! The host build's C entry points (`gpu_launch::library`): a kernel
//! crate built for the host as a shared library exports these, through
//! this crate, which every kernel crate uses. A program that loaded only
//! the crate's PTX calls them to run the kernels on the emulator this
//! library holds.

use std::ffi::{CString, c_char};
use std::format;
use std::string::{String, ToString};
use std::sync::OnceLock;
use std::vec::Vec;

use gpu_launch::library::{ABI, Call, RawArg, RawLaunch, table};
use gpu_launch::{Arg, registry};

/// This library's interface version.
#[unsafe(no_mangle)]
pub extern "C" fn lab_emulator_abi() -> u32 {
    ABI
}

/// This library's kernels, as `gpu_launch::library::table` writes them.
#[unsafe(no_mangle)]
pub extern "C" fn lab_emulator_kernels() -> *const c_char {
    static TABLE: OnceLock<CString> = OnceLock::new();
    TABLE.get_or_init(|| CString::new(table(&registry::all())).unwrap_or_default()).as_ptr()
}

/// Runs one launch on this library's emulator (`gpu_launch::library::LaunchFn`).
///
/// # Safety
/// `call`'s name holds `name_len` bytes, its arguments `nargs` values and
/// its message `capacity` writable bytes; every buffer an argument names
/// is memory of this process of at least its extent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lab_emulator_launch(call: *const Call) -> usize {
    // SAFETY: the caller's contract.
    let (call, name, args) = unsafe {
        let call = *call;
        (
            call,
            std::slice::from_raw_parts(call.name, call.name_len),
            std::slice::from_raw_parts(call.args, call.nargs),
        )
    };
    let (launch, message, capacity) = (call.launch, call.message, call.capacity);
    // SAFETY: the caller's contract, forwarded.
    let outcome = std::panic::catch_unwind(|| unsafe { run(name, launch, args) })
        .unwrap_or_else(|_| Err("the emulator library panicked".to_string()));
    let Err(error) = outcome else { return 0 };
    let mut end = error.len().min(capacity);
    while !error.is_char_boundary(end) {
        end -= 1;
    }
    // SAFETY: `message` holds `capacity >= end` writable bytes.
    unsafe { std::ptr::copy_nonoverlapping(error.as_ptr(), message, end) };
    end.max(1)
}

/// # Safety
/// As for [`lab_emulator_launch`].
unsafe fn run(name: &[u8], launch: RawLaunch, args: &[RawArg]) -> Result<(), String> {
    let name = core::str::from_utf8(name).map_err(|_| "a kernel name that is not UTF-8".to_string())?;
    let kernel = registry::find(name).ok_or_else(|| format!("this library has no kernel `{name}`"))?;
    let args: Vec<Arg> = args
        .iter()
        .map(|a| {
            // SAFETY: a value's bytes are the caller's, alive for the call.
            unsafe { a.arg() }
                .ok_or_else(|| format!("launch of `{name}`: an argument of unknown kind {}", a.kind))
        })
        .collect::<Result<_, _>>()?;
    // SAFETY: the caller's contract (`lab_emulator_launch`).
    unsafe {
        kernel.emulate(launch.grid, launch.block, launch.dynamic_shared, &args, false, launch.checks != 0)
    }
    .map(drop)
    .map_err(|e| e.to_string())
}
