//! The `f64` algorithms behind [`GpuFloat`](super::GpuFloat) and
//! [`FloatExt`](super::FloatExt), written once for the device and the
//! emulator from the correctly rounded instructions of [`prim`](super::prim).
//!
//! The common tools:
//!
//! - double-double arithmetic (a value as an unevaluated sum `hi + lo`,
//!   about 106 bits), through the exact transformations `two_sum`
//!   (`a + b = s + e` exactly) and `two_prod` (`a * b = p + e` exactly,
//!   `e = fma(a, b, -p)`): reductions and the last step of each function
//!   are carried in it, so that only the final `hi + lo` rounds;
//! - Taylor polynomials (the coefficients `1/n!`, `1/(2j+1)`, exact
//!   rationals rounded once; no fitted coefficients): each reduced range
//!   is small enough that the first omitted term is below `2^-56` of the
//!   result, which the degrees below say;
//! - exact scaling by powers of two ([`ldexp`]), one rounding at most.

use super::consts::*;
use super::prim::{fma, rint, sqrt, trunc};

// The functions, a file per family (each uses what is here).
mod erf;
mod explog;
mod gamma;
mod hyperbolic;
mod trig;

pub use erf::*;
pub use explog::*;
pub use gamma::*;
pub use hyperbolic::*;
pub use trig::*;

// ---------------------------------------------------------------------
// Double-double tools.

/// `a + b = s + e` exactly (Knuth's two-sum, six operations, any order of
/// magnitude).
#[inline(always)]
pub(crate) fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b = s + e` exactly, given `|a| >= |b|` (or `a == 0`).
#[inline(always)]
pub(crate) fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a * b = p + e` exactly (barring underflow): `e = fma(a, b, -p)`.
#[inline(always)]
pub(crate) fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    (p, fma(a, b, -p))
}

/// Double-double sum, relative error about `2^-104`.
#[inline(always)]
pub(crate) fn dd_add(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let (s, e) = two_sum(a.0, b.0);
    fast_two_sum(s, e + a.1 + b.1)
}

/// Double-double product (the `lo * lo` term dropped).
#[inline(always)]
pub(crate) fn dd_mul(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let (p, e) = two_prod(a.0, b.0);
    fast_two_sum(p, fma(a.0, b.1, fma(a.1, b.0, e)))
}

/// Double-double quotient: `q = a/b` rounded, then one correction from the
/// exact residual `a - q b` (Sterbenz: `a.0 - q b.0` is exact).
#[inline(always)]
pub(crate) fn dd_div(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let q = a.0 / b.0;
    let (p, pe) = two_prod(q, b.0);
    let r = ((a.0 - p) - pe + a.1) - q * b.1;
    fast_two_sum(q, r / b.0)
}

// ---------------------------------------------------------------------
// Bits.

const MANT_MASK: u64 = (1 << 52) - 1;
const TWO54: f64 = 18014398509481984.0;

/// `|x|` with the sign of `s` (bits).
#[inline(always)]
pub fn copysign(x: f64, s: f64) -> f64 {
    f64::from_bits(x.to_bits() & !(1 << 63) | s.to_bits() & (1 << 63))
}

/// `|x|` (bits).
#[inline(always)]
pub fn abs(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & !(1 << 63))
}

/// `(m, e)` with `|x| = m * 2^e`, `m` in `[1, 2)`, for finite nonzero `x`
/// (subnormals normalized exactly through a scaling by `2^54`).
#[inline(always)]
fn split_exp(x: f64) -> (f64, i32) {
    let mut bits = abs(x).to_bits();
    let mut e = (bits >> 52) as i32 - 1023;
    if e == -1023 {
        bits = (abs(x) * TWO54).to_bits();
        e = (bits >> 52) as i32 - 1023 - 54;
    }
    (f64::from_bits(bits & MANT_MASK | 1023 << 52), e)
}

/// `x * 2^n` rounded once (`ldexp`/`scalbn`): the exponent field is set
/// directly where the result is normal; where it is subnormal, the
/// exponent is set 64 higher and one multiplication by `2^-64` rounds.
pub fn ldexp(x: f64, n: i32) -> f64 {
    if x == 0.0 || !x.is_finite() || n == 0 {
        return x;
    }
    let (m, e) = split_exp(x);
    // The biased exponent of the result, `m` in [1, 2).
    let biased = e + n.clamp(-4000, 4000) + 1023;
    let sign = x.to_bits() & (1 << 63);
    if biased >= 0x7ff {
        return copysign(f64::INFINITY, x);
    }
    if biased >= 1 {
        return f64::from_bits(sign | (biased as u64) << 52 | m.to_bits() & MANT_MASK);
    }
    if biased < -53 {
        return copysign(0.0, x);
    }
    let raised = f64::from_bits(sign | ((biased + 64) as u64) << 52 | m.to_bits() & MANT_MASK);
    raised * f64::from_bits((1023 - 64) << 52)
}

/// `(m, e)` with `x = m 2^e`, `|m|` in `[0.5, 1)`; `(x, 0)` for zero,
/// infinities and NaN.
pub fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (m, e) = split_exp(x);
    (copysign(m * 0.5, x), e + 1)
}

/// The unbiased exponent, `floor(log2 |x|)`; `i32::MIN` for zero and NaN,
/// `i32::MAX` for infinities (glibc's `ilogb` on x86-64).
pub fn ilogb(x: f64) -> i32 {
    if x == 0.0 || x.is_nan() {
        i32::MIN
    } else if x.is_infinite() {
        i32::MAX
    } else {
        split_exp(x).1
    }
}

/// `x - trunc(x / y) * y` exactly (C's `fmod`, Rust's `%`): the
/// significands' long division, 11 bits per step in integers. PTX has no
/// `rem` for floats, and LLVM's expansion of `frem` (`x - y trunc(x/y)`)
/// is wrong for large quotients, so this is the division done by hand.
pub fn fmod(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() || x.is_infinite() || y == 0.0 {
        return f64::NAN;
    }
    if y.is_infinite() || abs(x) < abs(y) {
        return x;
    }
    // |v| = m 2^e with m an integer below 2^53.
    let parts = |v: f64| {
        let bits = abs(v).to_bits();
        let biased = (bits >> 52) as i32;
        if biased == 0 { (bits, -1074) } else { (bits & MANT_MASK | 1 << 52, biased - 1075) }
    };
    let ((mx, ex), (my, ey)) = (parts(x), parts(y));
    let mut r = mx % my;
    let mut d = ex - ey;
    while d > 0 {
        let s = d.min(11);
        r = (r << s) % my;
        d -= s;
    }
    copysign(ldexp(r as f64, ey), x)
}
