//! Atomics and fences: the operations that let threads of different
//! blocks hand each other data within one launch.
//!
//! An atomic read-modify-write (`atom.add`, `atom.exch`, `atom.cas`) on
//! one word never races with another atomic on it. Plain accesses still
//! need ordering: a block that writes results and then takes a ticket
//! with an atomic must *release* them (an atomic with `Release`/`AcqRel`
//! ordering, or [`fence`] first), and the block that reads them must
//! *acquire* (an atomic with `Acquire`/`AcqRel`, or a fence after it).
//! The one-pass reduction's ticket is the pattern.
//!
//! On the GPU these are Rust's `core::sync::atomic` operations, with
//! fences around the read-modify-writes whose ordering the NVPTX backend
//! drops (`ordered`); on the
//! host the emulator records each with its ordering, so its race checks
//! follow the same rules (see `emu::order`).

pub use core::sync::atomic::Ordering;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

use super::{Out, SharedArray};

/// A word the hardware updates atomically: `u32`, `i32` or `u64`.
pub trait AtomicWord: Copy {
    #[doc(hidden)]
    type Cell;
    #[doc(hidden)]
    /// # Safety
    /// `p` is valid and aligned for atomic access.
    unsafe fn cell<'a>(p: *mut Self) -> &'a Self::Cell;
    #[doc(hidden)]
    fn add(cell: &Self::Cell, v: Self, order: Ordering) -> Self;
    #[doc(hidden)]
    fn max(cell: &Self::Cell, v: Self, order: Ordering) -> Self;
    #[doc(hidden)]
    fn swap(cell: &Self::Cell, v: Self, order: Ordering) -> Self;
    #[doc(hidden)]
    fn cas(cell: &Self::Cell, current: Self, new: Self, order: Ordering) -> Self;
    #[doc(hidden)]
    fn load(cell: &Self::Cell, order: Ordering) -> Self;
    #[doc(hidden)]
    fn store(cell: &Self::Cell, v: Self, order: Ordering);
}

macro_rules! atomic_words {
    ($($t:ty => $cell:ty),*) => {$(
        impl AtomicWord for $t {
            type Cell = $cell;
            #[inline(always)]
            unsafe fn cell<'a>(p: *mut Self) -> &'a $cell {
                // SAFETY: the caller's contract.
                unsafe { <$cell>::from_ptr(p) }
            }
            #[inline(always)]
            fn add(cell: &$cell, v: Self, order: Ordering) -> Self {
                cell.fetch_add(v, order)
            }
            #[inline(always)]
            fn max(cell: &$cell, v: Self, order: Ordering) -> Self {
                cell.fetch_max(v, order)
            }
            #[inline(always)]
            fn swap(cell: &$cell, v: Self, order: Ordering) -> Self {
                cell.swap(v, order)
            }
            #[inline(always)]
            fn cas(cell: &$cell, current: Self, new: Self, order: Ordering) -> Self {
                let failure = match order {
                    Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
                    Ordering::AcqRel | Ordering::Acquire => Ordering::Acquire,
                    _ => Ordering::SeqCst,
                };
                match cell.compare_exchange(current, new, order, failure) {
                    Ok(v) | Err(v) => v,
                }
            }
            #[inline(always)]
            fn load(cell: &$cell, order: Ordering) -> Self {
                cell.load(order)
            }
            #[inline(always)]
            fn store(cell: &$cell, v: Self, order: Ordering) {
                cell.store(v, order)
            }
        }
    )*};
}

atomic_words!(u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64);

/// The threads an ordered read-modify-write's fences order it for
/// ([`ordered`]): PTX's `.cta`, `.gpu` and `.sys` scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Block,
    Device,
    System,
}

