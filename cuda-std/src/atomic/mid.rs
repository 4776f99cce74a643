//! rust-cuda's mid-level atomic functions: one per operation, word type
//! and scope, taking a raw pointer (global or shared) and an ordering.
//!
//! `atomic_fetch_{op}_{ty}_{scope}(ptr, ordering, val)` returns the old
//! value; `atomic_compare_and_swap_{ty}_{scope}(ptr, current, new,
//! ordering)` the old value; `atomic_load_{32,64}_{scope}` and
//! `atomic_store_{32,64}_{scope}` act on the bits. Every one is the
//! [`Word`] operation of its type (the scope is at least the one named; see
//! the module's docs). Each `# Safety`: `ptr` is valid, aligned to the
//! word's size and only accessed atomically while the call runs.

use core::sync::atomic::Ordering;

use super::word::{IntWord, Word};

macro_rules! fetch {
    ($($name:ident: $t:ty, $trait:ident::$f:ident;)*) => {$(
        #[doc = concat!("`", stringify!($f), "` on the `", stringify!($t), "` at `ptr`; returns the old value.")]
        ///
        /// # Safety
        /// As the module says.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(ptr: *mut $t, ordering: Ordering, val: $t) -> $t {
            // SAFETY: the caller's contract (the module's docs).
            unsafe { <$t as $trait>::$f(ptr, val, ordering) }
        }
    )*};
}

macro_rules! cas {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("Stores `new` at `ptr` if it holds `current` (bitwise); returns the old `", stringify!($t), "`.")]
        ///
        /// # Safety
        /// As the module says.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(ptr: *mut $t, current: $t, new: $t, ordering: Ordering) -> $t {
            // SAFETY: the caller's contract (the module's docs).
            unsafe { <$t as Word>::cas(ptr, current, new, ordering) }
        }
    )*};
}

macro_rules! load_store {
    ($($load:ident, $store:ident: $t:ty;)*) => {$(
        #[doc = concat!("An atomic load of the `", stringify!($t), "` at `ptr`.")]
        ///
        /// # Safety
        /// As the module says.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $load(ptr: *mut $t, ordering: Ordering) -> $t {
            // SAFETY: the caller's contract (the module's docs).
            unsafe { <$t as Word>::load(ptr, ordering) }
        }

        #[doc = concat!("An atomic store of a `", stringify!($t), "` at `ptr`.")]
        ///
        /// # Safety
        /// As the module says.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $store(ptr: *mut $t, ordering: Ordering, val: $t) {
            // SAFETY: the caller's contract (the module's docs).
            unsafe { <$t as Word>::store(ptr, val, ordering) }
        }
    )*};
}

