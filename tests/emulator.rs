//! Every kernel on the CPU emulator: random inputs of awkward shapes
//! against the host references, through the same typed launches as on the
//! GPU; the emulator's own checks (races, bounds, barriers, shuffles); and
//! its analysis (bank conflicts, sectors) reproducing the seeds' arithmetic
//! from our kernels.

use gpu::checks;
use emu::{Analysis, EmuError};
use gpu::launch::Arg;
use gpu::launch::Dim3;
use kernel_lab::Error;
use kernel_lab::device::Gpu;
use kernel_lab::reduce::{self, Element, Reduce};
use kernel_lab::sgemm::{self, Problem, Sgemm};
use kernel_lab::transpose::{self, Transpose, random_input, reference, verify_exact};
use proptest::prelude::*;

fn transpose_on(
    gpu: &Gpu,
    kernel: gpu::launch::Kernel,
    nx: usize,
    ny: usize,
    seed: u64,
) -> Result<(), String> {
    let t = Transpose::load(gpu, kernel).map_err(|e| e.to_string())?;
    let host = random_input(nx * ny, seed);
    let input = gpu.upload(&host).map_err(|e| e.to_string())?;
    let mut output = gpu.alloc::<f32>(nx * ny).map_err(|e| e.to_string())?;
    gpu.poison(&mut output).map_err(|e| e.to_string())?;
    t.launch(gpu, &input, &mut output, nx, ny).map_err(|e| e.to_string())?;
    verify_exact(kernel.name, &gpu.download(&output).map_err(|e| e.to_string())?, &reference(&host, nx, ny))
        .map_err(|e| e.to_string())
}

