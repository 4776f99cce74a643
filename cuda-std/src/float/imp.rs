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

// ---------------------------------------------------------------------
// Exponentials.

/// `exp(hi + lo) = 2^k (1 + qh + ql)`, for `|hi| <= 746` and `|lo|` below
/// an ulp of `hi`.
///
/// `k = rint(hi log2 e)`; `r = hi - k ln2` with `ln2` in two parts, the
/// first of 42 bits so that `k LN2_HI` is exact and `hi - k LN2_HI` too
/// (both are multiples of `2^-54` below `2^-1` apart), the second product
/// carried as a double-double: `r = rh + rl` within `2^-100`, `|rh| <=
/// 0.3466`. Then `expm1(rh) = rh + rh^2 c(rh)`, `c` the Taylor polynomial
/// of `(e^r - 1 - r)/r^2` to degree 11 (so `expm1` to degree 13; the next
/// term, `rh^14/14!`, is below `4e-18`), Horner with `fma`, `rh^2` exact
/// (`two_prod`); and `expm1(rh + rl) = expm1(rh) + rl (1 + expm1(rh))`.
/// Returned unevaluated: `qh = rh` exactly, `ql` the rest (below `0.6
/// |q|`), so that callers round once.
#[inline(always)]
fn exp_reduce(hi: f64, lo: f64) -> (i32, f64, f64) {
    let k = rint(hi * LOG2E_HI);
    let r1 = fma(-k, LN2_HI, hi);
    let (p, pe) = two_prod(k, LN2_LO);
    let (rh, e) = two_sum(r1, -p);
    let rl = (e - pe) + lo;
    let mut c = INV_FACT[13];
    let mut i = 12;
    while i >= 2 {
        c = fma(c, rh, INV_FACT[i]);
        i -= 1;
    }
    let (z, ze) = two_prod(rh, rh);
    let tail = fma(z, c, ze * c);
    (k as i32, rh, fma(rl, 1.0 + (rh + tail), tail))
}

/// `2^k (1 + qh + ql)`: `1 + qh` exact (`two_sum`), one rounding of the
/// sum, and [`ldexp`] (a second rounding only where the result is
/// subnormal).
#[inline(always)]
fn exp_finish(k: i32, qh: f64, ql: f64) -> f64 {
    let (s, e) = two_sum(1.0, qh);
    ldexp(s + (e + ql), k)
}

/// `e^x`: `exp_reduce`, then `exp_finish`.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 710.0 {
        return f64::INFINITY;
    }
    if x < -746.0 {
        return 0.0;
    }
    let (k, qh, ql) = exp_reduce(x, 0.0);
    exp_finish(k, qh, ql)
}

/// `2^x`: `k = rint(x)`, `r = x - k` exactly, `2^r = e^(r ln2)` with
/// `r ln2` a double-double (`two_prod` with `ln2` in two parts).
pub fn exp2(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 1025.0 {
        return f64::INFINITY;
    }
    if x < -1076.0 {
        return 0.0;
    }
    let k = rint(x);
    let r = x - k;
    let (p, pe) = two_prod(r, LN2D_HI);
    let (j, qh, ql) = exp_reduce(p, fma(r, LN2D_LO, pe));
    exp_finish(k as i32 + j, qh, ql)
}

/// `e^x - 1`: for `k = 0` (`|x| <= ln2/2`) the reduction is exact and
/// `qh + ql` is the answer; otherwise `(2^k - 1) + 2^k qh` exactly
/// (`2^k - 1` is exact for `-53 <= k <= 53`, `two_sum`), plus `2^k ql`,
/// rounded once; `2^k (1 + q)` where the `-1` is below the result's last
/// bits.
pub fn expm1(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        return x;
    }
    if x > 710.0 {
        return f64::INFINITY;
    }
    if x < -40.0 {
        return -1.0;
    }
    let (k, qh, ql) = exp_reduce(x, 0.0);
    if k == 0 {
        return qh + ql;
    }
    if k > 60 {
        return exp_finish(k, qh, ql);
    }
    let t = ldexp(1.0, k);
    let (s, e) = two_sum(t - 1.0, t * qh);
    s + fma(t, ql, e)
}

// ---------------------------------------------------------------------
// Logarithms.

/// `1/(2j+1)`: `(-1)^j` times these are the coefficients of `atan(u)/u`
/// in `u^2`.
const ODD_INV: [f64; 12] = {
    let mut c = [0.0; 12];
    let mut j = 0;
    while j < 12 {
        c[j] = 1.0 / (2 * j + 1) as f64;
        j += 1;
    }
    c
};

/// `(-1)^(k+1)/k`, the coefficients of `ln(1 + u)` in `u`.
const LN1P_C: [f64; 10] = {
    let mut c = [0.0; 10];
    let mut k = 1;
    while k < 10 {
        c[k] = if k % 2 == 1 { 1.0 / k as f64 } else { -1.0 / k as f64 };
        k += 1;
    }
    c
};

/// `ln(1 + f + fl) + e ln2` as a double-double, for `1 + f` in
/// `[sqrt(1/2), sqrt(2)]`.
///
/// `v = 1 + f + fl` (a double-double, `two_sum`); `c = 1 + j/128` the
/// nearest point of a grid, with `inv ≈ 1/c` and `-ln(inv)` from a table
/// (double-doubles, generated); `u = v inv - 1` as a double-double
/// (`two_prod`; `|u| <= 2^-7.5`). Then `ln v = -ln(inv) + ln(1 + u)`, with
/// `ln(1 + u) = u - u^2/2 + u^3 (1/3 - u/4 + ... + u^6/9)` (the next
/// term is below `2^-60` of `u`): `u - u^2/2` carried in double-doubles,
/// the rest (below `2^-22` of the result) rounded. Every rounding is then
/// below `2^-100` of the result but the last, which callers make: `ln`
/// is within half an ulp and a hair, and `pow`, which multiplies this
/// error by `|y ln x|` (up to 745), stays within an ulp. At `j = 0` the
/// table gives `inv = 1` exactly, so that `ln(1 + tiny)` loses nothing.
fn ln_core(f: f64, fl: f64, e: i32) -> (f64, f64) {
    let (vh, vl) = two_sum(1.0, f);
    let vl = vl + fl;
    let j = rint((vh - 1.0) * 128.0) as i32;
    let (inv, th, tl) = LN_TABLE[(j + 38) as usize];
    let (p, pe) = two_prod(vh, inv);
    let (uh, ul) = fast_two_sum(p - 1.0, fma(vl, inv, pe));
    let mut q = LN1P_C[9];
    let mut k = 8;
    while k >= 3 {
        q = fma(q, uh, LN1P_C[k]);
        k -= 1;
    }
    let (a, ae) = two_prod(uh, uh);
    let (s, se) = two_sum(uh, -0.5 * a);
    let lo = se - 0.5 * ae + fma(uh * a, q, ul * (1.0 - uh));
    let l = fast_two_sum(s, lo);
    let l = if j == 0 { l } else { dd_add((th, tl), l) };
    if e == 0 {
        return l;
    }
    let ef = e as f64;
    let (a, ae) = two_prod(ef, LN2D_HI);
    dd_add((a, fma(ef, LN2D_LO, ae)), l)
}