fetch! {
    atomic_fetch_add_u32_block: u32, Word::fetch_add;
    atomic_fetch_add_u32_device: u32, Word::fetch_add;
    atomic_fetch_add_u32_system: u32, Word::fetch_add;
    atomic_fetch_sub_u32_block: u32, Word::fetch_sub;
    atomic_fetch_sub_u32_device: u32, Word::fetch_sub;
    atomic_fetch_sub_u32_system: u32, Word::fetch_sub;
    atomic_fetch_and_u32_block: u32, Word::fetch_and;
    atomic_fetch_and_u32_device: u32, Word::fetch_and;
    atomic_fetch_and_u32_system: u32, Word::fetch_and;
    atomic_fetch_or_u32_block: u32, Word::fetch_or;
    atomic_fetch_or_u32_device: u32, Word::fetch_or;
    atomic_fetch_or_u32_system: u32, Word::fetch_or;
    atomic_fetch_xor_u32_block: u32, Word::fetch_xor;
    atomic_fetch_xor_u32_device: u32, Word::fetch_xor;
    atomic_fetch_xor_u32_system: u32, Word::fetch_xor;
    atomic_fetch_min_u32_block: u32, IntWord::fetch_min;
    atomic_fetch_min_u32_device: u32, IntWord::fetch_min;
    atomic_fetch_min_u32_system: u32, IntWord::fetch_min;
    atomic_fetch_max_u32_block: u32, IntWord::fetch_max;
    atomic_fetch_max_u32_device: u32, IntWord::fetch_max;
    atomic_fetch_max_u32_system: u32, IntWord::fetch_max;
    atomic_fetch_exch_u32_block: u32, Word::exch;
    atomic_fetch_exch_u32_device: u32, Word::exch;
    atomic_fetch_exch_u32_system: u32, Word::exch;
    atomic_fetch_add_u64_block: u64, Word::fetch_add;
    atomic_fetch_add_u64_device: u64, Word::fetch_add;
    atomic_fetch_add_u64_system: u64, Word::fetch_add;
    atomic_fetch_sub_u64_block: u64, Word::fetch_sub;
    atomic_fetch_sub_u64_device: u64, Word::fetch_sub;
    atomic_fetch_sub_u64_system: u64, Word::fetch_sub;
    atomic_fetch_and_u64_block: u64, Word::fetch_and;
    atomic_fetch_and_u64_device: u64, Word::fetch_and;
    atomic_fetch_and_u64_system: u64, Word::fetch_and;
    atomic_fetch_or_u64_block: u64, Word::fetch_or;
    atomic_fetch_or_u64_device: u64, Word::fetch_or;
    atomic_fetch_or_u64_system: u64, Word::fetch_or;
    atomic_fetch_xor_u64_block: u64, Word::fetch_xor;
    atomic_fetch_xor_u64_device: u64, Word::fetch_xor;
    atomic_fetch_xor_u64_system: u64, Word::fetch_xor;
    atomic_fetch_min_u64_block: u64, IntWord::fetch_min;
    atomic_fetch_min_u64_device: u64, IntWord::fetch_min;
    atomic_fetch_min_u64_system: u64, IntWord::fetch_min;
    atomic_fetch_max_u64_block: u64, IntWord::fetch_max;
    atomic_fetch_max_u64_device: u64, IntWord::fetch_max;
    atomic_fetch_max_u64_system: u64, IntWord::fetch_max;
    atomic_fetch_exch_u64_block: u64, Word::exch;
    atomic_fetch_exch_u64_device: u64, Word::exch;
    atomic_fetch_exch_u64_system: u64, Word::exch;
    atomic_fetch_add_i32_block: i32, Word::fetch_add;
    atomic_fetch_add_i32_device: i32, Word::fetch_add;
    atomic_fetch_add_i32_system: i32, Word::fetch_add;
    atomic_fetch_sub_i32_block: i32, Word::fetch_sub;
    atomic_fetch_sub_i32_device: i32, Word::fetch_sub;
    atomic_fetch_sub_i32_system: i32, Word::fetch_sub;
    atomic_fetch_and_i32_block: i32, Word::fetch_and;
    atomic_fetch_and_i32_device: i32, Word::fetch_and;
    atomic_fetch_and_i32_system: i32, Word::fetch_and;
    atomic_fetch_or_i32_block: i32, Word::fetch_or;
    atomic_fetch_or_i32_device: i32, Word::fetch_or;
    atomic_fetch_or_i32_system: i32, Word::fetch_or;
    atomic_fetch_xor_i32_block: i32, Word::fetch_xor;
    atomic_fetch_xor_i32_device: i32, Word::fetch_xor;
    atomic_fetch_xor_i32_system: i32, Word::fetch_xor;
    atomic_fetch_min_i32_block: i32, IntWord::fetch_min;
    atomic_fetch_min_i32_device: i32, IntWord::fetch_min;
    atomic_fetch_min_i32_system: i32, IntWord::fetch_min;
    atomic_fetch_max_i32_block: i32, IntWord::fetch_max;
    atomic_fetch_max_i32_device: i32, IntWord::fetch_max;
    atomic_fetch_max_i32_system: i32, IntWord::fetch_max;
    atomic_fetch_exch_i32_block: i32, Word::exch;
    atomic_fetch_exch_i32_device: i32, Word::exch;
    atomic_fetch_exch_i32_system: i32, Word::exch;
    atomic_fetch_add_i64_block: i64, Word::fetch_add;
    atomic_fetch_add_i64_device: i64, Word::fetch_add;
    atomic_fetch_add_i64_system: i64, Word::fetch_add;
    atomic_fetch_sub_i64_block: i64, Word::fetch_sub;
    atomic_fetch_sub_i64_device: i64, Word::fetch_sub;
    atomic_fetch_sub_i64_system: i64, Word::fetch_sub;
    atomic_fetch_and_i64_block: i64, Word::fetch_and;
    atomic_fetch_and_i64_device: i64, Word::fetch_and;
    atomic_fetch_and_i64_system: i64, Word::fetch_and;
    atomic_fetch_or_i64_block: i64, Word::fetch_or;
    atomic_fetch_or_i64_device: i64, Word::fetch_or;
    atomic_fetch_or_i64_system: i64, Word::fetch_or;
    atomic_fetch_xor_i64_block: i64, Word::fetch_xor;
    atomic_fetch_xor_i64_device: i64, Word::fetch_xor;
    atomic_fetch_xor_i64_system: i64, Word::fetch_xor;
    atomic_fetch_min_i64_block: i64, IntWord::fetch_min;
    atomic_fetch_min_i64_device: i64, IntWord::fetch_min;
    atomic_fetch_min_i64_system: i64, IntWord::fetch_min;
    atomic_fetch_max_i64_block: i64, IntWord::fetch_max;
    atomic_fetch_max_i64_device: i64, IntWord::fetch_max;
    atomic_fetch_max_i64_system: i64, IntWord::fetch_max;
    atomic_fetch_exch_i64_block: i64, Word::exch;
    atomic_fetch_exch_i64_device: i64, Word::exch;
    atomic_fetch_exch_i64_system: i64, Word::exch;
    atomic_fetch_add_f32_block: f32, Word::fetch_add;
    atomic_fetch_add_f32_device: f32, Word::fetch_add;
    atomic_fetch_add_f32_system: f32, Word::fetch_add;
    atomic_fetch_sub_f32_block: f32, Word::fetch_sub;
    atomic_fetch_sub_f32_device: f32, Word::fetch_sub;
    atomic_fetch_sub_f32_system: f32, Word::fetch_sub;
    atomic_fetch_and_f32_block: f32, Word::fetch_and;
    atomic_fetch_and_f32_device: f32, Word::fetch_and;
    atomic_fetch_and_f32_system: f32, Word::fetch_and;
    atomic_fetch_or_f32_block: f32, Word::fetch_or;
    atomic_fetch_or_f32_device: f32, Word::fetch_or;
    atomic_fetch_or_f32_system: f32, Word::fetch_or;
    atomic_fetch_xor_f32_block: f32, Word::fetch_xor;
    atomic_fetch_xor_f32_device: f32, Word::fetch_xor;
    atomic_fetch_xor_f32_system: f32, Word::fetch_xor;
    atomic_fetch_exch_f32_block: f32, Word::exch;
    atomic_fetch_exch_f32_device: f32, Word::exch;
    atomic_fetch_exch_f32_system: f32, Word::exch;
    atomic_fetch_add_f64_block: f64, Word::fetch_add;
    atomic_fetch_add_f64_device: f64, Word::fetch_add;
    atomic_fetch_add_f64_system: f64, Word::fetch_add;
    atomic_fetch_sub_f64_block: f64, Word::fetch_sub;
    atomic_fetch_sub_f64_device: f64, Word::fetch_sub;
    atomic_fetch_sub_f64_system: f64, Word::fetch_sub;
    atomic_fetch_and_f64_block: f64, Word::fetch_and;
    atomic_fetch_and_f64_device: f64, Word::fetch_and;
    atomic_fetch_and_f64_system: f64, Word::fetch_and;
    atomic_fetch_or_f64_block: f64, Word::fetch_or;
    atomic_fetch_or_f64_device: f64, Word::fetch_or;
    atomic_fetch_or_f64_system: f64, Word::fetch_or;
    atomic_fetch_xor_f64_block: f64, Word::fetch_xor;
    atomic_fetch_xor_f64_device: f64, Word::fetch_xor;
    atomic_fetch_xor_f64_system: f64, Word::fetch_xor;
    atomic_fetch_exch_f64_block: f64, Word::exch;
    atomic_fetch_exch_f64_device: f64, Word::exch;
    atomic_fetch_exch_f64_system: f64, Word::exch;
}

