//! The Bessel functions of integer order, `J_n` and `Y_n`, in `f64`:
//! [`j0`], [`j1`], [`y0`], [`y1`] from fitted polynomials and the
//! modulus and phase, [`jn`] and [`yn`] from them by recurrences.
//!
//! `J0`, `J1`, `Y0`, `Y1` of `x >= 0`, in three regions (the fits are
//! [`bessel_tables`](super::bessel_tables), made by
//! `cuda-std/scripts/bessel_tables.py`):
//!
//! - below `Y0_START` (0.625) and `Y1_START` (1), `Y0` and `Y1` from
//!   their power series around the logarithm, `2/pi ((ln(x/2) + gamma)
//!   J0 + S0(x^2))` and `2/pi (-1/x + (ln(x/2) + gamma) J1 - x T1(x^2))`,
//!   the logarithm a double-double;
//! - up to `X0` (20), pieces cut at the extrema, so that each holds at
//!   most one zero `z`: there the value is `t g(t)` with `t = x - z` (`z`
//!   a triple-double, so `t` is `x`'s distance to the true zero, rounded
//!   once) and `g` a polynomial fitted to `f(z + t)/t` to a relative
//!   `2^-60`, which keeps the relative error small right up to the zero;
//!   elsewhere `g(x - c)` around the piece's centre;
//! - from `X0`, `J = M cos(theta)`, `Y = M sin(theta)` with `M =
//!   sqrt(2/(pi x)) (1 + w m(w))` and `theta = x - (2 nu + 1) pi/4 + (c0 +
//!   w a(w))/x`, `w = 1/x^2`, `m` and `a` fitted: `x` is reduced by `pi/2`
//!   ([`rem_pio2`], exact to `2^-120` at any size) and `c0/x` is a
//!   double-double, so the phase's remainder `t` is a double-double but
//!   for `w a/x`, a rounded double: an absolute error of about `2^-56/x^3`
//!   in `t`, which next to a zero (where the result is `M t`) is more than
//!   an ulp; there the bound is absolute (see
//!   [`FloatExt::j0`](super::FloatExt::j0)).
//!
//! `J_n`, `Y_n` (`n >= 2`), the recurrences carried in double-doubles:
//! `Y_n` by the forward recurrence `Y_(k+1) = (2k/x) Y_k - Y_(k-1)` from
//! `Y0`, `Y1` (`Y` grows with `k`, so it is stable); `J_n` by the same recurrence for `x >= n` (where it is stable
//! too), by Miller's backward recurrence below (from `N = n + 20 +
//! sqrt(40 n)`, where `J_N/J_n` is negligible, normalized by whichever of
//! `J0(x)`, `J1(x)` is larger), and by the power series `(x/2)^n/n!
//! sum (-x^2/4)^k/(k! (n+1)_k)` for `x^2 < n + 1` (each term below a
//! quarter of the last). Near their zeros these lose the relative accuracy
//! the cancelling recurrence cannot keep: below their envelope their
//! bounds are absolute (see [`FloatExt::jn`](super::FloatExt::jn)).

use super::bessel_tables::*;
use super::consts::{FRAC_PI_2_HI, FRAC_PI_2_LO};
use super::fit::{horner, pieces};
use super::imp::{cos_k, sin_k};
use super::imp::{dd_add, dd_div, dd_mul, fast_two_sum, ldexp, ln_dd, rem_pio2, two_prod, two_sum};
use super::prim::{fma, sqrt};

/// `pi/4` as a double-double (halves of `pi/2`'s, exact).
const PI4_HI: f64 = FRAC_PI_2_HI * 0.5;
const PI4_LO: f64 = FRAC_PI_2_LO * 0.5;
/// `2^600` and `2^-600`: the recurrences' rescaling.
const TWO_600: f64 = 4.149515568880993e180;
const TWO_M600: f64 = 2.409919865102884e-181;

/// `J_nu(x)` (`second` false) or `Y_nu(x)` for finite `x >= X0`, from the
/// modulus and phase.
fn large(x: f64, nu: u32, second: bool) -> f64 {
    let (mc, pc, c0): (&[f64], &[f64], f64) =
        if nu == 0 { (&MOD0, &PHASE0, -0.125) } else { (&MOD1, &PHASE1, 0.375) };
    let w = 1.0 / (x * x);
    let s = W_SCALE * w;
    let m = horner(mc, s);
    let a = horner(pc, s);
    // (c0 + w a)/x = q + ql: c0/x as a double-double, the rest small.
    let q = c0 / x;
    let ql = fma(-q, x, c0) / x + w * a / x;
    // theta = k pi/2 + r - (2 nu + 1) pi/4 + alpha; nu = 1 takes one pi/2
    // off k, leaving t = r - pi/4 + alpha for both.
    let (k, rh, rl) = rem_pio2(x);
    let mut k = k - nu as i32;
    let (a1, e1) = two_sum(rh, -PI4_HI);
    let (a2, e2) = two_sum(a1, q);
    let (mut th, mut tl) = fast_two_sum(a2, e1 + e2 + (rl - PI4_LO + ql));
    // k pi/2 + t = (k -+ 1) pi/2 + (t +- pi/2).
    if th < -PI4_HI {
        (th, tl) = dd_add((th, tl), (FRAC_PI_2_HI, FRAC_PI_2_LO));
        k -= 1;
    } else if th > PI4_HI {
        (th, tl) = dd_add((th, tl), (-FRAC_PI_2_HI, -FRAC_PI_2_LO));
        k += 1;
    }
    // Y = M cos(theta - pi/2).
    if second {
        k -= 1;
    }
    let trig = match k & 3 {
        0 => cos_k(th, tl),
        1 => -sin_k(th, tl),
        2 => -cos_k(th, tl),
        _ => sin_k(th, tl),
    };
    // M = sqrt(2/pi) (1 + w m) / sqrt(x), in double-doubles.
    let sx = sqrt(x);
    let sxl = fma(-sx, sx, x) / (2.0 * sx);
    let num = fast_two_sum(SQRT_2_OVER_PI.0, fma(SQRT_2_OVER_PI.0, w * m, SQRT_2_OVER_PI.1));
    let (mh, ml) = dd_div(num, (sx, sxl));
    let (p, pe) = two_prod(mh, trig);
    p + fma(ml, trig, pe)
}

