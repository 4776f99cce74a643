//! Tensor cores on the emulator: the fragment maps the device layer encodes
//! (each a bijection onto its tile, as the PTX ISA's tables are), the
//! tf32 rounding, and the kernels on integer inputs, where every product and
//! sum is exact and the result must be bit-exact.

use gpu::dev::{In, Out, SharedTile, mma, sync_threads, thread_idx_x};
use gpu::kernel;
use kernel_lab::families::Family;
use kernel_lab::families::tensor::{self, Ladder, Step, Tensor, bf16, f32_of};
use kernel_lab::gemm::{self, Bf16, F16, Tf32};
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

/// The host's model of step 1's `prmt`: `x`'s half low, `y`'s high.
#[test]
fn pair_halves_takes_x_low_and_y_high() {
    use gpu::dev::registers::pair_halves;
    assert_eq!(pair_halves::<false>(0x1111_2222, 0x3333_4444), 0x4444_2222);
    assert_eq!(pair_halves::<true>(0x1111_2222, 0x3333_4444), 0x3333_1111);
}

#[test]
fn bf16_conversion_rounds_to_nearest_even() {
    assert_eq!(bf16(1.0), 0x3f80);
    assert_eq!(f32_of(bf16(1.0 + f32::powi(2.0, -8))), 1.0); // a tie: to even
    assert_eq!(f32_of(bf16(1.0 + 3.0 * f32::powi(2.0, -8))), 1.0 + f32::powi(2.0, -6));
}

/// Runs `kernel` on integer A (`m x k`) and B (`k x n`) in `P` (B
/// transposed where `P` reads it K-major), or `None` if it multiplies
/// another precision; with the result, whether the TMA kernels can take
/// the shape (rows on 16 bytes).
fn integer_run<P: Ladder>(
    gpu: &Gpu,
    kernel: &'static gpu::launch::Kernel,
    (m, n, k): (usize, usize, usize),
    (a, b): (&[i32], &[i32]),
    dc: &mut kernel_lab::runtime::DeviceBuffer<f32>,
) -> Option<(kernel_lab::runtime::Result<()>, bool)> {
    Step::<P>::of(kernel).ok()?;
    let to = |x: i32| <P::Input as gemm::Input>::round_f32(x as f32);
    let ah: Vec<P::Input> = a.iter().map(|&x| to(x)).collect();
    let bh: Vec<P::Input> = if P::B_K_MAJOR {
        (0..n * k).map(|i| to(b[(i % k) * n + i / k])).collect()
    } else {
        b.iter().map(|&x| to(x)).collect()
    };
    let (da, db) = (gpu.upload(&ah).unwrap(), gpu.upload(&bh).unwrap());
    let mut ops = tensor::Operands::<P>::new((m, n, k), &da, &db).unwrap();
    let per_16 = <P::Input as gemm::Input>::PER_16;
    let rows_on_16 = k % per_16 == 0 && (P::B_K_MAJOR || n % per_16 == 0);
    Some((tensor::run_once(gpu, kernel, &mut ops, dc), rows_on_16))
}

/// A TMA step takes only its maps, so its name says its precision: every
/// kernel of the family is taken by exactly one precision of the ladder,
/// and a TMA step by none other than its own.
#[test]
fn every_ladder_kernel_has_one_precision() {
    for kernel in Tensor.kernels() {
        let takers: Vec<_> =
            tensor::PRECISIONS.iter().filter(|p| p.takes(kernel)).map(|p| p.name()).collect();
        assert_eq!(takers.len(), 1, "{}: {takers:?}", kernel.name);
    }
    let tf32 = gpu::launch::registry::find("tc_wgmma_persistent_tf32").unwrap();
    let wrong = Step::<Bf16>::of(tf32).err().unwrap().to_string();
    assert!(wrong.contains("a TMA step in another precision"), "{wrong}");
    assert!(Step::<Tf32>::of(tf32).is_ok());
}

