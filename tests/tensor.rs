//! Tensor cores on the emulator: the fragment maps the device layer encodes
//! (each a bijection onto its tile, as the PTX ISA's tables are), the
//! tf32 rounding, and the kernels on integer inputs, where every product and
//! sum is exact and the result must be bit-exact.

use gpu::dev::mma;
use kernel_lab::families::tensor::{self, bf16, f32_of};
use kernel_lab::runtime::Gpu;
use rand::{Rng, SeedableRng, rngs::SmallRng};

/// `(lane, element)` over the warp maps onto every cell of a `rows x cols`
/// tile exactly once.
fn covers(rows: u32, cols: u32, per_lane: u32, at: impl Fn(u32, u32) -> (u32, u32)) {
    let mut seen = vec![0u32; (rows * cols) as usize];
    for lane in 0..32 {
        for i in 0..per_lane {
            let (r, c) = at(lane, i);
            assert!(r < rows && c < cols, "lane {lane} element {i}: ({r}, {c}) outside {rows} x {cols}");
            seen[(r * cols + c) as usize] += 1;
        }
    }
    assert!(seen.iter().all(|&s| s == 1), "not a bijection: {seen:?}");
}

#[test]
fn fragment_maps_cover_their_tiles_once() {
    covers(16, 16, 8, mma::a_bf16);
    covers(16, 8, 4, mma::b_bf16);
    covers(16, 8, 4, mma::c_f32);
    covers(16, 8, 4, mma::a_tf32);
    covers(8, 8, 2, mma::b_tf32);
    // The ISA's anchors: lane 0 holds A[0][0..2] in its first register and
    // A[8][0..2] in its second; lane 5 (group 1, quad 1) holds C[1][2..4]
    // and C[9][2..4].
    assert_eq!((mma::a_bf16(0, 0), mma::a_bf16(0, 1), mma::a_bf16(0, 2)), ((0, 0), (0, 1), (8, 0)));
    assert_eq!((mma::a_bf16(0, 4), mma::b_bf16(0, 2)), ((0, 8), (8, 0)));
    assert_eq!([0, 1, 2, 3].map(|i| mma::c_f32(5, i)), [(1, 2), (1, 3), (9, 2), (9, 3)]);
    assert_eq!([0, 1, 2, 3].map(|i| mma::a_tf32(6, i)), [(1, 2), (9, 2), (1, 6), (9, 6)]);
}

#[test]
fn tf32_rounds_to_nearest_ties_away() {
    let ulp = f32::powi(2.0, -10);
    for (x, want) in [
        (1.0 + ulp / 2.0, 1.0 + ulp),       // a tie: away from zero
        (-(1.0 + ulp / 2.0), -(1.0 + ulp)), // likewise negative
        (1.0 + ulp * 0.49, 1.0),            // below half: down
        (1.0 + ulp * 1.5, 1.0 + 2.0 * ulp), // a tie again: away
    ] {
        assert_eq!(f32::from_bits(mma::to_tf32(x)), want, "{x}");
    }
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..10_000 {
        let x: f32 = rng.random_range(-1e6..1e6);
        let r = f32::from_bits(mma::to_tf32(x));
        assert_eq!(r.to_bits() & 0x1fff, 0);
        // Within half a tf32 ulp of x.
        assert!(((r - x) as f64).abs() <= (x.abs() as f64) * f64::powi(2.0, -11) * 1.0000001, "{x} -> {r}");
    }
}

#[test]
fn bf16_conversion_rounds_to_nearest_even() {
    assert_eq!(bf16(1.0), 0x3f80);
    assert_eq!(f32_of(bf16(1.0 + f32::powi(2.0, -8))), 1.0); // a tie: to even
    assert_eq!(f32_of(bf16(1.0 + 3.0 * f32::powi(2.0, -8))), 1.0 + f32::powi(2.0, -6));
}

/// Integers in [-8, 8] are exact in bf16, their products and sums of up to
/// 2^18 of them exact in f32: every kernel must match the integer product
/// bit for bit, at shapes with edges in every direction.
#[test]
fn integer_inputs_give_exact_results() {
    let gpu = Gpu::emulator();
    let mut rng = SmallRng::seed_from_u64(11);
    for kernel in gpu::launch::registry::module("gpu::tensor") {
        for (m, n, k) in [(1, 1, 1), (16, 8, 16), (65, 63, 33), (17, 130, 70)] {
            let a: Vec<i32> = (0..m * k).map(|_| rng.random_range(-8..=8)).collect();
            let b: Vec<i32> = (0..k * n).map(|_| rng.random_range(-8..=8)).collect();
            let (ah, bh): (Vec<u16>, Vec<u16>) =
                (a.iter().map(|&x| bf16(x as f32)).collect(), b.iter().map(|&x| bf16(x as f32)).collect());
            let (da, db) = (gpu.upload(&ah).unwrap(), gpu.upload(&bh).unwrap());
            let mut dc = gpu.alloc::<f32>(m * n).unwrap();
            gpu.poison(&mut dc).unwrap();
            tensor::launch(&gpu, tensor::typed(kernel).unwrap(), (m, n, k), &da, &db, &mut dc)
                .unwrap_or_else(|e| panic!("{} {m}x{n}x{k}: {e}", kernel.name));
            gpu.sync().unwrap();
            let c = gpu.download(&dc).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: i32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                    assert_eq!(c[i * n + j], want as f32, "{} {m}x{n}x{k}: C[{i}][{j}]", kernel.name);
                }
            }
        }
    }
}