/// A read-modify-write `rmw` with `order` made real on the GPU, for the
/// threads of `scope`.
///
/// rustc's NVPTX backend lowers every `atomicrmw` to `atom` without
/// memory-order semantics, which PTX reads as `.relaxed`, whatever the
/// ordering asked (loads and stores keep theirs: `ld.acquire`,
/// `st.release`). An `AcqRel` ticket then published nothing: the GEMM
/// fix-up's last split could add partial sums another block had not yet
/// made visible (a verification on the GPU caught it, `docs/notes.md`;
/// the emulator, which takes the ordering as written, could not). So
/// ordered ones get PTX's release and acquire patterns around the relaxed
/// `atom`: a `fence.acq_rel` (`fence.sc` for `SeqCst`) before it when the
/// ordering releases, and after it when it acquires. This layer's
/// atomics use the memory's scope (`Device` for global, `Block` for
/// shared); `lab-cuda-std`'s, `System`. `cpu/tests/ptx.rs` holds the fences in
/// place. On the host, `rmw` alone: the emulator takes the ordering from
/// the access it was told of.
#[inline(always)]
pub fn ordered<R>(order: Ordering, scope: Scope, rmw: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "nvptx64")]
    {
        use Ordering::{AcqRel, Acquire, Release, SeqCst};
        if matches!(order, Release | AcqRel | SeqCst) {
            fence_at(order == SeqCst, scope);
        }
        let r = rmw();
        if matches!(order, Acquire | AcqRel | SeqCst) {
            fence_at(order == SeqCst, scope);
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (order, scope);
        rmw()
    }
}

/// `fence.sc` (`sc`) or `fence.acq_rel` at `scope`, on the GPU.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn fence_at(sc: bool, scope: Scope) {
    // SAFETY: fences only (no `nomem`: the compiler keeps memory accesses
    // on their side of them too).
    unsafe {
        match (sc, scope) {
            (true, Scope::Block) => core::arch::asm!("fence.sc.cta;", options(nostack)),
            (true, Scope::Device) => core::arch::asm!("fence.sc.gpu;", options(nostack)),
            (true, Scope::System) => core::arch::asm!("fence.sc.sys;", options(nostack)),
            (false, Scope::Block) => core::arch::asm!("fence.acq_rel.cta;", options(nostack)),
            (false, Scope::Device) => core::arch::asm!("fence.acq_rel.gpu;", options(nostack)),
            (false, Scope::System) => core::arch::asm!("fence.acq_rel.sys;", options(nostack)),
        }
    }
}

/// Tells the emulator of an atomic access to `p`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn hook<T>(_shared: bool, _p: *const T, _write: bool, _order: Ordering) {
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::access(
        if _shared { emu::ops::Space::Shared } else { emu::ops::Space::Global },
        _p as usize,
        size_of::<T>(),
        emu::ops::Op::Atomic { write: _write, order: _order },
        core::panic::Location::caller(),
    );
}

macro_rules! atomic_methods {
    ($shared:expr) => {
        /// The scope of this memory's ordered read-modify-writes.
        const SCOPE: Scope = if $shared { Scope::Block } else { Scope::Device };

        /// `atomicAdd(&self[i], v)`: adds `v`, returns the old value.
        ///
        /// # Safety
        /// `i` is within the buffer.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_add(&self, i: usize, v: T, order: Ordering) -> T {
            let p = self.element(i);
            hook($shared, p, true, order);
            // SAFETY: the caller's contract; the layer's buffers are aligned.
            let cell = unsafe { T::cell(p) };
            ordered(order, Self::SCOPE, || T::add(cell, v, order))
        }

        /// `atomicMax(&self[i], v)`: returns the old value.
        ///
        /// # Safety
        /// As for `atomic_add`.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_max(&self, i: usize, v: T, order: Ordering) -> T {
            let p = self.element(i);
            hook($shared, p, true, order);
            // SAFETY: as for `atomic_add`.
            let cell = unsafe { T::cell(p) };
            ordered(order, Self::SCOPE, || T::max(cell, v, order))
        }

        /// `atomicExch(&self[i], v)`: returns the old value.
        ///
        /// # Safety
        /// As for `atomic_add`.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_exchange(&self, i: usize, v: T, order: Ordering) -> T {
            let p = self.element(i);
            hook($shared, p, true, order);
            // SAFETY: as for `atomic_add`.
            let cell = unsafe { T::cell(p) };
            ordered(order, Self::SCOPE, || T::swap(cell, v, order))
        }

        /// `atomicCAS(&self[i], current, new)`: stores `new` if the word
        /// holds `current`; returns the old value either way.
        ///
        /// # Safety
        /// As for `atomic_add`.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_cas(&self, i: usize, current: T, new: T, order: Ordering) -> T {
            let p = self.element(i);
            hook($shared, p, true, order);
            // SAFETY: as for `atomic_add`.
            let cell = unsafe { T::cell(p) };
            ordered(order, Self::SCOPE, || T::cas(cell, current, new, order))
        }

        /// An atomic load (`ld.acquire` with `Acquire`).
        ///
        /// # Safety
        /// As for `atomic_add`.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_load(&self, i: usize, order: Ordering) -> T {
            let p = self.element(i);
            hook($shared, p, false, order);
            // SAFETY: as for `atomic_add`.
            T::load(unsafe { T::cell(p) }, order)
        }

        /// An atomic store (`st.release` with `Release`).
        ///
        /// # Safety
        /// As for `atomic_add`.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn atomic_store(&self, i: usize, v: T, order: Ordering) {
            let p = self.element(i);
            hook($shared, p, true, order);
            // SAFETY: as for `atomic_add`.
            T::store(unsafe { T::cell(p) }, v, order)
        }
    };
}

