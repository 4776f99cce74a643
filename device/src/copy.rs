//! Asynchronous copies from global to shared memory (`cp.async`, sm_80+).
//!
//! A plain tile load goes global → register → shared: the thread issues
//! `ld.global`, and the `st.shared` that follows must wait for the data,
//! holding a register meanwhile. Under register pressure the compiler
//! moves such loads next to their stores, where their ~600-cycle latency
//! is exposed. `cp.async` copies 4 or 16 bytes straight into shared memory
//! (SASS `LDGSTS`): no register holds the data, and the thread runs on at
//! once.
//!
//! Completion is per thread and per *group*: [`commit_copies`] closes the
//! group of copies issued since the last commit; [`wait_copies::<N>`]
//! waits until at most the `N` newest groups are still in flight. The data
//! becomes visible to the *other* threads of the block only after a
//! barrier that follows the wait, as for an ordinary shared store.
//!
//! On the host the emulator models exactly that: a copy reads global memory
//! when issued, but lands in shared memory only at the wait that covers
//! it; a kernel that reads the tile before waiting sees the old contents,
//! and a thread that exits with copies in flight is an error.
//!
//! The copy methods are on [`SharedTile`]; these are the group operations.

use super::{In, SharedTile};

/// Closes the group of copies this thread issued since the last commit
/// (`cp.async.commit_group`). A commit with no copies makes an empty
/// group, which keeps group counting uniform in a pipeline's last steps.
#[inline(always)]
pub fn commit_copies() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; it only marks a point in this thread's copies.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::copy_commit();
}

/// Waits until at most `N` of this thread's committed groups are still in
/// flight (`cp.async.wait_group N`): with `N = 0`, every committed copy
/// has landed. Follow it with [`crate::sync_threads`] before other
/// threads read what this one copied.
#[inline(always)]
pub fn wait_copies<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; the asm has the default memory clobber, so the
    // compiler does not move shared-memory reads above it.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::copy_wait(N as usize);
}

impl<const STRIDE: usize> SharedTile<f32, STRIDE> {
    /// Copies `src[i]` into row `r`, column `c` without passing through a
    /// register (`cp.async.ca`, 4 bytes, cached in L1).
    ///
    /// # Safety
    /// `src[i]` is within the buffer; the element is within the launch's
    /// shared memory, and nobody reads or writes it until this thread has
    /// waited for the copy and the block has passed a barrier.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async(self, r: usize, c: usize, src: In<f32>, i: usize) {
        // SAFETY: the caller's contract, which `copy` forwards.
        unsafe { self.copy::<4>(r, c, src.wrapping_offset(i).as_ptr(), None) }
    }

    /// [`SharedTile::copy_async`] where `src[i]` may not exist: copies it
    /// when `valid`, else writes 0.0 without reading global memory (the
    /// copy's source size is then 0, and `src`'s start is passed as a
    /// harmless address).
    ///
    /// # Safety
    /// `src[i]` is within the buffer when `valid`; as for `copy_async`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async_or_zero(self, r: usize, c: usize, src: In<f32>, i: usize, valid: bool) {
        let from = if valid { src.wrapping_offset(i) } else { src };
        // SAFETY: the caller's contract, which `copy` forwards.
        unsafe { self.copy::<4>(r, c, from.as_ptr(), Some(if valid { 4 } else { 0 })) }
    }

    /// Copies `src[i..i + 4]` into row `r`, columns `c..c + 4` with one
    /// 16-byte `cp.async.cg` (which bypasses L1: the tile is read once per
    /// block).
    ///
    /// # Safety
    /// As for [`SharedTile::copy_async`], for all four elements; `i` and
    /// `r * STRIDE + c` are multiples of 4 (16-byte aligned).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async4(self, r: usize, c: usize, src: In<f32>, i: usize) {
        // SAFETY: the caller's contract, which `copy` forwards.
        unsafe { self.copy::<16>(r, c, src.wrapping_offset(i).as_ptr(), None) }
    }

    /// [`SharedTile::copy_async4`] that writes zeros instead where `valid`
    /// is false.
    ///
    /// # Safety
    /// As for `copy_async4` when `valid`; `r * STRIDE + c` a multiple of 4.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy_async4_or_zero(self, r: usize, c: usize, src: In<f32>, i: usize, valid: bool) {
        let from = if valid { src.wrapping_offset(i) } else { src };
        // SAFETY: the caller's contract, which `copy` forwards.
        unsafe { self.copy::<16>(r, c, from.as_ptr(), Some(if valid { 16 } else { 0 })) }
    }

    /// `cp.async` of `SIZE` bytes, of which the first `src_bytes` (all when
    /// `None`) are read from `src` and the rest are zero.
    ///
    /// # Safety
    /// As for [`SharedTile::copy_async`], for `SIZE` bytes.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn copy<const SIZE: u32>(self, r: usize, c: usize, src: *const f32, src_bytes: Option<u32>) {
        let dst = self.element_ptr(r, c);
        #[cfg(target_arch = "nvptx64")]
        {
            let dst = self.window(r, c);
            // SAFETY: the caller's contract. 16-byte copies bypass L1
            // (`.cg`); smaller ones must go through it (`.ca`).
            unsafe {
                match (SIZE, src_bytes) {
                    (16, None) => core::arch::asm!(
                        "cp.async.cg.shared.global [{d}], [{s}], 16;",
                        d = in(reg32) dst, s = in(reg64) src, options(nostack)
                    ),
                    (16, Some(n)) => core::arch::asm!(
                        "cp.async.cg.shared.global [{d}], [{s}], 16, {n};",
                        d = in(reg32) dst, s = in(reg64) src, n = in(reg32) n, options(nostack)
                    ),
                    (_, None) => core::arch::asm!(
                        "cp.async.ca.shared.global [{d}], [{s}], {size};",
                        d = in(reg32) dst, s = in(reg64) src, size = const SIZE, options(nostack)
                    ),
                    (_, Some(n)) => core::arch::asm!(
                        "cp.async.ca.shared.global [{d}], [{s}], {size}, {n};",
                        d = in(reg32) dst, s = in(reg64) src, size = const SIZE, n = in(reg32) n,
                        options(nostack)
                    ),
                }
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::copy_async(
            dst as usize,
            src as usize,
            SIZE as usize,
            src_bytes.unwrap_or(SIZE) as usize,
            core::panic::Location::caller(),
        );
    }
}
