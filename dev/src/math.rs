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
