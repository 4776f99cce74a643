//! Where the ulp sweep of [`math_check`](crate::math_check) samples each
//! function beyond its bit patterns: the ranges where it changes
//! behaviour and the points (zeros, poles, thresholds) whose neighbours
//! matter.

/// Uniformly sampled ranges where `name` changes behaviour.
pub(crate) fn ranges(name: &str) -> Vec<(f64, f64)> {
    let trig = vec![(-10.0, 10.0), (-1e6, 1e6), (-4e6, 4e6), (-1e-3, 1e-3)];
    match name {
        "exp" => vec![(-750.0, 750.0), (-110.0, 100.0), (-1.0, 1.0)],
        "exp2" => vec![(-1080.0, 1030.0), (-160.0, 130.0), (-1.0, 1.0)],
        "exp_m1" => vec![(-50.0, 720.0), (-1.0, 1.0), (-1e-5, 1e-5)],
        "ln" | "log2" | "log10" => vec![(0.0, 4.0), (0.5, 2.0), (0.0, 1e-300)],
        "ln_1p" | "log1p" => vec![(-1.0, 1.0), (-1e-3, 1e-3), (1.0, 1e6)],
        "sin" | "cos" | "tan" | "sin_cos" => trig,
        "asin" | "acos" => vec![(-1.0, 1.0), (0.99, 1.0)],
        "atan" => vec![(-10.0, 10.0), (-1e-3, 1e-3), (-1e20, 1e20)],
        "sinh" | "cosh" => vec![(-720.0, 720.0), (-100.0, 100.0), (-3.0, 3.0)],
        "tanh" => vec![(-25.0, 25.0), (-1.0, 1.0)],
        "asinh" => vec![(-1e3, 1e3), (-1.0, 1.0)],
        "acosh" => vec![(1.0, 3.0), (1.0, 1e6), (1.0, 1.0001)],
        "atanh" => vec![(-1.0, 1.0), (0.999, 1.0)],
        "cbrt" | "rcbrt" => vec![(-10.0, 10.0)],
        "sinpi" | "cospi" | "sincospi" => vec![(-10.0, 10.0), (-1e4, 1e4), (-1e-3, 1e-3), (-1e15, 1e15)],
        "error_function" | "complementary_error_function" | "scaled_complementary_error_function" => {
            vec![(-6.0, 6.0), (-1.0, 1.0), (0.0, 28.0), (-30.0, 0.0), (-1e-3, 1e-3)]
        }
        "norm_cdf" => vec![(-40.0, 10.0), (-2.0, 2.0)],
        "inv_complementary_error_function" => vec![(0.0, 2.0), (0.0, 1e-3), (0.99, 1.01), (0.47, 0.49)],
        "inv_norm_cdf" => vec![(0.0, 1.0), (0.0, 1e-3), (0.49, 0.51), (0.999, 1.0)],
        "gamma" => vec![(-190.0, 180.0), (0.0, 12.0), (-12.0, 0.0), (0.0, 1e-3), (170.0, 172.0)],
        "log_gamma" => vec![(-30.0, 30.0), (0.0, 1e4), (0.0, 4.0), (-4.0, 0.0), (1e300, 1e305)],
        "round" | "floor" | "ceil" | "trunc" | "fract" => vec![(-10.0, 10.0)],
        "sqrt" => vec![(0.0, 10.0)],
        _ => vec![],
    }
}

/// Points whose neighbourhoods matter: zeros, poles, thresholds.
pub(crate) fn points(name: &str) -> Vec<f64> {
    let pio2 = |k: i32| k as f64 * std::f64::consts::FRAC_PI_2;
    match name {
        "sin" | "cos" | "tan" | "sin_cos" => {
            let mut p: Vec<f64> = (-200..200).map(pio2).collect();
            p.extend((1..200).map(|k| pio2(k * 4099)));
            // The double nearest a multiple of pi/2 (Kahan and McDonald's
            // worst case for the reduction), and a float near one.
            p.extend([6381956970095103.0 * 2f64.powi(797), 1.0e22, 16367173.0, 1.5707963267948966e10]);
            p
        }
        "ln" | "log2" | "log10" | "log" => vec![1.0, 2.0, 10.0, 0.5],
        "ln_1p" | "log1p" => vec![0.0, -0.5, 1.0],
        "asin" | "acos" | "atanh" => vec![1.0, -1.0, 0.5, -0.5],
        "acosh" => vec![1.0, 2.0],
        "exp" => vec![709.782712893384, -745.1332191019411, 88.72283, -103.97208, -87.33655],
        "exp2" => vec![1024.0, -1074.0, 128.0, -149.0, -126.0],
        "exp_m1" => vec![709.782712893384, 88.72283, std::f64::consts::LN_2 / 2.0],
        "sinpi" | "cospi" | "sincospi" => (-40..40).map(|k| k as f64 * 0.5).collect(),
        "tanh" | "sinh" | "cosh" => vec![2.0, 20.0, 710.475860073944, 89.41599],
        // The ends of the erfcx polynomials' intervals.
        "error_function" | "complementary_error_function" | "scaled_complementary_error_function" => {
            (1..=8).map(|k| k as f64 * 0.5).chain([6.0, 27.2, 26.55, 9.19, 10.05]).collect()
        }
        "norm_cdf" => vec![std::f64::consts::FRAC_1_SQRT_2, -38.4, -37.5, -13.0, -14.5],
        "inv_complementary_error_function" => vec![0.0, 1.0, 2.0, 0.479, 5e-324, 1e-300],
        "inv_norm_cdf" => vec![0.0, 0.5, 1.0, 0.2395, 5e-324, 1e-300],
        "gamma" => (-12..=12).map(|k| k as f64 * 0.5).chain([10.0, 171.6, 1e-300]).collect(),
        // ln |Gamma|'s zeros below -2, and the ends of their fits' stretches.
        "log_gamma" => (-12..=12)
            .map(|k| k as f64 * 0.5)
            .chain([10.0, 171.6, 1e-300])
            .chain([-2.4570247382208006, -2.7476826467274127, -3.14358088834998, -3.955294284858598])
            .chain([-4.039361839740537, -4.991544640560048, -5.0082181683225935, -5.998607480080875])
            .chain(cuda_std::float::lgamma_tables::LGAMMA_ZEROS.iter().flat_map(|z| [z.0, z.1]))
            .collect(),
        _ => vec![],
    }
}
