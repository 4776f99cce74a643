//! Floating-point operations with an explicit rounding contract.

use gpu_isa::{Element, Input};

/// `a * b + c` rounded once (`fma.rn.f32`, SASS `FFMA`). Rust never fuses
/// `a * b + c` by itself (it would change the result), so kernels that
/// want the fused multiply-add, and its single rounding, say so.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // The emulator: the host's fused multiply-add (libm `fmaf`), the
        // same single rounding.
        emu::ops::fma(a, b, c)
    }
}

/// `tanh.approx.f32` (sm_75+, SASS `MUFU.TANH`): one instruction, with a
/// maximum relative error of about `2^-11` over the whole range (PTX ISA,
/// "tanh"). The emulator computes the host's correctly rounded `tanh`:
/// a kernel's result then lies within the same bound of both.
#[inline(always)]
pub fn tanh_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("tanh.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::tanh(x)
    }
}

/// `2^x` by `ex2.approx.ftz.f32` (SASS `MUFU.EX2`, one instruction on the
/// special-function unit): within 2 ulp of the exact power, a relative
/// error of at most `2^-22` ([`EX2_ERROR`]; PTX ISA, "ex2"); subnormal
/// inputs and results are flushed to zero, so the smallest nonzero result
/// is `2^-126`. Softmax kernels compute `e^z` as `2^(z log2 e)`, with the
/// factor `log2 e` folded into the score's scale: one `FFMA` and one
/// `MUFU.EX2` an element, where a correctly rounded `expf` takes a dozen
/// instructions. The emulator computes the host's `exp2` with the same
/// flushes: a kernel's result then lies within the same bound of both.
#[inline(always)]
pub fn ex2_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::ex2(x)
    }
}

/// The relative error [`ex2_approx`] may make: 2 ulp of `f32`, `2^-22`.
pub const EX2_ERROR: f64 = 1.0 / (1u64 << 22) as f64;

/// `log2 x` by `lg2.approx.ftz.f32` (SASS `MUFU.LG2`): an absolute error of
/// at most `2^-22` for `x` in `[0.5, 2]` and 2 ulp elsewhere, so at most
/// `2^-22 (1 + |log2 x|)` ([`LG2_ERROR`]; PTX ISA, "lg2"). Subnormal
/// inputs are flushed to zero (`-inf`). The emulator computes the host's
/// `log2`.
#[inline(always)]
pub fn lg2_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("lg2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::lg2(x)
    }
}

/// The error [`lg2_approx`] may make, as a factor on `1 + |log2 x|`.
pub const LG2_ERROR: f64 = EX2_ERROR;

/// `x` rounded to the nearest bf16, ties to even (`cvt.rn.bf16.f32`, one
/// instruction on sm_80+; NaN stays NaN), as its bits.
#[inline(always)]
pub fn bf16_bits(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u16;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("cvt.rn.bf16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::bf16_bits(x)
    }
}

/// `x` rounded to the nearest IEEE binary16, ties to even
/// (`cvt.rn.f16.f32`), as its bits.
#[inline(always)]
pub fn f16_bits(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u16;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("cvt.rn.f16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::f16_bits(x)
    }
}

/// `lo` and `hi` rounded to bf16 as [`bf16_bits`] does, packed into one
/// word (`lo` in the low half, the lower address when stored): one
/// `cvt.rn.bf16x2.f32` (SASS `F2FP.BF16.F32.PACK_AB`) in place of two
/// conversions and a byte permute.
#[inline(always)]
pub fn bf16x2_bits(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: an arithmetic instruction on registers; its first source
        // goes to the upper half (PTX ISA, `cvt`).
        unsafe {
            core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        u32::from(bf16_bits(lo)) | u32::from(bf16_bits(hi)) << 16
    }
}

