//! GPU tests: every kernel of every family on random inputs of awkward
//! shapes against its host reference, outputs poisoned first. Without a GPU
//! they print why they are skipped and pass.
//!
//! (`harness = false`: libtest would hide the skip message.)

use std::process::ExitCode;

use gpu::launch::{Kernel, registry};
use kernel_lab::Error;
use kernel_lab::families::reduce::{self, Element, Reduction};
use kernel_lab::families::sgemm;
use kernel_lab::families::transpose::{self, reference};
use kernel_lab::families::{FAMILIES, Run};
use kernel_lab::measure::{Shape, data::uniform_f32 as random_input, verify};
use kernel_lab::runtime::Gpu;

fn family(name: &str) -> Vec<&'static Kernel> {
    registry::module(&format!("gpu::{name}"))
}

const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (0, 9),
    (9, 0),
    (1, 1000),
    (1000, 1),
    (31, 33),
    (33, 31),
    (32, 32),
    (64, 64),
    (100, 37),
    (1023, 1025),
    (4099, 17),
    (17, 4099),
    (2048, 1536),
];

fn transpose_shapes(gpu: &Gpu) -> Result<(), String> {
    for kernel in family("transpose") {
        let t = transpose::typed(kernel).map_err(|e| e.to_string())?;
        for (i, &(nx, ny)) in SHAPES.iter().enumerate() {
            let host = random_input(nx * ny, i as u64);
            let input = gpu.upload(&host).map_err(|e| e.to_string())?;
            let mut output = gpu.alloc::<f32>(nx * ny).map_err(|e| e.to_string())?;
            if nx * ny > 0 {
                gpu.poison(&mut output).map_err(|e| e.to_string())?;
            }
            transpose::launch(gpu, t, &input, &mut output, nx, ny).map_err(|e| e.to_string())?;
            gpu.sync().map_err(|e| e.to_string())?;
            let got = gpu.download(&output).map_err(|e| e.to_string())?;
            verify::exact(&format!("{} {nx}x{ny}", kernel.name), &got, &reference(&host, nx, ny))?;
        }
    }
    Ok(())
}

fn launch_rejects_wrong_buffers(gpu: &Gpu) -> Result<(), String> {
    let t = transpose::typed(family("transpose")[0]).map_err(|e| e.to_string())?;
    let input = gpu.upload(&random_input(12, 1)).map_err(|e| e.to_string())?;
    let mut output = gpu.alloc::<f32>(11).map_err(|e| e.to_string())?;
    match transpose::launch(gpu, t, &input, &mut output, 4, 3) {
        Err(Error::InvalidInput(m)) if m.contains("needs buffers of 12 elements") => Ok(()),
        other => Err(format!("expected a size error, got {other:?}")),
    }
}

