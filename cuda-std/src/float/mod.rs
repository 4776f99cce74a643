//! rust-cuda's float traits: [`GpuFloat`] (std's float methods, for
//! `no_std` kernels) and [`FloatExt`] (the libdevice extras), with
//! rust-cuda's names and signatures, written here from PTX instructions
//! and our own polynomials (rust-cuda links NVIDIA's libdevice instead).
//!
//! # How they are computed
//!
//! - Every function uses only correctly rounded instructions
//!   (`fma.rn`, `sqrt.rn`, `div.rn`, `cvt.rni`/`rmi`/`rpi`/`rzi`, integer
//!   operations; see [`prim`]): the emulator's result is the GPU's, bit for
//!   bit, and the tests check both against the same bound.
//! - The `f64` functions are in [`imp`]: range reductions carried in
//!   double-double arithmetic (`two_sum`, `two_prod` with `fma`), Taylor
//!   polynomials of the reduced argument (coefficients `1/n!`, `1/(2j+1)`,
//!   no fitted ones), and one final rounding of `hi + lo`; each function's
//!   documentation says its reduction and degree.
//! - The `f32` functions evaluate the `f64` algorithm on the exact `f64`
//!   value of the argument and round once to `f32`: at most half an `f32`
//!   ulp plus the `f64` error (below `2^-26` `f32` ulps), so correctly
//!   rounded but where the `f64` result straddles a midpoint.
//!   The price is `f64` throughput (half of `f32` on H100, a 64th on
//!   consumer parts). `exp` and `exp2` are written in `f32` arithmetic
//!   ([`imp32`]: a Taylor polynomial, `fma.rn.f32`, an exact scaling),
//!   within an ulp; the others' `f32` paths are not written yet.
//!
//! # Bounds
//!
//! Each function's documentation gives its maximum error in ulps,
//! measured by `cpu/tests/cuda_std.rs` (the emulator) and `cpu/tests/gpu.rs` (the
//! device) over dense sweeps of their domains, including subnormals,
//! huge values, specials and the neighbourhoods of the functions' zeros,
//! against the host's libm (glibc): the `f32` functions against glibc's
//! `f64` result (so the reference is good to about `2^-29` ulp), the
//! `f64` ones against glibc's `f64` result, itself within about an ulp,
//! so an `f64` figure counts the reference's error too. The table is in
//! `docs/notes.md` ("Float functions").
//!
//! # Host calls
//!
//! On the host, `x.sin()` on an `f32` calls std's inherent method, which
//! wins over a trait method; the emulator runs these implementations
//! where a kernel names the trait (`GpuFloat::sin(x)`) or where std's
//! method does not exist (`no_std` host builds, and every [`FloatExt`]
//! method). On the device the trait is the only `sin`.