/// `x = 2^e (1 + f)` with `1 + f` in `[sqrt(1/2), sqrt(2)]`; `f = m - 1`
/// is exact (Sterbenz).
#[inline(always)]
fn ln_split(x: f64) -> (f64, i32) {
    let (mut m, mut e) = split_exp(x);
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    (m - 1.0, e)
}

/// `ln x` as a double-double, for finite `x > 0`.
pub(crate) fn ln_dd(x: f64) -> (f64, f64) {
    let (f, e) = ln_split(x);
    ln_core(f, 0.0, e)
}

/// `ln(1 + uh + ul)` as a double-double, for `uh > -1` finite: directly
/// for `uh` in `[-0.29, 0.41]`, else through the exact sum `1 + uh + ul`
/// split into `2^e (1 + f + fl)`.
fn ln1p_dd(uh: f64, ul: f64) -> (f64, f64) {
    if uh > -0.29 && uh < 0.41 {
        return ln_core(uh, ul, 0);
    }
    let (s, se) = two_sum(1.0, uh);
    let (f, e) = ln_split(s);
    let scale = ldexp(1.0, -e);
    let (f, fl) = two_sum(f, (se + ul) * scale);
    ln_core(f, fl, e)
}

/// Special values of the logarithms: `Some(result)` for `x <= 0`,
/// infinities and NaN.
#[inline(always)]
fn ln_special(x: f64) -> Option<f64> {
    if x.is_nan() || x == f64::INFINITY {
        Some(x)
    } else if x == 0.0 {
        Some(f64::NEG_INFINITY)
    } else if x < 0.0 {
        Some(f64::NAN)
    } else {
        None
    }
}

/// `ln x`: `ln_dd` rounded once.
pub fn ln(x: f64) -> f64 {
    if let Some(r) = ln_special(x) {
        return r;
    }
    let (h, l) = ln_dd(x);
    h + l
}

/// `log2 x = e + ln(1 + f) log2(e)`, the product a double-double.
pub fn log2(x: f64) -> f64 {
    if let Some(r) = ln_special(x) {
        return r;
    }
    let (f, e) = ln_split(x);
    let m = dd_mul(ln_core(f, 0.0, 0), (LOG2E_HI, LOG2E_LO));
    let (h, l) = dd_add((e as f64, 0.0), m);
    h + l
}

/// `log10 x = e log10(2) + ln(1 + f) log10(e)`, in double-doubles.
pub fn log10(x: f64) -> f64 {
    if let Some(r) = ln_special(x) {
        return r;
    }
    let (f, e) = ln_split(x);
    let m = dd_mul(ln_core(f, 0.0, 0), (LOG10E_HI, LOG10E_LO));
    let (h, l) = dd_add(dd_mul((e as f64, 0.0), (LOG10_2_HI, LOG10_2_LO)), m);
    h + l
}

/// `ln x / ln base`, both logarithms and the quotient double-doubles
/// (specials as `ln x / ln base` in `f64`).
pub fn log(x: f64, base: f64) -> f64 {
    if ln_special(x).is_some() || ln_special(base).is_some() || base == 1.0 {
        return ln(x) / ln(base);
    }
    let (h, l) = dd_div(ln_dd(x), ln_dd(base));
    h + l
}

/// `ln(1 + x)`: `ln1p_dd` rounded once.
pub fn ln_1p(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY || x == 0.0 {
        return x;
    }
    if x == -1.0 {
        return f64::NEG_INFINITY;
    }
    if x < -1.0 {
        return f64::NAN;
    }
    let (h, l) = ln1p_dd(x, 0.0);
    h + l
}

/// Whether a finite `y` is an odd integer.
#[inline(always)]
fn is_odd_integer(y: f64) -> bool {
    abs(y) < 9007199254740992.0 && trunc(y) == y && trunc(y * 0.5) != y * 0.5
}

/// `x^y` as C's `pow` (the special cases of C99 F.9.4.4), else `e^(y ln
/// |x|)`: `ln |x|` a double-double (`ln_dd`, relative error below
/// `2^-100`), `y ln |x|` a double-double (`two_prod`), and `exp_reduce`
/// of it. The error of `ln` is multiplied by `|y ln x|` (up to 745), which
/// the table-driven `ln_core` keeps below `2^-90`.
pub fn powf(x: f64, y: f64) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let odd = is_odd_integer(y);
    if x == 0.0 {
        return match (y < 0.0, odd) {
            (true, true) => copysign(f64::INFINITY, x),
            (true, false) => f64::INFINITY,
            (false, true) => x,
            (false, false) => 0.0,
        };
    }
    if y.is_infinite() {
        return if abs(x) == 1.0 {
            1.0
        } else if (abs(x) < 1.0) == (y < 0.0) {
            f64::INFINITY
        } else {
            0.0
        };
    }
    if x.is_infinite() {
        let r = if y < 0.0 { 0.0 } else { f64::INFINITY };
        return if x < 0.0 && odd { -r } else { r };
    }
    if x < 0.0 && trunc(y) != y {
        return f64::NAN;
    }
    let sign = if x < 0.0 && odd { -1.0 } else { 1.0 };
    let (lh, ll) = ln_dd(abs(x));
    let (p, pe) = two_prod(y, lh);
    if p > 710.0 {
        return sign * f64::INFINITY;
    }
    if p < -746.0 {
        return sign * 0.0;
    }
    let (k, qh, ql) = exp_reduce(p, fma(y, ll, pe));
    sign * exp_finish(k, qh, ql)
}

// ---------------------------------------------------------------------
// Roots.

