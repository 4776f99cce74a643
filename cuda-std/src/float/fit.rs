//! Piecewise fitted polynomials ([`Piece`]), as the generators
//! `cuda-std/scripts/bessel_tables.py` and `lgamma_tables.py` write them:
//! the Bessel functions below 20 and `ln |Gamma|` around its negative
//! zeros.

use super::bessel_tables::Piece;
use super::imp::two_prod;
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
/// once), `t g(t)` around a zero (the product `t c0` exact), `g(t)`
/// elsewhere.
pub(crate) fn pieces(ps: &[Piece], x: f64) -> f64 {
    let mut i = 0;
    while i + 1 < ps.len() && x >= ps[i].end {
        i += 1;
    }
    let p = &ps[i];
    let t = ((x - p.z[0]) - p.z[1]) - p.z[2];
    let c = p.c;
    let q = horner(&c[1..], t);
    if p.zero {
        let (a, ae) = two_prod(t, c[0]);
        a + fma(t * t, q, ae)
    } else {
        fma(t, q, c[0])
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