/// `(2/pi) (h + l)`, rounded once.
#[inline(always)]
fn two_over_pi_times(h: f64, l: f64) -> f64 {
    let (p, pe) = two_prod(TWO_OVER_PI.0, h);
    p + (pe + fma(TWO_OVER_PI.0, l, TWO_OVER_PI.1 * h))
}

/// `ln(x/2) + gamma` as a double-double.
#[inline(always)]
fn log_term(x: f64) -> (f64, f64) {
    dd_add(ln_dd(x), GAMMA_MINUS_LN2)
}

/// `J0(x)` ([`FloatExt::j0`](super::FloatExt::j0)).
pub fn j0(x: f64) -> f64 {
    let ax = super::imp::abs(x);
    if x.is_nan() {
        return x;
    }
    if ax == f64::INFINITY {
        return 0.0;
    }
    if ax < X0 { pieces(&J0_PIECES, ax) } else { large(ax, 0, false) }
}

/// `J1(x)` ([`FloatExt::j1`](super::FloatExt::j1)), odd.
pub fn j1(x: f64) -> f64 {
    let ax = super::imp::abs(x);
    if x.is_nan() {
        return x;
    }
    let r = if ax == f64::INFINITY {
        0.0
    } else if ax < X0 {
        pieces(&J1_PIECES, ax)
    } else {
        large(ax, 1, false)
    };
    if x.is_sign_negative() { -r } else { r }
}

/// `Y0(x)` ([`FloatExt::y0`](super::FloatExt::y0)): NaN below 0, `-inf`
/// at 0.
pub fn y0(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x >= X0 {
        return large(x, 0, true);
    }
    if x >= Y0_START {
        return pieces(&Y0_PIECES, x);
    }
    let (lh, ll) = log_term(x);
    let j = pieces(&J0_PIECES, x);
    let z = x * x;
    let s = z * horner(&Y0_SERIES, z);
    let (p, pe) = two_prod(lh, j);
    let (h, he) = two_sum(p, s);
    two_over_pi_times(h, he + fma(ll, j, pe))
}

/// `Y1(x)` ([`FloatExt::y1`](super::FloatExt::y1)): NaN below 0, `-inf`
/// at 0.
pub fn y1(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x >= X0 {
        return large(x, 1, true);
    }
    if x >= Y1_START {
        return pieces(&Y1_PIECES, x);
    }
    // -(2/pi)/x as a double-double, then (2/pi) ((ln(x/2) + gamma) J1 - x T1).
    let q = -TWO_OVER_PI.0 / x;
    if q.is_infinite() {
        return q;
    }
    let ql = (fma(-q, x, -TWO_OVER_PI.0) - TWO_OVER_PI.1) / x;
    let (lh, ll) = log_term(x);
    let j = pieces(&J1_PIECES, x);
    let (p, pe) = two_prod(lh, j);
    let (h, he) = two_sum(p, -x * horner(&Y1_SERIES, x * x));
    let rest = two_over_pi_times(h, he + fma(ll, j, pe));
    let (s, se) = two_sum(q, rest);
    s + (se + ql)
}

/// `(-1)^n v`.
#[inline(always)]
fn sign_of_order(n: i64, v: f64) -> f64 {
    if n & 1 == 1 { -v } else { v }
}

/// `J_n(x)` ([`FloatExt::jn`](super::FloatExt::jn)).
pub fn jn(n: i32, x: f64) -> f64 {
    let n = n as i64;
    if n < 0 {
        return sign_of_order(n, jn_pos(-n, x));
    }
    jn_pos(n, x)
}

/// `J_n(x)` for `n >= 0`.
fn jn_pos(n: i64, x: f64) -> f64 {
    if n == 0 {
        return j0(x);
    }
    if n == 1 {
        return j1(x);
    }
    if x.is_nan() {
        return x;
    }
    let ax = super::imp::abs(x);
    let v = if ax == f64::INFINITY || ax == 0.0 {
        0.0
    } else if ax >= n as f64 {
        forward(n, ax, j0(ax), j1(ax))
    } else if ax * ax < (n + 1) as f64 {
        jn_series(n, ax)
    } else {
        jn_miller(n, ax)
    };
    if x.is_sign_negative() { sign_of_order(n, v) } else { v }
}