/// `cbrt(m)` for `m` in `[1, 8)` as a double-double: a linear first
/// guess, five Newton steps `y = (2y + m/y^2)/3` (quadratic, from 10% to
/// below `2^-52`), then one correction from the residual `m - y^3`
/// computed exactly (`two_prod` twice).
fn cbrt_core(m: f64) -> (f64, f64) {
    let mut y = 0.7 + 0.17 * m;
    let mut i = 0;
    while i < 5 {
        y = (2.0 * y + m / (y * y)) * (1.0 / 3.0);
        i += 1;
    }
    let (a, ae) = two_prod(y, y);
    let (b, be) = two_prod(y, a);
    let residual = (m - b) - fma(y, ae, be);
    (y, residual / (3.0 * a))
}

/// `x = m 2^(3q)` with `m` in `[1, 8)`, for finite nonzero `x`.
fn cube_split(x: f64) -> (f64, i32) {
    let (m, e) = split_exp(x);
    let q = e.div_euclid(3);
    (ldexp(m, e - 3 * q), q)
}

/// The cube root: `cube_split`, `cbrt_core`, `2^q` exactly.
pub fn cbrt(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let (m, q) = cube_split(x);
    let (y, dy) = cbrt_core(m);
    copysign(ldexp(y + dy, q), x)
}

/// `1/cbrt(x)`: `z = 1/y` and one correction, `1/(y + dy) = z (1 + e1 -
/// z dy)` with `e1 = 1 - z y` exact (`fma`).
pub fn rcbrt(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x == 0.0 {
        return copysign(f64::INFINITY, x);
    }
    if x.is_infinite() {
        return copysign(0.0, x);
    }
    let (m, q) = cube_split(x);
    let (y, dy) = cbrt_core(m);
    let z = 1.0 / y;
    let e1 = fma(-z, y, 1.0);
    copysign(ldexp(fma(z, e1 - z * dy, z), -q), x)
}

/// `sqrt(x^2 + y^2)` without overflow or underflow: both scaled by the
/// larger's power of two (exact), the squares and their sum a
/// double-double, the square root corrected once from its exact residual
/// (`fma`). Infinity wins over NaN, as in C.
pub fn hypot(x: f64, y: f64) -> f64 {
    if x.is_infinite() || y.is_infinite() {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let (a, b) = if abs(x) >= abs(y) { (abs(x), abs(y)) } else { (abs(y), abs(x)) };
    if b == 0.0 {
        return a;
    }
    let e = split_exp(a).1;
    let (a, b) = (ldexp(a, -e), ldexp(b, -e));
    let (s, se) = two_prod(a, a);
    let (t, te) = two_prod(b, b);
    let (h, he) = two_sum(s, t);
    let lo = he + se + te;
    let r = sqrt(h);
    let r = r + (fma(-r, r, h) + lo) / (2.0 * r);
    ldexp(r, e)
}

// ---------------------------------------------------------------------
// Trigonometry.

/// `(-1)^j/(2j+1)!`, the coefficients of `sin(r)/r` in `r^2`.
const SIN_C: [f64; 14] = {
    let mut c = [0.0; 14];
    let mut j = 0;
    while j < 14 {
        c[j] = if j % 2 == 0 { INV_FACT[2 * j + 1] } else { -INV_FACT[2 * j + 1] };
        j += 1;
    }
    c
};

/// `(-1)^j/(2j)!`, the coefficients of `cos(r)` in `r^2`.
const COS_C: [f64; 11] = {
    let mut c = [0.0; 11];
    let mut j = 0;
    while j < 11 {
        c[j] = if j % 2 == 0 { INV_FACT[2 * j] } else { -INV_FACT[2 * j] };
        j += 1;
    }
    c
};

/// `sin(rh + rl)` for `|rh| <= 0.8`: `rh + rh^3 S(rh^2) + rl (1 -
/// rh^2/2)`, `S` the Taylor polynomial to `r^19/19!` (the next term is
/// below `2^-66` of the result).
#[inline(always)]
pub(crate) fn sin_k(rh: f64, rl: f64) -> f64 {
    let z = rh * rh;
    let mut p = SIN_C[9];
    let mut j = 8;
    while j >= 1 {
        p = fma(p, z, SIN_C[j]);
        j -= 1;
    }
    rh + fma(rh * z, p, rl * (1.0 - 0.5 * z))
}

/// `cos(rh + rl)` for `|rh| <= 0.8`: `1 - h` with `h = rh^2/2` carried
/// exactly (`w = 1 - h` and its error), plus `rh^4 C(rh^2)` (Taylor to
/// `r^20/20!`) and `-rh rl`.
#[inline(always)]
pub(crate) fn cos_k(rh: f64, rl: f64) -> f64 {
    let (z, ze) = two_prod(rh, rh);
    let mut p = COS_C[10];
    let mut j = 9;
    while j >= 2 {
        p = fma(p, z, COS_C[j]);
        j -= 1;
    }
    let h = 0.5 * z;
    let w = 1.0 - h;
    w + ((((1.0 - w) - h) - 0.5 * ze) + fma(z * z, p, -rh * rl))
}

/// `x = n pi/2 + r`, `r = rh + rl` with `|rh| <= pi/4` (a little more at
/// the boundaries), returning `(n mod 4, rh, rl)`.
///
/// Below `2^20`: `n = rint(x 2/pi)`, `r = x - n P1 - n P2 - n P3` with
/// `pi/2 = P1 + P2 + P3` to 159 bits; `x - n P1` is exact (`fma`; both
/// are multiples of `2^-53` and the difference is below 2), `n P2` is a
/// `two_prod`, so `r` is a double-double accurate to `2^-120` absolute,
/// while no double below `2^20` is closer than about `2^-61` to a multiple
/// of `pi/2`. Above: Payne and Hanek's reduction with the bits of `2/pi`
/// (`rem_pio2_large`).
pub fn rem_pio2(x: f64) -> (i32, f64, f64) {
    let ax = abs(x);
    if ax <= core::f64::consts::FRAC_PI_4 {
        return (0, x, 0.0);
    }
    if ax < 1048576.0 {
        let n = rint(x * core::f64::consts::FRAC_2_PI);
        let r1 = fma(-n, PIO2_1, x);
        let (t, te) = two_prod(n, PIO2_2);
        let (s, se) = two_sum(r1, -t);
        let (rh, rl) = fast_two_sum(s, (se - te) - n * PIO2_3);
        return ((n as i64 & 3) as i32, rh, rl);
    }
    let (n, rh, rl) = rem_pio2_large(ax);
    if x < 0.0 { ((4 - n) & 3, -rh, -rl) } else { (n, rh, rl) }
}

/// Payne-Hanek: for `x = m 2^e >= 2^20` (`m` a 53-bit integer), `x 2/pi
/// mod 4` from the 256 bits of `2/pi` that matter: words before them give
/// multiples of 4 (dropped), words after them less than `2^-138`. The
/// 309-bit product `m W` is exact in integers; its two bits above the
/// binary point are `n mod 4`, the 128 below the fraction, rounded to the
/// nearest integer (so `|fraction| <= 1/2`), which times `pi/2` (a
/// double-double product) is `r`.
fn rem_pio2_large(ax: f64) -> (i32, f64, f64) {
    let bits = ax.to_bits();
    let m = bits & MANT_MASK | 1 << 52;
    let ex = (bits >> 52) as i32 - 1075;
    let i0 = if ex >= 66 { ((ex - 66) / 64 + 1) as usize } else { 0 };
    let big_e = ex - 64 * i0 as i32;
    let mut p = [0u64; 5];
    let mut carry: u128 = 0;
    let mut j = 0;
    while j < 4 {
        let t = TWO_OVER_PI[i0 + 3 - j] as u128 * m as u128 + carry;
        p[j] = t as u64;
        carry = t >> 64;
        j += 1;
    }
    p[4] = carry as u64;
    // 64 bits of the product from bit `lo` up.
    let get = |lo: i32| -> u64 {
        if lo >= 320 {
            return 0;
        }
        let (w, b) = ((lo / 64) as usize, lo % 64);
        let high = if b == 0 || w + 1 >= 5 { 0 } else { p[w + 1] << (64 - b) };
        p[w] >> b | high
    };
    let point = 256 - big_e;
    let mut n = (get(point) & 3) as i32;
    let fraction = (get(point - 64) as u128) << 64 | get(point - 128) as u128;
    let (magnitude, sign) = if fraction >> 127 == 1 {
        n += 1;
        (fraction.wrapping_neg(), -1.0)
    } else {
        (fraction, 1.0)
    };
    if magnitude == 0 {
        return (n & 3, 0.0, 0.0);
    }
    let lz = magnitude.leading_zeros() as i32;
    let top = magnitude << lz;
    let hi = (top >> 75) as u64;
    let lo = (top >> 22) as u64 & ((1 << 53) - 1);
    let v = (ldexp(hi as f64, -128 + 75 - lz), ldexp(lo as f64, -128 + 22 - lz));
    let v = fast_two_sum(v.0, v.1);
    let (rh, rl) = dd_mul(v, (FRAC_PI_2_HI, FRAC_PI_2_LO));
    (n & 3, sign * rh, sign * rl)
}

/// `sin x`: [`rem_pio2`], then `sin_k` or `cos_k` by the quadrant.
pub fn sin(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    let (n, rh, rl) = rem_pio2(x);
    match n {
        0 => sin_k(rh, rl),
        1 => cos_k(rh, rl),
        2 => -sin_k(rh, rl),
        _ => -cos_k(rh, rl),
    }
}

/// `cos x`: [`rem_pio2`], then `cos_k` or `sin_k` by the quadrant.
pub fn cos(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::NAN;
    }
    let (n, rh, rl) = rem_pio2(x);
    match n {
        0 => cos_k(rh, rl),
        1 => -sin_k(rh, rl),
        2 => -cos_k(rh, rl),
        _ => sin_k(rh, rl),
    }
}

