//! The SGEMM family on the host: f64 reference with a derived error bound,
//! launches, cuBLAS (FP32, TF32 off) as the in-run peer, and the
//! benchmark. The ladder's kernels are in `gpu/src/sgemm.rs`; at `MxNxK`
//! sizes the family measures the BLAS-semantics `sgemm` and its dispatcher
//! (`cpu/src/blas/`, kernels in `gpu/src/gemm/ffma.rs`) instead ([`shapes`]).

pub mod shapes;

use gpu::dev::{In, Out};
use gpu::launch::{Kernel, Typed};
use rayon::prelude::*;

use super::{About, Family, Plot, Run, Target, order_target, percent_target};
use crate::blas::Gemm;
use crate::peers::Cublas;
use crate::measure::{Rate, Record, Runs, Shape, Stage, Trial, bench, data, trial};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// What every SGEMM kernel takes: `a`, `b`, `c`, `m`, `n`, `k`, `alpha`, `beta`.
pub type Signature = (In<f32>, In<f32>, Out<f32>, u32, u32, u32, f32, f32);

/// `m x n x k` with the scalars of `C = alpha A B + beta C`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
}

impl Problem {
    pub fn square(size: usize) -> Self {
        Problem { m: size, n: size, k: size, alpha: 1.0, beta: 0.0 }
    }

    /// `2 m n k`: one multiply and one add per term.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks that the kernels can take this shape.
    pub fn check(&self) -> Result<()> {
        let Problem { m, n, k, .. } = *self;
        let limit = u32::MAX as usize;
        if m > limit || n > limit || k > limit || m.div_ceil(128) > 65_535 {
            return Err(Error::InvalidInput(format!(
                "sgemm shape {m} x {n} x {k} is too large for the kernels"
            )));
        }
        for (what, rows, cols) in [("A", m, k), ("B", k, n), ("C", m, n)] {
            if rows.checked_mul(cols).and_then(|e| e.checked_mul(4)).is_none() {
                return Err(Error::InvalidInput(format!("sgemm {what} ({rows} x {cols}) overflows")));
            }
        }
        Ok(())
    }
}

/// `C = alpha A B + beta C0` in `f64` for rows `rows` (all columns), with
/// the rounding bound of each element: `gamma_{k+2} (|alpha| (|A||B|)_ij +
/// |beta| |C0_ij|)`, `gamma_h = h u / (1 - h u)`, `u = 2^-24`. A length-k
/// dot product with fused multiply-adds rounds at most k times in any
/// order; scaling by alpha and adding beta C0 round twice more (Higham,
/// Accuracy and Stability of Numerical Algorithms, eq. 3.5).
pub fn reference_rows(p: &Problem, a: &[f32], b: &[f32], c0: &[f32], rows: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let Problem { n, k, alpha, beta, .. } = *p;
    let h = (k + 2) as f64 * (f32::EPSILON as f64 / 2.0);
    let gamma = h / (1.0 - h);
    let mut value = vec![0.0f64; rows.len() * n];
    let mut bound = vec![0.0f64; rows.len() * n];
    value.par_chunks_mut(n.max(1)).zip(bound.par_chunks_mut(n.max(1))).zip(rows).for_each(
        |((val, bnd), &i)| {
            let mut dot = vec![0.0f64; n];
            let mut mag = vec![0.0f64; n];
            for q in 0..k {
                let aiq = a[i * k + q] as f64;
                let brow = &b[q * n..q * n + n];
                for j in 0..n {
                    let t = aiq * brow[j] as f64;
                    dot[j] += t;
                    mag[j] += t.abs();
                }
            }
            for j in 0..n {
                let old = c0[i * n + j] as f64;
                val[j] = alpha as f64 * dot[j] + if beta == 0.0 { 0.0 } else { beta as f64 * old };
                bnd[j] = gamma * (alpha.abs() as f64 * mag[j] + beta.abs() as f64 * old.abs());
            }
        },
    );
    (value, bound)
}

/// How a computed `C` compares with the reference on the checked rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    /// `||C - C_ref|| / ||C_ref||` (Frobenius, over the checked rows).
    pub relative_error: f64,
    /// `||bound|| / ||C_ref||`: what the relative error may reach.
    pub relative_bound: f64,
    /// Elements outside their own bound (0 when correct).
    pub elements_out_of_bound: usize,
    /// Elements of the whole `C` that are not finite (unwritten poison).
    pub not_finite: usize,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.elements_out_of_bound == 0 && self.not_finite == 0 && self.relative_error <= self.relative_bound
    }
}

