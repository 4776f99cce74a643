//! The example's host side: each kernel launched on a [`Gpu`] (a device,
//! or the emulator where there is none), its output poisoned first and
//! then checked against an `f64` host reference with `approx`, within a
//! bound derived from the arithmetic.

use approx::abs_diff_eq;
use lab_runtime::{Gpu, Ptx, Result, launch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The PTX `build.rs` compiled from `kernels/`, one per architecture.
pub static PTX: &[Ptx] = lab_runtime::include_ptx!("kernels");

/// Device 0 with our PTX, or the emulator where there is no driver or
/// device (any other failure, a PTX the driver rejects say, is an error).
pub fn open() -> Result<Gpu> {
    Gpu::open_or_emulator(0, PTX).map(|(gpu, _)| gpu)
}

/// One kernel's check: the largest error against the reference and the
/// bound it must stay within.
#[derive(Debug)]
pub struct Check {
    pub kernel: &'static str,
    pub shape: String,
    pub worst: f64,
    pub bound: f64,
    pub passed: bool,
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `u`, the unit roundoff of `f32`.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// `gamma_h = h u / (1 - h u)`: the relative bound on `h` rounded
/// additions or multiply-adds in sequence (Higham, ch. 3).
fn gamma(h: usize) -> f64 {
    h as f64 * U / (1.0 - h as f64 * U)
}

/// `c = a + b` through `launch!`, rust-cuda's vecadd unchanged: one
/// rounding, the same as the host's, so the result must be exact.
pub fn vecadd(gpu: &Gpu, n: usize, seed: u64) -> Result<Check> {
    let (a, b) = (random(n, seed), random(n, seed + 1));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut dc = gpu.alloc::<f32>(n)?;
    gpu.poison(&mut dc)?;
    let block = 256u32;
    let grid = (n as u32).div_ceil(block).max(1);
    // SAFETY: `c` holds as many elements as `a`; the kernel guards `idx`.
    unsafe { launch!(kernels.vecadd<<<grid, block, 0, gpu>>>(&da, &db, &mut dc)) }?;
    let c = gpu.download(&dc)?;
    // Exact: no tolerance at all (approx's `ulps_eq!` would still accept
    // differences up to its default epsilon).
    let passed =
        c.iter().zip(a.iter().zip(&b)).all(|(&got, (&x, &y))| abs_diff_eq!(got, x + y, epsilon = 0.0));
    let worst = c
        .iter()
        .zip(a.iter().zip(&b))
        .map(|(&g, (&x, &y))| (g as f64 - (x + y) as f64).abs())
        .fold(0.0, f64::max);
    Ok(Check { kernel: "vecadd", shape: n.to_string(), worst, bound: 0.0, passed })
}

/// Which GEMM.
#[derive(Clone, Copy, Debug)]
pub enum Gemm {
    Naive,
    Tiled,
}

/// `C = alpha A B + beta C` against an `f64` reference. Each element is
/// `k` multiply-adds then a scale and an add: `|error| <= gamma_{k+2}
/// (|alpha| sum |a||b| + |beta| |c|)`, checked element by element.
pub fn gemm(
    gpu: &Gpu,
    which: Gemm,
    (m, n, k): (usize, usize, usize),
    alpha: f32,
    beta: f32,
    seed: u64,
) -> Result<Check> {
    let (a, b, c0) = (random(m * k, seed), random(k * n, seed + 1), random(m * n, seed + 2));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut dc = gpu.upload(&c0)?;
    let block = (16u32, 16u32);
    let grid = ((n as u32).div_ceil(16).max(1), (m as u32).div_ceil(16).max(1));
    // SAFETY: `a`, `b`, `c` are m x k, k x n, m x n; both kernels guard
    // their row and column.
    unsafe {
        match which {
            Gemm::Naive => {
                kernels::gemm_naive::launch(gpu, grid, block, 0, &da, &db, &mut dc, m, n, k, alpha, beta)
            }
            Gemm::Tiled => {
                kernels::gemm_tiled::launch(gpu, grid, block, 0, &da, &db, &mut dc, m, n, k, alpha, beta)
            }
        }
    }?;
    let c = gpu.download(&dc)?;
    let (mut worst, mut bound_at_worst, mut passed) = (0.0f64, 0.0f64, true);
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
            for p in 0..k {
                let (x, y) = (a[i * k + p] as f64, b[p * n + j] as f64);
                exact += x * y;
                magnitude += (x * y).abs();
            }
            let c_old = c0[i * n + j] as f64;
            let want = alpha as f64 * exact + beta as f64 * c_old;
            let bound = gamma(k + 2) * (alpha.abs() as f64 * magnitude + beta.abs() as f64 * c_old.abs());
            let got = c[i * n + j] as f64;
            passed &= abs_diff_eq!(got, want, epsilon = bound);
            if (got - want).abs() > worst || got.is_nan() {
                (worst, bound_at_worst) = ((got - want).abs(), bound);
            }
        }
    }
    let kernel = match which {
        Gemm::Naive => "gemm_naive",
        Gemm::Tiled => "gemm_tiled",
    };
    Ok(Check { kernel, shape: format!("{m}x{n}x{k}"), worst, bound: bound_at_worst, passed })
}

/// Block sums of 256 elements: 3 shared-memory steps and 5 shuffles, so
/// an element passes through at most 8 additions: `|error| <= gamma_8
/// sum |x|` per block.
pub fn block_sum(gpu: &Gpu, n: usize, seed: u64) -> Result<Check> {
    let x = random(n, seed);
    let dx = gpu.upload(&x)?;
    let blocks = n.div_ceil(256).max(1);
    let mut sums = gpu.alloc::<f32>(blocks)?;
    gpu.poison(&mut sums)?;
    // SAFETY: one sum per block of 256 threads.
    unsafe { launch!(kernels.block_sum<<<blocks as u32, 256u32, 0, gpu>>>(&dx, &mut sums)) }?;
    let got = gpu.download(&sums)?;
    let (mut worst, mut bound_at_worst, mut passed) = (0.0f64, 0.0f64, true);
    for (block, &g) in got.iter().enumerate() {
        let chunk = &x[(block * 256).min(n)..((block + 1) * 256).min(n)];
        let want: f64 = chunk.iter().map(|&v| v as f64).sum();
        let bound = gamma(8) * chunk.iter().map(|&v| (v as f64).abs()).sum::<f64>();
        passed &= abs_diff_eq!(g as f64, want, epsilon = bound);
        if (g as f64 - want).abs() > worst || g.is_nan() {
            (worst, bound_at_worst) = ((g as f64 - want).abs(), bound);
        }
    }
    Ok(Check { kernel: "block_sum", shape: n.to_string(), worst, bound: bound_at_worst, passed })
}

/// Every kernel at the given sizes.
pub fn all(gpu: &Gpu, vector: usize, gemm_shape: (usize, usize, usize)) -> Result<Vec<Check>> {
    Ok(vec![
        vecadd(gpu, vector, 1)?,
        gemm(gpu, Gemm::Naive, gemm_shape, 1.5, -0.5, 2)?,
        gemm(gpu, Gemm::Tiled, gemm_shape, 1.5, -0.5, 3)?,
        block_sum(gpu, vector, 4)?,
    ])
}