/// `(sin x, cos x)` from one reduction.
pub fn sin_cos(x: f64) -> (f64, f64) {
    (sin(x), cos(x))
}

/// `tan x = sin r / cos r` (even quadrants) or `-cos r / sin r` (odd),
/// from one reduction: three roundings of about half an ulp each.
pub fn tan(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    let (n, rh, rl) = rem_pio2(x);
    let (s, c) = (sin_k(rh, rl), cos_k(rh, rl));
    if n & 1 == 0 { s / c } else { -c / s }
}

/// `(sin pi x, cos pi x)`: `n = rint(2x)`, `r = x - n/2` (both exact,
/// `|r| <= 1/4`), `pi r` a double-double (`two_prod` with `pi` in two
/// parts), then `sin_k` and `cos_k` by the quadrant `n mod 4`.
/// Integers give `sin = ±0` with the sign of `x`, half-integers `cos =
/// +0`.
pub fn sincospi(x: f64) -> (f64, f64) {
    if !x.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let ax = abs(x);
    if ax >= 4503599627370496.0 {
        let odd = ax < 9007199254740992.0 && trunc(ax * 0.5) != ax * 0.5;
        return (copysign(0.0, x), if odd { -1.0 } else { 1.0 });
    }
    let n = rint(2.0 * x);
    let r = x - 0.5 * n;
    let (a, ae) = two_prod(r, PI_HI);
    let al = fma(r, PI_LO, ae);
    let (s, c) = (sin_k(a, al), cos_k(a, al));
    let (s, c) = match (n as i64) & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    };
    let s = if s == 0.0 { copysign(0.0, x) } else { s };
    let c = if c == 0.0 { 0.0 } else { c };
    (s, c)
}

/// `sin(pi x)`, from [`sincospi`].
pub fn sinpi(x: f64) -> f64 {
    sincospi(x).0
}

/// `cos(pi x)`, from [`sincospi`].
pub fn cospi(x: f64) -> f64 {
    sincospi(x).1
}

/// `atan(t)` for `t = th + tl` in `[0, 1]`, a double-double: `c = j/4`
/// the nearest quarter, `u = (t - c)/(1 + t c)` (`t - c` exact, the
/// denominator and quotient double-doubles), `|u| <= 1/8`, and `atan t =
/// atan c + atan u` with `atan c` from the table and `atan u` its Taylor
/// series to `u^19/19` (the next term is below `2^-63` of `u`).
fn atan_01(th: f64, tl: f64) -> (f64, f64) {
    let j = rint(4.0 * th) as usize;
    let (uh, ul) = if j == 0 {
        (th, tl)
    } else {
        let c = j as f64 * 0.25;
        let (d, de) = two_prod(th, c);
        let (dh, dl) = two_sum(1.0, d);
        dd_div(((th - c), tl), (dh, dl + de + tl * c))
    };
    let z = uh * uh;
    let mut p = -ODD_INV[9];
    let mut k = 8;
    while k >= 1 {
        p = fma(p, z, if k % 2 == 0 { ODD_INV[k] } else { -ODD_INV[k] });
        k -= 1;
    }
    let a = fast_two_sum(uh, fma(uh * z, p, ul));
    if j == 0 { a } else { dd_add(ATAN_TABLE[j - 1], a) }
}

