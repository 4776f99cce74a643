//! The words an atomic acts on (`u32`, `i32`, `u64`, `i64`, `f32`, `f64`)
//! and the read-modify-writes on them.
//!
//! Integer operations are `core::sync::atomic`'s, which the NVPTX backend
//! lowers to `atom.{add,and,or,xor,min,max,exch,cas}` on the generic
//! address (global or shared, as the pointer is), relaxed: the ordering
//! is fences around them ([`ordered`]). Float `add` and the
//! operations PTX has no float form of are a compare-and-swap loop on the
//! bits: `old = load; loop { new = f(old); cas(old, new) }`, which gives
//! the same value as one `atom.add.f32`, rounded once per update.
//!
//! Every operation first tells the emulator of an atomic access to its
//! word ([`hook`]), so the emulator sees an atomic, never a plain write,
//! in global or shared memory alike.

use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// The failure ordering of a compare-and-swap with success ordering `o`.
pub(crate) fn fail_order(o: Ordering) -> Ordering {
    match o {
        Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        _ => Ordering::SeqCst,
    }
}

/// A read-modify-write `rmw` with ordering `o`: rustc's NVPTX backend
/// compiles every `atomicrmw` and `cmpxchg` to a relaxed `atom`, whatever
/// the ordering, so the device layer's [`gpu_device::atomic::ordered`]
/// puts the fences the ordering needs around it, at the system's scope
/// (as this module documents its atomics).
#[inline(always)]
fn ordered<R>(o: Ordering, rmw: impl FnOnce() -> R) -> R {
    gpu_device::atomic::ordered(o, gpu_device::atomic::Scope::System, rmw)
}

/// Tells the emulator of an atomic access of `size_of::<T>()` bytes at
/// `p`: shared if `p` lies in the running block's shared memory, global
/// otherwise. Nothing on the GPU.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn hook<T>(_p: *const T, _write: bool, _order: Ordering) {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use emu::ops::{Op, Space, access, shared_base, shared_len};
        let (addr, base) = (_p as usize, shared_base() as usize);
        let space = if addr >= base && addr < base + shared_len() { Space::Shared } else { Space::Global };
        access(
            space,
            addr,
            size_of::<T>(),
            Op::Atomic { write: _write, order: _order },
            core::panic::Location::caller(),
        );
    }
}

/// A word with atomic operations. Each `# Safety` is the same: `p` is
/// valid for reads and writes, aligned to the word's size, and only
/// accessed atomically while the operation runs.
pub trait Word: Copy {
    /// `*p += v` (integers wrap), returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_add(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p -= v`, returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_sub(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p &= v` (on the bits), returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_and(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p |= v` (on the bits), returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_or(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p ^= v` (on the bits), returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_xor(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p = v`, returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn exch(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p = new` if `*p == current` (bitwise), returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn cas(p: *mut Self, current: Self, new: Self, o: Ordering) -> Self;
    /// An atomic load.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn load(p: *mut Self, o: Ordering) -> Self;
    /// An atomic store.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn store(p: *mut Self, v: Self, o: Ordering);
}

/// Integer words, which also have `min` and `max`.
pub trait IntWord: Word {
    /// `*p = min(*p, v)`, returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_min(p: *mut Self, v: Self, o: Ordering) -> Self;
    /// `*p = max(*p, v)`, returns the old value.
    ///
    /// # Safety
    /// As the trait says.
    unsafe fn fetch_max(p: *mut Self, v: Self, o: Ordering) -> Self;
}

macro_rules! int_word {
    ($($t:ty => $cell:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_add(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_add(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_sub(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_sub(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_and(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_and(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_or(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_or(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_xor(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_xor(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn exch(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.swap(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn cas(p: *mut Self, current: Self, new: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || match unsafe { <$cell>::from_ptr(p) }.compare_exchange(current, new, o, fail_order(o)) {
                    Ok(v) | Err(v) => v,
                })
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load(p: *mut Self, o: Ordering) -> Self {
                hook(p, false, o);
                // SAFETY: the trait's contract.
                unsafe { <$cell>::from_ptr(p) }.load(o)
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn store(p: *mut Self, v: Self, o: Ordering) {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                unsafe { <$cell>::from_ptr(p) }.store(v, o)
            }
        }

        impl IntWord for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_min(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_min(v, o))
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_max(p: *mut Self, v: Self, o: Ordering) -> Self {
                hook(p, true, o);
                // SAFETY: the trait's contract.
                ordered(o, || unsafe { <$cell>::from_ptr(p) }.fetch_max(v, o))
            }
        }
    )*};
}

int_word!(u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64, i64 => AtomicI64);

macro_rules! float_word {
    ($($t:ty => $bits:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_add(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract.
                unsafe { update(p, o, |x| x + v) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_sub(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract.
                unsafe { update(p, o, |x| x + -v) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_and(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract.
                unsafe { update(p, o, |x| <$t>::from_bits(x.to_bits() & v.to_bits())) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_or(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract.
                unsafe { update(p, o, |x| <$t>::from_bits(x.to_bits() | v.to_bits())) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn fetch_xor(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract.
                unsafe { update(p, o, |x| <$t>::from_bits(x.to_bits() ^ v.to_bits())) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn exch(p: *mut Self, v: Self, o: Ordering) -> Self {
                // SAFETY: the trait's contract; the float has its bits' layout.
                <$t>::from_bits(unsafe { <$bits as Word>::exch(p.cast(), v.to_bits(), o) })
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn cas(p: *mut Self, current: Self, new: Self, o: Ordering) -> Self {
                // SAFETY: as for `exch`.
                <$t>::from_bits(unsafe { <$bits as Word>::cas(p.cast(), current.to_bits(), new.to_bits(), o) })
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load(p: *mut Self, o: Ordering) -> Self {
                // SAFETY: as for `exch`.
                <$t>::from_bits(unsafe { <$bits as Word>::load(p.cast(), o) })
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn store(p: *mut Self, v: Self, o: Ordering) {
                // SAFETY: as for `exch`.
                unsafe { <$bits as Word>::store(p.cast(), v.to_bits(), o) }
            }
        }
    )*};
}

float_word!(f32 => u32, f64 => u64);

/// A float read-modify-write as a compare-and-swap loop on its bits: each
/// round reads the word (relaxed), computes `f(old)` and stores it if the
/// word still holds `old`, with ordering `o`. Returns the old value.
///
/// # Safety
/// As for [`Word`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn update<T: Word + Float>(p: *mut T, o: Ordering, f: impl Fn(T) -> T) -> T {
    // SAFETY: the caller's contract.
    let mut old = unsafe { T::load(p, Ordering::Relaxed) };
    loop {
        // SAFETY: the caller's contract.
        let seen = unsafe { T::cas(p, old, f(old), o) };
        if seen.same_bits(old) {
            return old;
        }
        old = seen;
    }
}

/// Bitwise equality of floats (a compare-and-swap compares bits: `-0.0`
/// is not `0.0`, and a NaN equals itself).
trait Float: Copy {
    fn same_bits(self, other: Self) -> bool;
}

impl Float for f32 {
    fn same_bits(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl Float for f64 {
    fn same_bits(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}