#[test]
fn transpose_kernels_on_awkward_shapes() {
    let gpu = Gpu::emulator();
    for kernel in transpose::KERNELS {
        for (i, &(nx, ny)) in [(1, 1), (0, 5), (5, 0), (33, 31), (70, 129), (64, 64)].iter().enumerate() {
            transpose_on(&gpu, kernel, nx, ny, i as u64).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn transpose_any_shape(nx in 1usize..150, ny in 1usize..150, which in 0usize..5, seed: u64) {
        let gpu = Gpu::emulator();
        prop_assert_eq!(transpose_on(&gpu, transpose::KERNELS[which], nx, ny, seed), Ok(()));
    }

    #[test]
    fn reduce_any_size(n in 0usize..70_000, which in 0usize..6, seed: u64) {
        let gpu = Gpu::emulator();
        let variant = reduce::VARIANTS[which];
        let host = i32::random(n, seed);
        let mut input = gpu.upload(&host).unwrap();
        let got = Reduce::<i32>::load(&gpu, variant).unwrap().sum(&gpu, &mut input).unwrap();
        prop_assert_eq!(reduce::verify(&variant, &host, got), Ok(()));
    }
}

fn reduce_sizes<T: Element>(gpu: &Gpu, sizes: &[usize]) {
    for variant in reduce::VARIANTS.iter().filter(|v| T::kernel(v).is_some()) {
        let r = Reduce::<T>::load(gpu, *variant).unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            let host = T::random(n, 40 + i as u64);
            let mut input = gpu.upload(&host).unwrap();
            let got = r.sum(gpu, &mut input).unwrap();
            reduce::verify(variant, &host, got).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn reduce_kernels_on_awkward_sizes() {
    let gpu = Gpu::emulator();
    let sizes = [0, 1, 2, 31, 255, 256, 257, 1025, 4097, 32_769, 65_537];
    reduce_sizes::<i32>(&gpu, &sizes);
    reduce_sizes::<f32>(&gpu, &sizes);
    reduce_sizes::<f64>(&gpu, &sizes);
}

#[test]
fn reduce_fast_bits_do_not_depend_on_the_grid() {
    let gpu = Gpu::emulator();
    let host = f32::random(100_003, 9);
    let mut input = gpu.upload(&host).unwrap();
    let bits: Vec<u64> = [1, 2, 3, 7]
        .iter()
        .map(|&g| {
            Reduce::<f32>::load(&gpu, gpu::reduce::FAST)
                .unwrap()
                .with_grid(g)
                .sum(&gpu, &mut input)
                .unwrap()
                .bits()
        })
        .collect();
    assert!(bits.iter().all(|b| *b == bits[0]), "{bits:x?}");
}

/// The seed's bugs, each caught (deterministically, here) where our
/// kernels pass: a wrong sum, or for the early return a read of shared
/// memory nothing wrote (the emulator fills it with NaN-like bits per
/// block, so the sum is wrong).
#[test]
fn reduce_seed_bugs_are_caught() {
    let gpu = Gpu::emulator();
    let n = 256 * 9 + 77;
    let host = i32::random(n, 21);
    for bug in gpu::reduce::seed_bugs::ALL {
        let r = Reduce::<i32>::load(&gpu, bug).unwrap();
        let mut input = gpu.upload(&host).unwrap();
        let result = r.sum(&gpu, &mut input);
        assert!(
            !matches!(result, Ok(got) if reduce::verify(&bug, &host, got).is_ok()),
            "{} gave the right sum",
            bug.name
        );
    }
    let ok = Reduce::<i32>::load(&gpu, gpu::reduce::SMEM).unwrap();
    let mut input = gpu.upload(&host).unwrap();
    reduce::verify(&gpu::reduce::SMEM, &host, ok.sum(&gpu, &mut input).unwrap()).unwrap();
}

#[test]
fn sgemm_kernels_on_awkward_shapes() {
    let gpu = Gpu::emulator();
    for kernel in sgemm::KERNELS {
        let s = Sgemm::load(&gpu, kernel).unwrap();
        // The last shape has whole interior block tiles for the 128 x 256
        // kernels too (their unchecked main loop).
        let shapes = [(1, 1, 1), (5, 9, 0), (33, 65, 17), (130, 129, 20), (129, 260, 24)];
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let (a, b, c0) =
                (random_input(m * k, i as u64), random_input(k * n, 7 + i as u64), random_input(m * n, 9));
            let rows: Vec<usize> = (0..m).collect();
            let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
            for (alpha, beta) in [(1.5f32, 0.0f32), (0.75, -0.5)] {
                let p = Problem { m, n, k, alpha, beta };
                let mut c = gpu.upload(&c0).unwrap();
                if beta == 0.0 {
                    gpu.poison(&mut c).unwrap();
                }
                s.launch(&gpu, &p, &da, &db, &mut c).unwrap();
                let r = sgemm::check(
                    &p,
                    &gpu.download(&c).unwrap(),
                    &rows,
                    &sgemm::reference_rows(&p, &a, &b, &c0, &rows),
                );
                assert!(r.passed(), "{} {m}x{n}x{k} alpha={alpha} beta={beta}: {r:?}", kernel.name);
            }
        }
    }
}

/// Runs a transpose kernel at 64 x 64 (whole tiles) with the analysis on.
fn transpose_analysis(kernel: gpu::launch::Kernel) -> Analysis {
    let gpu = Gpu::emulator();
    gpu.set_analysis(true);
    transpose_on(&gpu, kernel, 64, 64, 1).unwrap();
    gpu.take_analysis()
}

/// The seeds' arithmetic, measured from our kernels.
#[test]
fn transpose_bank_conflicts_and_sectors() {
    let shared = transpose_analysis(transpose::KERNELS[2]);
    assert_eq!(shared.shared_loads.per_request(), 32.0, "32 x 32 tile column read: 32-way");
    assert_eq!(shared.shared_stores.per_request(), 1.0, "row writes: conflict-free");
    let padded = transpose_analysis(transpose::KERNELS[3]);
    assert_eq!(padded.shared_loads.per_request(), 1.0, "32 x 33 tile: conflict-free");
    let fast = transpose_analysis(transpose::KERNELS[4]);
    assert_eq!(fast.shared_loads.per_request(), 1.0);
    assert_eq!(fast.shared_stores.per_request(), 1.0);
    let row = transpose_analysis(transpose::KERNELS[0]);
    assert_eq!((row.global_loads.per_request(), row.global_stores.per_request()), (4.0, 32.0));
    assert_eq!(row.global_stores.efficiency(), 4.0 / 32.0);
    let col = transpose_analysis(transpose::KERNELS[1]);
    assert_eq!((col.global_loads.per_request(), col.global_stores.per_request()), (32.0, 4.0));
    for a in [shared, padded, fast] {
        assert_eq!((a.global_loads.per_request(), a.global_stores.per_request()), (4.0, 4.0));
    }
}

/// Kernel 6's warp tiling removes kernel 5's `Bs` fragment conflicts: in
/// 16-byte phases of 8 lanes, lanes 8 words apart share banks in the
/// contiguous layout.
#[test]
fn sgemm_warp_tiling_removes_fragment_conflicts() {
    let analysis = |kernel| {
        let gpu = Gpu::emulator();
        let (m, n, k) = (128, 128, 16);
        let (a, b) =
            (gpu.upload(&random_input(m * k, 1)).unwrap(), gpu.upload(&random_input(k * n, 2)).unwrap());
        let mut c = gpu.alloc::<f32>(m * n).unwrap();
        gpu.set_analysis(true);
        Sgemm::load(&gpu, kernel)
            .unwrap()
            .launch(&gpu, &Problem { m, n, k, alpha: 1.0, beta: 0.0 }, &a, &b, &mut c)
            .unwrap();
        gpu.take_analysis()
    };
    let contiguous = analysis(gpu::sgemm::DOUBLE_BUFFER);
    let warp_tiled = analysis(gpu::sgemm::WARP_TILED);
    assert_eq!(warp_tiled.shared_loads.efficiency(), 1.0, "{warp_tiled:?}");
    assert!(contiguous.shared_loads.efficiency() < 0.7, "{contiguous:?}");
    assert!(warp_tiled.shared_loads.cost < contiguous.shared_loads.cost);
}

/// Launches a check kernel over one block with the given buffers.
fn run_check(kernel: &gpu::launch::Kernel, buffers: &[usize]) -> (Result<(), Error>, Vec<Vec<f32>>) {
    let gpu = Gpu::emulator();
    let mut bufs: Vec<_> = buffers.iter().map(|&n| gpu.upload(&vec![0.0f32; n]).unwrap()).collect();
    let args: Vec<Arg> = bufs.iter().map(|b| b.arg()).collect();
    let f = gpu.function(kernel).unwrap();
    let result = gpu.launch(&f, Dim3::x(1), &args);
    let out = bufs.iter_mut().map(|b| gpu.download(b).unwrap()).collect();
    (result, out)
}

fn emu_error(result: Result<(), Error>) -> EmuError {
    match result {
        Err(Error::Emulator(e)) => e,
        other => panic!("expected an emulator error, got {other:?}"),
    }
}

#[test]
fn a_planted_race_is_reported_with_kernel_address_and_threads() {
    let (result, _) = run_check(&checks::RACE, &[64]);
    let e = emu_error(result);
    assert!(matches!(e, EmuError::Race { ref kernel, .. } if kernel == "check_race"), "{e}");
    let text = e.to_string();
    assert!(text.contains("check_race") && text.contains("race") && text.contains("threads"), "{text}");
}

#[test]
fn out_of_bounds_accesses_name_kernel_block_and_thread() {
    let (result, _) = run_check(&checks::SHARED_OUT_OF_BOUNDS, &[64]);
    let text = emu_error(result).to_string();
    assert!(
        text.contains("check_shared_out_of_bounds")
            && text.contains("shared")
            && text.contains("thread [63, 0, 0]"),
        "{text}"
    );
    let (result, _) = run_check(&checks::GLOBAL_OUT_OF_BOUNDS, &[64, 64]);
    let text = emu_error(result).to_string();
    assert!(text.contains("global access out of bounds") && text.contains("thread [63, 0, 0]"), "{text}");
}

#[test]
fn divergent_barriers_and_deadlocks_are_errors_not_hangs() {
    let (result, _) = run_check(&checks::DIVERGENT_BARRIER, &[64]);
    assert!(matches!(emu_error(result), EmuError::DivergentBarrier { .. }));
    let (result, _) = run_check(&checks::SHUFFLE_DEADLOCK, &[64]);
    assert!(matches!(emu_error(result), EmuError::Deadlock { .. }));
}

#[test]
fn exited_threads_do_not_hold_the_barrier() {
    let (result, out) = run_check(&checks::EXITED_THREADS, &[64]);
    result.unwrap();
    let want: Vec<f32> = (0..64).map(|t| if t < 16 { (15 - t) as f32 } else { 0.0 }).collect();
    assert_eq!(out[0], want);
}

#[test]
fn shuffles_follow_cuda_semantics() {
    let (result, out) = run_check(&checks::SHUFFLES, &[3 * 64]);
    result.unwrap();
    // shfl_down: lanes whose source is past lane 31 keep their own value.
    let mut down: Vec<f32> = (0..32).map(|l| l as f32).collect();
    for delta in [16, 8, 4, 2, 1] {
        down = (0..32).map(|l| down[l] + if l + delta < 32 { down[l + delta] } else { down[l] }).collect();
    }
    for t in 0..64 {
        let lane = t % 32;
        assert_eq!(out[0][3 * t], down[lane], "down, thread {t}");
        assert_eq!(out[0][3 * t + 1], 496.0, "xor all-reduce, thread {t}");
        let half = if lane < 15 {
            (lane + 1) as f32
        } else if lane == 15 {
            15.0
        } else {
            -1.0
        };
        assert_eq!(out[0][3 * t + 2], half, "half-warp mask, thread {t}");
    }
    assert_eq!(down[0], 496.0);
}

/// The memory lab on the emulator: every variant verified, and the
/// analysis the lab's doc comments derive.
#[test]
fn memory_lab_analysis_matches_the_arithmetic() {
    let gpu = Gpu::emulator();
    let records = kernel_lab::lab::run(
        &gpu,
        kernel_lab::lab::Sizes { n: 4096, strided: 2048, tiles: 2 },
        None,
        &|_| {},
    )
    .unwrap();
    for r in &records {
        assert!(r.verified, "{}: {:?}", r.kernel, r.error);
    }
    let a = |name: &str| records.iter().find(|r| r.kernel == name).unwrap().analysis.unwrap();
    let close = |x: Option<f64>, want: f64| (x.unwrap() - want).abs() < 0.05;
    // Banks.
    assert!(close(a("lab_bank_column_32").shared_load_ways, 32.0));
    for k in [
        "lab_bank_column_33",
        "lab_bank_column_31",
        "lab_bank_row",
        "lab_bank_broadcast",
        "lab_bank_f64_row",
        "lab_bank_f64_column_33",
    ] {
        assert!(close(a(k).shared_load_ways, 1.0), "{k}: {:?}", a(k));
    }
    assert!(close(a("lab_bank_f64_column").shared_load_ways, 16.0));
    // Strides: min(32, 4 * stride) sectors per request.
    for (stride, sectors) in [(1, 4.0), (2, 8.0), (4, 16.0), (8, 32.0), (32, 32.0)] {
        assert!(
            close(a(&format!("lab_copy_stride*{stride}")).global_load_sectors, sectors),
            "stride {stride}"
        );
    }
    // Alignment: one more sector unless the offset is a multiple of 8.
    for (offset, sectors) in [(0, 4.0), (1, 5.0), (7, 5.0), (8, 4.0), (9, 5.0), (32, 4.0)] {
        assert!(
            close(a(&format!("lab_copy_offset+{offset}")).global_load_sectors, sectors),
            "offset {offset}"
        );
    }
    // Layout: SoA and staged loads are coalesced; 16-byte AoS moves 16
    // sectors per request; 12-byte AoS 12 or 13 per load.
    assert!(close(a("lab_len2_soa").global_load_sectors, 4.0));
    assert!(close(a("lab_len2_aos16").global_load_sectors, 16.0));
    let aos12 = a("lab_len2_aos12").global_load_sectors.unwrap();
    assert!((12.0..=13.0).contains(&aos12), "{aos12}");
    assert!(close(a("lab_len2_aos12_staged").global_load_sectors, 4.0));
    assert!(close(a("lab_len2_aos12_staged").shared_load_ways, 1.0));
}

#[test]
fn async_copies_land_at_the_wait_and_must_be_waited_for() {
    let gpu = Gpu::emulator();
    let input: Vec<f32> = (0..64).map(|t| t as f32 + 0.5).collect();
    let da = gpu.upload(&input).unwrap();
    let out = gpu.upload(&vec![1.0f32; 3 * 64]).unwrap();
    let f = gpu.function(&checks::ASYNC_COPIES).unwrap();
    gpu.launch(&f, Dim3::x(1), &[da.arg(), out.arg()]).unwrap();
    let out = gpu.download(&out).unwrap();
    for t in 0..64 {
        assert!(out[3 * t].is_nan(), "thread {t} saw its copy before waiting: {}", out[3 * t]);
        assert_eq!(out[3 * t + 1], input[t], "thread {t}: copy after the wait");
        assert_eq!(out[3 * t + 2], 0.0, "thread {t}: zero-filling copy");
    }
    let (result, _) = run_check(&checks::ASYNC_NEVER_WAITED, &[64]);
    let text = emu_error(result).to_string();
    assert!(text.contains("cp.async") && text.contains("never waited"), "{text}");
}
