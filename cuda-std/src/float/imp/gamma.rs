//! The gamma function and its logarithm.

use super::*;

// ---------------------------------------------------------------------
// The gamma function.

/// `ln Gamma(y)` for `y = yh + yl >= 10` as a double-double: Stirling's
/// `(y - 1/2) ln y - y + ln sqrt(2 pi) + S(y)`, `ln y` a double-double
/// ([`ln_dd`]) and the products and sums carried in double-doubles; `S` the
/// series `sum B_2k / (2k (2k-1) y^(2k-1))` to `k = 10` (the next term is
/// below `10^-20` at 10); `yl` exactly in `-y` and to first order in
/// `(y - 1/2) ln y`.
pub(super) fn lgamma_big(yh: f64, yl: f64) -> (f64, f64) {
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
pub(super) fn gamma_parts(yh: f64, yl: f64) -> (i32, (f64, f64)) {
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
pub(super) fn ceil_int(v: f64) -> i32 {
    super::super::prim::ceil(v) as i32
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
pub(super) fn lgamma2(z: f64) -> (f64, f64) {
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
pub(super) fn lgamma_pos(x: f64) -> (f64, f64) {
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
    if let Some(r) = super::super::fit::lgamma_near_zero(x) {
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
