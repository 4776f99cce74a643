//! The Bessel functions' part of the ulp sweep ([`math_check`](crate::math_check)):
//! their inputs and references come from a table of mpmath's values
//! (`data/bessel_reference.txt`, made by `cuda-std/scripts/bessel_reference.py`:
//! log-uniform and uniform samples, the fits' hand-over points, and the
//! neighbours of the zeros, up to the 10^5-th), since glibc's `j0` and
//! kin are themselves far off near the zeros. Each reference is the
//! correctly rounded `f64` of the exact value, so an `f64` error is the
//! distance in doubles to it, an `f32` one in `f32` ulps of it (good to
//! `2^-29`).

use std::collections::HashMap;
use std::sync::OnceLock;

/// The table: `name bits x_hex order value_hex` per line.
const TABLE: &str = include_str!("../data/bessel_reference.txt");

/// One line of the table.
struct Entry {
    name: &'static str,
    f32: bool,
    x: f64,
    n: i32,
    value: f64,
}

fn entries() -> &'static [Entry] {
    static E: OnceLock<Vec<Entry>> = OnceLock::new();
    E.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let f: Vec<&'static str> = l.split(' ').collect();
                let bits = |s: &str| f64::from_bits(u64::from_str_radix(s, 16).expect("hex"));
                Entry {
                    name: f[0],
                    f32: f[1] == "32",
                    x: bits(f[2]),
                    n: f[3].parse().expect("order"),
                    value: bits(f[4]),
                }
            })
            .collect()
    })
}

fn values() -> &'static HashMap<(&'static str, u64, i32), f64> {
    static M: OnceLock<HashMap<(&'static str, u64, i32), f64>> = OnceLock::new();
    M.get_or_init(|| entries().iter().map(|e| ((e.name, e.x.to_bits(), e.n), e.value)).collect())
}

/// Whether `name` is one of the Bessel functions.
fn is_bessel(name: &str) -> bool {
    matches!(name, "j0" | "j1" | "jn" | "y0" | "y1" | "yn")
}

/// The inputs of `name` in `f32` (or `f64`): `(x, order)`, the table's
/// and the specials (NaN, infinities, zeros, a negative argument), or
/// `None` if `name` is not a Bessel function.
pub fn inputs(name: &str, f32: bool) -> Option<(Vec<f64>, Vec<f64>)> {
    if !is_bessel(name) {
        return None;
    }
    let (mut x, mut y): (Vec<f64>, Vec<f64>) =
        entries().iter().filter(|e| e.name == name && e.f32 == f32).map(|e| (e.x, e.n as f64)).unzip();
    let orders: &[f64] = match name {
        "jn" | "yn" => &[-3.0, 2.0, 5.0],
        "j1" | "y1" => &[1.0],
        _ => &[0.0],
    };
    for &n in orders {
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, -1.5] {
            // A negative argument only for Y (NaN); J's are in the table.
            if v != -1.5 || name.starts_with('y') {
                x.push(v);
                y.push(n);
            }
        }
    }
    Some((x, y))
}

/// A zero with the sign of `(-1)^n` for each of `x` negative and `n`
/// negative: what the implementation's symmetries give.
fn signed_zero(x: f64, n: i32) -> f64 {
    let odd = n % 2 != 0;
    if odd && (x.is_sign_negative() != (n < 0)) { -0.0 } else { 0.0 }
}

/// The reference of `name` (a Bessel function) at `x`, order `n`: the
/// table's, or the limits at the specials.
pub fn reference(name: &str, x: f64, n: i32) -> f64 {
    let second = name.starts_with('y');
    if x.is_nan() || (second && x < 0.0) {
        return f64::NAN;
    }
    if second && x == 0.0 {
        return if n < 0 && n % 2 != 0 { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    if x.is_infinite() || (!second && x == 0.0) {
        return if x == 0.0 && n == 0 { 1.0 } else { signed_zero(x, n) };
    }
    *values().get(&(name, x.to_bits(), n)).unwrap_or_else(|| panic!("{name}({n}, {x:e}) is not in the table"))
}

/// Where an error counts as absolute: `Some((below, unit))` if, for a
/// result `|want| < below`, the error counts in units of `unit *
/// EPSILON` rather than of the result's own ulp. The unit is the
/// functions' envelope `sqrt(2/(pi max(|x|, |n|)))` (for `|x| > |n|` the
/// amplitude of their oscillation, which they approach from above).
///
/// - `jn`, `yn` (`|n| >= 2`) in `f64`: below the envelope, since the
///   recurrences cannot resolve a result that cancels to near a zero to
///   a relative error;
/// - `j0`, `j1`, `y0`, `y1` in `f64` from `x = 20` (the modulus and phase):
///   below `2^-16` of the envelope, since the phase's terms beyond `c0/x`
///   are rounded doubles (an absolute error of about `2^-56 (1/x)^3` in
///   the phase, so within `2^-16` of a zero in phase that is more than an
///   ulp of the result).
///
/// `None` elsewhere: a relative error (all of `f32`, whose rounding hides
/// the `f64` algorithm's absolute error near the zeros, and `j0`..`y1`
/// in `f64` below 20, zeros included).
pub fn absolute(name: &str, x: f64, n: i32, f32: bool) -> Option<(f64, f64)> {
    if f32 || !x.is_finite() {
        return None;
    }
    let envelope = (2.0 / (std::f64::consts::PI * x.abs().max(n.unsigned_abs() as f64))).sqrt();
    match name {
        "jn" | "yn" if n.unsigned_abs() >= 2 => Some((envelope, envelope)),
        "j0" | "j1" | "y0" | "y1" if x.abs() >= 20.0 => Some((envelope / 65536.0, envelope)),
        _ => None,
    }
}
