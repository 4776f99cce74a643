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

/// Four bytes picked from the eight of the pair `y:x` (`x`'s bytes 0-3,
/// `y`'s 4-7): result byte `i` is byte `SELECTOR >> 4 i & 7` (`prmt.b32`,
/// SASS `PRMT`, one instruction; the selector's sign-replicate bits are
/// not used).
#[inline(always)]
pub fn byte_perm<const SELECTOR: u32>(x: u32, y: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a register-only permute.
        unsafe {
            core::arch::asm!("prmt.b32 {r}, {x}, {y}, {s};", r = out(reg32) r, x = in(reg32) x, y = in(reg32) y, s = const SELECTOR, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let pair = (y as u64) << 32 | x as u64;
        (0..4).fold(0, |r, i| r | (((pair >> (8 * (SELECTOR >> (4 * i) & 7))) & 0xff) as u32) << (8 * i))
    }
}

/// The low halves (`HIGH` false) or the high halves (`HIGH` true) of two
/// words as one: `x`'s in the low 16 bits, `y`'s in the high 16. One
/// [`byte_perm`] (`0x5410` or `0x7632`), where shifts and masks take two
/// instructions: how 16-bit values from two rows become one register of a
/// fragment.
#[inline(always)]
pub fn pair_halves<const HIGH: bool>(x: u32, y: u32) -> u32 {
    if HIGH { byte_perm::<0x7632>(x, y) } else { byte_perm::<0x5410>(x, y) }
}

/// A 4 x 4 byte transpose: byte `c` of word `r` of the result is byte `r`
/// of word `c` of `w`. Six [`byte_perm`]s: the rows paired byte by byte
/// (`0x5140`, `0x7362`), then the pairs' halves joined (`0x5410`, `0x7632`).
#[inline(always)]
pub fn transpose_bytes(w: [u32; 4]) -> [u32; 4] {
    let (lo01, hi01) = (byte_perm::<0x5140>(w[0], w[1]), byte_perm::<0x7362>(w[0], w[1]));
    let (lo23, hi23) = (byte_perm::<0x5140>(w[2], w[3]), byte_perm::<0x7362>(w[2], w[3]));
    [
        byte_perm::<0x5410>(lo01, lo23),
        byte_perm::<0x7632>(lo01, lo23),
        byte_perm::<0x5410>(hi01, hi23),
        byte_perm::<0x7632>(hi01, hi23),
    ]
}
