//! The ulp sweep of `GpuFloat` and `FloatExt`: inputs over each function's
//! domain, references from the host's libm (glibc), each result's error in
//! ulps, and the bounds the documentation states.
//!
//! - Inputs ([`inputs`]): a sweep of bit patterns (so every binade, the
//!   subnormals, NaNs and infinities), the specials, uniform samples of
//!   the ranges where each function changes (its reduction's boundaries,
//!   overflow thresholds), and the neighbours (a few ulps either side) of
//!   its zeros and poles (`sin` at multiples of `pi/2`, `ln` at 1, ...).
//! - References ([`reference()`]): glibc's `f64` function of the exact
//!   (widened) arguments; for `sinpi`, `cospi` an exact reduction then
//!   glibc; the exactly specified functions (`floor`, `fmod`-based,
//!   `frexp`, ...) against std's or glibc's own in the same type, bit for
//!   bit.
//! - Errors ([`ulps_f32`], [`ulps_f64`]): for `f32`, `|got - want| /
//!   ulp(want)` with `want` the `f64` reference (fractions of an ulp); for
//!   `f64`, the distance in representable numbers between the result and
//!   glibc's (an integer, counting glibc's own error too). A result of the
//!   wrong class (NaN, infinity, a zero of the other sign) counts as
//!   infinitely wrong.

use lab_runtime::{Gpu, Result};

use crate::bessel_check;
use crate::math::{FUNCTIONS, eval_f32, eval_f64, function_id, math_f32, math_f64};
use crate::math_inputs::{points, ranges};

/// The bound of an `f32` function rounded once from the `f64` algorithm:
/// half an ulp, plus `2^-26` for a result within the `f64` error of a
/// midpoint.
const R1: f64 = 0.5 + 1.0 / (1u64 << 26) as f64;

/// Each function's documented bound in ulps, `(name, f32, f64)`; 0 means
/// bit-equal to the reference. The `f32` functions round the `f64`
/// algorithm's result once (`R1`), but `exp` and `exp2`, in `f32`
/// arithmetic (an ulp). The `f64`
/// figures are distances to glibc's result, whose own error is in them:
/// glibc's `log10` at `1.1470571642230465` is 2 ulps from ours, and ours is
/// the correctly rounded one (mpmath).
pub const BOUNDS: [(&str, f64, f64); 62] = [
    ("floor", 0.0, 0.0),
    ("ceil", 0.0, 0.0),
    ("round", 0.0, 0.0),
    ("trunc", 0.0, 0.0),
    ("fract", 0.0, 0.0),
    ("abs", 0.0, 0.0),
    ("signum", 0.0, 0.0),
    ("copysign", 0.0, 0.0),
    ("mul_add", 0.0, 0.0),
    ("div_euclid", 0.0, 0.0),
    ("rem_euclid", 0.0, 0.0),
    ("powi", R1, 1.0),
    ("powf", R1, 1.0),
    ("sqrt", 0.0, 0.0),
    ("exp", 1.0, 1.0),
    ("exp2", 1.0, 1.0),
    ("ln", R1, 1.0),
    ("log", R1, 2.0),
    ("log2", R1, 1.0),
    ("log10", R1, 2.0),
    ("cbrt", R1, 1.0),
    ("hypot", R1, 1.0),
    ("sin", R1, 1.0),
    ("cos", R1, 1.0),
    ("tan", R1, 2.0),
    ("asin", R1, 1.0),
    ("acos", R1, 1.0),
    ("atan", R1, 1.0),
    ("atan2", R1, 1.0),
    ("sin_cos", R1, 1.0),
    ("exp_m1", R1, 1.0),
    ("ln_1p", R1, 1.0),
    ("sinh", R1, 2.0),
    ("cosh", R1, 2.0),
    ("tanh", R1, 3.0),
    ("asinh", R1, 1.0),
    ("acosh", R1, 2.0),
    ("atanh", R1, 1.0),
    ("cospi", R1, 1.0),
    ("frexp", 0.0, 0.0),
    ("unbiased_exp", 0.0, 0.0),
    ("ldexp", 0.0, 0.0),
    ("log1p", R1, 1.0),
    ("rcbrt", R1, 1.0),
    ("saturate", 0.0, 0.0),
    ("scale_by_n", 0.0, 0.0),
    ("sincospi", R1, 1.0),
    ("sinpi", R1, 1.0),
    ("error_function", R1, 1.0),
    ("complementary_error_function", R1, 3.0),
    ("scaled_complementary_error_function", R1, 4.0),
    ("norm_cdf", R1, 3.0),
    ("inv_complementary_error_function", R1, 3.0),
    ("inv_norm_cdf", R1, 3.0),
    ("gamma", R1, 6.0),
    // Below -4 where |result| < 1, in units of EPSILON ([`absolute_ulps`]).
    // From glibc's lgamma near -3.18, which mpmath puts 3.1 ulps off at
    // -3.1777736990077936 (ours 0.9).
    ("log_gamma", R1, 5.0),
    // Against mpmath's correctly rounded values; jn and yn where |result|
    // is near a zero in units of their scale ([`bessel_check::absolute`]).
    ("j0", R1, 2.0),
    ("j1", R1, 1.0),
    ("jn", R1, 1.0),
    ("y0", R1, 2.0),
    ("y1", R1, 1.0),
    ("yn", R1, 1.0),
];

