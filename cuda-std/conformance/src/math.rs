//! `GpuFloat` and `FloatExt` on every input of a sweep: thread `i`
//! evaluates function `id` ([`FUNCTIONS`]) at `x[i]` (and `y[i]` for the
//! functions of two arguments; as an `i32` for `powi`, `ldexp`,
//! `scale_by_n`, `jn` and `yn`), writing the result, the second result (`sin_cos`,
//! `sincospi`) and the integer result (`frexp`, `unbiased_exp`).
//! [`eval_f32`] and [`eval_f64`] are the kernels' bodies, which the host
//! sweeps call directly (the emulator runs the same code).

use cuda_std::prelude::*;
use cuda_std::{FloatExt, GpuFloat};

/// Every function, by id: the same for both types.
pub const FUNCTIONS: [&str; 62] = [
    "floor",
    "ceil",
    "round",
    "trunc",
    "fract",
    "abs",
    "signum",
    "copysign",
    "mul_add",
    "div_euclid",
    "rem_euclid",
    "powi",
    "powf",
    "sqrt",
    "exp",
    "exp2",
    "ln",
    "log",
    "log2",
    "log10",
    "cbrt",
    "hypot",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sin_cos",
    "exp_m1",
    "ln_1p",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "cospi",
    "frexp",
    "unbiased_exp",
    "ldexp",
    "log1p",
    "rcbrt",
    "saturate",
    "scale_by_n",
    "sincospi",
    "sinpi",
    "error_function",
    "complementary_error_function",
    "scaled_complementary_error_function",
    "norm_cdf",
    "inv_complementary_error_function",
    "inv_norm_cdf",
    "gamma",
    "log_gamma",
    "j0",
    "j1",
    "jn",
    "y0",
    "y1",
    "yn",
];

/// The id of function `name` in [`FUNCTIONS`].
pub fn function_id(name: &str) -> Option<u32> {
    FUNCTIONS.iter().position(|f| *f == name).map(|i| i as u32)
}

macro_rules! eval {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        #[inline(never)]
        pub fn $name(id: u32, x: $t, y: $t) -> ($t, $t, i32) {
            let one = |v: $t| (v, 0.0, 0);
            let n = y as i32;
            match id {
                0 => one(GpuFloat::floor(x)),
                1 => one(GpuFloat::ceil(x)),
                2 => one(GpuFloat::round(x)),
                3 => one(GpuFloat::trunc(x)),
                4 => one(GpuFloat::fract(x)),
                5 => one(GpuFloat::abs(x)),
                6 => one(GpuFloat::signum(x)),
                7 => one(GpuFloat::copysign(x, y)),
                8 => one(GpuFloat::mul_add(x, y, x)),
                9 => one(GpuFloat::div_euclid(x, y)),
                10 => one(GpuFloat::rem_euclid(x, y)),
                11 => one(GpuFloat::powi(x, n)),
                12 => one(GpuFloat::powf(x, y)),
                13 => one(GpuFloat::sqrt(x)),
                14 => one(GpuFloat::exp(x)),
                15 => one(GpuFloat::exp2(x)),
                16 => one(GpuFloat::ln(x)),
                17 => one(GpuFloat::log(x, y)),
                18 => one(GpuFloat::log2(x)),
                19 => one(GpuFloat::log10(x)),
                20 => one(GpuFloat::cbrt(x)),
                21 => one(GpuFloat::hypot(x, y)),
                22 => one(GpuFloat::sin(x)),
                23 => one(GpuFloat::cos(x)),
                24 => one(GpuFloat::tan(x)),
                25 => one(GpuFloat::asin(x)),
                26 => one(GpuFloat::acos(x)),
                27 => one(GpuFloat::atan(x)),
                28 => one(GpuFloat::atan2(x, y)),
                29 => {
                    let (s, c) = GpuFloat::sin_cos(x);
                    (s, c, 0)
                }
                30 => one(GpuFloat::exp_m1(x)),
                31 => one(GpuFloat::ln_1p(x)),
                32 => one(GpuFloat::sinh(x)),
                33 => one(GpuFloat::cosh(x)),
                34 => one(GpuFloat::tanh(x)),
                35 => one(GpuFloat::asinh(x)),
                36 => one(GpuFloat::acosh(x)),
                37 => one(GpuFloat::atanh(x)),
                38 => one(FloatExt::cospi(x)),
                39 => {
                    let (m, e) = FloatExt::frexp(x);
                    (m, 0.0, e)
                }
                40 => (0.0, 0.0, FloatExt::unbiased_exp(x)),
                41 => one(FloatExt::ldexp(x, n)),
                42 => one(FloatExt::log1p(x)),
                43 => one(FloatExt::rcbrt(x)),
                44 => one(FloatExt::saturate(x)),
                45 => one(FloatExt::scale_by_n(x, n)),
                46 => {
                    let (s, c) = FloatExt::sincospi(x);
                    (s, c, 0)
                }
                47 => one(FloatExt::sinpi(x)),
                48 => one(FloatExt::error_function(x)),
                49 => one(FloatExt::complementary_error_function(x)),
                50 => one(FloatExt::scaled_complementary_error_function(x)),
                51 => one(FloatExt::norm_cdf(x)),
                52 => one(FloatExt::inv_complementary_error_function(x)),
                53 => one(FloatExt::inv_norm_cdf(x)),
                54 => one(FloatExt::gamma(x)),
                55 => one(FloatExt::log_gamma(x)),
                56 => one(FloatExt::j0(x)),
                57 => one(FloatExt::j1(x)),
                58 => one(FloatExt::jn(x, n)),
                59 => one(FloatExt::y0(x)),
                60 => one(FloatExt::y1(x)),
                61 => one(FloatExt::yn(x, n)),
                _ => (0.0, 0.0, 0),
            }
        }
    };
}

eval!(
    /// Function `id` at `(x, y)` in `f32`: (result, second result, integer
    /// result).
    eval_f32,
    f32
);
eval!(
    /// Function `id` at `(x, y)` in `f64`.
    eval_f64,
    f64
);

/// `out[i], out2[i], iout[i] = eval_f32(id, x[i], y[i])` for `i < x.len()`.
#[kernel]
pub unsafe fn math_f32(id: u32, x: &[f32], y: &[f32], out: *mut f32, out2: *mut f32, iout: *mut i32) {
    let i = thread::index_1d() as usize;
    if i < x.len() {
        let (a, b, c) = eval_f32(id, x[i], y[i]);
        // SAFETY: the launch gives every output as many elements as `x`.
        unsafe {
            *out.add(i) = a;
            *out2.add(i) = b;
            *iout.add(i) = c;
        }
    }
}

/// `out[i], out2[i], iout[i] = eval_f64(id, x[i], y[i])` for `i < x.len()`.
#[kernel]
pub unsafe fn math_f64(id: u32, x: &[f64], y: &[f64], out: *mut f64, out2: *mut f64, iout: *mut i32) {
    let i = thread::index_1d() as usize;
    if i < x.len() {
        let (a, b, c) = eval_f64(id, x[i], y[i]);
        // SAFETY: the launch gives every output as many elements as `x`.
        unsafe {
            *out.add(i) = a;
            *out2.add(i) = b;
            *iout.add(i) = c;
        }
    }
}