cas! {
    atomic_compare_and_swap_u32_block: u32;
    atomic_compare_and_swap_u32_device: u32;
    atomic_compare_and_swap_u32_system: u32;
    atomic_compare_and_swap_u64_block: u64;
    atomic_compare_and_swap_u64_device: u64;
    atomic_compare_and_swap_u64_system: u64;
    atomic_compare_and_swap_i32_block: i32;
    atomic_compare_and_swap_i32_device: i32;
    atomic_compare_and_swap_i32_system: i32;
    atomic_compare_and_swap_i64_block: i64;
    atomic_compare_and_swap_i64_device: i64;
    atomic_compare_and_swap_i64_system: i64;
    atomic_compare_and_swap_f32_block: f32;
    atomic_compare_and_swap_f32_device: f32;
    atomic_compare_and_swap_f32_system: f32;
    atomic_compare_and_swap_f64_block: f64;
    atomic_compare_and_swap_f64_device: f64;
    atomic_compare_and_swap_f64_system: f64;
}

load_store! {
    atomic_load_32_block, atomic_store_32_block: u32;
    atomic_load_32_device, atomic_store_32_device: u32;
    atomic_load_32_system, atomic_store_32_system: u32;
    atomic_load_64_block, atomic_store_64_block: u64;
    atomic_load_64_device, atomic_store_64_device: u64;
    atomic_load_64_system, atomic_store_64_system: u64;
}

/// A fence ordering this thread's accesses for the device: none for
/// `Relaxed`, otherwise every access before it is seen before every one
/// after it (`fence.acq_rel` or `fence.sc`; on the emulator a fence).
#[inline(always)]
pub fn device_thread_fence(ordering: Ordering) {
    fence(ordering)
}

/// A fence ordering this thread's accesses for the block: none for
/// `Relaxed`, otherwise every access before it is seen before every one
/// after it (`fence.acq_rel` or `fence.sc`; on the emulator a fence).
#[inline(always)]
pub fn block_thread_fence(ordering: Ordering) {
    fence(ordering)
}

/// A fence ordering this thread's accesses for the system: none for
/// `Relaxed`, otherwise every access before it is seen before every one
/// after it (`fence.acq_rel` or `fence.sc`; on the emulator a fence).
#[inline(always)]
pub fn system_thread_fence(ordering: Ordering) {
    fence(ordering)
}

fn fence(ordering: Ordering) {
    if ordering == Ordering::Relaxed {
        return;
    }
    core::sync::atomic::fence(ordering);
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::fence();
}