impl<T: AtomicWord> Out<T> {
    #[inline(always)]
    fn element(&self, i: usize) -> *mut T {
        self.as_ptr().wrapping_add(i)
    }

    atomic_methods!(false);
}

impl<T: AtomicWord> SharedArray<T> {
    #[inline(always)]
    fn element(&self, i: usize) -> *mut T {
        self.element_ptr(0, i)
    }

    atomic_methods!(true);
}

/// `__threadfence()`: this thread's memory accesses before the fence are
/// seen by every thread of the device before its accesses after it. Put
/// one between writing results and an atomic that publishes them (and
/// after the atomic that acquires them, if that atomic is relaxed).
#[inline(always)]
pub fn fence() {
    // `fence.sc.gpu`, as `__threadfence()` is: the device's scope, which
    // is all that blocks of one launch share (Rust's `SeqCst` fence would
    // be `fence.sc.sys`, ordered against the host too, and slower).
    #[cfg(target_arch = "nvptx64")]
    fence_at(true, Scope::Device);
    #[cfg(not(target_arch = "nvptx64"))]
    {
        core::sync::atomic::fence(Ordering::SeqCst);
        emu::ops::fence();
    }
}

impl Out<f32> {
    /// `red.relaxed.gpu.global.add.f32`: adds `v` to `self[i]` atomically,
    /// returning nothing (the hardware then needs no round trip). Sums
    /// that many blocks add into one `f32` (attention's dQ) land in
    /// whatever order the blocks reach them: the result is a sum of the
    /// same terms, rounded in an order no run fixes.
    ///
    /// # Safety
    /// `i` is within the buffer.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn reduce_add(&self, i: usize, v: f32) {
        let p = self.as_ptr().wrapping_add(i);
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract; a 4-byte aligned global word.
        unsafe {
            core::arch::asm!("red.relaxed.gpu.global.add.f32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            hook(false, p, true, Ordering::Relaxed);
            // SAFETY: the caller's contract; the layer's buffers are aligned.
            let cell = unsafe { AtomicU32::from_ptr(p.cast::<u32>()) };
            let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some((f32::from_bits(w) + v).to_bits())
            });
        }
    }

    /// `red.relaxed.gpu.global.add.v2.f32`: adds the pair `v` to `self[i]`
    /// and `self[i + 1]` as [`Out::reduce_add`] does each, in one L2
    /// operation for both words: half the atomic traffic of a sum that
    /// many blocks add into. PTX 8.1 and sm_90: a kernel built for earlier
    /// targets too calls it under `#[cfg(target_feature = "sm_90a")]` (the
    /// sm_90a build is PTX 8.4; see `dev::grid` on such features).
    ///
    /// # Safety
    /// `i + 1` is within the buffer; `i` is even (8 bytes on 8).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn reduce_add_pair(&self, i: usize, v: [f32; 2]) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract; an 8-byte aligned global pair.
        unsafe {
            let p = self.as_ptr().wrapping_add(i);
            core::arch::asm!(
                "red.relaxed.gpu.global.add.v2.f32 [{p}], {{{a}, {b}}};",
                p = in(reg64) p, a = in(reg32) v[0], b = in(reg32) v[1], options(nostack)
            );
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's contract.
        unsafe {
            self.reduce_add(i, v[0]);
            self.reduce_add(i + 1, v[1]);
        }
    }
}
