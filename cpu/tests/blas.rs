//! `sgemm` with BLAS semantics on the emulator: the reference BLAS's test
//! criteria on a subset of its shapes in every layout and op, exact
//! integer results for every tile and split-K, BLAS's argument checks.
//! (`cpu/tests/gpu.rs` runs the whole netlib set on a GPU.)

use kernel_lab::blas::reference::{self, Matrices};
use kernel_lab::blas::{Gemm, Layout, Op, Operand, Plan, Sgemm, plan};
use kernel_lab::runtime::Gpu;
use rand::{Rng, SeedableRng, rngs::SmallRng};

const LAYOUTS: [Layout; 2] = [Layout::Row, Layout::Col];
const OPS: [Op; 2] = [Op::N, Op::T];

/// Every layout and pair of ops.
fn forms() -> Vec<(Layout, Op, Op)> {
    LAYOUTS.iter().flat_map(|&l| OPS.iter().flat_map(move |&a| OPS.iter().map(move |&b| (l, a, b)))).collect()
}

#[test]
fn netlib_criteria_subset_in_every_layout() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    let mut rng = SmallRng::seed_from_u64(3);
    let sizes = [0, 1, 2, 3, 5, 9, 33];
    let scalars = [(0.0f32, 0.0f32), (1.0, 1.0), (0.7, 1.3), (1.0, 0.0), (0.7, 0.0), (0.0, 1.3), (1.0, 1.3)];
    let mut count = 0;
    let mut worst = 0.0f64;
    for (f, (layout, op_a, op_b)) in forms().into_iter().enumerate() {
        for (s, &m) in sizes.iter().enumerate() {
            for (t, &n) in sizes.iter().enumerate() {
                // k runs through the sizes too, one per (m, n), and the
                // scalars rotate: every value of each is met in every form.
                let k = sizes[(s + 2 * t + f) % sizes.len()];
                let (alpha, beta) = scalars[(s + t + f) % scalars.len()];
                let mut g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(alpha, beta);
                // Leading dimensions above the minimum, by different amounts.
                g.lda += (s + f) % 3;
                g.ldb += (t + f) % 2;
                g.ldc += (s + t) % 3;
                let x = Matrices::new(&g, |_| rng.random_range(-1.0..1.0));
                let verdict = reference::verify(&gpu, &mut sgemm, &g, None, &x, false).unwrap();
                worst = worst.max(verdict.ratio);
                count += 1;
            }
        }
    }
    assert_eq!(count, 8 * 49);
    assert!(worst > 0.0, "some result rounded: the ratio is measured");
}

/// Integer-valued inputs in [-8, 8] with integer scalars: every product and
/// sum is exact in f32 (|values| < 2^24), so the result must equal the
/// reference bit for bit, for every tile, op and split-K.
#[test]
fn integer_inputs_give_exact_results_for_every_tile_and_split() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    let mut rng = SmallRng::seed_from_u64(5);
    let tiles = plan::tiles();
    assert!(tiles.len() >= 4, "the dispatcher has several block tiles: {tiles:?}");
    for (i, tile) in tiles.iter().enumerate() {
        for (f, (layout, op_a, op_b)) in forms().into_iter().enumerate() {
            // Edges in every direction: not multiples of the tile or of 8.
            let (m, n, k) = (tile.bm + 3 + f, tile.bn - 5 + i, 61 + 8 * f);
            let (alpha, beta) = [(1.0, 0.0), (-2.0, 1.0), (1.0, 3.0)][(i + f) % 3];
            let g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(alpha, beta);
            let x = Matrices::new(&g, |_| rng.random_range(-8..=8) as f32);
            for splits in [1, 3] {
                let plan = Plan::new((tile.bm, tile.bn), splits, k);
                reference::verify(&gpu, &mut sgemm, &g, Some(plan), &x, true)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", plan.label(), g.form()));
            }
        }
    }
}

/// Interior (unchecked) tiles: aligned leading dimensions and k a multiple
/// of 8, a grid of whole tiles plus an edge, split-K with a short last chunk.
#[test]
fn aligned_interior_tiles_and_split_k() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    let mut rng = SmallRng::seed_from_u64(7);
    for (layout, op_a, op_b) in forms() {
        let g = Gemm::new(layout, op_a, op_b, 130, 128, 200).scaled(0.5, -1.0);
        let x = Matrices::new(&g, |_| rng.random_range(-4..=4) as f32);
        for plan in [Plan::new((128, 128), 1, 200), Plan::new((64, 64), 3, 200), Plan::new((128, 64), 2, 200)]
        {
            reference::verify(&gpu, &mut sgemm, &g, Some(plan), &x, true)
                .unwrap_or_else(|e| panic!("{}: {e}", plan.label()));
        }
    }
}