pub mod bessel;
#[rustfmt::skip]
pub mod bessel_tables;
pub mod consts;
mod fit;
pub mod imp;
pub mod imp32;
#[rustfmt::skip]
pub mod lgamma_tables;
pub mod prim;

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// std's float methods for `no_std` kernels, as rust-cuda's `GpuFloat`.
///
/// Each method's bound is the maximum error measured over the sweeps of
/// `cpu/tests/cuda_std.rs` (the emulator) and `cpu/tests/gpu.rs` (the device),
/// which assert it: for `f32`, in ulps of the exact result (0.5 is
/// correctly rounded; the `f64` algorithm rounded once can exceed it by
/// about `2^-28` ulp where its result straddles a midpoint), for `f64`,
/// the distance to glibc's result, whose own error is included (glibc's
/// `log10` is 2 ulps from ours at `1.1470571642230465`, where ours is the
/// correctly rounded one). "Exact" means bit-equal to std's result.
pub trait GpuFloat: Copy + PartialOrd + private::Sealed {
    /// Largest integer `<= self` (`cvt.rmi`). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn floor(self) -> Self;
    /// Smallest integer `>= self` (`cvt.rpi`). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn ceil(self) -> Self;
    /// Nearest integer, halves away from zero: `t = trunc(x)`, plus
    /// `±1` where `|x - t| >= 1/2` (`x - t` is exact). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn round(self) -> Self;
    /// Integer part (`cvt.rzi`). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn trunc(self) -> Self;
    /// `self - trunc(self)` (exact). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn fract(self) -> Self;
    /// Absolute value (the sign bit cleared). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn abs(self) -> Self;
    /// `1.0` with the sign of `self`; NaN for NaN. Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn signum(self) -> Self;
    /// `|self|` with the sign of `sign` (bits). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn copysign(self, sign: Self) -> Self;
    /// `self * a + b` rounded once (`fma.rn`). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// std's `div_euclid`: `trunc(self / rhs)`, one less (or more) where
    /// the remainder is negative; the remainder from an exact `fmod`
    /// ([`imp::fmod`], since LLVM's `frem` for PTX is not exact). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn div_euclid(self, rhs: Self) -> Self;
    /// std's `rem_euclid`: the exact `fmod`, plus `|rhs|` if negative.
    /// Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn rem_euclid(self, rhs: Self) -> Self;
    /// `self^n`, as [`powf`](Self::powf) of `n` (so no error growing with
    /// `n`, unlike repeated squaring). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn powi(self, n: i32) -> Self;
    /// `self^n` with C's special cases ([`imp::powf`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn powf(self, n: Self) -> Self;
    /// Square root (`sqrt.rn`). Exact.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn sqrt(self) -> Self;
    /// `e^self` ([`imp::exp`]; for `f32`, [`imp32::expf`] in `f32`
    /// arithmetic). Bound: f32 1 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn exp(self) -> Self;
    /// `2^self` ([`imp::exp2`]; for `f32`, [`imp32::exp2f`] in `f32`
    /// arithmetic). Bound: f32 1 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn exp2(self) -> Self;
    /// Natural logarithm ([`imp::ln`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn ln(self) -> Self;
    /// `ln(self) / ln(base)`, in double-doubles ([`imp::log`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn log(self, base: Self) -> Self;
    /// Base-2 logarithm ([`imp::log2`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn log2(self) -> Self;
    /// Base-10 logarithm ([`imp::log10`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn log10(self) -> Self;
    /// Cube root ([`imp::cbrt`]). Bound: f32 0.5 ulp, f64 1 ulp (bit-equal to
    /// glibc's over the sweep).
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn cbrt(self) -> Self;
    /// `sqrt(self^2 + other^2)` without overflow ([`imp::hypot`]). Bound: f32 0.5
    /// ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn hypot(self, other: Self) -> Self;
    /// Sine ([`imp::sin`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn sin(self) -> Self;
    /// Cosine ([`imp::cos`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn cos(self) -> Self;
    /// Tangent ([`imp::tan`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn tan(self) -> Self;
    /// Arcsine ([`imp::asin`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn asin(self) -> Self;
    /// Arccosine ([`imp::acos`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn acos(self) -> Self;
    /// Arctangent ([`imp::atan`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn atan(self) -> Self;
    /// Four-quadrant arctangent of `self` (`y`) and `other` (`x`)
    /// ([`imp::atan2`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn atan2(self, other: Self) -> Self;
    /// `(sin, cos)`. Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn sin_cos(self) -> (Self, Self);
    /// `e^self - 1` ([`imp::expm1`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn exp_m1(self) -> Self;
    /// `ln(1 + self)` ([`imp::ln_1p`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn ln_1p(self) -> Self;
    /// Hyperbolic sine ([`imp::sinh`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn sinh(self) -> Self;
    /// Hyperbolic cosine ([`imp::cosh`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn cosh(self) -> Self;
    /// Hyperbolic tangent ([`imp::tanh`]). Bound: f32 0.5 ulp, f64 3 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn tanh(self) -> Self;
    /// Inverse hyperbolic sine ([`imp::asinh`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn asinh(self) -> Self;
    /// Inverse hyperbolic cosine ([`imp::acosh`]). Bound: f32 0.5 ulp, f64 2 ulps.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn acosh(self) -> Self;
    /// Inverse hyperbolic tangent ([`imp::atanh`]). Bound: f32 0.5 ulp, f64 1 ulp.
    #[must_use = "method returns a new number and does not mutate the original value"]
    fn atanh(self) -> Self;
}