/// The rows to check: all of them up to `full` rows, else one random row
/// in every 128-row stripe (so every block row of every kernel is seen)
/// plus the first and the last.
pub fn rows_to_check(m: usize, full: usize, seed: u64) -> Vec<usize> {
    if m <= full {
        return (0..m).collect();
    }
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut rows: Vec<usize> = (0..m).step_by(128).map(|s| s + rng.random_range(0..128.min(m - s))).collect();
    rows.extend([0, m - 1]);
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Compares `c` (all `m x n`) with the reference rows.
pub fn check(p: &Problem, c: &[f32], rows: &[usize], reference: &(Vec<f64>, Vec<f64>)) -> Check {
    let n = p.n;
    let not_finite = c.par_iter().filter(|x| !x.is_finite()).count();
    let (mut err2, mut ref2, mut bound2, mut out) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for (r, &i) in rows.iter().enumerate() {
        for j in 0..n {
            let (want, bound) = (reference.0[r * n + j], reference.1[r * n + j]);
            let e = c[i * n + j] as f64 - want;
            err2 += e * e;
            ref2 += want * want;
            bound2 += bound * bound;
            let within = e.abs() <= bound; // false for NaN
            out += usize::from(!within);
        }
    }
    let norm = ref2.sqrt().max(f64::MIN_POSITIVE);
    Check {
        relative_error: err2.sqrt() / norm,
        relative_bound: bound2.sqrt() / norm,
        elements_out_of_bound: out,
        not_finite,
    }
}

/// One verification run of `kernel` on a `size`^3 problem in the timed
/// configuration (`alpha = 1, beta = 0`, C poisoned, so every element must
/// be written and C is not read), every row against the reference: `Err`
/// says why it failed.
pub fn run_once(
    gpu: &Gpu,
    kernel: &'static Kernel,
    size: usize,
    seed: u64,
) -> std::result::Result<(), String> {
    let p = Problem::square(size);
    let (a, b, c0) = (
        data::uniform_f32(size * size, seed),
        data::uniform_f32(size * size, seed + 1),
        data::uniform_f32(size * size, seed + 2),
    );
    let run = || -> Result<Vec<f32>> {
        let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let mut c = gpu.upload(&c0)?;
        gpu.poison(&mut c)?;
        launch(gpu, typed(kernel)?, &p, &da, &db, &mut c)?;
        gpu.sync()?;
        gpu.download(&c)
    };
    let c = run().map_err(|e| e.to_string())?;
    let rows: Vec<usize> = (0..size).collect();
    let result = check(&p, &c, &rows, &reference_rows(&p, &a, &b, &c0, &rows));
    if result.passed() { Ok(()) } else { Err(format!("{} {size}^3: {result:?}", kernel.name)) }
}

/// `kernel` as an SGEMM kernel: an error if it takes other parameters.
pub fn typed(kernel: &'static Kernel) -> Result<Typed<Signature>> {
    kernel.typed::<Signature>().map_err(Error::InvalidInput)
}

/// Queues `C = alpha A B + beta C` with `kernel`, after checking the
/// problem and that the buffers hold `m k`, `k n` and `m n` elements.
pub fn launch(
    gpu: &Gpu,
    kernel: Typed<Signature>,
    p: &Problem,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    c: &mut DeviceBuffer<f32>,
) -> Result<()> {
    p.check()?;
    let Problem { m, n, k, alpha, beta } = *p;
    if a.len() != m * k || b.len() != k * n || c.len() != m * n {
        return Err(Error::InvalidInput(format!(
            "sgemm {m} x {n} x {k} needs A {} B {} C {} elements, got {} {} {}",
            m * k,
            k * n,
            m * n,
            a.len(),
            b.len(),
            c.len()
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (m32, n32, k32) = (m as u32, n as u32, k as u32);
    let grid = kernel.kernel().launch.grid(n32, m32);
    // SAFETY: A, B and C hold m k, k n and m n elements (checked above) and
    // the grid covers C with the kernel's tile: the kernels' contract.
    unsafe { kernel.launch(gpu, grid, (a, b, c, m32, n32, k32, alpha, beta)) }
}

/// Launches of a candidate kernel, dispatcher or peer: `C = alpha op(A)
/// op(B) + beta C` for a call `P` on the given C.
type Launch<'a, P> = &'a dyn Fn(&P, &mut DeviceBuffer<f32>) -> Result<()>;

/// How every candidate at one size is verified and timed (the ladder's at
/// squares, the dispatcher's and cuBLAS at `MxNxK`).
struct Candidates<'a, P> {
    gpu: &'a Gpu,
    runs: Option<Runs>,
    /// The verification calls: the first on poisoned C (every element
    /// must be written, C not read), the others on a copy of `c0`.
    cases: &'a [P],
    c0: &'a DeviceBuffer<f32>,
    /// The timed call.
    timed: &'a P,
    /// Case `i`'s error measure on the C it gave (the record keeps the
    /// worst), or why it failed.
    judge: &'a Judge<'a>,
}

/// Case `i`'s error measure for a kernel's C, or why it failed.
type Judge<'a> = dyn Fn(&str, usize, &[f32]) -> std::result::Result<f64, String> + 'a;

/// Timed runs of one candidate last about this long (at least 3 runs).
const TIMING_BUDGET_MS: f64 = 500.0;

impl<P> Candidates<'_, P> {
    /// Verifies `name` on every case on `c`, then, on a GPU and when asked,
    /// times it: the trial and the worst error measure.
    fn measure(&self, c: &mut DeviceBuffer<f32>, name: &str, launch: Launch<P>) -> Result<(Trial, f64)> {
        let gpu = self.gpu;
        let mut worst = 0.0f64;
        let verified = trial(
            gpu,
            None,
            c,
            |c, stage| match stage {
                Stage::Prepare => gpu.poison(c),
                Stage::Restore => Ok(()),
                Stage::Run => launch(&self.cases[0], c),
            },
            |c| {
                let error = |e: Error| e.to_string();
                for (i, case) in self.cases.iter().enumerate() {
                    if i > 0 {
                        gpu.copy(self.c0, c).map_err(error)?;
                        launch(case, c).and_then(|()| gpu.sync()).map_err(error)?;
                    }
                    worst = worst.max((self.judge)(name, i, &gpu.download(c).map_err(error)?)?);
                }
                Ok(())
            },
        )?;
        let timing = match self.runs {
            Some(runs) if verified.verified.is_ok() && !gpu.is_emulator() => {
                // One launch to size the number of runs.
                let once = bench::time(gpu, Runs { warmup: 1, timed: 1 }, || launch(self.timed, c))?;
                let affordable = (TIMING_BUDGET_MS / once.median_ms.max(1e-3)) as usize;
                let runs =
                    Runs { warmup: runs.warmup.min(affordable.max(1)), timed: runs.timed.min(affordable).max(3) };
                Some(bench::time(gpu, runs, || launch(self.timed, c))?)
            }
            _ => None,
        };
        Ok((Trial { timing, ..verified }, worst))
    }
}

/// Each record's percentage of the `cublas` record among them.
pub(crate) fn percent_of_cublas(records: &mut [Record]) {
    percent_of(records, "cublas");
}

/// Each record's rate as a percentage of the record named `peer`'s.
pub(crate) fn percent_of(records: &mut [Record], peer: &str) {
    let peer = records.iter().find(|r| r.kernel == peer).and_then(|r| r.value);
    for r in records {
        r.percent = r.value.zip(peer).map(|(v, p)| 100.0 * v / p);
    }
}

/// The family: the ladder's kernels on square problems (`--sizes N`), and
/// the BLAS-semantics `sgemm` against cuBLAS at `MxNxK` sizes.
pub struct Sgemm {
    /// The layouts and ops `MxNxK` sizes run in; `None`: row NN at every
    /// shape and every form at [`shapes::FORM_SHAPES`].
    pub forms: Option<Vec<shapes::Form>>,
    /// Plans timed beside the dispatcher's at `MxNxK` sizes: `(BM, BN,
    /// splits)` (`sgemm --tile --splits`).
    pub plans: Vec<(usize, usize, usize)>,
}

/// The family as the suite runs it.
pub const SUITE: Sgemm = Sgemm { forms: None, plans: Vec::new() };

impl Family for Sgemm {
    fn about(&self) -> &'static About {
        &About {
            name: "sgemm",
            size_meaning: "m = n = k (the ladder), or MxNxK (sgemm with its dispatcher)",
            default_sizes: &[1024, 2048, 4096, 8192],
            emulator_size: 128,
            method: "against an f64 reference within a per-element bound (gamma_{k+2} times |alpha| |A||B| + |beta| |C|), \
         with C poisoned for beta = 0 (every element written, C not read) and beta != 0 from random C; the \
         peer is cuBLAS SGEMM in FP32 (TF32 off) in the same run",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        if let [m, n, k] = size.dims()[..] {
            return shapes::check(self, (m, n, k));
        }
        let n = size.one("sgemm").map_err(|_| {
            Error::InvalidInput(format!("sgemm sizes are N (a square, the ladder) or MxNxK, not {size}"))
        })?;
        Problem::square(n).check()?;
        Ok(4 * 4 * n * n)
    }

    /// Multiply-adds: `N` is `N x N x N`.
    fn emulator_work(&self, size: &Shape) -> usize {
        match size.dims()[..] {
            [n] => n.saturating_mul(n).saturating_mul(n),
            ref dims => dims.iter().fold(1usize, |w, d| w.saturating_mul(*d)),
        }
    }

    /// [`shapes::EMULATED_WORK`] multiply-adds.
    fn emulator_limit(&self) -> usize {
        shapes::EMULATED_WORK
    }

    /// The ladder at the emulator size, and the run's `MxNxK` shapes small
    /// enough to emulate (`m n k` at most [`shapes::EMULATED_WORK`]).
    fn emulator_sizes(&self, sizes: &[Shape]) -> Vec<Shape> {
        let small = sizes.iter().filter(|s| matches!(s.dims()[..], [m, n, k] if m * n * k <= shapes::EMULATED_WORK));
        std::iter::once(self.emulator_size()).chain(small.cloned()).collect()
    }

    fn default_sizes(&self) -> Vec<Shape> {
        let squares = self.about().default_sizes.iter().copied().map(Shape::n);
        squares.chain(shapes::SWEEP.iter().map(|s| s.parse().expect("a valid shape"))).collect()
    }

    /// Verification: C poisoned, `alpha = 1.5, beta = 0` (C must not be
    /// read, every element must be written); then C = C0, `alpha = 0.75,
    /// beta = -0.5`; each against the f64 reference on [`rows_to_check`].
    /// Timing: `alpha = 1, beta = 0`, median of CUDA events, with fewer runs
    /// for slow kernels (at least 3, about half a second's worth).
    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        if let [m, n, k] = run.size.dims()[..] {
            return shapes::run(self, run, (m, n, k));
        }
        let Run { gpu, size, runs, kernels, progress, .. } = *run;
        let size_n = size.one("sgemm")?;
        let shape = Problem::square(size_n);
        let seed = 0x5eed;
        let (a_host, b_host, c0_host) = (
            data::uniform_f32(size_n * size_n, seed),
            data::uniform_f32(size_n * size_n, seed + 1),
            data::uniform_f32(size_n * size_n, seed + 2),
        );
        let rows = rows_to_check(size_n, 512, seed);
        let cases =
            [Problem { alpha: 1.5, beta: 0.0, ..shape }, Problem { alpha: 0.75, beta: -0.5, ..shape }];
        let references: Vec<_> =
            cases.iter().map(|p| reference_rows(p, &a_host, &b_host, &c0_host, &rows)).collect();
        let (a, b, c0) = (gpu.upload(&a_host)?, gpu.upload(&b_host)?, gpu.upload(&c0_host)?);
        let mut c = gpu.alloc::<f32>(size_n * size_n)?;
        let judge = |name: &str, i: usize, c: &[f32]| {
            let p = &cases[i];
            let result = check(p, c, &rows, &references[i]);
            if result.passed() {
                return Ok(result.relative_error);
            }
            Err(format!(
                "{name} {size_n}^3 alpha={} beta={}: relative error {:.2e} (bound {:.2e}), \
                 {} elements out of bound, {} not finite",
                p.alpha,
                p.beta,
                result.relative_error,
                result.relative_bound,
                result.elements_out_of_bound,
                result.not_finite
            ))
        };
        let candidates = Candidates { gpu, runs, cases: &cases, c0: &c0, timed: &shape, judge: &judge };
        // One candidate (a kernel or cuBLAS): verified on both cases, then timed.
        let mut measure = |name: &str, launch: Launch<Problem>| -> Result<Record> {
            progress(&format!("sgemm {size}: {name}"));
            let (measured, worst) = candidates.measure(&mut c, name, launch)?;
            let rate = Rate::Flops { flops: shape.flops(), peer: "cublas", peer_tflops: None };
            let mut record = Record::of_trial("sgemm", name, "f32", size, &measured, rate);
            record.relative_error = Some(worst);
            Ok(record)
        };

        let mut records = Vec::new();
        if runs.is_some() && !gpu.is_emulator() {
            let cublas = Cublas::new(gpu)?;
            let call = |p: &Problem| Gemm::row(p.m, p.n, p.k).scaled(p.alpha, p.beta);
            records.push(measure("cublas", &|p, c| cublas.run(&call(p), &a, &b, c))?);
        }
        for kernel in kernels {
            let k = typed(kernel)?;
            records.push(measure(kernel.name, &|p, c| launch(gpu, k, p, &a, &b, c))?);
        }
        // Percentages of cuBLAS in the same run.
        percent_of_cublas(&mut records);
        Ok(records)
    }

    fn targets(&self, records: &[&Record]) -> Vec<Target> {
        let ladder = [
            "sgemm_naive",
            "sgemm_shared",
            "sgemm_reg_col",
            "sgemm_reg_2d",
            "sgemm_vec4",
            "sgemm_double_buffer",
            "sgemm_warp_tiled",
        ];
        // The ladder's targets are over its squares (an MxNxK record's size
        // is its m: 8192x8192x256 is not 8192^3).
        let squares: Vec<&Record> = records.iter().copied().filter(|r| !shapes::is_shaped(r)).collect();
        [
            percent_target(&squares, "f32", 4096, "sgemm 4096^3, best kernel", 90.0),
            percent_target(&squares, "f32", 8192, "sgemm 8192^3, best kernel", 90.0),
            order_target(
                &squares,
                "sgemm 4096^3: each step 1 to 6 faster than the one before",
                &ladder,
                "f32",
                4096,
            ),
        ]
        .into_iter()
        .flatten()
        .chain(shapes::targets(records))
        .collect()
    }

    fn plots(&self, records: &[&Record], title: &str) -> Vec<Plot> {
        let (shaped, squares): (Vec<&Record>, Vec<&Record>) =
            records.iter().partition(|r| shapes::is_shaped(r));
        let mut plots = super::default_plots(self, &squares, title);
        plots.extend(shapes::plots(&shaped, title));
        plots
    }

    fn notes(&self) -> &'static str {
        "The dispatcher's label names its plan: the block tile, and `split S` when S blocks share each \
         tile's k range (their slices added in a fixed order by a second kernel). Its choice comes from a \
         model of the machine fitted to calibration sweeps (`cpu/src/blas/plan.rs`, `docs/notes.md`).\n\n\
         What limits it at 4096^3 and 8192^3 (the stretch target of 100% of cuBLAS): the ncu section of \
         the device checks below profiles the dispatcher's 128 x 128 kernel and cuBLAS's at 4096^3. Both \
         execute the same number of instructions and of FFMAs; the difference is the share of cycles in \
         which a warp issues. cuBLAS's kernel (a 256 x 128 tile, 3 shared-memory stages, 254 registers, \
         one block of 8 warps per SM, twice our FMAs per barrier) stalls less on barriers and on \
         shared-memory latency than ours (a 128 x 128 tile, 2 stages with the next panel held in \
         registers, 127 registers, two blocks of 8 warps): its FMA pipe is busier for the same work. The \
         next steps are the larger tile with a 16 x 8 thread tile, and a third stage filled by `cp.async`."
    }

    fn tables<'a>(&self, records: &'a [&'a Record]) -> Vec<(String, Vec<&'a Record>)> {
        let (shaped, squares): (Vec<&Record>, Vec<&Record>) =
            records.iter().partition(|r| shapes::is_shaped(r));
        let mut tables = vec![("sgemm: the ladder".to_string(), squares)];
        if !shaped.is_empty() {
            tables.push(("sgemm: BLAS sgemm (dispatcher) against cuBLAS, by shape and layout".to_string(), shaped));
        }
        tables
    }
}
