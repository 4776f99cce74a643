//! Piecewise fitted polynomials ([`Piece`]), as the generators
//! `cuda-std/scripts/bessel_tables.py` and `lgamma_tables.py` write them:
//! the Bessel functions below 20 and `ln |Gamma|` around its negative
//! zeros.

use super::bessel_tables::Piece;
use super::imp::{two_prod, two_sum};
use super::prim::fma;

/// `c[0] + c[1] s + ...` by Horner's rule.
#[inline(always)]
pub(crate) fn horner(c: &[f64], s: f64) -> f64 {
    let mut i = c.len() - 1;
    let mut p = c[i];
    while i > 0 {
        i -= 1;
        p = fma(p, s, c[i]);
    }
    p
}

/// The fit at `x` (at or above the first piece's start): the piece
/// holding `x`, at `t = x - z` (`z` a triple-double, so `t` is rounded
/// once), `t g(t)` around a zero, `g(t)` elsewhere; `g = c0 + t (c1 + t
/// r(t))` with the last two steps carried in double-doubles, so that the
/// rounding of `r` (a small part of the result) is the main error.
pub(crate) fn pieces(ps: &[Piece], x: f64) -> f64 {
    let mut i = 0;
    while i + 1 < ps.len() && x >= ps[i].end {
        i += 1;
    }
    let p = &ps[i];
    let t = ((x - p.z[0]) - p.z[1]) - p.z[2];
    let c = p.c;
    let r = horner(&c[2..], t);
    // q = c1 + t r
    let (a, ae) = two_prod(t, r);
    let (q, qe) = two_sum(c[1], a);
    let ql = qe + ae;
    // g = c0 + t q
    let (b, be) = two_prod(t, q);
    let (g, ge) = two_sum(c[0], b);
    let gl = ge + fma(t, ql, be);
    if p.zero {
        let (m, me) = two_prod(t, g);
        m + fma(t, gl, me)
    } else {
        g + gl
    }
}

/// `ln |Gamma(x)|` from the fits around its negative zeros, where `x` is
/// in one of their stretches (`|ln |Gamma|| < 3/4` there).
pub(crate) fn lgamma_near_zero(x: f64) -> Option<f64> {
    for (lo, hi, ps) in super::lgamma_tables::LGAMMA_ZEROS {
        if x >= lo && x <= hi {
            return Some(pieces(ps, x));
        }
    }
    None
}