/// The angle of `(x, y)` for `x, y >= 0` finite double-doubles, not both
/// zero, a double-double in `[0, pi/2]`: `atan(y/x)` below the diagonal,
/// `pi/2 - atan(x/y)` above it (the quotient a double-double).
fn angle(y: (f64, f64), x: (f64, f64)) -> (f64, f64) {
    if y.0 <= x.0 {
        let t = dd_div(y, x);
        atan_01(t.0, t.1)
    } else {
        let t = dd_div(x, y);
        let a = atan_01(t.0, t.1);
        dd_add((FRAC_PI_2_HI, FRAC_PI_2_LO), (-a.0, -a.1))
    }
}

/// `atan2(y, x)` with C's special values; otherwise `angle` of `(|x|,
/// |y|)`, `pi -` it for `x < 0`, the sign of `y`.
pub fn atan2(y: f64, x: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let (ax, ay) = (abs(x), abs(y));
    let negative_x = x.to_bits() >> 63 == 1;
    let a = if y == 0.0 {
        if negative_x { (PI_HI, PI_LO) } else { (0.0, 0.0) }
    } else if x == 0.0 {
        (FRAC_PI_2_HI, FRAC_PI_2_LO)
    } else if ax.is_infinite() && ay.is_infinite() {
        let q = core::f64::consts::FRAC_PI_4;
        (if negative_x { 3.0 * q } else { q }, 0.0)
    } else if ay.is_infinite() {
        (FRAC_PI_2_HI, FRAC_PI_2_LO)
    } else if ax.is_infinite() {
        if negative_x { (PI_HI, PI_LO) } else { (0.0, 0.0) }
    } else {
        // Scaled so that neither the quotient's residual nor 1 + t c
        // leave the range: both by the larger's power of two.
        let e = split_exp(if ax > ay { ax } else { ay }).1;
        let a = angle((ldexp(ay, -e), 0.0), (ldexp(ax, -e), 0.0));
        if negative_x { dd_add((PI_HI, PI_LO), (-a.0, -a.1)) } else { a }
    };
    copysign(a.0 + a.1, y)
}

/// `atan x`: `atan_01` of `|x|` or of `1/|x|` (a double-double), then
/// `pi/2 -` it.
pub fn atan(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        return x;
    }
    let ax = abs(x);
    let a = if ax.is_infinite() {
        (FRAC_PI_2_HI, FRAC_PI_2_LO)
    } else if ax <= 1.0 {
        atan_01(ax, 0.0)
    } else {
        angle((ax, 0.0), (1.0, 0.0))
    };
    copysign(a.0 + a.1, x)
}

/// `sqrt(1 - x^2)` for `|x| <= 1` as a double-double: `1 - x^2` exact
/// (`two_prod`, `two_sum`), its square root corrected from the residual.
fn cos_of_asin(ax: f64) -> (f64, f64) {
    let (p, pe) = two_prod(ax, ax);
    let (s, se) = two_sum(1.0, -p);
    let sl = se - pe;
    let r = sqrt(s);
    (r, (fma(-r, r, s) + sl) / (2.0 * r))
}

/// `asin x` = the `angle` of `(sqrt(1 - x^2), x)`.
pub fn asin(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        return x;
    }
    let ax = abs(x);
    if ax > 1.0 {
        return f64::NAN;
    }
    if ax == 1.0 {
        return copysign(FRAC_PI_2_HI, x);
    }
    let a = angle((ax, 0.0), cos_of_asin(ax));
    copysign(a.0 + a.1, x)
}

/// `acos x` = the `angle` of `(|x|, sqrt(1 - x^2))`, `pi -` it for `x <
/// 0`.
pub fn acos(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = abs(x);
    if ax > 1.0 {
        return f64::NAN;
    }
    if x == 1.0 {
        return 0.0;
    }
    if x == -1.0 {
        return PI_HI;
    }
    let a = if ax == 0.0 { (FRAC_PI_2_HI, FRAC_PI_2_LO) } else { angle(cos_of_asin(ax), (ax, 0.0)) };
    let a = if x < 0.0 { dd_add((PI_HI, PI_LO), (-a.0, -a.1)) } else { a };
    a.0 + a.1
}

// ---------------------------------------------------------------------
// Hyperbolic functions.

/// `e^|x| / 2` as `2^(k-1) (1 + q)` (finite up to `|x| = 710.47`).
#[inline(always)]
fn half_exp(ax: f64) -> f64 {
    if ax > 711.0 {
        return f64::INFINITY;
    }
    let (k, qh, ql) = exp_reduce(ax, 0.0);
    exp_finish(k - 1, qh, ql)
}

/// `sinh x`: below 2 its Taylor series to `x^27/27!` (next term below
/// `2^-60` of the result); above, `E - 1/(4E)` with `E = e^|x|/2`.
pub fn sinh(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let ax = abs(x);
    if ax < 2.0 {
        let z = x * x;
        let mut p = INV_FACT[27];
        let mut j = 25;
        while j >= 3 {
            p = fma(p, z, INV_FACT[j]);
            j -= 2;
        }
        return fma(x * z, p, x);
    }
    let e = half_exp(ax);
    copysign(e - 0.25 / e, x)
}

/// `cosh x = E + 1/(4E)`, `E = e^|x|/2`; below 2, the Taylor series to
/// `x^26/26!`.
pub fn cosh(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = abs(x);
    if ax < 2.0 {
        let z = x * x;
        let mut p = INV_FACT[26];
        let mut j = 24;
        while j >= 2 {
            p = fma(p, z, INV_FACT[j]);
            j -= 2;
        }
        return fma(z, p, 1.0);
    }
    let e = half_exp(ax);
    e + 0.25 / e
}

/// `tanh x = E/(E + 2)` with `E = e^(2|x|) - 1` ([`expm1`]); `±1` from 20
/// up.
pub fn tanh(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        return x;
    }
    let ax = abs(x);
    if ax > 20.0 {
        return copysign(1.0, x);
    }
    let e = expm1(2.0 * ax);
    copysign(e / (e + 2.0), x)
}

/// `asinh x = ln(1 + u)`, `u = |x| + x^2/(1 + sqrt(1 + x^2))` (a
/// double-double sum, so that small `x` lose nothing); `ln|x| + ln 2`
/// from `2^28`.
pub fn asinh(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let ax = abs(x);
    let (h, l) = if ax > 268435456.0 {
        dd_add(ln_dd(ax), (LN2D_HI, LN2D_LO))
    } else {
        let a2 = ax * ax;
        let c = a2 / (1.0 + sqrt(1.0 + a2));
        let (uh, ul) = two_sum(ax, c);
        ln1p_dd(uh, ul)
    };
    copysign(h + l, x)
}