/// Integers in [-8, 8] are exact in bf16, f16 and tf32, their products and sums
/// of up to 2^18 of them exact in f32: every kernel must match the integer
/// product bit for bit, at shapes with edges in every direction and one
/// with interior tiles (tf32 kernels take B transposed).
#[test]
fn integer_inputs_give_exact_results() {
    let gpu = Gpu::emulator();
    let mut rng = SmallRng::seed_from_u64(11);
    for kernel in Tensor.kernels() {
        for (m, n, k) in [
            (1, 1, 1),
            (16, 8, 16),
            (65, 63, 33),
            (17, 130, 70),
            (130, 136, 72),
            (20, 72, 328),
            (33, 261, 36),
            (70, 264, 40),
            (260, 72, 136),
            // Whole block tiles and k-steps: the unchecked loads, then the
            // checked ones from the k-step with the last 8 of k.
            (128, 256, 104),
        ] {
            let a: Vec<i32> = (0..m * k).map(|_| rng.random_range(-8..=8)).collect();
            let b: Vec<i32> = (0..k * n).map(|_| rng.random_range(-8..=8)).collect();
            let mut dc = gpu.alloc::<f32>(m * n).unwrap();
            gpu.poison(&mut dc).unwrap();
            let (result, rows_on_16) = integer_run::<Bf16>(&gpu, kernel, (m, n, k), (&a, &b), &mut dc)
                .or_else(|| integer_run::<F16>(&gpu, kernel, (m, n, k), (&a, &b), &mut dc))
                .or_else(|| integer_run::<Tf32>(&gpu, kernel, (m, n, k), (&a, &b), &mut dc))
                .unwrap_or_else(|| panic!("{}: no precision of the ladder", kernel.name));
            match result {
                Ok(()) => {}
                Err(e) if e.to_string().contains("row length must be a multiple of") && !rows_on_16 => {
                    continue;
                }
                Err(e) => panic!("{} {m}x{n}x{k}: {e}", kernel.name),
            }
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

/// tf32 drops each input's low 13 mantissa bits: inputs `1 + 3 2^-12`
/// (below tf32's resolution, above half of it) multiply as 1, and `1 +
/// 2^-10` (its last bit) as itself; a kernel that rounded to nearest (to
/// `1 + 2^-10`) or read full `f32` would differ. (On the emulator: this
/// checks the model; the GPU runs are checked against the bound.)
#[test]
fn tf32_kernels_truncate_their_inputs() {
    let gpu = Gpu::emulator();
    let (m, n, k) = (64, 256, 8);
    let mut ran = 0;
    for kernel in Tensor.kernels() {
        if Step::<Tf32>::of(kernel).is_err() {
            continue;
        }
        ran += 1;
        for (x, seen) in [
            (1.0 + 3.0 * f32::powi(2.0, -12), 1.0f64),
            (1.0 + f32::powi(2.0, -10), 1.0 + f64::powi(2.0, -10)),
        ] {
            let (da, dbt) = (gpu.upload(&vec![x; m * k]).unwrap(), gpu.upload(&vec![x; n * k]).unwrap());
            let mut dc = gpu.alloc::<f32>(m * n).unwrap();
            let mut ops = tensor::Operands::<Tf32>::new((m, n, k), &da, &dbt).unwrap();
            tensor::run_once(&gpu, kernel, &mut ops, &mut dc).unwrap();
            gpu.sync().unwrap();
            let want = (k as f64 * seen * seen) as f32;
            assert!(
                gpu.download(&dc).unwrap().iter().all(|&c| c == want),
                "{}: {x} -> want {want}",
                kernel.name
            );
        }
    }
    // Steps 1 and 6 in tf32.
    assert_eq!(ran, 2);
}

/// The shared-memory analysis of one 128 x 256 x 64 launch of `name` (8
/// warps in one or two blocks, two k-steps, every access on the 16-byte
/// path), after checking C against the integer product.
fn tensor_analysis(name: &str) -> emu::Analysis {
    let gpu = Gpu::emulator();
    let kernel = Tensor.kernels().into_iter().find(|k| k.name == name).unwrap();
    let (m, n, k) = (128, 256, 64);
    let mut rng = SmallRng::seed_from_u64(5);
    // Integers: exact in bf16 and in the f32 sums.
    let a: Vec<i32> = (0..m * k).map(|_| rng.random_range(-8..=8)).collect();
    let b: Vec<i32> = (0..k * n).map(|_| rng.random_range(-8..=8)).collect();
    let to = |v: &[i32]| v.iter().map(|&x| half::bf16::from_f32(x as f32)).collect::<Vec<_>>();
    let (da, db) = (gpu.upload(&to(&a)).unwrap(), gpu.upload(&to(&b)).unwrap());
    let mut dc = gpu.alloc::<f32>(m * n).unwrap();
    gpu.poison(&mut dc).unwrap();
    gpu.set_analysis(true);
    let mut ops = tensor::Operands::<Bf16>::new((m, n, k), &da, &db).unwrap();
    tensor::run_once(&gpu, kernel, &mut ops, &mut dc).unwrap();
    gpu.sync().unwrap();
    let analysis = gpu.take_analysis();
    let c = gpu.download(&dc).unwrap();
    for (i, row) in c.chunks(n).enumerate() {
        for (j, &got) in row.iter().enumerate() {
            let want: i32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            assert_eq!(got, want as f32, "{name}: C[{i}][{j}]");
        }
    }
    analysis
}

/// `ldmatrix` on the swizzled layout serves each 8 x 8 matrix in one pass
/// and every 16-byte store in one pass per 8 lanes: no bank conflict in
/// steps 2 and 3. Step 1 takes the same fragments with 16-byte loads from
/// its n-major B and k-permuted rows, as many requests as `ldmatrix`
/// (16 per warp and k-step), and its transposing stores of B are
/// conflict-free too (the swapped rows): a layout without the swap, or
/// fragments loaded 4 bytes at a time, fail here.
#[test]
fn fragment_loads_are_conflict_free() {
    for name in ["tc_mma_bf16", "tc_ldmatrix_bf16", "tc_mma_bf16_async"] {
        let a = tensor_analysis(name);
        // 16-byte requests: 4 passes of 8 lanes each.
        assert_eq!(a.shared_loads.per_request(), 4.0, "{name}: {:?}", a.shared_loads);
        assert_eq!(a.shared_loads.efficiency(), 1.0, "{name}: {:?}", a.shared_loads);
        if name != "tc_mma_bf16_async" {
            // 16-byte stores, conflict-free.
            assert_eq!(a.shared_stores.per_request(), 4.0, "{name}: {:?}", a.shared_stores);
            assert_eq!(a.shared_stores.efficiency(), 1.0, "{name}: {:?}", a.shared_stores);
        }
        // A 128 x 256 x 64 launch: 8 warps, 2 k-steps, 16 requests each.
        assert_eq!(a.shared_loads.requests, 8 * 2 * 16, "{name}: {:?}", a.shared_loads);
    }
}

/// The tf32 step's padded tiles (rows 36 words apart): every fragment
/// register and every 16-byte store in one pass per request, as its doc
/// comment derives (banks `4 g + q`); per warp and k8, 16 A and 8 B word
/// loads.
#[test]
fn tf32_padded_tiles_are_conflict_free() {
    let gpu = Gpu::emulator();
    let kernel = Tensor.kernels().into_iter().find(|k| k.name == "tc_mma_tf32").unwrap();
    let (m, n, k) = (128, 128, 64);
    let (a, bt) = (vec![0.5f32; m * k], vec![0.25f32; n * k]);
    let (da, dbt) = (gpu.upload(&a).unwrap(), gpu.upload(&bt).unwrap());
    let mut dc = gpu.alloc::<f32>(m * n).unwrap();
    gpu.set_analysis(true);
    let mut ops = tensor::Operands::<Tf32>::new((m, n, k), &da, &dbt).unwrap();
    tensor::run_once(&gpu, kernel, &mut ops, &mut dc).unwrap();
    gpu.sync().unwrap();
    let analysis = gpu.take_analysis();
    assert_eq!(analysis.shared_loads.efficiency(), 1.0, "{:?}", analysis.shared_loads);
    assert_eq!(analysis.shared_stores.efficiency(), 1.0, "{:?}", analysis.shared_stores);
    // 8 warps x 2 k-steps x 4 k8 x (8 B + 16 A) word loads.
    assert_eq!(analysis.shared_loads.requests, 8 * 2 * 4 * (8 + 16));
    assert!(gpu.download(&dc).unwrap().iter().all(|&c| c == 64.0 * 0.125));
}

/// Lane `t` copies elements `8 t..+8` (row `t % 8` of 8 x 8 matrix `t /
/// 8`) into shared memory, the warp loads the four matrices with
/// `ldmatrix` (`.trans` when `trans` is 1), writes each lane's registers to
/// `regs` and stores them back with `stmatrix` to a second tile, which goes
/// to `out`.
#[kernel(block = 32, shared = 2 * 32 * 16)]
pub fn matrix_round_trip(input: In<u16>, regs: Out<u32>, out: Out<u16>, trans: u32) {
    let t = thread_idx_x() as usize;
    // SAFETY: 32 rows of 8 u16 twice (the declaration's 1 KB), each lane
    // its own row; 32 x 8 elements in and out, 32 x 4 registers.
    unsafe {
        let (from, to) = (SharedTile::<u16, 8>::launch_sized(), SharedTile::<u16, 8>::launch_sized_at(512));
        for e in 0..8 {
            from.store(t, e, input.load(8 * t + e));
        }
        sync_threads();
        let r = if trans == 1 { from.ldmatrix_x4_trans(t, 0) } else { from.ldmatrix_x4(t, 0) };
        for (j, &x) in r.iter().enumerate() {
            regs.store(4 * t + j, x);
        }
        to.stmatrix_x4(t, 0, r);
        sync_threads();
        for e in 0..8 {
            out.store(8 * t + e, to.load(t, e));
        }
    }
}

/// `ldmatrix` gives each lane the elements the PTX ISA's figure names
/// (plain: row `lane / 4`, columns `2 (lane % 4)`, `+1` of matrix `j` in
/// register `j`; `.trans`: the same of the transposed matrix), and
/// `stmatrix` writes them back where they came from: the round trip is the
/// identity, or each matrix transposed.
#[test]
fn ldmatrix_and_stmatrix_follow_the_isa() {
    let gpu = Gpu::emulator();
    let input: Vec<u16> = (0..256u16).map(|i| i * 3 + 1).collect();
    let d_in = gpu.upload(&input).unwrap();
    for trans in [0u32, 1] {
        let mut regs = gpu.alloc::<u32>(128).unwrap();
        let mut out = gpu.alloc::<u16>(256).unwrap();
        // SAFETY: the buffers hold what the kernel's doc says.
        unsafe { matrix_round_trip::launch(&gpu, 1, &d_in, &mut regs, &mut out, trans) }.unwrap();
        gpu.sync().unwrap();
        let (regs, out) = (gpu.download(&regs).unwrap(), gpu.download(&out).unwrap());
        let at = |matrix: usize, row: usize, col: usize| {
            let (row, col) = if trans == 1 { (col, row) } else { (row, col) };
            input[64 * matrix + 8 * row + col]
        };
        for lane in 0..32 {
            for j in 0..4 {
                let (g, q) = (lane / 4, lane % 4);
                let want = at(j, g, 2 * q) as u32 | (at(j, g, 2 * q + 1) as u32) << 16;
                assert_eq!(regs[4 * lane + j], want, "trans {trans}: lane {lane} register {j}");
            }
        }
        for (i, &x) in out.iter().enumerate() {
            assert_eq!(x, at(i / 64, i % 64 / 8, i % 8), "trans {trans}: element {i}");
        }
    }
}

/// Thread 0 copies the 16 x 64 box at the origin of map 0 into shared
/// memory with TMA (the kernel has no other handle on the matrix); then each of 16 threads copies its row, read
/// back through the 128-byte swizzle, to `out`. `mode` plants a fault: 1
/// expects more bytes than the copy brings (the wait never completes), 2
/// reads without waiting, 3 arrives twice in one phase of count 1.
#[kernel(block = 16, shared = 2048 + 8)]
pub fn tma_probe(maps: In<u64>, out: Out<u16>, mode: u32) {
    use gpu::dev::barrier::{Mbarrier, fence_init};
    use gpu::dev::tma::{copy_2d, swizzle_128};
    let t = thread_idx_x() as usize;
    // SAFETY: 2048 bytes of box, then the mbarrier (the declaration's);
    // the faults are the point of the modes.
    unsafe {
        let bar = Mbarrier::at(gpu::dev::SharedArray::launch_sized_at(2048), 0);
        let smem = gpu::dev::SharedArray::<u16>::launch_sized();
        if t == 0 {
            bar.init(1);
            fence_init();
        }
        sync_threads();
        if t == 0 {
            bar.arrive_expect_tx(if mode == 1 { 2048 + 16 } else { 2048 });
            if mode == 3 {
                bar.arrive();
            }
            copy_2d(gpu::dev::shared::launch_sized_base(), maps, 0, (0, 0), bar);
        }
        if mode != 2 {
            bar.wait(0);
        }
        for c in 0..64 {
            out.store(64 * t + c, smem.get(swizzle_128(2 * (64 * t + c)) / 2));
        }
    }
}

/// The emulator's TMA writes the box as the hardware does (zeros outside
/// the matrix, the 128-byte swizzle), and its mbarriers turn each planted
/// fault into an error that names it.
#[test]
fn tma_and_mbarrier_faults_are_reported() {
    let gpu = Gpu::emulator();
    let (rows, cols) = (10, 40);
    let a: Vec<u16> = (0..rows * cols).map(|i| i as u16 + 1).collect();
    let da = gpu.upload(&a).unwrap();
    let map = gpu.tensor_map(&da, (rows, cols), (16, 64)).unwrap();
    let maps = gpu.upload(&map).unwrap();
    let run = |mode: u32| {
        let mut out = gpu.alloc::<u16>(16 * 64).unwrap();
        // SAFETY: the buffers hold what the kernel's doc says.
        let r = unsafe { tma_probe::launch(&gpu, 1, &maps, &mut out, mode) };
        r.map(|()| gpu.download(&out).unwrap()).map_err(|e| e.to_string())
    };
    let out = run(0).unwrap();
    for r in 0..16 {
        for c in 0..64 {
            let want = if r < rows && c < cols { a[r * cols + c] } else { 0 };
            assert_eq!(out[64 * r + c], want, "row {r} column {c}");
        }
    }
    let stuck = run(1).unwrap_err();
    assert!(stuck.contains("deadlock") && stuck.contains("16 more transaction bytes"), "{stuck}");
    let early = run(2).unwrap_err();
    assert!(early.contains("before a wait on its mbarrier"), "{early}");
    let twice = run(3).unwrap_err();
    assert!(twice.contains("beyond its count 1"), "{twice}");
    // The copy engine reads through the map alone: a map whose matrix was
    // freed since it was encoded is an error, not a read of freed memory.
    let freed = {
        let gone = gpu.upload(&a).unwrap();
        let map = gpu.tensor_map(&gone, (rows, cols), (16, 64)).unwrap();
        let maps = gpu.upload(&map).unwrap();
        let mut out = gpu.alloc::<u16>(16 * 64).unwrap();
        // Freed after the other allocations, so none of them reuses it.
        drop(gone);
        // SAFETY: as above but for the freed matrix, the point of the test.
        unsafe { tma_probe::launch(&gpu, 1, &maps, &mut out, 0) }.unwrap_err().to_string()
    };
    assert!(freed.contains("through a tensor map, are in no live allocation"), "{freed}");
    // Rows of A not on 16 bytes cannot be described to TMA.
    let odd = gpu.tensor_map(&da, (8, 50), (16, 64)).unwrap_err().to_string();
    assert!(odd.contains("multiple of 8"), "{odd}");
    let df = gpu.upload(&vec![1.0f32; 8 * 50]).unwrap();
    let odd = gpu.tensor_map(&df, (8, 50), (16, 32)).unwrap_err().to_string();
    assert!(odd.contains("f32 matrix") && odd.contains("multiple of 4, not 50"), "{odd}");
}

/// A cluster of two blocks of 16 threads: each block's thread 0 multicasts
/// its half (8 rows) of the 16 x 64 box at the origin of map 0 into both
/// blocks, and arrives on the peer's mbarrier ("full" counts its own
/// `expect_tx` and the peer's arrival: 2), after the cluster barrier that
/// follows the initialization; every thread waits and copies its row of the
/// whole box to `out` (block `r`'s at `1024 r`), then a final cluster
/// barrier. `mode` plants a fault: 1 has block 1 exit early, so block 0
/// arrives on a block that has exited; 2 has block 1 skip the first
/// cluster barrier; 3 arrives on block 2 of a cluster of 2; 4 multicasts
/// before the cluster barrier, into a block whose mbarrier is not
/// initialized.
#[kernel(block = 16, shared = 2048 + 8, cluster = [2, 1, 1], arch = "sm_90a")]
pub fn cluster_probe(maps: In<u64>, out: Out<u16>, mode: u32) {
    use gpu::dev::barrier::{Mbarrier, fence_init};
    use gpu::dev::cluster::{cluster_rank, cluster_size, cluster_sync};
    use gpu::dev::tma::{copy_2d_multicast, swizzle_128};
    let (t, rank) = (thread_idx_x() as usize, cluster_rank());
    assert!(cluster_size() == 2 && rank == gpu::dev::block_idx_x() % 2);
    // SAFETY: 2048 bytes of box, then the mbarrier (the declaration's);
    // the faults are the point of the modes.
    unsafe {
        let bar = Mbarrier::at(gpu::dev::SharedArray::launch_sized_at(2048), 0);
        let smem = gpu::dev::SharedArray::<u16>::launch_sized();
        if t == 0 {
            bar.init(2);
            fence_init();
        }
        if mode == 2 && rank == 1 {
            return;
        }
        if mode != 4 {
            cluster_sync();
        }
        if mode == 1 && rank == 1 {
            return;
        }
        if t == 0 {
            bar.arrive_expect_tx(2048);
            let half = gpu::dev::shared::launch_sized_base().wrapping_add(1024 * rank as usize);
            copy_2d_multicast(half, maps, 0, (0, 8 * rank as i32), bar, 0b11);
        }
        if mode == 1 {
            sync_threads();
        }
        if t == 0 {
            bar.arrive_in(if mode == 3 { 2 } else { 1 - rank });
        }
        bar.wait(0);
        for c in 0..64 {
            out.store(1024 * rank as usize + 64 * t + c, smem.get(swizzle_128(2 * (64 * t + c)) / 2));
        }
        cluster_sync();
    }
}

/// Clusters on the emulator: a multicast lands in every block of its mask
/// and counts on each one's mbarrier, remote arrivals complete a peer's
/// phase, and each planted fault (an arrival on a block that has exited, a
/// cluster barrier one block skips, a rank outside the cluster, a copy
/// into a peer before it initialized its mbarrier) is an error naming it;
/// so is a grid that is not a whole number of clusters.
#[test]
fn cluster_multicast_and_faults_are_reported() {
    let gpu = Gpu::emulator();
    let (rows, cols) = (12, 40);
    let a: Vec<u16> = (0..rows * cols).map(|i| i as u16 + 1).collect();
    let da = gpu.upload(&a).unwrap();
    let map = gpu.tensor_map(&da, (rows, cols), (8, 64)).unwrap();
    let maps = gpu.upload(&map).unwrap();
    let run = |grid: u32, mode: u32| {
        let mut out = gpu.alloc::<u16>(2 * 16 * 64).unwrap();
        gpu.poison(&mut out).unwrap();
        // SAFETY: the buffers hold what the kernel's doc says.
        let r = unsafe { cluster_probe::launch(&gpu, grid, &maps, &mut out, mode) };
        r.map(|()| gpu.download(&out).unwrap()).map_err(|e| e.to_string())
    };
    let out = run(2, 0).unwrap();
    for block in 0..2 {
        for r in 0..16 {
            for c in 0..64 {
                let want = if r < rows && c < cols { a[r * cols + c] } else { 0 };
                assert_eq!(out[1024 * block + 64 * r + c], want, "block {block} row {r} column {c}");
            }
        }
    }
    let exited = run(2, 1).unwrap_err();
    assert!(
        exited.contains("arrives on an mbarrier of block 1 of its cluster, which has exited"),
        "{exited}"
    );
    let skipped = run(2, 2).unwrap_err();
    assert!(skipped.contains("divergent") && skipped.contains("cluster barrier"), "{skipped}");
    let outside = run(2, 3).unwrap_err();
    assert!(outside.contains("block 2 of its cluster, which has 2 blocks"), "{outside}");
    let early = run(2, 4).unwrap_err();
    assert!(early.contains("never initialized, in block 1 of its cluster"), "{early}");
    let odd = run(3, 0).unwrap_err();
    assert!(odd.contains("not a whole number of 2x1x1 clusters"), "{odd}");
}

/// A persistent clustered kernel's grid is whole clusters: the resident
/// blocks rounded down, the tiles up, never less than one cluster.
#[test]
fn clustered_persistent_grids_are_whole_clusters() {
    let launch = gpu::launch::registry::find("tc_wgmma_cluster_bf16").unwrap().launch;
    assert_eq!(launch.cluster.count(), 2);
    // 4096^2: 32 x 16 tiles; 131 resident blocks make 65 clusters.
    assert_eq!(launch.persistent_grid(4096, 4096, 131).x, 130);
    // 3 tiles (one column, 3 rows) take 2 clusters; 1 resident block, 1.
    assert_eq!(launch.persistent_grid(256, 300, 132).x, 4);
    assert_eq!(launch.persistent_grid(256, 300, 1).x, 2);
}

/// The persistent kernel's tile order visits every tile once, down groups
/// of 16 tile-rows (the last group shorter).
#[test]
fn grouped_tile_order_is_a_permutation() {
    use gpu::dev::schedule::grouped_by;
    use gpu::gemm::schedule::GROUP;
    let grouped = |i, grid| grouped_by(GROUP, i, grid);
    for (tm, tn) in [(1, 1), (64, 32), (17, 5), (33, 1), (3, 40)] {
        let mut seen = vec![false; tm * tn];
        for i in 0..tm * tn {
            let (r, c) = grouped(i, (tm, tn));
            assert!(r < tm && c < tn, "{tm}x{tn}: tile {i} -> ({r}, {c})");
            assert!(!std::mem::replace(&mut seen[r * tn + c], true), "{tm}x{tn}: ({r}, {c}) twice");
        }
        if tm >= GROUP {
            // Down the group's first column, then its second.
            assert_eq!(grouped(GROUP - 1, (tm, tn)), (GROUP - 1, 0));
            let next = if tn > 1 { (0, 1) } else { (GROUP, 0) };
            assert_eq!(grouped(GROUP, (tm, tn)), next);
        }
    }
}

/// One warp: A (16 x 16, row-major) and B (16 x 8) into the `m16n8k16`
/// fragments by the ISA's lane maps, one `mma.sync` (f16 when `f16` is 1,
/// else bf16), D out by the C map.
#[kernel(block = 32)]
pub fn mma_probe(a: In<u16>, b: In<u16>, c: Out<f32>, f16: u32) {
    let lane = thread_idx_x();
    // SAFETY: the indices are inside the 16 x 16, 16 x 8 and 16 x 8 tiles.
    unsafe {
        let fa: [u32; 4] = core::array::from_fn(|r| {
            let at = |i: u32| {
                let (row, col) = mma::a_bf16(lane, i);
                a.load((16 * row + col) as usize)
            };
            mma::pack_bf16(at(2 * r as u32), at(2 * r as u32 + 1))
        });
        let fb: [u32; 2] = core::array::from_fn(|r| {
            let at = |i: u32| {
                let (k, n) = mma::b_bf16(lane, i);
                b.load((8 * k + n) as usize)
            };
            mma::pack_bf16(at(2 * r as u32), at(2 * r as u32 + 1))
        });
        let d = if f16 == 1 {
            mma::mma_m16n8k16::<half::f16>(fa, fb, [0.5; 4])
        } else {
            mma::mma_m16n8k16::<half::bf16>(fa, fb, [0.5; 4])
        };
        for (i, v) in d.into_iter().enumerate() {
            let (row, col) = mma::c_f32(lane, i as u32);
            c.store((8 * row + col) as usize, v);
        }
    }
}

/// binary16 decodes as IEEE 754 says (normal, subnormal, infinite, NaN),
/// and `mma.sync` in f16 and in bf16 computes `A B + C` from the ISA's
/// fragments: the same values, each encoded in its own format, give the
/// exact product (multiples of 1/16 below 4: exact in both).
#[test]
fn f16_decodes_and_mma_f16_multiplies() {
    use half::f16;
    let gpu = Gpu::emulator();
    // A's first column holds the patterns, B is 1 at (0, 0): D[i][0] is
    // pattern i's value plus C's 0.5 (exact for each).
    let patterns = [
        (0x3c00u16, 1.0f32),
        (0xc000, -2.0),
        (0x7bff, 65504.0),
        (0x0001, f32::powi(2.0, -24)),
        (0x0400, f32::powi(2.0, -14)),
        (0x3555, 0.33325195),
        (0x7c00, f32::INFINITY),
        (0xfc00, f32::NEG_INFINITY),
        (0x7e00, f32::NAN),
    ];
    let mut a = vec![0u16; 256];
    let mut b = vec![0u16; 128];
    for (i, &(bits, _)) in patterns.iter().enumerate() {
        a[16 * i] = bits;
    }
    b[0] = 0x3c00;
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mut dc = gpu.alloc::<f32>(128).unwrap();
    // SAFETY: the buffers hold the tiles.
    unsafe { mma_probe::launch(&gpu, 1, &da, &db, &mut dc, 1) }.unwrap();
    let c = gpu.download(&dc).unwrap();
    for (i, &(bits, want)) in patterns.iter().enumerate() {
        let got = c[8 * i];
        assert!(got == want + 0.5 || got.is_nan() && want.is_nan(), "{bits:#06x}: {got}");
    }
    let gpu = Gpu::emulator();
    let mut rng = SmallRng::seed_from_u64(21);
    let a: Vec<f32> = (0..256).map(|_| rng.random_range(-63..=63) as f32 / 16.0).collect();
    let b: Vec<f32> = (0..128).map(|_| rng.random_range(-63..=63) as f32 / 16.0).collect();
    for f16 in [0, 1] {
        let enc = |x: &f32| if f16 == 1 { f16::from_f32(*x).to_bits() } else { bf16(*x) };
        let (da, db) = (
            gpu.upload(&a.iter().map(enc).collect::<Vec<u16>>()).unwrap(),
            gpu.upload(&b.iter().map(enc).collect::<Vec<u16>>()).unwrap(),
        );
        let mut dc = gpu.alloc::<f32>(128).unwrap();
        gpu.poison(&mut dc).unwrap();
        // SAFETY: the buffers hold the tiles.
        unsafe { mma_probe::launch(&gpu, 1, &da, &db, &mut dc, f16) }.unwrap();
        let c = gpu.download(&dc).unwrap();
        for i in 0..16 {
            for j in 0..8 {
                let want: f32 = 0.5 + (0..16).map(|p| a[16 * i + p] * b[8 * p + j]).sum::<f32>();
                assert_eq!(c[8 * i + j], want, "f16 {f16}: D[{i}][{j}]");
            }
        }
    }
}

/// Problems the operands cannot take are errors before any launch: rows
/// not on 16 bytes for the TMA kernels even when `k` is 0 (no copy, but
/// the 16-bit kernels' paired stores of C still need an even `n`). (A
/// launch for another problem than the operands were checked for cannot
/// be written: the operands carry their problem.)
#[test]
fn operands_refuse_what_they_cannot_take() {
    let gpu = Gpu::emulator();
    let zeros = [half::bf16::ZERO; 16];
    let (da, db) = (gpu.upload(&zeros).unwrap(), gpu.upload(&zeros).unwrap());
    let mut dc = gpu.alloc::<f32>(40_000).unwrap();
    for kernel in Tensor.kernels() {
        if matches!(Step::<Bf16>::of(kernel), Ok(Step::Tma(_))) {
            let mut ops = tensor::Operands::<Bf16>::new((3, 9, 0), &da, &db).unwrap();
            let e = tensor::run_once(&gpu, kernel, &mut ops, &mut dc).unwrap_err().to_string();
            assert!(e.contains("multiple of 8, not 9"), "{}: {e}", kernel.name);
        }
    }
}
