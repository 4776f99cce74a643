//! The host reference and the shape checks, against an obvious definition.

use kernel_lab::families::transpose::{check_shape, reference};
use kernel_lab::measure::data::uniform_f32 as random_input;
use kernel_lab::measure::verify::exact as verify_exact;
use proptest::prelude::*;

fn obvious(input: &[f32], nx: usize, ny: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; nx * ny];
    for y in 0..ny {
        for x in 0..nx {
            out[x * ny + y] = input[y * nx + x];
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn reference_matches_definition(nx in 0usize..200, ny in 0usize..200, seed: u64) {
        let input = random_input(nx * ny, seed);
        let got = reference(&input, nx, ny);
        prop_assert!(verify_exact("reference", &got, &obvious(&input, nx, ny)).is_ok());
        // Transposing back gives the input, bit for bit.
        prop_assert!(verify_exact("round trip", &reference(&got, ny, nx), &input).is_ok());
    }
}

#[test]
fn reference_on_awkward_shapes() {
    for (nx, ny) in [(1, 1), (1, 1000), (1000, 1), (33, 31), (31, 33), (257, 65), (0, 7), (7, 0)] {
        let input = random_input(nx * ny, 7);
        verify_exact("reference", &reference(&input, nx, ny), &obvious(&input, nx, ny)).unwrap();
    }
}

#[test]
fn random_input_is_random_and_reproducible() {
    let a = random_input(1 << 17, 1);
    assert_eq!(a, random_input(1 << 17, 1));
    assert_ne!(a, random_input(1 << 17, 2));
    assert!(a.iter().all(|x| (-1.0..1.0).contains(x)));
    assert!(a.iter().filter(|x| **x == 0.0).count() < 4);
    let mean = a.iter().map(|&x| f64::from(x)).sum::<f64>() / a.len() as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
}

#[test]
fn verify_exact_reports_first_difference() {
    let want = vec![1.0f32, 2.0, 3.0];
    let err = verify_exact("k", &[1.0, 2.5, 3.0], &want).unwrap_err();
    assert!(err.contains("1 of 3 elements differ, first at 1"), "{err}");
    // -0.0 and 0.0 are different bits: a transpose must move bits exactly.
    assert!(verify_exact("k", &[-0.0], &[0.0]).is_err());
    assert!(verify_exact("k", &[1.0], &want).is_err());
}

#[test]
fn shape_checks() {
    assert_eq!(check_shape(0, 5).unwrap(), 0);
    assert_eq!(check_shape(8192, 8192).unwrap(), 1 << 26);
    let too_tall = check_shape(1, 65_535 * 32 + 1).unwrap_err().to_string();
    assert!(too_tall.contains("too large"), "{too_tall}");
    assert!(check_shape(u32::MAX as usize + 1, 1).is_err());
}