/// rust-cuda's `FloatExt`: the libdevice functions std lacks. Unlike
/// rust-cuda's (libdevice, GPU only), these run on the host too (the
/// emulator), computing the GPU's bits.
pub trait FloatExt: Sized + private::Sealed {
    /// `cos(pi self)`, the product `pi r` exact after an exact reduction
    /// ([`imp::sincospi`]). Bound: f32 0.5 ulp, f64 1 ulp.
    fn cospi(self) -> Self;
    /// The error function `2/sqrt(pi) ∫_0^x e^(-t^2) dt`: its Taylor
    /// series below 1/2, `1 - erfc` above ([`imp::erf`]). Bound: f32 0.5
    /// ulp, f64 1 ulp.
    fn error_function(self) -> Self;
    /// `1 - erf(self)`: `e^(-x^2) erfcx(x)` from 1/2, `x^2` a
    /// double-double ([`imp::erfc`]). Bound: f32 0.5 ulp, f64 3 ulps.
    fn complementary_error_function(self) -> Self;
    /// `e^(x^2) erfc(x)`: fitted polynomials from 1/2 ([`imp::erfcx`]).
    /// Bound: f32 0.5 ulp, f64 4 ulps.
    fn scaled_complementary_error_function(self) -> Self;
    /// The standard normal distribution function `erfc(-x/sqrt(2))/2`,
    /// the argument a double-double ([`imp::norm_cdf`]). Bound: f32 0.5
    /// ulp, f64 3 ulps.
    fn norm_cdf(self) -> Self;
    /// `x` with `erfc(x) = self`, for `self` in `[0, 2]`: Newton's method
    /// on `erf` near 1, on `ln erfc` below ([`imp::erfcinv`]). Bound: f32
    /// 0.5 ulp, f64 3 ulps.
    fn inv_complementary_error_function(self) -> Self;
    /// The inverse of [`norm_cdf`](Self::norm_cdf), `-sqrt(2)
    /// erfcinv(2 self)` ([`imp::inv_norm_cdf`]). Bound: f32 0.5 ulp, f64
    /// 3 ulps.
    fn inv_norm_cdf(self) -> Self;
    /// The gamma function: Stirling's series from 10 in double-doubles,
    /// the recurrence below, the reflection for `x < 0` ([`imp::gamma`]).
    /// Bound: f32 0.5 ulp, f64 6 ulps.
    fn gamma(self) -> Self;
    /// `ln |Gamma(self)|`: Taylor series around 2, Stirling's from 10, the
    /// reflection below -1/2 but for fits around its four zeros above -4
    /// (`-2.457...`, `-2.747...`, `-3.143...`, `-3.955...`) ([`imp::lgamma`]).
    /// Bound: f32 0.5 ulp, f64 5 ulps, relative to the result above -4
    /// (the zeros included); below -4 where `|ln |Gamma|| < 1` (its zeros
    /// there, two by each pole to -17, which the reflection's cancelling
    /// terms cannot resolve to a relative error), an absolute error of 3
    /// `f64::EPSILON` (f32: half an `f32::EPSILON`).
    fn log_gamma(self) -> Self;
    /// `(m, e)` with `self = m 2^e`, `|m|` in `[0.5, 1)`; `(self, 0)` for
    /// zero, infinities, NaN. Exact.
    fn frexp(self) -> (Self, i32);
    /// `floor(log2 |self|)`; `i32::MIN` for zero and NaN, `i32::MAX` for
    /// infinities. Exact.
    fn unbiased_exp(self) -> i32;
    /// `self 2^exp`, rounded once. Exact (correctly rounded).
    fn ldexp(self, exp: i32) -> Self;
    /// `ln(1 + self)` ([`imp::ln_1p`]). Bound: f32 0.5 ulp, f64 1 ulp.
    fn log1p(self) -> Self;
    /// `1 / cbrt(self)` ([`imp::rcbrt`]). Bound: f32 0.5 ulp, f64 1 ulp.
    fn rcbrt(self) -> Self;
    /// `self` clamped to `[+0, 1]`, NaN to `+0` (for `f32`, as CUDA's
    /// `__saturatef`); for `f64`, rust-cuda's `clamp(0.0, 1.0)` (NaN stays
    /// NaN, `-0` stays `-0`). Exact.
    fn saturate(self) -> Self;
    /// `self 2^exp` (`scalbn`), as [`ldexp`](Self::ldexp). Exact.
    fn scale_by_n(self, exp: i32) -> Self;
    /// `(sin(pi self), cos(pi self))` ([`imp::sincospi`]). Bound: f32 0.5 ulp, f64 1 ulp.
    fn sincospi(self) -> (Self, Self);
    /// `sin(pi self)` ([`imp::sincospi`]). Bound: f32 0.5 ulp, f64 1 ulp.
    fn sinpi(self) -> Self;
    /// The Bessel function of the first kind of order 0, `J_0(self)`
    /// ([`bessel::j0`]): fitted polynomials around each zero below 20, the
    /// modulus and phase above. Bound: f32 0.5 ulp, f64 2 ulps, relative to
    /// the result (the zeros included) but in `f64` from 20, where the
    /// result is below `2^-16 sqrt(2/(pi |self|))` (near a zero: the phase's
    /// rounding is then more than an ulp), an absolute error in units of
    /// `f64::EPSILON sqrt(2/(pi |self|))` instead, within the same bound.
    fn j0(self) -> Self;
    /// The Bessel function of the first kind of order 1, `J_1(self)`
    /// ([`bessel::j1`]), odd: as [`j0`](Self::j0). Bound: f32 0.5 ulp, f64 1
    /// ulp, relative to the result (the zeros included) but in `f64` from 20, where the
    /// result is below `2^-16 sqrt(2/(pi |self|))` (near a zero: the phase's
    /// rounding is then more than an ulp), an absolute error in units of
    /// `f64::EPSILON sqrt(2/(pi |self|))` instead, within the same bound.
    fn j1(self) -> Self;
    /// The Bessel function of the first kind of order `order`,
    /// `J_order(self)` ([`bessel::jn`]): recurrences in double-doubles from
    /// `J0`, `J1` (forward from `|self| >= |order|`, Miller's backward below),
    /// the power series for `self^2 < |order| + 1`; time linear in `|order|`.
    /// Bound: f32 0.5 ulp (relative); f64 1 ulp relative to the result
    /// where it is at least `s = sqrt(2/(pi max(|self|, |order|)))` (the
    /// envelope), below it (near the zeros, which the recurrence does not
    /// resolve to a relative error) absolute, in units of `f64::EPSILON s`.
    fn jn(self, order: i32) -> Self;
    /// The Bessel function of the second kind of order 0, `Y_0(self)`
    /// ([`bessel::y0`]): NaN below 0, `-inf` at 0; the power series
    /// around the logarithm below 0.625, then as [`j0`](Self::j0). Bound: f32
    /// 0.5 ulp, f64 2 ulps, relative to the result (the zeros included) but
    /// in `f64` from 20, where the result is below `2^-16 sqrt(2/(pi |self|))` (near a zero: the phase's
    /// rounding is then more than an ulp), an absolute error in units of
    /// `f64::EPSILON sqrt(2/(pi |self|))` instead, within the same bound.
    fn y0(self) -> Self;
    /// The Bessel function of the second kind of order 1, `Y_1(self)`
    /// ([`bessel::y1`]): NaN below 0, `-inf` at 0; the power series
    /// around the logarithm below 1, then as [`j0`](Self::j0). Bound: f32
    /// 0.5 ulp, f64 1 ulp, relative to the result (the zeros included) but
    /// in `f64` from 20, where the result is below `2^-16 sqrt(2/(pi |self|))` (near a zero: the phase's
    /// rounding is then more than an ulp), an absolute error in units of
    /// `f64::EPSILON sqrt(2/(pi |self|))` instead, within the same bound.
    fn y1(self) -> Self;
    /// The Bessel function of the second kind of order `order`,
    /// `Y_order(self)` ([`bessel::yn`]): the forward recurrence in
    /// double-doubles from `Y0`, `Y1`; time linear in `|order|`. Bound: f32
    /// 0.5 ulp (relative); f64 1 ulp relative to the result where it is at
    /// least `s = sqrt(2/(pi max(self, |order|)))`, below it absolute, in units
    /// of `f64::EPSILON s`, as [`jn`](Self::jn).
    fn yn(self, order: i32) -> Self;
}

