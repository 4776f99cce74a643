//! `mbarrier`: a barrier object in shared memory that counts arrivals and
//! bytes, so that threads can wait for asynchronous copies (TMA) as well as
//! for each other, without stopping the whole block.
//!
//! An mbarrier is 8 bytes of shared memory. `init(count)` sets the number
//! of arrivals each phase expects. A phase completes when all of them have
//! arrived *and* its transaction count is zero: `arrive_expect_tx(bytes)`
//! arrives and adds `bytes`; every TMA copy that names the barrier subtracts
//! the bytes it wrote when they have landed. The barrier then moves on to
//! the next phase. A waiter names the phase it waits for by parity (0 for
//! the first phase, 1 for the second, 0 again for the third...), which is
//! why a ring of `S` stages waits on stage `s` with parity `(i / S) % 2` at
//! its `i`-th use.
//!
//! PTX ISA, "mbarrier": `mbarrier.init`, `mbarrier.arrive(.expect_tx)`,
//! `mbarrier.try_wait.parity`, all `.shared::cta.b64`; sm_80 for the plain
//! forms, sm_90 for transaction counts. On the host, the emulator keeps the
//! counts, lands each TMA copy when a wait observes its phase complete, and
//! reports a read of the copy's bytes before that, an arrival beyond the
//! count, or a wait that can never complete.

use super::SharedArray;

/// One mbarrier in shared memory.
#[derive(Clone, Copy)]
pub struct Mbarrier {
    at: *mut u64,
}

impl Mbarrier {
    /// The mbarrier at index `i` of a shared array of them.
    ///
    /// # Safety
    /// The array lies in the launch's shared memory, 8-byte aligned.
    #[inline(always)]
    pub unsafe fn at(array: SharedArray<u64>, i: usize) -> Mbarrier {
        Mbarrier { at: array.element_ptr(0, i) }
    }

    /// The barrier's shared address, for instructions that name it.
    #[inline(always)]
    pub(crate) fn ptr(self) -> *mut u64 {
        self.at
    }

    /// `mbarrier.init.shared::cta.b64`: `count` arrivals per phase, phase
    /// 0 open.
    ///
    /// # Safety
    /// One thread initializes it, before any use, and [`fence_init`] and a
    /// barrier follow before other threads or TMA copies use it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn init(self, count: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "mbarrier.init.shared::cta.b64 [{a}], {n};",
                a = in(reg32) crate::shared::window_address(self.at), n = in(reg32) count,
                options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::mbarrier_init(self.at as usize, count, core::panic::Location::caller());
    }

    /// `mbarrier.arrive.expect_tx`: this thread arrives, and the phase
    /// waits for `bytes` more bytes of copies.
    ///
    /// # Safety
    /// Initialized; the phase expects this arrival.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn arrive_expect_tx(self, bytes: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [{a}], {n}; }}",
                a = in(reg32) crate::shared::window_address(self.at), n = in(reg32) bytes,
                options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::mbarrier_arrive(self.at as usize, bytes, core::panic::Location::caller());
    }

    /// `mbarrier.arrive`: this thread arrives.
    ///
    /// # Safety
    /// As for [`Mbarrier::arrive_expect_tx`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn arrive(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [{a}]; }}",
                a = in(reg32) crate::shared::window_address(self.at),
                options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::mbarrier_arrive(self.at as usize, 0, core::panic::Location::caller());
    }

    /// Waits until the phase of parity `parity` has completed
    /// (`mbarrier.try_wait.parity` until it succeeds). Afterwards the bytes
    /// of the copies that phase counted are visible to this thread.
    ///
    /// # Safety
    /// Initialized.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn wait(self, parity: u32) {
        #[cfg(target_arch = "nvptx64")]
        loop {
            let done: u32;
            // SAFETY: the caller's contract; `try_wait` may return early
            // (false) after a time the hardware picks, hence the loop.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {parity}; \
                     selp.u32 {done}, 1, 0, p; }}",
                    a = in(reg32) crate::shared::window_address(self.at), parity = in(reg32) parity,
                    done = out(reg32) done, options(nostack)
                )
            };
            if done != 0 {
                break;
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::mbarrier_wait(self.at as usize, parity, core::panic::Location::caller());
    }
}

/// After initializing mbarriers: makes the initialization visible to the
/// other threads' and the TMA unit's uses (`fence.mbarrier_init` and
/// `fence.proxy.async.shared::cta`). A `sync_threads` must still follow.
#[inline(always)]
pub fn fence_init() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: fences only.
    unsafe {
        core::arch::asm!(
            "fence.mbarrier_init.release.cluster; fence.proxy.async.shared::cta;",
            options(nostack)
        )
    };
}