/// The tensor-core GEMM library call (`kernel_lab::gemm`) in every
/// tensor-core precision (FP8 with scales), layout and pair of ops, at awkward shapes, leading
/// dimensions above their minimum, BLAS's scalar cases, batches, forced
/// k-splits and each epilogue: every element within its derived bound
/// (`gemm::reference`), the gaps outside D untouched.
fn gemm_library_every_path(gpu: &Gpu) -> Result<(), String> {
    use kernel_lab::blas::{Gemm, Layout, Op};
    use kernel_lab::gemm::verify::verify;
    use kernel_lab::gemm::{
        Act, Bf16, Call, E4m3, E5m2, Element, F16, Plan, Precision, TensorGemm, Tf32, TileShape,
    };
    fn one<P: Precision, O: Element>(
        gpu: &Gpu,
        lib: &TensorGemm,
        call: &Call,
        seed: u64,
    ) -> Result<f64, String> {
        match verify::<P, O>(gpu, lib, call, seed, None) {
            Ok(Ok(v)) => Ok(v.ratio),
            Ok(Err(why)) => Err(format!("{} -> {} {call}: {why}", P::NAME, O::NAME)),
            Err(e) => Err(format!("{} -> {} {call}: {e}", P::NAME, O::NAME)),
        }
    }
    let libs = [
        TensorGemm::new(),
        TensorGemm::forcing(Plan { splits: 3, tile: TileShape::Wide }),
        TensorGemm::forcing(Plan { splits: 1, tile: TileShape::Mid }),
        TensorGemm::forcing(Plan { splits: 3, tile: TileShape::Mid }),
        TensorGemm::forcing(Plan { splits: 1, tile: TileShape::Narrow }),
        TensorGemm::forcing(Plan { splits: 3, tile: TileShape::Narrow }),
        TensorGemm::forcing(Plan { splits: 1, tile: TileShape::Short }),
        TensorGemm::forcing(Plan { splits: 3, tile: TileShape::Short }),
    ];
    let shapes = [(1, 1, 1), (3, 5, 9), (33, 130, 257), (257, 33, 130), (130, 257, 33), (64, 256, 640)];
    let scalars = [(1.0f32, 0.0f32), (0.7, 1.3), (0.0, 1.3), (-1.0, 0.5)];
    let (mut calls, mut worst) = (0, 0.0f64);
    for (f, layout) in [Layout::Row, Layout::Col].into_iter().enumerate() {
        for op_a in [Op::N, Op::T] {
            for op_b in [Op::N, Op::T] {
                for (s, &(m, n, k)) in shapes.iter().enumerate() {
                    let (alpha, beta) = scalars[(s + f) % scalars.len()];
                    let mut g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(alpha, beta);
                    g.lda += s % 3;
                    g.ldc += (s + 1) % 2;
                    let act = [Act::None, Act::Relu, Act::Gelu][s % 3];
                    let call = Call::new(g).packed(1 + s % 2).with_epilogue(s % 2 == 1, act);
                    // Each plan in turn: the 48 calls cycle through the 8 plans 6
                    // times, each plan meeting 3 of the 6 shapes.
                    let lib = &libs[(calls / 5) % libs.len()];
                    let seed = (calls + 1) as u64;
                    worst = worst.max(one::<Bf16, half::bf16>(gpu, lib, &call, seed)?);
                    worst = worst.max(one::<F16, f32>(gpu, lib, &call, seed)?);
                    worst = worst.max(one::<Tf32, half::f16>(gpu, lib, &call, seed)?);
                    let scaled = call.with_scales(0.5, 3.0);
                    worst = worst.max(one::<E4m3, half::bf16>(gpu, lib, &scaled, seed)?);
                    worst = worst.max(one::<E5m2, f32>(gpu, lib, &scaled, seed)?);
                    calls += 5;
                }
            }
        }
    }
    println!("gemm_library_every_path: {calls} calls, worst error {worst:.3} of its bound");
    Ok(())
}