/// `(2k/x) c - p` in double-doubles (`2k/x` too).
#[inline(always)]
fn recur(k: i64, x: f64, c: (f64, f64), p: (f64, f64)) -> (f64, f64) {
    let two_k = 2.0 * k as f64;
    let qh = two_k / x;
    let q = (qh, fma(-qh, x, two_k) / x);
    dd_add(dd_mul(q, c), (-p.0, -p.1))
}

/// The recurrence `f_(k+1) = (2k/x) f_k - f_(k-1)` from `f_0 = a`, `f_1
/// = b` up to `f_n`, in double-doubles, so that `n` steps add next to no
/// error to what `a` and `b` carry; at an overflow, the infinity.
fn forward(n: i64, x: f64, a: f64, b: f64) -> f64 {
    let (mut p, mut c) = ((a, 0.0), (b, 0.0));
    let mut k = 1;
    while k < n {
        let next = recur(k, x, c, p);
        if !next.0.is_finite() {
            return fma(2.0 * k as f64 / x, c.0, -p.0);
        }
        p = c;
        c = next;
        k += 1;
    }
    c.0
}

/// `J_n(x)` for `x^2 < n + 1`: `(x/2)^n/n!` (a double-double product) times
/// `sum_k (-x^2/4)^k/(k! (n+1)_k)`, whose terms shrink by 4 at least.
fn jn_series(n: i64, x: f64) -> f64 {
    let z = 0.25 * x * x;
    let (mut sum, mut term) = (1.0, 1.0);
    let mut k = 1;
    while k < 40 {
        term *= -z / (k as f64 * (n + k) as f64);
        let s = sum + term;
        if s == sum {
            break;
        }
        sum = s;
        k += 1;
    }
    // (x/2)^n/n! as a double-double, scaled by 2^scale to stay normal
    // until the end (one rounding, by ldexp).
    let h = 0.5 * x;
    let (mut ph, mut pl) = (1.0, 0.0);
    let mut scale = 0;
    let mut j = 1;
    while j <= n {
        let (a, ae) = two_prod(ph, h);
        let (b, be) = fast_two_sum(a, fma(pl, h, ae));
        let q = b / j as f64;
        let r = (fma(-q, j as f64, b) + be) / j as f64;
        (ph, pl) = fast_two_sum(q, r);
        if ph < TWO_M600 {
            ph *= TWO_600;
            pl *= TWO_600;
            scale += 600;
        }
        j += 1;
    }
    let (r, re) = two_prod(ph, sum);
    ldexp(r + fma(pl, sum, re), -scale)
}

/// `J_n(x)` for `sqrt(n + 1) <= x < n`: Miller's backward recurrence from
/// `N = n + 20 + sqrt(40 n)` (`f_(N+1) = 0`, `f_N = 1`), rescaled by
/// `2^-600` whenever it passes `2^600`, normalized by the larger of `J0`,
/// `J1`.
fn jn_miller(n: i64, x: f64) -> f64 {
    let big_n = n + 20 + sqrt(40.0 * n as f64) as i64;
    // f_k and f_(k+1), double-doubles.
    let (mut c, mut p) = ((1.0, 0.0), (0.0, 0.0));
    let mut k = big_n;
    let mut at_n = (0.0, 0.0);
    while k > 0 {
        // f_(k-1) = (2k/x) f_k - f_(k+1)
        let prev = recur(k, x, c, p);
        p = c;
        c = prev;
        k -= 1;
        if k == n {
            at_n = c;
        }
        if super::imp::abs(c.0) > TWO_600 {
            c = (c.0 * TWO_M600, c.1 * TWO_M600);
            p = (p.0 * TWO_M600, p.1 * TWO_M600);
            if k <= n {
                at_n = (at_n.0 * TWO_M600, at_n.1 * TWO_M600);
            }
        }
    }
    // c = f_0, p = f_1: J_n = f_n J0/f_0 (or J1/f_1, the larger).
    let (a, b) = (j0(x), j1(x));
    let (v, f) = if super::imp::abs(a) >= super::imp::abs(b) { (a, c) } else { (b, p) };
    let (r, rl) = dd_div(at_n, f);
    let (h, he) = two_prod(r, v);
    h + fma(rl, v, he)
}

/// `Y_n(x)` ([`FloatExt::yn`](super::FloatExt::yn)).
pub fn yn(n: i32, x: f64) -> f64 {
    let n = n as i64;
    if n < 0 {
        return sign_of_order(n, yn_pos(-n, x));
    }
    yn_pos(n, x)
}

/// `Y_n(x)` for `n >= 0`.
fn yn_pos(n: i64, x: f64) -> f64 {
    if n == 0 {
        return y0(x);
    }
    if n == 1 {
        return y1(x);
    }
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    forward(n, x, y0(x), y1(x))
}
