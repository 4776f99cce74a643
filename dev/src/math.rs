//! Floating-point operations with an explicit rounding contract.

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
        emu::device::fma(a, b, c)
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
        emu::device::tanh(x)
    }
}

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
        emu::device::bf16_bits(x)
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
        emu::device::f16_bits(x)
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
        emu::device::f16_to_f32(bits)
    }
}