impl GpuFloat for f64 {
    #[inline]
    fn floor(self) -> f64 {
        prim::floor(self)
    }
    #[inline]
    fn ceil(self) -> f64 {
        prim::ceil(self)
    }
    #[inline]
    fn round(self) -> f64 {
        let t = prim::trunc(self);
        if imp::abs(self - t) >= 0.5 { t + imp::copysign(1.0, self) } else { t }
    }
    #[inline]
    fn trunc(self) -> f64 {
        prim::trunc(self)
    }
    #[inline]
    fn fract(self) -> f64 {
        self - prim::trunc(self)
    }
    #[inline]
    fn abs(self) -> f64 {
        imp::abs(self)
    }
    #[inline]
    fn signum(self) -> f64 {
        if self.is_nan() { f64::NAN } else { imp::copysign(1.0, self) }
    }
    #[inline]
    fn copysign(self, sign: f64) -> f64 {
        imp::copysign(self, sign)
    }
    #[inline]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        prim::fma(self, a, b)
    }
    #[inline]
    fn div_euclid(self, rhs: f64) -> f64 {
        let q = prim::trunc(self / rhs);
        if imp::fmod(self, rhs) < 0.0 {
            return if rhs > 0.0 { q - 1.0 } else { q + 1.0 };
        }
        q
    }
    #[inline]
    fn rem_euclid(self, rhs: f64) -> f64 {
        let r = imp::fmod(self, rhs);
        if r < 0.0 { r + imp::abs(rhs) } else { r }
    }
    #[inline]
    fn powi(self, n: i32) -> f64 {
        imp::powf(self, n as f64)
    }
    #[inline]
    fn powf(self, n: f64) -> f64 {
        imp::powf(self, n)
    }
    #[inline]
    fn sqrt(self) -> f64 {
        prim::sqrt(self)
    }
    #[inline]
    fn exp(self) -> f64 {
        imp::exp(self)
    }
    #[inline]
    fn exp2(self) -> f64 {
        imp::exp2(self)
    }
    #[inline]
    fn ln(self) -> f64 {
        imp::ln(self)
    }
    #[inline]
    fn log(self, base: f64) -> f64 {
        imp::log(self, base)
    }
    #[inline]
    fn log2(self) -> f64 {
        imp::log2(self)
    }
    #[inline]
    fn log10(self) -> f64 {
        imp::log10(self)
    }
    #[inline]
    fn cbrt(self) -> f64 {
        imp::cbrt(self)
    }
    #[inline]
    fn hypot(self, other: f64) -> f64 {
        imp::hypot(self, other)
    }
    #[inline]
    fn sin(self) -> f64 {
        imp::sin(self)
    }
    #[inline]
    fn cos(self) -> f64 {
        imp::cos(self)
    }
    #[inline]
    fn tan(self) -> f64 {
        imp::tan(self)
    }
    #[inline]
    fn asin(self) -> f64 {
        imp::asin(self)
    }
    #[inline]
    fn acos(self) -> f64 {
        imp::acos(self)
    }
    #[inline]
    fn atan(self) -> f64 {
        imp::atan(self)
    }
    #[inline]
    fn atan2(self, other: f64) -> f64 {
        imp::atan2(self, other)
    }
    #[inline]
    fn sin_cos(self) -> (f64, f64) {
        imp::sin_cos(self)
    }
    #[inline]
    fn exp_m1(self) -> f64 {
        imp::expm1(self)
    }
    #[inline]
    fn ln_1p(self) -> f64 {
        imp::ln_1p(self)
    }
    #[inline]
    fn sinh(self) -> f64 {
        imp::sinh(self)
    }
    #[inline]
    fn cosh(self) -> f64 {
        imp::cosh(self)
    }
    #[inline]
    fn tanh(self) -> f64 {
        imp::tanh(self)
    }
    #[inline]
    fn asinh(self) -> f64 {
        imp::asinh(self)
    }
    #[inline]
    fn acosh(self) -> f64 {
        imp::acosh(self)
    }
    #[inline]
    fn atanh(self) -> f64 {
        imp::atanh(self)
    }
}

