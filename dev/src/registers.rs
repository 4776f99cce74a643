//! `setmaxnreg`: a warpgroup hands registers back to the block's pool, or
//! takes more from it, while the kernel runs (sm_90a).
//!
//! A block gets `threads x` the registers ptxas allocated per thread. In a
//! warp-specialized kernel the producer warpgroup needs few (it issues
//! copies) and the consumers many (their accumulators): the producer
//! `release`s down to a small count, the consumers `claim` the freed
//! registers. `claim` waits until the pool has them. Counts are multiples
//! of 8 in 24..=256, and the counts of all warpgroups must fit in what the
//! block was given: `sum(count x 128) <= threads x allocated`. ptxas
//! allocates the most `.maxntid` allows to a kernel that uses these
//! (65536 / 384 threads: 168), which the kernel's `min_blocks = 1`
//! declares.
//!
//! PTX ISA, "setmaxnreg". The emulator has no registers to move: both are
//! no-ops there.

/// `setmaxnreg.dec.sync.aligned.u32 N`: this warpgroup's threads keep `N`
/// registers each and return the rest to the block's pool.
///
/// # Safety
/// All threads of the warpgroup execute it converged; the kernel was
/// compiled for at least `N` registers; the device is sm_90a.
#[inline(always)]
pub unsafe fn release<const N: u32>() {
    const {
        assert!(
            N.is_multiple_of(8) && N >= 24 && N <= 256,
            "setmaxnreg counts are multiples of 8 in 24..=256"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack))
    };
}

/// `setmaxnreg.inc.sync.aligned.u32 N`: this warpgroup's threads grow to
/// `N` registers each, taken from the pool (waiting until it has them).
///
/// # Safety
/// As for [`release`], and the pool will hold the registers (what the
/// other warpgroups released): otherwise this waits forever.
#[inline(always)]
pub unsafe fn claim<const N: u32>() {
    const {
        assert!(
            N.is_multiple_of(8) && N >= 24 && N <= 256,
            "setmaxnreg counts are multiples of 8 in 24..=256"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack))
    };
}

/// `x`, through a register move LLVM cannot see into: a value it cannot
/// prove anything about. A loop that indexes 8 rows at `(k0 + j) n`
/// otherwise gets 8 pointers of its own from LLVM's strength reduction (16
/// registers held across the loop, in a kernel whose accumulators already
/// hold 128); through `opaque(k0)` and `opaque(n)` each address is one
/// multiply-add per k-step instead. No instruction survives ptxas (`mov`
/// of a register to itself); on the host it is `x`.
#[inline(always)]
pub fn opaque(x: usize) -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: usize;
        // SAFETY: a register-only move.
        unsafe {
            core::arch::asm!("mov.b64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x
    }
}