#[test]
fn blas_rules_for_alpha_beta_and_empty_shapes() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    let nan = f32::NAN;
    // beta = 0: C is not read (NaN in C does not survive); alpha = 0 or k = 0: C = beta C.
    for (m, n, k, alpha, beta, c0, want) in [
        (3, 4, 5, 1.0, 0.0, nan, None),
        (3, 4, 0, 1.0, 0.0, nan, Some(0.0)),
        (3, 4, 5, 0.0, 0.0, nan, Some(0.0)),
        (3, 4, 5, 0.0, 2.0, 1.5, Some(3.0)),
        (3, 4, 0, 2.0, 1.0, 1.5, Some(1.5)),
    ] {
        let g = Gemm::row(m, n, k).scaled(alpha, beta);
        let x = Matrices::new(&g, |x| if x == Operand::C { c0 } else { 1.0 });
        let (a, b) = (gpu.upload(&x.a).unwrap(), gpu.upload(&x.b).unwrap());
        let mut c = gpu.upload(&x.c).unwrap();
        sgemm.run(&gpu, &g, &a, &b, &mut c).unwrap();
        let got = gpu.download(&c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let v = got[g.index(Operand::C, i, j)];
                let want = want.unwrap_or(k as f32 * alpha);
                assert_eq!(v.to_bits(), want.to_bits(), "{g} alpha={alpha} beta={beta}: C[{i}][{j}] = {v}");
            }
        }
    }
    // m = 0 or n = 0: nothing is touched, even with empty buffers.
    for (m, n) in [(0, 5), (5, 0)] {
        let g = Gemm::row(m, n, 7);
        let (a, b) = (
            gpu.upload(&vec![1.0f32; g.elements(Operand::A)]).unwrap(),
            gpu.alloc::<f32>(g.elements(Operand::B)).unwrap(),
        );
        let mut c = gpu.alloc::<f32>(0).unwrap();
        sgemm.run(&gpu, &g, &a, &b, &mut c).unwrap();
    }
}

#[test]
fn bad_calls_are_one_line_errors_before_any_launch() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    let g = Gemm::new(Layout::Col, Op::T, Op::N, 10, 20, 30);
    let (a, b) = (gpu.alloc::<f32>(10 * 30).unwrap(), gpu.alloc::<f32>(30 * 20).unwrap());
    let mut c = gpu.alloc::<f32>(10 * 20).unwrap();
    let mut message = |g: &Gemm, c: &mut _| sgemm.run(&gpu, g, &a, &b, c).unwrap_err().to_string();
    let low = Gemm { lda: 29, ..g };
    assert_eq!(message(&low, &mut c), "sgemm 10x20x30 col TN: lda = 29 is below its minimum 30 (max(1, 30))");
    let high_ldc = Gemm { ldc: 11, ..g };
    let text = message(&high_ldc, &mut c);
    assert!(text.contains("C needs 219 elements (20 lines of 10 at ld 11), the buffer has 200"), "{text}");
    let mut small = gpu.alloc::<f32>(10).unwrap();
    assert!(message(&g, &mut small).starts_with("sgemm 10x20x30 col TN: C needs 200 elements"));
    for text in [message(&low, &mut c), message(&high_ldc, &mut c)] {
        assert!(!text.contains('\n'));
    }
}