/// An `f32` method evaluating the `f64` algorithm and rounding once.
macro_rules! via_f64 {
    ($($name:ident($($arg:ident),*) => $f:path;)*) => {
        $(
            #[inline]
            fn $name(self $(, $arg: f32)*) -> f32 {
                $f(self as f64 $(, $arg as f64)*) as f32
            }
        )*
    };
}

impl GpuFloat for f32 {
    #[inline]
    fn floor(self) -> f32 {
        prim::floorf(self)
    }
    #[inline]
    fn ceil(self) -> f32 {
        prim::ceilf(self)
    }
    #[inline]
    fn round(self) -> f32 {
        let t = prim::truncf(self);
        if GpuFloat::abs(self - t) >= 0.5 { t + GpuFloat::copysign(1.0, self) } else { t }
    }
    #[inline]
    fn trunc(self) -> f32 {
        prim::truncf(self)
    }
    #[inline]
    fn fract(self) -> f32 {
        self - prim::truncf(self)
    }
    #[inline]
    fn abs(self) -> f32 {
        f32::from_bits(self.to_bits() & !(1 << 31))
    }
    #[inline]
    fn signum(self) -> f32 {
        if self.is_nan() { f32::NAN } else { GpuFloat::copysign(1.0, self) }
    }
    #[inline]
    fn copysign(self, sign: f32) -> f32 {
        f32::from_bits(self.to_bits() & !(1 << 31) | sign.to_bits() & (1 << 31))
    }
    #[inline]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        prim::fmaf(self, a, b)
    }
    #[inline]
    fn div_euclid(self, rhs: f32) -> f32 {
        let q = prim::truncf(self / rhs);
        // The f64 remainder of two f32 values is exact, and an f32.
        if imp::fmod(self as f64, rhs as f64) < 0.0 {
            return if rhs > 0.0 { q - 1.0 } else { q + 1.0 };
        }
        q
    }
    #[inline]
    fn rem_euclid(self, rhs: f32) -> f32 {
        let r = imp::fmod(self as f64, rhs as f64) as f32;
        if r < 0.0 { r + GpuFloat::abs(rhs) } else { r }
    }
    #[inline]
    fn powi(self, n: i32) -> f32 {
        imp::powf(self as f64, n as f64) as f32
    }
    #[inline]
    fn sqrt(self) -> f32 {
        prim::sqrtf(self)
    }
    #[inline]
    fn sin_cos(self) -> (f32, f32) {
        let (s, c) = imp::sin_cos(self as f64);
        (s as f32, c as f32)
    }
    #[inline]
    fn exp(self) -> f32 {
        imp32::expf(self)
    }
    #[inline]
    fn exp2(self) -> f32 {
        imp32::exp2f(self)
    }
    via_f64! {
        powf(n) => imp::powf;
        ln() => imp::ln;
        log(base) => imp::log;
        log2() => imp::log2;
        log10() => imp::log10;
        cbrt() => imp::cbrt;
        hypot(other) => imp::hypot;
        sin() => imp::sin;
        cos() => imp::cos;
        tan() => imp::tan;
        asin() => imp::asin;
        acos() => imp::acos;
        atan() => imp::atan;
        atan2(other) => imp::atan2;
        exp_m1() => imp::expm1;
        ln_1p() => imp::ln_1p;
        sinh() => imp::sinh;
        cosh() => imp::cosh;
        tanh() => imp::tanh;
        asinh() => imp::asinh;
        acosh() => imp::acosh;
        atanh() => imp::atanh;
    }
}