/// `acosh x = ln(1 + u)`, `u = t + sqrt(t (t + 2))` with `t = x - 1`
/// (exact below 2); `ln(x + sqrt(x^2 - 1))` above 2, `ln x + ln 2` from
/// `2^28`.
pub fn acosh(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x < 1.0 {
        return f64::NAN;
    }
    let (h, l) = if x > 268435456.0 {
        dd_add(ln_dd(x), (LN2D_HI, LN2D_LO))
    } else if x < 2.0 {
        let t = x - 1.0;
        let (uh, ul) = two_sum(t, sqrt(t * (t + 2.0)));
        ln1p_dd(uh, ul)
    } else {
        ln_dd(x + sqrt(fma(x, x, -1.0)))
    };
    h + l
}

/// `atanh x = ln(1 + 2|x|/(1 - |x|)) / 2`, the quotient a double-double.
pub fn atanh(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        return x;
    }
    let ax = abs(x);
    if ax > 1.0 {
        return f64::NAN;
    }
    if ax == 1.0 {
        return copysign(f64::INFINITY, x);
    }
    let (d, de) = two_sum(1.0, -ax);
    let u = dd_div((2.0 * ax, 0.0), (d, de));
    let (h, l) = ln1p_dd(u.0, u.1);
    copysign(0.5 * (h + l), x)
}

// ---------------------------------------------------------------------
// Error functions.

/// `(-1)^n / (n! (2n + 1))`, the coefficients of `erf(x) sqrt(pi)/2` in
/// `x^(2n+1)`.
const ERF_C: [f64; 14] = {
    let mut c = [0.0; 14];
    let mut n = 0;
    while n < 14 {
        let v = INV_FACT[n] / (2 * n + 1) as f64;
        c[n] = if n % 2 == 0 { v } else { -v };
        n += 1;
    }
    c
};

/// `erf(x)` for `|x| < 1/2` as a double-double: `2/sqrt(pi) (x + x z
/// P(z))`, `z = x^2`, `P` the Taylor series to `z^13` (the next term is
/// below `2^-68`).
fn erf_small(x: f64) -> (f64, f64) {
    let z = x * x;
    let mut p = ERF_C[13];
    let mut n = 12;
    while n >= 1 {
        p = fma(p, z, ERF_C[n]);
        n -= 1;
    }
    dd_mul(fast_two_sum(x, x * z * p), (FRAC_2_SQRT_PI_HI, FRAC_2_SQRT_PI_LO))
}

/// `erfcx(x) = e^(x^2) erfc(x)` for `x >= 1/2` (finite): below 4, the
/// polynomial of degree 16 in `t = x - c` around the nearest `c = 0.75,
/// 1.25, ...` (`t` exact, `|t| <= 1/4`); from 4, `g(u) u / sqrt(pi)` with
/// `u = 1/x` a double-double and `g` the polynomial of degree 22 in `u`.
/// Both fitted by `mpmath.chebyfit` (`cuda-std/scripts/float_constants.py`)
/// within `2^-60`; the error is Horner's rounding, about an ulp.
fn erfcx_pos(x: f64) -> (f64, f64) {
    if x < 4.0 {
        let i = trunc((x - 0.5) * 2.0) as usize;
        let c = &ERFCX_MID[i];
        let t = x - (0.75 + 0.5 * i as f64);
        let mut v = c[16];
        let mut k = 15;
        while k >= 1 {
            v = fma(v, t, c[k]);
            k -= 1;
        }
        return two_sum(c[0], v * t);
    }
    let uh = 1.0 / x;
    let ul = fma(-uh, x, 1.0) / x;
    let mut g = ERFCX_TAIL[22];
    let mut k = 21;
    while k >= 1 {
        g = fma(g, uh, ERFCX_TAIL[k]);
        k -= 1;
    }
    let g = two_sum(ERFCX_TAIL[0], g * uh);
    dd_mul(dd_mul(g, (uh, ul)), (FRAC_1_SQRT_PI_HI, FRAC_1_SQRT_PI_LO))
}

/// `2^s erfc(xh + xl)` for `xh >= 1/2`: `e^(-x^2) erfcx(x)`, with `x^2` a
/// double-double (so that `e^(-x^2)`, whose relative error is the absolute
/// error of `x^2`, loses nothing), `erfcx` corrected to first order for
/// `xl` (`erfcx' = 2x erfcx - 2/sqrt(pi)`), the product a double-double
/// rounded once, then scaled by `2^(k + s)`.
fn erfc_pos(xh: f64, xl: f64, s: i32) -> f64 {
    if xh > 27.5 {
        return 0.0;
    }
    let (a, ae) = two_prod(xh, xh);
    let ae = fma(2.0 * xh, xl, ae);
    let (k, qh, ql) = exp_reduce(-a, -ae);
    let v = erfcx_pos(xh);
    let v = fast_two_sum(v.0, fma(xl, 2.0 * xh * v.0 - 2.0 * FRAC_1_SQRT_PI_HI, v.1));
    let (e, ee) = two_sum(1.0, qh);
    let p = dd_mul((e, ee + ql), v);
    ldexp(p.0 + p.1, k + s)
}

/// The error function: the series below 1/2, `1 - erfc` above (no
/// cancellation: `erfc(1/2) < 0.48`), `±1` from 6.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        return x;
    }
    let ax = abs(x);
    if ax < 0.5 {
        let (h, l) = erf_small(x);
        return h + l;
    }
    if ax > 6.0 {
        return copysign(1.0, x);
    }
    copysign(1.0 - erfc_pos(ax, 0.0, 0), x)
}

/// The complementary error function: `1 - erf` (a double-double) below
/// 1/2, `erfc_pos` above, `2 - erfc(-x)` below -1/2.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if abs(x) < 0.5 {
        let (h, l) = erf_small(x);
        let (s, e) = two_sum(1.0, -h);
        return s + (e - l);
    }
    if x > 0.0 { erfc_pos(x, 0.0, 0) } else { 2.0 - erfc_pos(-x, 0.0, 0) }
}

