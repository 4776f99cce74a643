//! Trigonometry: the reductions by `pi/2`, `sin`, `cos`, `tan`, their `pi` multiples and inverses.

use super::*;

// ---------------------------------------------------------------------
// Trigonometry.

/// `(-1)^j/(2j+1)!`, the coefficients of `sin(r)/r` in `r^2`.
pub(super) const SIN_C: [f64; 14] = {
    let mut c = [0.0; 14];
    let mut j = 0;
    while j < 14 {
        c[j] = if j % 2 == 0 { INV_FACT[2 * j + 1] } else { -INV_FACT[2 * j + 1] };
        j += 1;
    }
    c
};

/// `(-1)^j/(2j)!`, the coefficients of `cos(r)` in `r^2`.
pub(super) const COS_C: [f64; 11] = {
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
pub(super) fn rem_pio2_large(ax: f64) -> (i32, f64, f64) {
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
pub(super) fn atan_01(th: f64, tl: f64) -> (f64, f64) {
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
pub(super) fn angle(y: (f64, f64), x: (f64, f64)) -> (f64, f64) {
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
pub(super) fn cos_of_asin(ax: f64) -> (f64, f64) {
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