/// The reference BLAS's test criterion (`sblat3`'s: `|D - D_ref| / (eps
/// G) < 16`, `G = |alpha| sum_p |a_ip b_pj| + |beta c_ij|`) on every
/// tensor-core precision, with `f32` output, at the netlib sizes in all
/// eight forms with its alpha and beta values, leading dimensions above
/// their minimum. `eps` is each precision's: `f32`'s where the products
/// are exact (bf16, f16), tf32's input truncation (`2^-10`), and for FP8
/// the tensor core's ~14-bit sums (`2^-13` per 32-term instruction:
/// `2^-13 ceil(k / 32)`).
fn gemm_netlib_low_precision(gpu: &Gpu) -> Result<(), String> {
    use kernel_lab::blas::reference::netlib_scalars;
    use kernel_lab::blas::{Gemm, Layout, Op, Operand};
    use kernel_lab::gemm::reference::Inputs;
    use kernel_lab::gemm::{Bf16, Call, E4m3, E5m2, F16, Input, Precision, TensorGemm, Tf32};
    fn sweep<P: Precision>(gpu: &Gpu, eps: impl Fn(usize) -> f64) -> Result<(usize, f64), String> {
        const SIZES: [usize; 10] = [0, 1, 2, 3, 5, 9, 31, 33, 127, 129];
        let lib = TensorGemm::new();
        let scalars = netlib_scalars();
        let (mut calls, mut worst) = (0, 0.0f64);
        for layout in [Layout::Row, Layout::Col] {
            for op_a in [Op::N, Op::T] {
                for op_b in [Op::N, Op::T] {
                    for i in 0..SIZES.len() {
                        let (m, n, k) = (SIZES[i], SIZES[(3 * i + 1) % 10], SIZES[(7 * i + 2) % 10]);
                        let (alpha, beta) = scalars[(calls + i) % scalars.len()];
                        let mut g = Gemm::new(layout, op_a, op_b, m, n, k).scaled(alpha, beta);
                        g.lda += 1 + (m + k) % 3;
                        g.ldb += 1 + (n + k) % 3;
                        g.ldc += 1 + (m + n) % 3;
                        let mut call = Call::new(g);
                        if P::SCALED {
                            call = call.with_scales(0.5, 2.0);
                        }
                        let what = |e: String| format!("{} {call}: {e}", P::NAME);
                        let x = Inputs::<P, f32>::random(&call, 77 + calls as u64);
                        let up = |v: &Vec<P::Input>| gpu.upload(v).map_err(|e| what(e.to_string()));
                        let (a, b) = (up(&x.a)?, up(&x.b)?);
                        let mut c = gpu.upload(&x.c).map_err(|e| what(e.to_string()))?;
                        lib.run::<P, f32>(gpu, &call, &a, &b, &mut c, None)
                            .map_err(|e| what(e.to_string()))?;
                        let got = gpu.download(&c).map_err(|e| what(e.to_string()))?;
                        let scale = call.product_scale() as f64;
                        for i in 0..m {
                            for j in 0..n {
                                let (mut dot, mut abs) = (0.0f64, 0.0f64);
                                for p in 0..k {
                                    let v = x.a[g.index(Operand::A, i, p)].to_f64()
                                        * x.b[g.index(Operand::B, p, j)].to_f64();
                                    dot += v;
                                    abs += v.abs();
                                }
                                let at = g.index(Operand::C, i, j);
                                let c0 = if beta == 0.0 { 0.0 } else { beta as f64 * x.c[at] as f64 };
                                let want = scale * dot + c0;
                                let gauge = scale.abs() * abs + c0.abs();
                                let err = (got[at] as f64 - want).abs();
                                let ratio = if !got[at].is_finite() {
                                    f64::INFINITY
                                } else if gauge == 0.0 {
                                    if err == 0.0 { 0.0 } else { f64::INFINITY }
                                } else {
                                    err / (eps(k) * gauge)
                                };
                                if ratio >= 16.0 {
                                    return Err(what(format!(
                                        "D[{i}][{j}] = {}, want {want}: test ratio {ratio:.2}",
                                        got[at]
                                    )));
                                }
                                worst = worst.max(ratio);
                            }
                        }
                        calls += 1;
                    }
                }
            }
        }
        Ok((calls, worst))
    }
    let f32_eps = f32::EPSILON as f64;
    let fp8 = |k: usize| f64::powi(2.0, -13) * k.div_ceil(32).max(1) as f64;
    for (name, result) in [
        ("bf16", sweep::<Bf16>(gpu, |_| f32_eps)),
        ("f16", sweep::<F16>(gpu, |_| f32_eps)),
        ("tf32", sweep::<Tf32>(gpu, |_| f64::powi(2.0, -10))),
        ("e4m3", sweep::<E4m3>(gpu, fp8)),
        ("e5m2", sweep::<E5m2>(gpu, fp8)),
    ] {
        let (calls, worst) = result?;
        println!(
            "gemm_netlib_low_precision {name}: {calls} calls, worst test ratio {worst:.3} (threshold 16)"
        );
    }
    Ok(())
}

/// A GPU test: `Err` carries the failure's description.
type GpuTest = fn(&Gpu) -> Result<(), String>;

const REDUCE_SIZES: &[usize] = &[
    0,
    1,
    2,
    3,
    31,
    33,
    255,
    256,
    257,
    1023,
    1025,
    4097,
    10_007,
    32_769,
    65_537,
    (1 << 20) - 1,
    (1 << 20) + 1,
    3 << 20,
    (1 << 24) + 1,
];