/// The scaled complementary error function `e^(x^2) erfc(x)`:
/// `erfcx_pos` from 1/2; `e^(x^2) (1 - erf x)` below (double-doubles);
/// `2 e^(x^2) - erfcx(-x)` below -1/2.
pub fn erfcx(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x >= 0.5 {
        let (h, l) = erfcx_pos(x);
        return h + l;
    }
    if x < -26.7 {
        return f64::INFINITY;
    }
    let (a, ae) = two_prod(x, x);
    let (k, qh, ql) = exp_reduce(a, ae);
    let (e, ee) = two_sum(1.0, qh);
    let e = (e, ee + ql);
    let (h, l) = if x > -0.5 {
        let (h, l) = erf_small(x);
        let (s, se) = two_sum(1.0, -h);
        dd_mul(e, (s, se - l))
    } else {
        let v = erfcx_pos(-x);
        let big = (ldexp(e.0, k + 1), ldexp(e.1, k + 1));
        if big.0.is_infinite() {
            return f64::INFINITY;
        }
        let (h, l) = dd_add(big, (-v.0, -v.1));
        return h + l;
    };
    ldexp(h + l, k)
}

/// The standard normal distribution function `erfc(-x/sqrt(2))/2`, with
/// `-x/sqrt(2)` a double-double (its rounding would otherwise cost up to
/// `x^2` ulps where the result is small).
pub fn norm_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let (ah, al) = two_prod(-x, FRAC_1_SQRT_2_HI);
    let al = fma(-x, FRAC_1_SQRT_2_LO, al);
    if ah >= 0.5 {
        return erfc_pos(ah, al, -1);
    }
    if ah <= -0.5 {
        return 1.0 - erfc_pos(-ah, -al, -1);
    }
    // erf(ah + al) = erf(ah) + al 2/sqrt(pi) e^(-ah^2), the second term to
    // first order.
    let (h, l) = erf_small(ah);
    let l = l + al * FRAC_2_SQRT_PI_HI * (1.0 - ah * ah);
    let (s, se) = two_sum(1.0, -h);
    0.5 * (s + (se - l))
}

/// `x` with `erfc(x) = y`, for `y` in `[0, 2]` (`±inf` at the ends, NaN
/// outside): `-erfcinv(2 - y)` above 1 (`2 - y` exact).
///
/// - `y` in `[0.479, 1]`: Newton's method on `erf(x) = t`, `t = 1 - y` a
///   double-double, from the series' first terms `sqrt(pi)/2 (t + pi t^3/12)`;
///   the residual `erf(x) - t` a double-double (`erf_small`), five steps
///   (quadratic convergence from a few percent).
/// - `y < 0.479` (`x > 0.5006`): Newton's method on `ln erfc(x) = ln y`, with `ln erfc(x) =
///   ln erfcx(x) - x^2` (double-doubles, so that `x^2` up to 745 loses
///   nothing) and derivative `-2/(sqrt(pi) erfcx(x))`, from the
///   asymptotic `x^2 = s - ln sqrt(pi s)`, `s = -ln y`; seven steps.
pub fn erfcinv(y: f64) -> f64 {
    if y.is_nan() || !(0.0..=2.0).contains(&y) {
        return f64::NAN;
    }
    if y == 0.0 {
        return f64::INFINITY;
    }
    if y == 2.0 {
        return f64::NEG_INFINITY;
    }
    if y > 1.0 {
        return -erfcinv(2.0 - y);
    }
    if y >= 0.479 {
        // x <= erfcinv(0.479) = 0.5006, where erf's series is as good.
        let (t, tl) = two_sum(1.0, -y);
        if t == 0.0 {
            return 0.0;
        }
        let k = FRAC_1_SQRT_PI_HI.recip() * 0.5;
        let mut x = k * t * (1.0 + core::f64::consts::PI / 12.0 * t * t);
        let mut i = 0;
        while i < 5 {
            let (h, l) = erf_small(x);
            let r = (h - t) + (l - tl);
            x -= r * k * exp(x * x);
            i += 1;
        }
        return x;
    }
    let s = -ln(y);
    let mut x = sqrt(s - 0.5 * ln(core::f64::consts::PI * s));
    let target = ln_dd(y);
    let mut i = 0;
    while i < 7 {
        // The iterates stay in erfcx_pos's domain (the root is above 0.5006).
        x = if x < 0.5 { 0.5 } else { x };
        let v = erfcx_pos(x);
        let lv = dd_add(ln_dd(v.0), (v.1 / v.0, 0.0));
        let (a, ae) = two_prod(x, x);
        let phi = dd_add(dd_add(lv, (-a, -ae)), (-target.0, -target.1));
        x += (phi.0 + phi.1) * (v.0 * (0.5 / FRAC_1_SQRT_PI_HI));
        i += 1;
    }
    x
}

/// `-sqrt(2) erfcinv(2p)`, the inverse of [`norm_cdf`] (`2p` exact, the
/// product with `sqrt(2)` rounded once; `+0` at `p = 1/2`).
pub fn inv_norm_cdf(p: f64) -> f64 {
    let x = erfcinv(2.0 * p);
    if x == 0.0 { 0.0 } else { -core::f64::consts::SQRT_2 * x }
}

// ---------------------------------------------------------------------
// The gamma function.

/// `ln Gamma(y)` for `y = yh + yl >= 10` as a double-double: Stirling's
/// `(y - 1/2) ln y - y + ln sqrt(2 pi) + S(y)`, `ln y` a double-double
/// ([`ln_dd`]) and the products and sums carried in double-doubles; `S` the
/// series `sum B_2k / (2k (2k-1) y^(2k-1))` to `k = 10` (the next term is
/// below `10^-20` at 10); `yl` exactly in `-y` and to first order in
/// `(y - 1/2) ln y`.
fn lgamma_big(yh: f64, yl: f64) -> (f64, f64) {
    let l = ln_dd(yh);
    let half = two_sum(yh, -0.5);
    let p = dd_mul(half, l);
    let w = 1.0 / (yh * yh);
    let mut s = STIRLING[9];
    let mut k = 8;
    loop {
        s = fma(s, w, STIRLING[k]);
        if k == 0 {
            break;
        }
        k -= 1;
    }
    // (y - 1/2) ln y is evaluated at yh: its derivative is ln y + 1 -
    // 1/(2y); the -y term takes yl exactly.
    let tail = s / yh + yl * (l.0 + 1.0 - 0.5 / yh);
    let r = dd_add(p, (-yh, -yl));
    let r = dd_add(r, (LN_SQRT_2PI_HI, LN_SQRT_2PI_LO));
    dd_add(r, (tail, 0.0))
}

