//! `cuda_std::atomic`: rust-cuda's atomic floats and its mid-level
//! functions, on global and shared memory.
//!
//! - [`AtomicF32`]/[`AtomicF64`] synchronize across the device,
//!   [`BlockAtomicF32`]/[`BlockAtomicF64`] across one block (their methods
//!   are `unsafe`, as in rust-cuda: they do not order other blocks), and
//!   [`SystemAtomicF32`]/[`SystemAtomicF64`] across the system.
//! - The [`mid`] functions `atomic_fetch_{add,sub,and,or,xor,min,max,exch}_{ty}_{scope}`,
//!   `atomic_compare_and_swap_{ty}_{scope}`, `atomic_{load,store}_{32,64}_
//!   {scope}` and `{block,device,system}_thread_fence`.
//!
//! Each operation is one atomic on its word (see `word.rs` for how each
//! is built). On the GPU the scope is that of Rust's atomics: the NVPTX
//! backend gives loads, stores and fences system scope (`.sys`), and its
//! read-modify-writes no scope or ordering at all (a relaxed `atom`, the
//! device's scope), which `word.rs` orders with system-scoped fences. A
//! block- or device-scoped atomic is so at least as strong as asked and
//! may be slower; a system-scoped read-modify-write is ordered for the
//! system but atomic only for the device (`atom` without `.sys`). Float `fetch_add` is a compare-and-swap
//! loop, not `atom.add.f32`. On the emulator every operation is an atomic
//! access of its word, with its ordering, in the space the address lies in:
//! no race between atomics, and a release/acquire pair orders plain
//! accesses, through global words across blocks and through shared words
//! within a block.

pub mod mid;
mod word;

use core::cell::UnsafeCell;
use core::sync::atomic::Ordering;

pub use word::{IntWord, Word};

macro_rules! atomic_float {
    ($name:ident, $t:ty, $align:literal, $scope:literal, $safety:literal $(, $unsafety:ident)?) => {
        #[doc = concat!("A `", stringify!($t), "` updated atomically, ordered across ", $scope, ".")]
        ///
        /// Same layout as the float; put it in global memory (through a
        /// pointer parameter) or in shared memory.
        #[repr(C, align($align))]
        pub struct $name {
            v: UnsafeCell<$t>,
        }

        // SAFETY: every access to the value is atomic.
        unsafe impl Sync for $name {}

        impl $name {
            /// A new atomic holding `v`.
            pub const fn new(v: $t) -> Self {
                Self { v: UnsafeCell::new(v) }
            }

            /// The value, consuming the atomic.
            pub fn into_inner(self) -> $t {
                self.v.into_inner()
            }

            /// The atomic at `p` (global or shared).
            ///
            /// # Safety
            /// `p` is valid and aligned for the atomic's lifetime `'a`, and
            /// accessed only atomically during it.
            pub unsafe fn from_ptr<'a>(p: *mut $t) -> &'a Self {
                // SAFETY: the caller's contract; same layout as the float.
                unsafe { &*p.cast::<Self>() }
            }

            /// Adds `val`, returns the value before.
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn fetch_add(&self, val: $t, order: Ordering) -> $t {
                // SAFETY: the cell is valid, aligned and only accessed atomically.
                unsafe { <$t as Word>::fetch_add(self.v.get(), val, order) }
            }

            /// Subtracts `val` (adds `-val`), returns the value before.
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn fetch_sub(&self, val: $t, order: Ordering) -> $t {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::fetch_sub(self.v.get(), val, order) }
            }

            /// Bitwise "and" with `val`'s bits, returns the value before.
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn fetch_and(&self, val: $t, order: Ordering) -> $t {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::fetch_and(self.v.get(), val, order) }
            }

            /// Bitwise "or" with `val`'s bits, returns the value before.
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn fetch_or(&self, val: $t, order: Ordering) -> $t {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::fetch_or(self.v.get(), val, order) }
            }

            /// Bitwise "xor" with `val`'s bits, returns the value before.
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn fetch_xor(&self, val: $t, order: Ordering) -> $t {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::fetch_xor(self.v.get(), val, order) }
            }

            /// An atomic load (`Relaxed`, `Acquire` or `SeqCst`).
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn load(&self, order: Ordering) -> $t {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::load(self.v.get(), order) }
            }

            /// An atomic store (`Relaxed`, `Release` or `SeqCst`).
            #[doc = $safety]
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub $($unsafety)? fn store(&self, val: $t, order: Ordering) {
                // SAFETY: as for `fetch_add`.
                unsafe { <$t as Word>::store(self.v.get(), val, order) }
            }
        }
    };
}

atomic_float!(AtomicF32, f32, 4, "the device", "");
atomic_float!(AtomicF64, f64, 8, "the device", "");
atomic_float!(
    BlockAtomicF32,
    f32,
    4,
    "one thread block",
    "\n# Safety\nOrders the threads of one block only: other blocks may race.",
    unsafe
);
atomic_float!(
    BlockAtomicF64,
    f64,
    8,
    "one thread block",
    "\n# Safety\nOrders the threads of one block only: other blocks may race.",
    unsafe
);
atomic_float!(SystemAtomicF32, f32, 4, "the system", "");
atomic_float!(SystemAtomicF64, f64, 8, "the system", "");
