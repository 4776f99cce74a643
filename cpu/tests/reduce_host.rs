//! The reduction's host side: references, summation depths, error bounds,
//! and that verification catches a wrong sum.

use gpu::launch::{Kernel, registry};
use gpu::reduce::{fast_add_depth, fast_chunk};
use kernel_lab::families::reduce::{
    Element, add_depth, error_bound, passes, reference_float, reference_i32, verify,
};
use proptest::prelude::*;

/// The `f32` instance of reduction kernel `function`.
fn k(function: &str) -> &'static Kernel {
    registry::find(&format!("{function}_f32")).unwrap()
}

#[test]
fn passes_reduce_to_one_value() {
    assert_eq!(passes(k("reduce_smem"), 0), vec![0]);
    assert_eq!(passes(k("reduce_smem"), 1), vec![1]);
    assert_eq!(passes(k("reduce_smem"), 256), vec![256]);
    assert_eq!(passes(k("reduce_smem"), 257), vec![257, 2]);
    assert_eq!(passes(k("reduce_smem"), 1 << 28), vec![1 << 28, 1 << 20, 1 << 12, 16]);
    assert_eq!(passes(k("reduce_unroll"), 1 << 28), vec![1 << 28, 1 << 18, 1 << 8]);
}

#[test]
fn summation_depths() {
    // 8 tree levels per pass; 3 more for the four strided loads.
    assert_eq!(add_depth(k("reduce_smem"), 1 << 28, 4), Some(4 * 8));
    assert_eq!(add_depth(k("reduce_gmem"), 300, 4), Some(2 * 8));
    assert_eq!(add_depth(k("reduce_unroll"), 1 << 28, 4), Some(3 * (8 + 3)));
    assert_eq!(add_depth(k("reduce_dynamic"), 1 << 28, 4), Some(3 * (8 + 3)));
    assert_eq!(add_depth(k("reduce_shuffle"), 1 << 28, 4), Some(3 * (10 + 3)));
    // 2^28 f32 = 8192 chunks of 32768: 4 + 29 + 32.
    assert_eq!(fast_chunk(4), 32768);
    assert_eq!(add_depth(k("reduce_fast"), 1 << 28, 4), Some(4 + 29 + 32));
    assert_eq!(fast_add_depth(1, 8), 2 + 29 + 1);
    // Every reduction kernel's depth is known to the host.
    for kernel in registry::all().into_iter().filter(|k| k.module().starts_with("gpu::reduce")) {
        assert!(add_depth(kernel, 1000, 4).is_some(), "{}", kernel.name);
    }
}

#[test]
fn error_bound_is_gamma_h_times_magnitude() {
    let u = f32::EPSILON as f64 / 2.0;
    let b = error_bound(10, u, 100.0);
    assert!((b - 10.0 * u / (1.0 - 10.0 * u) * 100.0).abs() < 1e-18);
    assert!(error_bound(20, u, 100.0) > b);
}

#[test]
fn references() {
    assert_eq!(reference_i32(&[i32::MAX, 1]), i32::MIN);
    assert_eq!(reference_i32(&[]), 0);
    // Compensation recovers what a plain f64 sum loses.
    let xs = [1e16f64, 1.0, -1e16, 1.0];
    assert_eq!(reference_float(&xs), (2.0, 2e16 + 2.0));
    let ys: Vec<f32> = (1..=1000).map(|i| i as f32).collect();
    assert_eq!(reference_float(&ys).0, 500_500.0);
}

#[test]
fn verify_catches_one_missing_element() {
    for n in [1usize, 1000, 100_003] {
        let input = f32::random(n, 3);
        let (exact, _) = reference_float(&input);
        for v in registry::module("gpu::reduce").into_iter().filter(|k| k.instance == Some("f32")) {
            assert!(verify(v, &input, exact as f32).is_ok(), "{} n={n}", v.name);
            // Dropping one element of typical size must fail the check.
            let dropped = (exact - input[n / 2] as f64) as f32;
            if input[n / 2].abs() > 0.1 {
                assert!(verify(v, &input, dropped).is_err(), "{} n={n} missed a dropped element", v.name);
            }
        }
        let ints = i32::random(n, 3);
        let sum = reference_i32(&ints);
        let fast = registry::find("reduce_fast_i32").unwrap();
        assert!(verify(fast, &ints, sum).is_ok());
        assert!(verify(fast, &ints, sum.wrapping_add(1)).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Any summation tree within the depth stays within the bound: check it
    /// with a host emulation of kernel 6's order (chunks, 4 accumulators,
    /// pairwise merges) in f32.
    #[test]
    fn bound_holds_for_a_blocked_f32_sum(n in 1usize..200_000, seed: u64) {
        let input = f32::random(n, seed);
        let chunk = fast_chunk(4);
        let partials: Vec<f32> = input.chunks(chunk).map(|c| {
            let mut acc = [0.0f32; 4];
            for (i, &x) in c.iter().enumerate() { acc[i % 4] += x; }
            (acc[0] + acc[1]) + (acc[2] + acc[3])
        }).collect();
        let got: f32 = partials.iter().sum();
        let (exact, magnitude) = reference_float(&input);
        let h = n.div_ceil(4).min(chunk / 4) + 2 + partials.len();
        prop_assert!(((got as f64) - exact).abs() <= error_bound(h, f32::EPSILON as f64 / 2.0, magnitude));
    }
}

#[test]
fn random_values_are_reproducible_and_spread() {
    assert_eq!(i32::random(1000, 1), i32::random(1000, 1));
    let ints = i32::random(100_000, 9);
    assert!(ints.iter().any(|&x| x < -1_000_000_000) && ints.iter().any(|&x| x > 1_000_000_000));
    let doubles = f64::random(100_000, 9);
    assert!(doubles.iter().all(|x| (-1.0..1.0).contains(x)));
    assert!(doubles.iter().filter(|x| **x == 0.0).count() == 0);
}