/// Operands the unchecked loop cannot read (a leading dimension off 4, or
/// contiguous along an m or n off 4) are packed K-major first when the
/// call is large enough (here: always), in every layout and op, with and
/// without split-K, at a second, larger shape on the same workspaces, and
/// the results are exact (integer inputs); aligned operands stay where
/// they are, and nothing is packed for a call without products.
#[test]
fn misaligned_operands_are_packed_k_major_in_every_form() {
    let gpu = Gpu::emulator();
    let mut sgemm = Sgemm::new();
    sgemm.pack_from = 0;
    let mut rng = SmallRng::seed_from_u64(11);
    let mut packed = (0, 0);
    let mut one_sided = 0;
    for (f, (layout, op_a, op_b)) in forms().into_iter().enumerate() {
        // Both operands off, then one (m and n on 4, k off: only a K-major
        // operand's leading dimension is), on the same workspaces.
        for (i, (m, n, k)) in [(37, 29, 45), (70, 67, 131), (36, 32, 45)].into_iter().enumerate() {
            let mut g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(1.0, [0.0, -1.0][(f + i) % 2]);
            g.lda += (f + i) % 2 * usize::from(i < 2);
            g.ldb += f % 3 * usize::from(i < 2);
            let r = g.row_major();
            let a_kmajor = !r.a_t;
            let b_kmajor = r.b_t;
            let off = |x: usize| !x.is_multiple_of(4);
            let expect = (off(r.lda) || (!a_kmajor && off(r.m)), off(r.ldb) || (!b_kmajor && off(r.n)));
            assert_eq!(sgemm.packs(&g), expect, "{}", g.form());
            packed.0 += usize::from(expect.0);
            packed.1 += usize::from(expect.1);
            one_sided += usize::from(expect.0 != expect.1);
            let x = Matrices::new(&g, |_| rng.random_range(-8..=8) as f32);
            for plan in [None, Some(Plan::new((64, 64), 3, k))] {
                reference::verify(&gpu, &mut sgemm, &g, plan, &x, true)
                    .unwrap_or_else(|e| panic!("{} {m}x{n}x{k}: {e}", g.form()));
            }
        }
    }
    assert!(packed.0 >= 8 && packed.1 >= 8, "both operands packed in many forms: {packed:?}");
    assert!(one_sided >= 4, "one operand packed beside one read in place: {one_sided}");
    let aligned = Gemm::row(64, 64, 64);
    assert_eq!(sgemm.packs(&aligned), (false, false));
    assert_eq!(sgemm.packs(&Gemm::row(63, 63, 63).scaled(0.0, 1.0)), (false, false));
    sgemm.pack_from = usize::MAX;
    assert_eq!(sgemm.packs(&Gemm::row(63, 63, 63)), (false, false));
}

/// The dispatcher: whole waves of large tiles for large squares, split-K
/// where m n is small and k long, smaller tiles where m n is small.
#[test]
fn the_dispatcher_splits_k_and_shrinks_tiles_where_blocks_are_few() {
    let choose = |m, n, k| plan::choose(&Gemm::row(m, n, k).row_major(), 132);
    assert_eq!(choose(4096, 4096, 4096), Plan::new((128, 128), 1, 4096));
    assert_eq!(choose(8192, 8192, 8192), Plan::new((128, 128), 1, 8192));
    let skinny = choose(256, 256, 16384);
    assert!(skinny.splits >= 8, "{skinny:?}");
    let long = choose(1024, 1024, 8192);
    assert!(long.splits >= 2, "{long:?}");
    let small = choose(512, 512, 512);
    assert!(small.bm * small.bn < 128 * 128 || small.splits > 1, "{small:?}");
    // A plan always covers k.
    for (m, n, k) in [(1, 1, 1), (7, 9000, 3), (300, 300, 100_000), (128, 8192, 8192)] {
        let p = choose(m, n, k);
        assert!(p.splits * p.k_chunk >= k && (p.splits - 1) * p.k_chunk < k, "{m}x{n}x{k}: {p:?}");
    }
}

/// The reference BLAS's sweep itself (as `cpu/tests/gpu.rs` runs it in full),
/// on a subset of its sizes: every alpha and beta in every form.
#[test]
fn netlib_sweep_subset_with_every_scalar() {
    use kernel_lab::blas::reference::{netlib_scalars, netlib_sweep};
    let (calls, worst) =
        netlib_sweep(&Gpu::emulator(), &[0, 1, 3, 9], &forms(), &netlib_scalars(), 1).unwrap();
    assert_eq!(calls, 4 * 4 * 4 * 8 * 9);
    assert!(worst < reference::THRESHOLD);
}

/// The ladder's targets read its squares only: an `MxNxK` record's size is
/// its m, and 8192x8192x256 is not 8192^3.
#[test]
fn ladder_targets_ignore_shaped_records() {
    use kernel_lab::families::{Family, sgemm::SUITE};
    use kernel_lab::measure::{Record, Shape};
    let record = |kernel: &str, size: &str, shape: &str, percent: f64| {
        let mut r = Record::new("sgemm", kernel, "f32", &size.parse::<Shape>().unwrap());
        r.shape = shape.into();
        r.percent = Some(percent);
        r.ceiling = "cublas".into();
        r
    };
    let records = [
        record("sgemm_warp_tiled", "8192", "8192", 92.0),
        record("sgemm (128x128)", "8192x8192x256", "8192x8192x256 row NN", 109.0),
    ];
    let refs: Vec<&Record> = records.iter().collect();
    let targets = SUITE.targets(&refs);
    let t = targets.iter().find(|t| t.what.starts_with("sgemm 8192^3, best kernel")).unwrap();
    assert_eq!(t.measured, "sgemm_warp_tiled 92.0%");
}