fn reduce_sizes_for<T: Element>(gpu: &Gpu) -> Result<(), String> {
    for kernel in family("reduce").into_iter().filter(|k| k.instance == Some(T::NAME)) {
        let r = Reduction::<T>::new(gpu, kernel).map_err(|e| e.to_string())?;
        for (i, &n) in REDUCE_SIZES.iter().enumerate() {
            let host = T::random(n, 100 + i as u64);
            let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
            let first = r.sum(gpu, &mut input).map_err(|e| e.to_string())?;
            let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
            let second = r.sum(gpu, &mut input).map_err(|e| e.to_string())?;
            if first.bits() != second.bits() {
                return Err(format!("{} n={n}: two runs differ", kernel.name));
            }
            reduce::verify(kernel, &host, first)?;
        }
    }
    Ok(())
}

fn reduce_sizes(gpu: &Gpu) -> Result<(), String> {
    reduce_sizes_for::<i32>(gpu)?;
    reduce_sizes_for::<f32>(gpu)?;
    reduce_sizes_for::<f64>(gpu)
}

/// Kernel 6's bits do not depend on its grid.
fn reduce_fast_same_bits_for_every_grid(gpu: &Gpu) -> Result<(), String> {
    fn check<T: Element>(gpu: &Gpu, n: usize) -> Result<(), String> {
        let host = T::random(n, 5);
        let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
        let mut bits = Vec::new();
        for grid in [1, 2, 7, 132, 528, 100_000] {
            let r = Reduction::<T>::of(gpu, "reduce_fast").map_err(|e| e.to_string())?.with_grid(grid);
            bits.push((grid, r.sum(gpu, &mut input).map_err(|e| e.to_string())?.bits()));
        }
        if bits.iter().any(|b| b.1 != bits[0].1) {
            return Err(format!("{} n={n}: bits differ across grids: {bits:x?}", T::NAME));
        }
        Ok(())
    }
    check::<f32>(gpu, 10_000_019)?;
    check::<f64>(gpu, 10_000_019)?;
    check::<i32>(gpu, 1 << 22)
}

/// 2^30 + 3 elements: byte offsets past 2^32 (4 GiB of i32).
fn reduce_past_32_bit_offsets(gpu: &Gpu) -> Result<(), String> {
    let n = (1usize << 30) + 3;
    let host = i32::random(n, 11);
    let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
    for function in ["reduce_fast", "reduce_shuffle"] {
        let r = Reduction::<i32>::of(gpu, function).map_err(|e| e.to_string())?;
        let got = r.sum(gpu, &mut input).map_err(|e| e.to_string())?;
        reduce::verify(r.kernel, &host, got)?;
    }
    Ok(())
}

