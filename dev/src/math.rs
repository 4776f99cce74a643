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
