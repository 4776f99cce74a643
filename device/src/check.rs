//! The host build's checks: every load and store of the device layer tells
//! the emulator first (bounds, races, uninitialized reads, the bank and
//! sector analysis), with the `file:line` of the kernel code that made it.
//! On `nvptx64` each of these is empty and inlines away.
//!
//! The access functions that call these are `#[track_caller]` on the host
//! only, so a report names the line in the kernel, not in this layer.

/// Which memory an access is to (the ISA's state spaces; the emulator's
/// own `emu::ops::Space`).
pub use gpu_isa::Space;

#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn hook(space: Space, p: *const u8, bytes: usize, op: emu::ops::Op) {
    emu::ops::access(space, p as usize, bytes, op, core::panic::Location::caller());
}

/// A load of `bytes` at `p`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn load<T>(_space: Space, _p: *const T, _bytes: usize) {
    #[cfg(not(target_arch = "nvptx64"))]
    hook(_space, _p.cast(), _bytes, emu::ops::Op::Read);
}

/// A load that may see a shared word nobody wrote, on purpose.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn load_maybe_uninit<T>(_space: Space, _p: *const T, _bytes: usize) {
    #[cfg(not(target_arch = "nvptx64"))]
    hook(_space, _p.cast(), _bytes, emu::ops::Op::ReadMaybeUninit);
}

/// A store of `value` (of `T`s, or a vector of them) at `p` (the emulator compares values to tell benign
/// same-value races).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store<T, V>(_space: Space, _p: *const T, _value: &V) {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the bytes of a value on the stack; the device layer's
        // stored types (numbers, arrays and vectors of them) have no
        // padding.
        let bytes = unsafe { core::slice::from_raw_parts((_value as *const V).cast::<u8>(), size_of::<V>()) };
        hook(_space, _p.cast(), bytes.len(), emu::ops::Op::Write(bytes));
    }
}

/// A store of `bytes` at `p` whose value the layer does not see (a `&mut`
/// handed to the kernel).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn store_unknown<T>(_space: Space, _p: *const T, _bytes: usize) {
    #[cfg(not(target_arch = "nvptx64"))]
    hook(_space, _p.cast(), _bytes, emu::ops::Op::WriteUnknown);
}