/// Each seed bug fails verification where our kernels pass.
fn reduce_seed_bugs_are_caught(gpu: &Gpu) -> Result<(), String> {
    let n = 256 * 1000 + 77; // several blocks per SM, a partial last block
    let host = i32::random(n, 21);
    // Fill every SM's shared memory with something other than zero first,
    // as any earlier kernel would.
    let warm = Reduction::<i32>::of(gpu, "reduce_smem").map_err(|e| e.to_string())?;
    let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
    reduce::verify(warm.kernel, &host, warm.sum(gpu, &mut input).map_err(|e| e.to_string())?)?;
    for bug in registry::module("gpu::reduce::seed_bugs") {
        let r = Reduction::<i32>::new(gpu, bug).map_err(|e| e.to_string())?;
        let mut input = gpu.upload(&host).map_err(|e| e.to_string())?;
        match r.sum(gpu, &mut input) {
            Ok(got) if reduce::verify(bug, &host, got).is_ok() => {
                return Err(format!("{} gave the right sum: the test would not catch it", bug.name));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every SGEMM kernel on awkward shapes, every element against the f64
/// reference, for beta = 0 (C poisoned) and beta != 0.
fn sgemm_shapes(gpu: &Gpu) -> Result<(), String> {
    let shapes = [
        (1, 1, 1),
        (1, 7, 3),
        (17, 1, 5),
        (5, 9, 0),
        (33, 65, 17),
        (127, 129, 131),
        (128, 128, 8),
        (251, 509, 127),
        (257, 255, 513),
    ];
    for kernel in family("sgemm") {
        let s = sgemm::typed(kernel).map_err(|e| e.to_string())?;
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let (a, b, c0) = (
                random_input(m * k, 3 * i as u64),
                random_input(k * n, 3 * i as u64 + 1),
                random_input(m * n, 3 * i as u64 + 2),
            );
            let rows: Vec<usize> = (0..m).collect();
            let (da, db) =
                (gpu.upload(&a).map_err(|e| e.to_string())?, gpu.upload(&b).map_err(|e| e.to_string())?);
            for (alpha, beta) in [(1.5f32, 0.0f32), (0.75, -0.5)] {
                let p = sgemm::Problem { m, n, k, alpha, beta };
                let mut c = gpu.upload(&c0).map_err(|e| e.to_string())?;
                if beta == 0.0 {
                    gpu.poison(&mut c).map_err(|e| e.to_string())?;
                }
                sgemm::launch(gpu, s, &p, &da, &db, &mut c).map_err(|e| e.to_string())?;
                gpu.sync().map_err(|e| e.to_string())?;
                let got = gpu.download(&c).map_err(|e| e.to_string())?;
                let result = sgemm::check(&p, &got, &rows, &sgemm::reference_rows(&p, &a, &b, &c0, &rows));
                if !result.passed() {
                    return Err(format!("{} {m}x{n}x{k} alpha={alpha} beta={beta}: {result:?}", kernel.name));
                }
            }
        }
    }
    Ok(())
}

/// The reference BLAS's whole sgemm sweep: every (m, n, k) of its 11 sizes,
/// every alpha and beta, both layouts and every pair of ops (95,832 calls),
/// through the dispatcher (which picks split-K for the long-k shapes).
fn sgemm_netlib(gpu: &Gpu) -> Result<(), String> {
    use kernel_lab::blas::reference::{NETLIB_SIZES, netlib_scalars, netlib_sweep};
    let forms = kernel_lab::families::sgemm::shapes::all_forms();
    let (calls, worst) = netlib_sweep(gpu, &NETLIB_SIZES, &forms, &netlib_scalars(), 11)?;
    println!("sgemm_netlib: {calls} calls, worst test ratio {worst:.3} (threshold 16)");
    Ok(())
}

/// Split-K is deterministic: the same call twice gives the same bits.
fn sgemm_split_k_same_bits(gpu: &Gpu) -> Result<(), String> {
    use kernel_lab::blas::reference::Matrices;
    use kernel_lab::blas::{Gemm, Plan, Sgemm};
    let g = Gemm::row(300, 200, 20_000).scaled(0.7, 1.3);
    let x = Matrices::random(&g, 9);
    let e = |e: Error| e.to_string();
    let (a, b) = (gpu.upload(&x.a).map_err(e)?, gpu.upload(&x.b).map_err(e)?);
    let mut sgemm = Sgemm::new();
    let mut results = Vec::new();
    for _ in 0..3 {
        let mut c = gpu.upload(&x.c).map_err(e)?;
        sgemm.run_with(gpu, &g, Some(Plan::new((64, 64), 16, g.k)), &a, &b, &mut c).map_err(e)?;
        results.push(gpu.download(&c).map_err(e)?);
    }
    let bits = |v: &Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if results.iter().any(|r| bits(r) != bits(&results[0])) {
        return Err("split-K results differ between runs".into());
    }
    Ok(())
}

/// Every family's own verification (what the suite runs before timing), at
/// awkward sizes: the lab at 100003 (a partial last block in every study),
/// the example family at sizes around its block.
fn families_verify(gpu: &Gpu) -> Result<(), String> {
    let sizes = |name: &str| -> Vec<Shape> {
        match name {
            "lab" => vec![Shape::n(100_003)],
            "scale" => [1, 255, 257, 1_000_003].map(Shape::n).into(),
            "transpose" => vec!["8191x8193".parse().unwrap()],
            // Odd n and k (the TMA kernels left out), odd n with k a
            // multiple of 4 (tf32's TMA path with its odd-n stores), an
            // odd m on every path (the clusters' last row of tiles half
            // outside C), and a small cube.
            "tensor" => ["1000x999x1001", "1000x999x1000", "777x1000x1000"]
                .map(|s| s.parse().unwrap())
                .into_iter()
                .chain([Shape::n(129)])
                .collect(),
            // Batch 4, 16 heads, d = 128: odd lengths, a partial last
            // query and key tile.
            "attention" => [77, 1000, 4097].map(Shape::n).into(),
            _ => vec![],
        }
    };
    for family in FAMILIES {
        for size in sizes(family.name()) {
            let records =
                family.run(&Run::verify(gpu, &size, &family.kernels())).map_err(|e| e.to_string())?;
            if let Some(r) = records.iter().find(|r| !r.verified) {
                return Err(format!("{} {size}: {:?}", r.kernel, r.error));
            }
        }
    }
    Ok(())
}

/// The `cuda_std` conformance kernels on the GPU, from their own PTX (the
/// one for this device: `sm_90a` on Hopper).
fn cuda_std_conformance(_: &Gpu) -> Result<(), String> {
    static PTX: &[lab_runtime::Ptx] = lab_runtime::include_ptx!("cuda_std_conformance");
    let gpu = Gpu::open(0, PTX).map_err(|e| e.to_string())?;
    for (area, outcome) in cuda_std_conformance::check::all(&gpu).map_err(|e| e.to_string())? {
        outcome.map_err(|e| format!("{area} ({}): {e}", gpu.info.ptx_arch))?;
    }
    Ok(())
}

/// `GpuFloat` and `FloatExt` on the GPU: every function over its sweep
/// (2^18 bit patterns, the specials, its ranges and the neighbourhoods of
/// its zeros), each result bit-equal to the host's evaluation (the
/// emulator's model) and within the bound its documentation states.
/// Prints the table of measured maxima.
fn cuda_std_float_functions(_: &Gpu) -> Result<(), String> {
    use cuda_std_conformance::math_check;
    static PTX: &[lab_runtime::Ptx] = lab_runtime::include_ptx!("cuda_std_conformance");
    let gpu = Gpu::open(0, PTX).map_err(|e| e.to_string())?;
    let (r32, r64) = math_check::sweep_on(&gpu, 1 << 18).map_err(|e| e.to_string())??;
    println!(
        "float functions on {} ({}):\n{}",
        gpu.info.name,
        gpu.info.ptx_arch,
        math_check::table(&r32, &r64)
    );
    Ok(())
}

fn main() -> ExitCode {
    let gpu = match kernel_lab::runtime::open(0) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("gpu tests: SKIPPED, {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("gpu tests: could not open the GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("gpu tests on {}", kernel_lab::cli::device_line(&gpu));
    let tests: [(&str, GpuTest); 14] = [
        ("gemm_library_every_path", gemm_library_every_path),
        ("gemm_netlib_low_precision", gemm_netlib_low_precision),
        ("sgemm_netlib", sgemm_netlib),
        ("sgemm_split_k_same_bits", sgemm_split_k_same_bits),
        ("families_verify", families_verify),
        ("sgemm_shapes", sgemm_shapes),
        ("reduce_sizes", reduce_sizes),
        ("reduce_fast_same_bits_for_every_grid", reduce_fast_same_bits_for_every_grid),
        ("reduce_past_32_bit_offsets", reduce_past_32_bit_offsets),
        ("reduce_seed_bugs_are_caught", reduce_seed_bugs_are_caught),
        ("transpose_shapes", transpose_shapes),
        ("launch_rejects_wrong_buffers", launch_rejects_wrong_buffers),
        ("cuda_std_conformance", cuda_std_conformance),
        ("cuda_std_float_functions", cuda_std_float_functions),
    ];
    // Arguments, if any, pick the tests whose names contain one of them.
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let tests: Vec<(&str, GpuTest)> = tests
        .into_iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    let mut failed = 0;
    for &(name, test) in &tests {
        match test(&gpu) {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED: {e}");
            }
        }
    }
    println!("{} passed, {failed} failed", tests.len() - failed);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
