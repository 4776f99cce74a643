//! The error functions and the normal distribution.

use super::*;

// ---------------------------------------------------------------------
// Error functions.

/// `(-1)^n / (n! (2n + 1))`, the coefficients of `erf(x) sqrt(pi)/2` in
/// `x^(2n+1)`.
pub(super) const ERF_C: [f64; 14] = {
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
pub(super) fn erf_small(x: f64) -> (f64, f64) {
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
pub(super) fn erfcx_pos(x: f64) -> (f64, f64) {
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
pub(super) fn erfc_pos(xh: f64, xl: f64, s: i32) -> f64 {
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