/// `Gamma(yh + yl) = 2^k (m.0 + m.1)` for `yh > 0`: below 10, `Gamma(y + n)
/// / (y (y + 1) ... (y + n - 1))` with `y + n` in `[10, 11)` (each factor
/// exact as a double-double, the product and quotient double-doubles);
/// from 10, `e^(ln Gamma)` from [`lgamma_big`].
fn gamma_parts(yh: f64, yl: f64) -> (i32, (f64, f64)) {
    let n = if yh < 10.0 { ceil_int(10.0 - yh) } else { 0 };
    let (zh, zl) = if n == 0 {
        (yh, yl)
    } else {
        let (s, e) = two_sum(yh, n as f64);
        fast_two_sum(s, e + yl)
    };
    let lg = lgamma_big(zh, zl);
    let (k, qh, ql) = exp_reduce(lg.0, lg.1);
    let (e, ee) = two_sum(1.0, qh);
    let mut m = (e, ee + ql);
    if n > 0 {
        let mut prod = (yh, yl);
        let mut j = 1;
        while j < n {
            let (s, e) = two_sum(yh, j as f64);
            prod = dd_mul(prod, (s, e + yl));
            j += 1;
        }
        m = dd_div(m, prod);
    }
    (k, m)
}

/// `ceil(v)` for `0 <= v <= 11`, as an integer.
#[inline(always)]
fn ceil_int(v: f64) -> i32 {
    super::prim::ceil(v) as i32
}

/// The gamma function: `gamma_parts` for `x > 0`; for `x < 0`, `pi /
/// (sin(pi x) Gamma(1 - x))` with `1 - x` a double-double and `sin(pi x)`
/// from [`sincospi`]; poles (`0`, negative integers) as C's `tgamma`
/// (`±inf` at `±0`, NaN at the negative integers).
pub fn gamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return copysign(f64::INFINITY, x);
    }
    if x < 0.0 && trunc(x) == x {
        return f64::NAN;
    }
    if x > 171.7 {
        return f64::INFINITY;
    }
    if abs(x) < 5.551115123125783e-17 {
        // Gamma(x) = 1/x - gamma_E + O(x): Euler's gamma is below half an
        // ulp of 1/x here (and 1/x overflows correctly below 2^-1024).
        return 1.0 / x;
    }
    if x > 0.0 {
        let (k, m) = gamma_parts(x, 0.0);
        return ldexp(m.0 + m.1, k);
    }
    if x < -190.0 {
        // |Gamma(x)| < 2^-1100: zero, with the sign of sin(pi x).
        return copysign(0.0, sinpi(x));
    }
    let (yh, yl) = two_sum(1.0, -x);
    let (k, m) = gamma_parts(yh, yl);
    let d = dd_mul(m, (sinpi(x), 0.0));
    let q = dd_div((PI_HI, PI_LO), d);
    ldexp(q.0 + q.1, -k)
}

/// `ln Gamma(2 + z)` for `|z| <= 1/2` as a double-double: `z P(z)`, `P`
/// the Taylor series (coefficients `1 - gamma`, `(-1)^k (zeta(k) - 1)/k`)
/// to `z^30` (the next term is below `2^-62`).
fn lgamma2(z: f64) -> (f64, f64) {
    let mut p = LGAMMA2[30];
    let mut k = 29;
    while k >= 2 {
        p = fma(p, z, LGAMMA2[k]);
        k -= 1;
    }
    let (a, ae) = two_prod(z, LGAMMA2[1]);
    fast_two_sum(a, fma(z * z, p, ae))
}

/// `ln |Gamma(x)|` for `x > -1/2` as a double-double: [`lgamma2`] around 2
/// (`x` in `[1.5, 2.5)`, `z = x - 2` exact), and `- ln x` or `- ln |x (x +
/// 1)|` below it; `+ ln((x - 1) ... (x - n))` (exact factors, a
/// double-double product) between 2.5 and 10; [`lgamma_big`] from 10.
fn lgamma_pos(x: f64) -> (f64, f64) {
    if x >= 10.0 {
        return lgamma_big(x, 0.0);
    }
    if x >= 2.5 {
        let n = ceil_int(x - 2.5);
        let n = if x - n as f64 >= 2.5 { n + 1 } else { n };
        let mut prod = (x - 1.0, 0.0);
        let mut j = 2;
        while j <= n {
            prod = dd_mul(prod, (x - j as f64, 0.0));
            j += 1;
        }
        let lp = dd_add(ln_dd(prod.0), (prod.1 / prod.0, 0.0));
        return dd_add(lgamma2(x - n as f64 - 2.0), lp);
    }
    if x >= 1.5 {
        return lgamma2(x - 2.0);
    }
    if x >= 0.5 {
        let l = ln_dd(x);
        return dd_add(lgamma2(x - 1.0), (-l.0, -l.1));
    }
    // Also for x in (-1/2, 0): |Gamma(x)| = Gamma(x + 2) / |x (x + 1)|.
    let l = dd_add(ln_dd(abs(x)), ln1p_dd(x, 0.0));
    dd_add(lgamma2(x), (-l.0, -l.1))
}

/// `ln |Gamma(x)|`: `lgamma_pos` above -1/2; around the four negative
/// zeros (`-2.457...`, `-2.747...`, `-3.143...`, `-3.955...`), where
/// `|ln |Gamma|| < 3/4`, the fits of `lgamma_tables` (`t g(t)` around each
/// zero, so relative up to it); elsewhere below -1/2, `ln pi - ln|sin(pi
/// x)| - ln Gamma(1 - x)` (`1 - x` a double-double, to first order through
/// `psi`), whose terms cancel to an absolute error of a few `EPSILON`.
/// `+inf` at the poles.
pub fn lgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() || x == 0.0 {
        return f64::INFINITY;
    }
    if x > 1e300 {
        // (x - 1/2) ln x - x = x (ln x - 1) to well within an ulp, and no
        // intermediate overflow.
        return x * (ln(x) - 1.0);
    }
    if x > -0.5 {
        let (h, l) = lgamma_pos(x);
        return h + l;
    }
    if trunc(x) == x {
        return f64::INFINITY;
    }
    if let Some(r) = super::fit::lgamma_near_zero(x) {
        return r;
    }
    let (yh, yl) = two_sum(1.0, -x);
    let g = lgamma_pos(yh);
    // d/dy ln Gamma(y) = psi(y) ≈ ln y - 1/(2y), enough for yl's share.
    let g = dd_add(g, (yl * (ln(yh) - 0.5 / yh), 0.0));
    let s = ln_dd(abs(sinpi(x)));
    let r = dd_add((LN_PI_HI, LN_PI_LO), (-s.0, -s.1));
    let (h, l) = dd_add(r, (-g.0, -g.1));
    h + l
}
