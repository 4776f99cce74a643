//! `f32` functions in `f32` arithmetic, for [`GpuFloat`](super::GpuFloat)'s
//! `f32` methods that do not evaluate the `f64` algorithm: `f32`
//! throughput (twice `f64`'s on H100, 64 times on consumer parts) for a
//! bound of about an ulp instead of half of one.
//!
//! [`exp2f`] and [`expf`]: `x = k + r` (`x ln 2 = k ln 2 + r`), `|r| <=
//! 1/2` (`ln 2 / 2`), the Taylor polynomial of `2^r` (`e^r`) to degree 7
//! (the next term is below `2^-27` of the result), `1 + r q(r)` with the
//! last step one `fma`, then an exact scaling by `2^k` (or one rounding
//! into the subnormals).

use super::consts::{INV_FACT, LN2D_LO};
use super::prim::{fmaf, rintf};

/// `ln 2^n / n!` for `n = 0..=7`, from `f64` (a few `f64` roundings, then
/// one to `f32`).
const EXP2_C: [f32; 8] = {
    let mut c = [0.0f32; 8];
    let mut p = 1.0f64;
    let mut n = 0;
    while n < 8 {
        c[n] = (p * INV_FACT[n]) as f32;
        p *= core::f64::consts::LN_2;
        n += 1;
    }
    c
};

/// `1/n!` for `n = 0..=7`.
const EXP_C: [f32; 8] = {
    let mut c = [0.0f32; 8];
    let mut n = 0;
    while n < 8 {
        c[n] = INV_FACT[n] as f32;
        n += 1;
    }
    c
};

/// `ln 2` in two parts: 16 significant bits (so `k LN2_HI` is exact for
/// `|k| <= 256`) and the rest, rounded.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = ((core::f64::consts::LN_2 - 0.693_145_751_953_125) + LN2D_LO) as f32;

/// `1 + r q(r)`, `q` from the coefficients `c[1..]`.
#[inline(always)]
fn poly(c: &[f32; 8], r: f32) -> f32 {
    let mut q = c[7];
    let mut j = 6;
    while j >= 1 {
        q = fmaf(q, r, c[j]);
        j -= 1;
    }
    fmaf(r, q, 1.0)
}

/// `p 2^k` for `p` in `[0.7, 1.5)` and `-152 <= k <= 128`: one rounding at
/// most (into the subnormals, or to infinity).
#[inline(always)]
fn scale(p: f32, k: i32) -> f32 {
    let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    if k > 127 {
        p * pow2(127) * 2.0
    } else if k >= -126 {
        p * pow2(k)
    } else {
        // p 2^(k + 64) is exact and normal; the last product rounds once.
        p * pow2(k + 64) * pow2(-64)
    }
}

/// `2^x` in `f32` arithmetic. Bound: see [`GpuFloat::exp2`](super::GpuFloat::exp2).
pub fn exp2f(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x >= 128.0 {
        return f32::INFINITY;
    }
    if x < -152.0 {
        return 0.0;
    }
    let k = rintf(x);
    // Exact: both are f32 of the same binade or r is x itself.
    let r = x - k;
    scale(poly(&EXP2_C, r), k as i32)
}

/// `e^x` in `f32` arithmetic. Bound: see [`GpuFloat::exp`](super::GpuFloat::exp).
pub fn expf(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > 88.73 {
        return f32::INFINITY;
    }
    if x < -104.0 {
        return 0.0;
    }
    let k = rintf(x * core::f32::consts::LOG2_E);
    // x - k LN2_HI is exact (k LN2_HI is, and fma rounds the difference,
    // which is representable, once); the low part adds one rounding.
    let r = fmaf(-k, LN2_LO, fmaf(-k, LN2_HI, x));
    scale(poly(&EXP_C, r), k as i32)
}
