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
        // The host build has no libm in core; the same single rounding
        // computed through f64 is exact for f32 inputs except in rare
        // double-rounding cases, and only host tooling uses this.
        (a as f64 * b as f64 + c as f64) as f32
    }
}