/// [`bf16x2_bits`] for IEEE binary16 (`cvt.rn.f16x2.f32`).
#[inline(always)]
pub fn f16x2_bits(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: as for `bf16x2_bits`.
        unsafe {
            core::arch::asm!("cvt.rn.f16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        u32::from(f16_bits(lo)) | u32::from(f16_bits(hi)) << 16
    }
}

/// Four `f32` rounded to FP8 E4M3 (to nearest even, saturating at ±448),
/// packed into one word, `x[0]` in the lowest byte: two
/// `cvt.rn.satfinite.e4m3x2.f32` (sm_89 and later; the first source goes
/// to the upper byte) and one move of the two halves.
#[inline(always)]
pub fn e4m3x4_bits(x: [f32; 4]) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: arithmetic instructions on registers.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, {b}, {a}; cvt.rn.satfinite.e4m3x2.f32 hi, {d}, {c}; mov.b32 {r}, {{lo, hi}}; }}",
                r = out(reg32) r, a = in(reg32) x[0], b = in(reg32) x[1], c = in(reg32) x[2], d = in(reg32) x[3],
                options(pure, nomem, nostack)
            )
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use gpu_isa::fp8::E4m3;
        x.iter().rev().fold(0, |word, &v| word << 8 | u32::from(E4m3::from_f32(v).0))
    }
}

/// Two FP8 E4M3 values, `pair`'s low byte the first, as f16x2 bits (the
/// first in the low half), exactly: every E4M3 value is an f16 value
/// (`cvt.rn.f16x2.e4m3x2`, one instruction; sm_89 and later).
#[inline(always)]
pub fn e4m3x2_to_f16x2(pair: u16) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("cvt.rn.f16x2.e4m3x2 {r}, {a};", r = out(reg32) r, a = in(reg16) pair, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use gpu_isa::fp8::E4m3;
        let half = |byte: u16| u32::from(f16_bits(E4m3(byte as u8).to_f32()));
        half(pair & 0xff) | half(pair >> 8) << 16
    }
}

/// `x` rounded to the 16-bit element type `T` (bf16 or f16), to nearest
/// even, as its bits: [`bf16_bits`] or [`f16_bits`].
#[inline(always)]
pub fn round_bits<T: Element>(x: f32) -> u16 {
    const { assert!(T::BYTES == 2, "a 16-bit element type") };
    match T::INPUT {
        Input::Bf16 => bf16_bits(x),
        _ => f16_bits(x),
    }
}

/// `x` rounded to the 16-bit element type `T`, as [`round_bits`].
#[inline(always)]
pub fn round<T: Element>(x: f32) -> T {
    T::from_bits(round_bits::<T>(x).into())
}

/// Two `f32` rounded to the 16-bit element type `T`, as one register:
/// [`bf16x2_bits`] or [`f16x2_bits`] (`lo` in bits 0..16, the lower index,
/// as the `mma` fragments want). One paired conversion, not two `F2F`s and
/// a byte permute: `F2F` issues 16 a clock per SM, as the exponentials do.
#[inline(always)]
pub fn pack<T: Element>(lo: f32, hi: f32) -> u32 {
    const { assert!(T::BYTES == 2, "a 16-bit element type") };
    match T::INPUT {
        Input::Bf16 => bf16x2_bits(lo, hi),
        _ => f16x2_bits(lo, hi),
    }
}

/// The 16-bit element `x` (bf16 or f16) as `f32`, exactly: the inverse of
/// [`round`] on its values (bf16's bits are `f32`'s top half; f16 by
/// [`f16_to_f32`]).
#[inline(always)]
pub fn widen<T: Element>(x: T) -> f32 {
    const { assert!(T::BYTES == 2, "a 16-bit element type") };
    match T::INPUT {
        Input::Bf16 => f32::from_bits(x.bits() << 16),
        _ => f16_to_f32(x.bits() as u16),
    }
}

/// Two 16-bit elements packed as [`pack`] packs them, as `f32`, exactly:
/// `(lo, hi)`.
#[inline(always)]
pub fn unpack<T: Element>(pair: u32) -> (f32, f32) {
    (widen(T::from_bits(pair & 0xffff)), widen(T::from_bits(pair >> 16)))
}

/// The IEEE binary16 `bits` as `f32`, exactly (`cvt.f32.f16`, one
/// instruction: the `half` crate's portable conversion is some twenty).
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("cvt.f32.f16 {r}, {h};", r = out(reg32) r, h = in(reg16) bits, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::f16_to_f32(bits)
    }
}
