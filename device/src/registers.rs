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
pub fn opaque<T: Opaque>(x: T) -> T {
    x.through_register()
}

/// The integer types [`opaque`] takes: `u32` and `usize`.
pub trait Opaque: Copy {
    /// See [`opaque`].
    fn through_register(self) -> Self;
}

macro_rules! opaque_move {
    ($t:ty, $mov:literal, $reg:ident) => {
        impl Opaque for $t {
            #[inline(always)]
            fn through_register(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let r: $t;
                    // SAFETY: a register-only move.
                    unsafe {
                        core::arch::asm!(concat!($mov, " {r}, {x};"), r = out($reg) r, x = in($reg) self, options(pure, nomem, nostack))
                    };
                    r
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    self
                }
            }
        }
    };
}
opaque_move!(usize, "mov.b64", reg64);
opaque_move!(u32, "mov.b32", reg32);

/// The low halves (`HIGH` false) or the high halves (`HIGH` true) of two
/// words as one: `x`'s in the low 16 bits, `y`'s in the high 16. One `prmt`
/// (byte permute: selector `0x5410` or `0x7632` picks bytes of the pair
/// `y:x`), where shifts and masks take two instructions: how 16-bit values
/// from two rows become one register of a fragment.
#[inline(always)]
pub fn pair_halves<const HIGH: bool>(x: u32, y: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        let selector: u32 = if HIGH { 0x7632 } else { 0x5410 };
        // SAFETY: a register-only permute.
        unsafe {
            core::arch::asm!("prmt.b32 {r}, {x}, {y}, {s};", r = out(reg32) r, x = in(reg32) x, y = in(reg32) y, s = in(reg32) selector, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if HIGH { x >> 16 | (y & 0xffff_0000) } else { (x & 0xffff) | y << 16 }
    }
}
