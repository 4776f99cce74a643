//! Exponentials, logarithms and roots: `exp`, `exp2`, `expm1`, the logarithms, `powf`, `cbrt`, `hypot`.

use super::*;

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
pub(super) fn exp_reduce(hi: f64, lo: f64) -> (i32, f64, f64) {
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
pub(super) fn exp_finish(k: i32, qh: f64, ql: f64) -> f64 {
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
pub(super) const ODD_INV: [f64; 12] = {
    let mut c = [0.0; 12];
    let mut j = 0;
    while j < 12 {
        c[j] = 1.0 / (2 * j + 1) as f64;
        j += 1;
    }
    c
};

/// `(-1)^(k+1)/k`, the coefficients of `ln(1 + u)` in `u`.
pub(super) const LN1P_C: [f64; 10] = {
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
pub(super) fn ln_core(f: f64, fl: f64, e: i32) -> (f64, f64) {
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
pub(super) fn ln_split(x: f64) -> (f64, i32) {
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
pub(super) fn ln1p_dd(uh: f64, ul: f64) -> (f64, f64) {
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
pub(super) fn ln_special(x: f64) -> Option<f64> {
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
pub(super) fn is_odd_integer(y: f64) -> bool {
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
pub(super) fn cbrt_core(m: f64) -> (f64, f64) {
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
pub(super) fn cube_split(x: f64) -> (f64, i32) {
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
