//! How long real kernels take on the emulator: one launch each of the
//! double-buffered SGEMM, the GEMM library's Hopper kernel and the Hopper
//! attention step, at a stated size, with every check on and with the
//! race checks off; and the speed body of [`super::speed`] compiled for
//! the CPU, without the emulator, for the ratio of the two.

use std::fmt::Write;
use std::time::Instant;

use crate::attention::{self, Problem, Step};
use crate::blas::{Gemm, Layout, Op};
use crate::families::sgemm;
use crate::gemm::{Bf16, Call, TensorGemm};
use crate::measure::data::uniform_f32;
use crate::runtime::{Gpu, Result};

/// One kernel's launch on the emulator: its name, the size, and its
/// seconds with the checks on and off (the best of a few launches).
pub struct KernelTime {
    pub kernel: &'static str,
    pub size: String,
    pub on: f64,
    pub off: f64,
}

/// The best of `runs` calls of `launch`, in seconds, on `gpu` with the
/// race checks `on` or off.
fn best(gpu: &Gpu, on: bool, runs: usize, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    gpu.set_checks(on);
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        launch()?;
        gpu.sync()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    gpu.set_checks(true);
    Ok(best)
}

/// Times each kernel, `runs` launches each way.
pub fn measure(runs: usize) -> Result<Vec<KernelTime>> {
    let gpu = Gpu::emulator();
    let mut out = Vec::new();
    let mut time =
        |kernel: &'static str, size: String, launch: &mut dyn FnMut() -> Result<()>| -> Result<()> {
            let on = best(&gpu, true, runs, &mut *launch)?;
            let off = best(&gpu, false, runs, &mut *launch)?;
            out.push(KernelTime { kernel, size, on, off });
            Ok(())
        };

    // The SGEMM ladder's double-buffered step, 256^3 f32.
    let n = 256;
    let kernel = gpu::launch::registry::find("sgemm_double_buffer").expect("the SGEMM ladder's kernel");
    let typed = sgemm::typed(kernel)?;
    let p = sgemm::Problem { m: n, n, k: n, alpha: 1.0, beta: 0.0 };
    let (a, b) = (gpu.upload(&uniform_f32(n * n, 1))?, gpu.upload(&uniform_f32(n * n, 2))?);
    let mut c = gpu.alloc::<f32>(n * n)?;
    time("sgemm_double_buffer", format!("{n}^3 f32"), &mut || {
        sgemm::launch(&gpu, typed, &p, &a, &b, &mut c)
    })?;

    // The GEMM library's Hopper kernel, 256^3 bf16 in, f32 out: one launch.
    let call = Call::new(Gemm::new(Layout::Row, Op::N, Op::N, n, n, n));
    let round = |x: Vec<f32>| x.into_iter().map(half::bf16::from_f32).collect::<Vec<_>>();
    let (a, b) = (gpu.upload(&round(uniform_f32(n * n, 3)))?, gpu.upload(&round(uniform_f32(n * n, 4)))?);
    let lib = TensorGemm::new();
    let mut run = || lib.run::<Bf16, f32>(&gpu, &call, &a, &b, &mut c, None).map(|_| ());
    time("gemm_wgmma (Hopper GEMM)", format!("{n}^3 bf16"), &mut run)?;

    // The Hopper attention step: 2 heads of 256 queries and keys, d = 128.
    let p = Problem::new(1, 2, 2, (256, 256), 128, false);
    let (q, k, v) = attention::inputs::<half::bf16>(&p, 5);
    let mut x = attention::Buffers::new(&gpu, &p, &q, &k, &v)?;
    let mut run = || attention::launch::<Bf16>(&gpu, &lib, Step::Hopper, &p, &mut x);
    time("attention_hopper (FlashAttention-3 step)", "2 heads x 256, d 128, bf16".into(), &mut run)?;
    Ok(out)
}

/// The speed body (a global load, a shared store, a barrier, a shared
/// load of the next thread's word, a global store) compiled for the CPU:
/// each block a loop over its threads up to the barrier and one after it.
/// Emulated threads per second at `block` threads a block, the best of
/// `runs`.
pub fn native(block: usize, threads: usize, runs: usize) -> f64 {
    let input: Vec<f32> = (0..threads).map(|i| i as f32).collect();
    let mut output = vec![0.0f32; threads];
    let mut shared = vec![0.0f32; block];
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        for (x, y) in input.chunks(block).zip(output.chunks_mut(block)) {
            shared[..x.len()].copy_from_slice(std::hint::black_box(x));
            for (t, out) in y.iter_mut().enumerate() {
                *out = shared[(t + 1) % block];
            }
        }
        std::hint::black_box(&mut output);
        best = best.min(start.elapsed().as_secs_f64());
    }
    threads as f64 / best
}

/// The table of [`measure`]'s times, and the native body's rate against
/// the emulator's at `emulated` threads a second (checks on, one OS
/// thread, 256 threads a block).
pub fn markdown(times: &[KernelTime], (native, emulated): (f64, f64)) -> String {
    let mut md = String::from(
        "\nOne launch of real kernels on the emulator (every core; the best of three), checks on and off:\n\n\
         | kernel | size | checks on | checks off |\n|---|---|---|---|\n",
    );
    for t in times {
        let _ = writeln!(md, "| `{}` | {} | {:.2} s | {:.2} s |", t.kernel, t.size, t.on, t.off);
    }
    let _ = writeln!(
        md,
        "\nThe speed body compiled for the CPU, without the emulator, runs {:.0} M threads a second on one core: \
         {:.0} times the emulator's rate with every check on (256 threads a block).",
        native / 1e6,
        native / emulated
    );
    md
}
