//! The SGEMM reference, its error bound and the checks, on the host.

use kernel_lab::families::sgemm::{Problem, check, reference_rows, rows_to_check};
use kernel_lab::measure::data::uniform_f32 as random_input;

fn naive(p: &Problem, a: &[f32], b: &[f32], c0: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0; p.m * p.n];
    for i in 0..p.m {
        for j in 0..p.n {
            let dot: f64 = (0..p.k).map(|q| a[i * p.k + q] as f64 * b[q * p.n + j] as f64).sum();
            c[i * p.n + j] = p.alpha as f64 * dot + p.beta as f64 * c0[i * p.n + j] as f64;
        }
    }
    c
}

#[test]
fn reference_matches_definition_on_awkward_shapes() {
    for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 1, 33), (1, 19, 0), (31, 29, 65)] {
        let p = Problem { m, n, k, alpha: 0.75, beta: -0.5 };
        let (a, b, c0) = (random_input(m * k, 1), random_input(k * n, 2), random_input(m * n, 3));
        let rows: Vec<usize> = (0..m).collect();
        let (value, bound) = reference_rows(&p, &a, &b, &c0, &rows);
        let want = naive(&p, &a, &b, &c0);
        for (x, y) in value.iter().zip(&want) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
        }
        assert!(bound.iter().all(|b| *b >= 0.0));
    }
}

#[test]
fn an_f32_fma_product_is_within_the_bound_and_an_error_is_not() {
    let p = Problem { m: 40, n: 50, k: 300, alpha: 1.5, beta: 0.25 };
    let (a, b, c0) = (random_input(p.m * p.k, 4), random_input(p.k * p.n, 5), random_input(p.m * p.n, 6));
    // What an FMA kernel computes, in f32.
    let mut c = vec![0.0f32; p.m * p.n];
    for i in 0..p.m {
        for j in 0..p.n {
            let mut acc = 0.0f32;
            for q in 0..p.k {
                acc = a[i * p.k + q].mul_add(b[q * p.n + j], acc);
            }
            c[i * p.n + j] = p.beta.mul_add(c0[i * p.n + j], p.alpha * acc);
        }
    }
    let rows: Vec<usize> = (0..p.m).collect();
    let reference = reference_rows(&p, &a, &b, &c0, &rows);
    let ok = check(&p, &c, &rows, &reference);
    assert!(ok.passed(), "{ok:?}");
    assert!(ok.relative_error > 0.0 && ok.relative_error < 1e-5, "{ok:?}");
    // One wrong element, one unwritten (poisoned) element: both caught.
    let mut wrong = c.clone();
    wrong[7 * p.n + 3] += 0.05; // the worst-case bound here is ~2e-3
    assert_eq!(check(&p, &wrong, &rows, &reference).elements_out_of_bound, 1);
    let mut unwritten = c.clone();
    unwritten[100] = f32::from_bits(kernel_lab::runtime::gpu::POISON_BITS);
    let r = check(&p, &unwritten, &rows, &reference);
    assert!(!r.passed() && r.not_finite == 1);
}

#[test]
fn sampled_rows_cover_every_block_row() {
    assert_eq!(rows_to_check(100, 512, 1), (0..100).collect::<Vec<_>>());
    let rows = rows_to_check(8192, 512, 1);
    for stripe in 0..8192 / 128 {
        assert!(rows.iter().any(|r| r / 128 == stripe), "stripe {stripe} unchecked");
    }
    assert!(rows.contains(&0) && rows.contains(&8191));
    assert!(rows.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn problem_checks() {
    assert_eq!(Problem::square(4096).flops(), 2.0 * 4096f64.powi(3));
    assert!(Problem::square(1 << 20).check().is_ok());
    assert!(Problem { m: 1 << 33, n: 1, k: 1, alpha: 1.0, beta: 0.0 }.check().is_err());
}
