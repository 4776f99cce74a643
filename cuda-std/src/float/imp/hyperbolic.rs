//! Hyperbolic functions and their inverses.

use super::*;

// ---------------------------------------------------------------------
// Hyperbolic functions.

/// `e^|x| / 2` as `2^(k-1) (1 + q)` (finite up to `|x| = 710.47`).
#[inline(always)]
pub(super) fn half_exp(ax: f64) -> f64 {
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