/// The documented bound of `name`, `(f32, f64)`.
pub fn bound(name: &str) -> (f64, f64) {
    let (_, a, b) = BOUNDS.iter().find(|(n, _, _)| *n == name).expect("every function has a bound");
    (*a, *b)
}

// glibc, which std links on Linux: the exactly specified functions' own
// references.
unsafe extern "C" {
    fn frexp(x: f64, e: *mut i32) -> f64;
    fn frexpf(x: f32, e: *mut i32) -> f32;
    fn ilogb(x: f64) -> i32;
    fn ilogbf(x: f32) -> i32;
    fn ldexp(x: f64, n: i32) -> f64;
    fn ldexpf(x: f32, n: i32) -> f32;
    // std implements these three in Rust, with errors far above an ulp
    // near some arguments (atanh near -1); glibc's are within about one.
    fn asinh(x: f64) -> f64;
    fn acosh(x: f64) -> f64;
    fn atanh(x: f64) -> f64;
    fn erf(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
    fn tgamma(x: f64) -> f64;
    fn lgamma(x: f64) -> f64;
}

/// SplitMix64: the sweeps' deterministic random bits.
pub struct Bits(u64);

impl Bits {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// The float type of a sweep.
pub trait Float: Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// Every bit pattern at a stride, plus a jitter (`i` of `n`).
    fn spread(i: u64, n: u64, bits: &mut Bits) -> Self;
    /// Random bits.
    fn random(bits: &mut Bits) -> Self;
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
    /// The exact value.
    fn to_f64(self) -> f64;
    /// The next value up (`k` steps), down for negative `k`.
    fn step(self, k: i64) -> Self;
}

impl Float for f32 {
    fn spread(i: u64, n: u64, bits: &mut Bits) -> f32 {
        let stride = (1u64 << 32) / n;
        f32::from_bits((i * stride + bits.next() % stride.max(1)) as u32)
    }
    fn random(bits: &mut Bits) -> f32 {
        f32::from_bits(bits.next() as u32)
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn step(self, k: i64) -> f32 {
        if !self.is_finite() {
            return self;
        }
        let ord = |v: f32| {
            if v.to_bits() >> 31 == 1 { -((v.to_bits() & !(1 << 31)) as i64) } else { v.to_bits() as i64 }
        };
        let o = ord(self) + k;
        let v = if o < 0 { f32::from_bits((-o) as u32 | 1 << 31) } else { f32::from_bits(o as u32) };
        if v.is_nan() { self } else { v }
    }
}

impl Float for f64 {
    fn spread(i: u64, n: u64, bits: &mut Bits) -> f64 {
        let stride = u64::MAX / n;
        f64::from_bits(i * stride + bits.next() % stride)
    }
    fn random(bits: &mut Bits) -> f64 {
        f64::from_bits(bits.next())
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn step(self, k: i64) -> f64 {
        if !self.is_finite() {
            return self;
        }
        let ord = |v: f64| {
            if v.to_bits() >> 63 == 1 { -((v.to_bits() & !(1 << 63)) as i64) } else { v.to_bits() as i64 }
        };
        let o = ord(self) + k;
        let v = if o < 0 { f64::from_bits((-o) as u64 | 1 << 63) } else { f64::from_bits(o as u64) };
        if v.is_nan() { self } else { v }
    }
}

/// Values every function meets.
const SPECIALS: [f64; 18] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    3.4028234663852886e38,
    1.401298464324817e-45,
];

/// The inputs of `name`: `(x, y)`, about `n` bit patterns, the specials,
/// `n/8` samples of each range, and 9 neighbours of each point.
pub fn inputs<T: Float>(name: &str, n: u64) -> (Vec<T>, Vec<T>) {
    if let Some((x, y)) = bessel_check::inputs(name, std::mem::size_of::<T>() == 4) {
        return (x.into_iter().map(T::from_f64).collect(), y.into_iter().map(T::from_f64).collect());
    }
    let mut bits = Bits(0x5eed ^ name.len() as u64);
    let mut x: Vec<T> = (0..n).map(|i| T::spread(i, n, &mut bits)).collect();
    x.extend(SPECIALS.iter().map(|&v| T::from_f64(v)));
    for (lo, hi) in ranges(name) {
        x.extend((0..n / 8).map(|_| T::from_f64(bits.uniform(lo, hi))));
    }
    for p in points(name) {
        let p = T::from_f64(p);
        x.extend((-4..=4).map(|k| p.step(k)));
        let neg = T::from_f64(-p.to_f64());
        x.extend((-4..=4).map(|k| neg.step(k)));
    }
    let m = x.len();
    let mut y: Vec<T> = match name {
        "powi" => (0..m).map(|_| T::from_f64((bits.next() % 129) as f64 - 64.0)).collect(),
        "ldexp" | "scale_by_n" => (0..m).map(|_| T::from_f64((bits.next() % 2401) as f64 - 1200.0)).collect(),
        "powf" => (0..m)
            .map(|i| if i % 2 == 0 { T::random(&mut bits) } else { T::from_f64(bits.uniform(-200.0, 200.0)) })
            .collect(),
        "log" => (0..m)
            .map(|i| if i % 2 == 0 { T::random(&mut bits) } else { T::from_f64(bits.uniform(0.0, 100.0)) })
            .collect(),
        _ => (0..m).map(|_| T::random(&mut bits)).collect(),
    };
    // Pairs of similar magnitude, and pow's bases near 1 and in (0, 4).
    let pairs = match name {
        "atan2" | "hypot" | "copysign" | "div_euclid" | "rem_euclid" | "mul_add" => n / 4,
        "powf" | "log" => n / 2,
        _ => 0,
    };
    for i in 0..pairs {
        let (a, b) = match name {
            "powf" if i % 3 == 0 => (bits.uniform(0.0, 4.0), bits.uniform(-300.0, 300.0)),
            "powf" if i % 3 == 1 => (1.0 + bits.uniform(-1e-3, 1e-3), bits.uniform(-1e5, 1e5)),
            // Results across the whole range: y ln x in [-745, 709.7].
            "powf" => {
                let x = bits.uniform(0.5, 2.0);
                (x, bits.uniform(-745.0, 709.7) / x.ln())
            }
            "log" => (bits.uniform(0.0, 100.0), bits.uniform(0.0, 4.0)),
            _ => (bits.uniform(-10.0, 10.0), bits.uniform(-10.0, 10.0)),
        };
        x.push(T::from_f64(a));
        y.push(T::from_f64(b));
    }
    (x, y)
}

/// `(sin pi x, cos pi x)` from an exact reduction (`r = x - 2 rint(x/2)`,
/// `|r| <= 1`), `pi r` as a double-double, then glibc.
fn sincospi_ref(x: f64) -> (f64, f64) {
    if !x.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let r = x - 2.0 * (x * 0.5).round_ties_even();
    let (h, l) = (r * std::f64::consts::PI, r.mul_add(std::f64::consts::PI, -(r * std::f64::consts::PI)));
    let l = l + r * 1.2246467991473532e-16;
    let s = if r == 0.0 || r.abs() == 1.0 { 0.0f64.copysign(x) } else { h.sin() + l * h.cos() };
    let c = if r.abs() == 0.5 { 0.0 } else { h.cos() - l * h.sin() };
    (s, c)
}

/// `e^(x^2) erfc(x)` from glibc: `e^(x^2)` as `e^h (1 + l)` with `x^2 =
/// h + l` exactly (an error in `h` is a relative error of `e^h`); from 26,
/// where `erfc` underflows, the asymptotic series `(1 - 1/(2x^2) + 3/(2x^2)^2
/// - ...)/(x sqrt(pi))` to 12 terms (the next below `10^-22`).
fn erfcx_ref(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < -27.0 {
        return f64::INFINITY;
    }
    if x >= 26.0 {
        let w = 1.0 / (2.0 * x * x);
        let (mut term, mut sum) = (1.0, 1.0);
        for n in 1..=12 {
            term *= -((2 * n - 1) as f64) * w;
            sum += term;
        }
        return sum / std::f64::consts::PI.sqrt() / x;
    }
    let h = x * x;
    let l = x.mul_add(x, -h);
    let e = h.exp() * (1.0 + l);
    // SAFETY: glibc's erfc has no preconditions.
    let c = unsafe { erfc(x) };
    if x >= -0.5 { e * c } else { 2.0 * e - erfcx_ref(-x) }
}

/// `erfc(-x/sqrt(2))/2` from glibc, with the first-order correction for
/// the rounding of `-x/sqrt(2)` (`erfc(a + d) = erfc(a) - 2/sqrt(pi)
/// e^(-a^2) d`).
fn norm_cdf_ref(x: f64) -> f64 {
    if x.is_infinite() {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    let c = std::f64::consts::FRAC_1_SQRT_2;
    let a = -x * c;
    let d = (-x).mul_add(c, -a) + -x * -4.833646656726457e-17;
    // SAFETY: glibc's erfc has no preconditions.
    let e = unsafe { erfc(a) };
    0.5 * (e - std::f64::consts::FRAC_2_SQRT_PI * (-a * a).exp() * d)
}

/// `x` with `erfc(x) = y`, by bisection on the doubles (64 halvings of
/// the ordered bit patterns of `[0, inf)`) on glibc's `erf(x) = 1 - y`
/// (exact) for `y` in `[1/2, 1]`, on `ln erfc(x) = ln y` below (from
/// glibc's `erfc` and `exp` through [`erfcx_ref`]), and
/// `-erfcinv(2 - y)` above 1: independent of our Newton iterations, and
/// as good as glibc's functions (within about `1/(2x^2)` ulps of `x`).
fn erfcinv_ref(y: f64) -> f64 {
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
        return -erfcinv_ref(2.0 - y);
    }
    if y == 1.0 {
        return 0.0;
    }
    // ln erfc(x) = ln erfcx(x) - x^2, which does not underflow (glibc's
    // erfc of a subnormal result has few bits, so its root would be
    // ill-defined there), with x^2 = h + l exactly.
    let ln_erfc = |x: f64| {
        let h = x * x;
        (erfcx_ref(x).ln() - x.mul_add(x, -h)) - h
    };
    let target = y.ln();
    // Whether x is at or below the root.
    let below = |x: f64| {
        // SAFETY: glibc's erf has no preconditions.
        if y >= 0.5 { unsafe { erf(x) <= 1.0 - y } } else { ln_erfc(x) >= target }
    };
    let (mut lo, mut hi) = (0u64, f64::INFINITY.to_bits());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(f64::from_bits(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // The nearer of the two doubles around the root, by the residual.
    let (a, b) = (f64::from_bits(lo), f64::from_bits(hi));
    // SAFETY: as above.
    let r =
        |x: f64| if y >= 0.5 { unsafe { (erf(x) - (1.0 - y)).abs() } } else { (ln_erfc(x) - target).abs() };
    if r(b) < r(a) { b } else { a }
}

/// The reference of an approximated function `name` at the exact `(x,
/// y)`: glibc's `f64` results, `(first, second)`.
pub fn reference(name: &str, x: f64, y: f64) -> (f64, f64) {
    let one = |v: f64| (v, 0.0);
    // Kahan and McDonald's worst case for the reduction by pi/2, where
    // glibc (2.36 here) is 8 ulps off on cos and 14 on tan: the correctly
    // rounded values, from mpmath at 3000 bits.
    if x.abs() == 6381956970095103.0 * 2f64.powi(797) {
        let (s, c, t) = (1.0f64.copysign(x), -4.687165924254628e-19, -2.133485385753704e18f64.copysign(x));
        match name {
            "sin" => return one(s),
            "cos" => return one(c),
            "tan" => return one(t),
            "sin_cos" => return (s, c),
            _ => {}
        }
    }
    match name {
        "powi" => one(x.powf(y)),
        "powf" => one(x.powf(y)),
        "exp" => one(x.exp()),
        "exp2" => one(x.exp2()),
        "ln" => one(x.ln()),
        "log" => one(x.ln() / y.ln()),
        "log2" => one(x.log2()),
        "log10" => one(x.log10()),
        "cbrt" => one(x.cbrt()),
        "hypot" => one(x.hypot(y)),
        "sin" => one(x.sin()),
        "cos" => one(x.cos()),
        "tan" => one(x.tan()),
        "asin" => one(x.asin()),
        "acos" => one(x.acos()),
        "atan" => one(x.atan()),
        "atan2" => one(x.atan2(y)),
        "sin_cos" => x.sin_cos(),
        "exp_m1" => one(x.exp_m1()),
        "ln_1p" | "log1p" => one(x.ln_1p()),
        "sinh" => one(x.sinh()),
        "cosh" => one(x.cosh()),
        "tanh" => one(x.tanh()),
        // SAFETY: glibc's functions of one double have no preconditions.
        "asinh" => one(unsafe { asinh(x) }),
        // SAFETY: as above.
        "acosh" => one(unsafe { acosh(x) }),
        // SAFETY: as above.
        "atanh" => one(unsafe { atanh(x) }),
        "cospi" => one(sincospi_ref(x).1),
        "sinpi" => one(sincospi_ref(x).0),
        "sincospi" => sincospi_ref(x),
        "rcbrt" => one(1.0 / x.cbrt()),
        // SAFETY: glibc's functions of one double have no preconditions.
        "error_function" => one(unsafe { erf(x) }),
        // SAFETY: as above.
        "complementary_error_function" => one(unsafe { erfc(x) }),
        "scaled_complementary_error_function" => one(erfcx_ref(x)),
        "norm_cdf" => one(norm_cdf_ref(x)),
        "inv_complementary_error_function" => one(erfcinv_ref(x)),
        // SAFETY: glibc's functions of one double have no preconditions.
        "gamma" => one(unsafe { tgamma(x) }),
        // SAFETY: as above (lgamma writes glibc's signgam, unread here).
        "log_gamma" => one(unsafe { lgamma(x) }),
        "inv_norm_cdf" => one(match erfcinv_ref(2.0 * x) {
            0.0 => 0.0,
            v => -std::f64::consts::SQRT_2 * v,
        }),
        "j0" | "j1" | "jn" | "y0" | "y1" | "yn" => one(bessel_check::reference(name, x, y as i32)),
        _ => panic!("{name} has no approximate reference"),
    }
}

macro_rules! exact_reference {
    ($name:ident, $t:ty, $frexp:ident, $ilogb:ident, $ldexp:ident, $saturate:expr) => {
        /// The reference of an exactly specified function, in its own
        /// type: `Some((first, second, integer))`, `None` if `name` is
        /// approximated.
        pub fn $name(name: &str, x: $t, y: $t) -> Option<($t, $t, i32)> {
            let one = |v: $t| Some((v, 0.0, 0));
            let n = y as i32;
            match name {
                "floor" => one(x.floor()),
                "ceil" => one(x.ceil()),
                "round" => one(x.round()),
                "trunc" => one(x.trunc()),
                "fract" => one(x.fract()),
                "abs" => one(x.abs()),
                "signum" => one(x.signum()),
                "copysign" => one(x.copysign(y)),
                "mul_add" => one(x.mul_add(y, x)),
                "div_euclid" => one(x.div_euclid(y)),
                "rem_euclid" => one(x.rem_euclid(y)),
                "sqrt" => one(x.sqrt()),
                "saturate" => one($saturate(x)),
                "frexp" => {
                    let mut e = 0;
                    // SAFETY: glibc's frexp writes one i32 through the pointer.
                    let m = unsafe { $frexp(x, &mut e) };
                    Some((m, 0.0, if x.is_finite() { e } else { 0 }))
                }
                // SAFETY: glibc's ilogb has no preconditions.
                "unbiased_exp" => Some((0.0, 0.0, unsafe { $ilogb(x) })),
                // SAFETY: glibc's ldexp has no preconditions.
                "ldexp" | "scale_by_n" => one(unsafe { $ldexp(x, n) }),
                _ => None,
            }
        }
    };
}

exact_reference!(exact_f32, f32, frexpf, ilogbf, ldexpf, |x: f32| if x > 0.0 { x.min(1.0) } else { 0.0 });
exact_reference!(exact_f64, f64, frexp, ilogb, ldexp, |x: f64| x.clamp(0.0, 1.0));

/// Whether two results are the same value (NaNs equal, zeros by sign).
fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The error of an `f32` result against the exact value `want` (an `f64`
/// reference), in ulps of `want`'s binade (`2^-149` below the normals).
pub fn ulps_f32(got: f32, want: f64) -> f64 {
    if same_f64(got as f64, want as f32 as f64) && !(got.is_finite() && got != 0.0) {
        return 0.0;
    }
    if got.is_nan() || want.is_nan() || got.is_infinite() || (got == 0.0 && want == 0.0) {
        return f64::INFINITY;
    }
    let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-126);
    (got as f64 - want).abs() / 2f64.powi(e - 23)
}

/// The error of an `f64` result against glibc's `want`: how many doubles
/// apart they are.
pub fn ulps_f64(got: f64, want: f64) -> f64 {
    if same_f64(got, want) {
        return 0.0;
    }
    if got.is_nan() || want.is_nan() || (got == 0.0 && want == 0.0) {
        return f64::INFINITY;
    }
    let ord = |v: f64| {
        if v.to_bits() >> 63 == 1 { -((v.to_bits() & !(1 << 63)) as i128) } else { v.to_bits() as i128 }
    };
    (ord(got) - ord(want)).unsigned_abs() as f64
}

/// `|got - want|` in units of `eps` (an ulp of 1): `log_gamma`'s error
/// below -4 where `|ln Gamma| < 1`, whose zeros there (`-4.039...`,
/// `-4.991...`, ..., two by each pole to -17) no evaluation by
/// reflection resolves to a relative error (its terms cancel); the four
/// above -4 have fits of their own. Also the Bessel functions' near their
/// zeros ([`bessel_check::absolute`]).
pub fn absolute_ulps(got: f64, want: f64, eps: f64) -> f64 {
    if same_f64(got, want) {
        return 0.0;
    }
    if got.is_nan() || want.is_nan() {
        return f64::INFINITY;
    }
    (got - want).abs() / eps
}

/// One function's sweep: the maximum error and where.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The function.
    pub name: &'static str,
    /// The maximum error in ulps (0 for bit-equal).
    pub max_ulps: f64,
    /// The worst input `(x, y)` and result, as text.
    pub worst: String,
    /// How many inputs.
    pub count: usize,
}

/// Measures function `name` in one type from its results (`out`, `out2`,
/// `iout`, one per input).
macro_rules! measure {
    ($fn_name:ident, $t:ty, $exact:ident, $ulps:ident) => {
        /// The maximum error of `name`'s results over its inputs.
        pub fn $fn_name(
            name: &'static str,
            x: &[$t],
            y: &[$t],
            out: &[$t],
            out2: &[$t],
            iout: &[i32],
        ) -> Measured {
            let mut worst = (0.0f64, String::new());
            for i in 0..x.len() {
                let e = if let Some((a, b, k)) = $exact(name, x[i], y[i]) {
                    let same = same_f64(a as f64, out[i] as f64)
                        && same_f64(b as f64, out2[i] as f64)
                        && k == iout[i];
                    if same { 0.0 } else { f64::INFINITY }
                } else {
                    let (a, b) = reference(name, x[i] as f64, y[i] as f64);
                    let two = matches!(name, "sin_cos" | "sincospi");
                    let e = if name == "log_gamma" && (x[i] as f64) < -4.0 && a.abs() < 1.0 {
                        absolute_ulps(out[i] as f64, a, <$t>::EPSILON as f64)
                    } else if let Some((below, unit)) =
                        bessel_check::absolute(name, x[i] as f64, y[i] as i32, size_of::<$t>() == 4)
                        && a.abs() < below
                    {
                        absolute_ulps(out[i] as f64, a, unit * <$t>::EPSILON as f64)
                    } else {
                        $ulps(out[i], a)
                    };
                    if two { e.max($ulps(out2[i], b)) } else { e }
                };
                if e > worst.0 || (i == 0 && worst.1.is_empty()) {
                    worst = (
                        e,
                        format!(
                            "x = {:e} ({:#x}), y = {:e}: got ({:e}, {:e}, {})",
                            x[i],
                            x[i].to_bits(),
                            y[i],
                            out[i],
                            out2[i],
                            iout[i]
                        ),
                    );
                }
            }
            Measured { name, max_ulps: worst.0, worst: worst.1, count: x.len() }
        }
    };
}

measure!(measure_f32, f32, exact_f32, ulps_f32);
measure!(measure_f64, f64, exact_f64, ulps_f64);

/// A sweep's measurements: `(f32, f64)`, one per function.
pub type Sweep = (Vec<Measured>, Vec<Measured>);

/// Every function over its sweep of about `n` inputs, evaluated on the
/// host by the kernels' own bodies ([`eval_f32`], [`eval_f64`]): what the
/// emulator computes. `(f32 results, f64 results)`.
pub fn sweep_host(n: u64) -> Sweep {
    let mut r32 = Vec::new();
    let mut r64 = Vec::new();
    for (id, name) in FUNCTIONS.iter().enumerate() {
        let (x, y) = inputs::<f32>(name, n);
        let (mut a, mut b, mut k) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..x.len() {
            let (p, q, j) = eval_f32(id as u32, x[i], y[i]);
            a.push(p);
            b.push(q);
            k.push(j);
        }
        r32.push(measure_f32(name, &x, &y, &a, &b, &k));
        let (x, y) = inputs::<f64>(name, n);
        let (mut a, mut b, mut k) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..x.len() {
            let (p, q, j) = eval_f64(id as u32, x[i], y[i]);
            a.push(p);
            b.push(q);
            k.push(j);
        }
        r64.push(measure_f64(name, &x, &y, &a, &b, &k));
    }
    (r32, r64)
}

/// Every function over its sweep, on `gpu` through the kernels
/// [`math_f32()`] and [`math_f64()`]: each result's error within the
/// function's bound, and each result bit-equal to the host's evaluation
/// (the instructions are correctly rounded, so the emulator's model is
/// exact). `Err` names the first function that fails either way.
pub fn sweep_on(gpu: &Gpu, n: u64) -> Result<std::result::Result<Sweep, String>> {
    let mut r32 = Vec::new();
    let mut r64 = Vec::new();
    macro_rules! run {
        ($t:ty, $kernel:ident, $eval:ident, $measure:ident, $results:ident, $which:expr) => {
            for name in FUNCTIONS {
                let id = function_id(name).expect("listed");
                let (x, y) = inputs::<$t>(name, n);
                let (dx, dy) = (gpu.upload(&x)?, gpu.upload(&y)?);
                let mut out = gpu.alloc::<$t>(x.len())?;
                let mut out2 = gpu.alloc::<$t>(x.len())?;
                let mut iout = gpu.alloc::<i32>(x.len())?;
                let blocks = x.len().div_ceil(128) as u32;
                // SAFETY: every output has x.len() elements; the kernel
                // guards i < x.len().
                unsafe { $kernel::launch(gpu, blocks, 128u32, 0, id, &dx, &dy, &mut out, &mut out2, &mut iout) }?;
                let (a, b, k) = (gpu.download(&out)?, gpu.download(&out2)?, gpu.download(&iout)?);
                for i in 0..x.len() {
                    let (p, q, j) = $eval(id, x[i], y[i]);
                    let same = same_f64(p as f64, a[i] as f64) && same_f64(q as f64, b[i] as f64) && j == k[i];
                    if !same {
                        return Ok(Err(format!(
                            "{name} ({}): at x = {:e} ({:#x}), y = {:e} the device gives ({:e}, {:e}, {}), the host \
                             model ({:e}, {:e}, {})",
                            $which,
                            x[i],
                            x[i].to_bits(),
                            y[i],
                            a[i],
                            b[i],
                            k[i],
                            p,
                            q,
                            j
                        )));
                    }
                }
                let m = $measure(name, &x, &y, &a, &b, &k);
                let (b32, b64) = bound(name);
                let limit = if $which == "f32" { b32 } else { b64 };
                if m.max_ulps > limit {
                    return Ok(Err(format!(
                        "{name} ({}): {} ulps, bound {limit}; worst {}",
                        $which, m.max_ulps, m.worst
                    )));
                }
                $results.push(m);
            }
        };
    }
    run!(f32, math_f32, eval_f32, measure_f32, r32, "f32");
    run!(f64, math_f64, eval_f64, measure_f64, r64, "f64");
    Ok(Ok((r32, r64)))
}

/// Results over their bounds, one line each.
pub fn over_bounds(r32: &[Measured], r64: &[Measured]) -> Vec<String> {
    let mut bad = Vec::new();
    for (results, which) in [(r32, 0), (r64, 1)] {
        for m in results {
            let b = bound(m.name);
            let limit = if which == 0 { b.0 } else { b.1 };
            if m.max_ulps > limit {
                let t = if which == 0 { "f32" } else { "f64" };
                bad.push(format!("{} ({t}): {} ulps, bound {limit}; worst {}", m.name, m.max_ulps, m.worst));
            }
        }
    }
    bad
}

/// The table of measured maxima, as markdown rows `| name | f32 | f64 |`.
pub fn table(r32: &[Measured], r64: &[Measured]) -> String {
    let mut s =
        String::from("| function | f32 max ulp | f64 max ulp | inputs |\n| --- | --- | --- | --- |\n");
    for (a, b) in r32.iter().zip(r64) {
        s += &format!("| `{}` | {:.4} | {} | {} |\n", a.name, a.max_ulps, b.max_ulps, a.count + b.count);
    }
    s
}