impl FloatExt for f64 {
    #[inline]
    fn error_function(self) -> f64 {
        imp::erf(self)
    }
    #[inline]
    fn complementary_error_function(self) -> f64 {
        imp::erfc(self)
    }
    #[inline]
    fn scaled_complementary_error_function(self) -> f64 {
        imp::erfcx(self)
    }
    #[inline]
    fn norm_cdf(self) -> f64 {
        imp::norm_cdf(self)
    }
    #[inline]
    fn inv_complementary_error_function(self) -> f64 {
        imp::erfcinv(self)
    }
    #[inline]
    fn inv_norm_cdf(self) -> f64 {
        imp::inv_norm_cdf(self)
    }
    #[inline]
    fn gamma(self) -> f64 {
        imp::gamma(self)
    }
    #[inline]
    fn log_gamma(self) -> f64 {
        imp::lgamma(self)
    }
    #[inline]
    fn cospi(self) -> f64 {
        imp::cospi(self)
    }
    #[inline]
    fn frexp(self) -> (f64, i32) {
        imp::frexp(self)
    }
    #[inline]
    fn unbiased_exp(self) -> i32 {
        imp::ilogb(self)
    }
    #[inline]
    fn ldexp(self, exp: i32) -> f64 {
        imp::ldexp(self, exp)
    }
    #[inline]
    fn log1p(self) -> f64 {
        imp::ln_1p(self)
    }
    #[inline]
    fn rcbrt(self) -> f64 {
        imp::rcbrt(self)
    }
    #[inline]
    fn saturate(self) -> f64 {
        self.clamp(0.0, 1.0)
    }
    #[inline]
    fn scale_by_n(self, exp: i32) -> f64 {
        imp::ldexp(self, exp)
    }
    #[inline]
    fn sincospi(self) -> (f64, f64) {
        imp::sincospi(self)
    }
    #[inline]
    fn sinpi(self) -> f64 {
        imp::sinpi(self)
    }
    #[inline]
    fn j0(self) -> f64 {
        bessel::j0(self)
    }
    #[inline]
    fn j1(self) -> f64 {
        bessel::j1(self)
    }
    #[inline]
    fn jn(self, order: i32) -> f64 {
        bessel::jn(order, self)
    }
    #[inline]
    fn y0(self) -> f64 {
        bessel::y0(self)
    }
    #[inline]
    fn y1(self) -> f64 {
        bessel::y1(self)
    }
    #[inline]
    fn yn(self, order: i32) -> f64 {
        bessel::yn(order, self)
    }
}

impl FloatExt for f32 {
    via_f64! {
        cospi() => imp::cospi;
        log1p() => imp::ln_1p;
        rcbrt() => imp::rcbrt;
        sinpi() => imp::sinpi;
        error_function() => imp::erf;
        complementary_error_function() => imp::erfc;
        scaled_complementary_error_function() => imp::erfcx;
        norm_cdf() => imp::norm_cdf;
        inv_complementary_error_function() => imp::erfcinv;
        inv_norm_cdf() => imp::inv_norm_cdf;
        gamma() => imp::gamma;
        log_gamma() => imp::lgamma;
        j0() => bessel::j0;
        j1() => bessel::j1;
        y0() => bessel::y0;
        y1() => bessel::y1;
    }
    #[inline]
    fn jn(self, order: i32) -> f32 {
        bessel::jn(order, self as f64) as f32
    }
    #[inline]
    fn yn(self, order: i32) -> f32 {
        bessel::yn(order, self as f64) as f32
    }
    #[inline]
    fn frexp(self) -> (f32, i32) {
        let (m, e) = imp::frexp(self as f64);
        (m as f32, e)
    }
    #[inline]
    fn unbiased_exp(self) -> i32 {
        imp::ilogb(self as f64)
    }
    #[inline]
    fn ldexp(self, exp: i32) -> f32 {
        // Exact in f64 for every f32 and exponent that leaves a result
        // near f32's range, so the one rounding is the conversion's.
        imp::ldexp(self as f64, exp) as f32
    }
    #[inline]
    fn saturate(self) -> f32 {
        // NaN and -0 fail `> 0` and give +0.
        if self > 1.0 {
            1.0
        } else if self > 0.0 {
            self
        } else {
            0.0
        }
    }
    #[inline]
    fn scale_by_n(self, exp: i32) -> f32 {
        FloatExt::ldexp(self, exp)
    }
    #[inline]
    fn sincospi(self) -> (f32, f32) {
        let (s, c) = imp::sincospi(self as f64);
        (s as f32, c as f32)
    }
}
