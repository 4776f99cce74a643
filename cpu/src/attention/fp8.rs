//! FP8 attention (`attention --precision e4m3`): Q, K and V quantized to
//! E4M3 with one descale per tensor (or, with `--head-descales`, one per
//! K/V head of each batch, FlashAttention-3's granularity: a query head
//! takes its K/V head's), V transposed by a pass of its own
//! (`hopper::fp8_v_transpose`), then the Hopper step on E4M3
//! (`attention_hopper_e4m3_d*`). O is bf16 (or f16), lse `f32`.
//!
//! - **Quantization.** Per tensor, the descale is `amax / 448`, so the
//!   largest magnitude lands on E4M3's largest finite value. Each value is
//!   rounded to nearest even. The descales of Q and K join the score scale.
//!   V's multiplies O.
//! - **Verification** ([`run`]): every checked element within the bound
//!   of [`mod@super::reference`]'s FP8 arithmetic ([`Arithmetic::fp8`]). The
//!   reference is computed from the dequantized inputs, which are exact in
//!   `f64`, so the bound covers the kernel and not the quantization.
//! - **Accuracy** ([`Accuracy`]): the RMSE of O against the `f64` reference
//!   of the inputs before any rounding, beside the bf16 Hopper step's on
//!   the same inputs rounded to bf16. It is measured on two kinds of
//!   input: the verification's uniform ones, and FlashAttention-3's outlier
//!   case, `N(0, 1) + N(0, 100) Bernoulli(0.001)` (0.1% of the entries ten
//!   times larger, which stretches the per-tensor scale).

use gpu::dev::fp8::E4m3;
use gpu::dev::{In, Out};
use gpu::launch::{Dim3, Kernel, registry};
use half::bf16;
use rayon::prelude::*;

use crate::gemm::{Bf16, Input, TensorGemm};
use crate::measure::bench::{self, Runs, Timing};
use crate::measure::data;
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

use super::launch::{Buffers, Element, HopperState, Scales, Step, hopper_maps, launch, launch_hopper};
use super::problem::Problem;
use super::reference::{Arithmetic, reference_with, rows_to_check, verify};

/// A tensor in E4M3 and the descales that give its values back: one for
/// the whole tensor, or one for each of as many equal runs of it (one a
/// K/V head of a batch: Q's heads of a K/V head's group lie side by side,
/// as do K's and V's keys of a head).
pub struct Quantized {
    pub values: Vec<E4m3>,
    pub descales: Vec<f32>,
}

impl Quantized {
    /// `x` quantized per tensor: descale `amax / 448` (1 for a tensor of
    /// zeros), each value divided by it and rounded to nearest even.
    pub fn of(x: &[f32]) -> Quantized {
        Quantized::per_run(x, 1)
    }

    /// `x` quantized in `runs` equal runs, each with the descale of its
    /// own `amax` (`x`'s length a multiple of `runs`).
    pub fn per_run(x: &[f32], runs: usize) -> Quantized {
        let n = x.len() / runs.max(1);
        let descales: Vec<f32> = x
            .par_chunks(n.max(1))
            .map(|run| {
                let amax = run.iter().map(|v| v.abs()).fold(0.0, f32::max);
                if amax > 0.0 && amax.is_finite() { amax / E4m3::max() } else { 1.0 }
            })
            .collect();
        let values = x.par_iter().enumerate().map(|(i, &v)| E4m3::from_f32(v / descales[i / n])).collect();
        Quantized { values, descales }
    }

    /// The values the kernel computes with, exactly.
    pub fn dequantized(&self) -> Vec<f64> {
        let n = self.values.len() / self.descales.len().max(1);
        let at = |i: usize| self.descales[i / n.max(1)] as f64;
        self.values.par_iter().enumerate().map(|(i, e)| e.to_f32() as f64 * at(i)).collect()
    }
}

/// The kinds of input the accuracy is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// As the verification's ([`super::inputs`]): Q uniform in [-2, 2), K
    /// and V in [-1, 1).
    Uniform,
    /// FlashAttention-3's outlier case: `N(0, 1) + N(0, 100)
    /// Bernoulli(0.001)` in Q, K and V.
    Outliers,
}

impl Distribution {
    pub const ALL: [Distribution; 2] = [Distribution::Uniform, Distribution::Outliers];

    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Outliers => "outliers",
        }
    }

    /// Q, K and V of `p` in `f32`, from `seed`.
    pub fn draw(self, p: &Problem, seed: u64) -> [Vec<f32>; 3] {
        let lens = [p.q_len(), p.kv_len(), p.kv_len()];
        let seeds = [seed, seed + 1, seed + 2];
        match self {
            Distribution::Uniform => {
                let spread = [2.0, 1.0, 1.0];
                core::array::from_fn(|i| {
                    data::uniform_f32(lens[i], seeds[i]).iter().map(|x| spread[i] * x).collect()
                })
            }
            Distribution::Outliers => core::array::from_fn(|i| {
                data::random_with(lens[i], seeds[i], |rng| {
                    use rand::Rng;
                    let normal = |rng: &mut rand::rngs::SmallRng| {
                        // Box-Muller.
                        let (a, b): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
                        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
                    };
                    let outlier = if rng.random_range(0.0..1.0) < 0.001 { 10.0 * normal(rng) } else { 0.0 };
                    (normal(rng) + outlier) as f32
                })
            }),
        }
    }
}

/// The device buffers of one FP8 problem.
pub struct Fp8Buffers<T: Element> {
    q: DeviceBuffer<E4m3>,
    k: DeviceBuffer<E4m3>,
    v: DeviceBuffer<E4m3>,
    /// Vᵀ, `[b kv_heads, d, transposed_keys(s_k)]`, from [`transpose`].
    vt: DeviceBuffer<E4m3>,
    pub o: DeviceBuffer<T>,
    pub lse: DeviceBuffer<f32>,
    /// The descales: Q's and K's folded into the score scale (one
    /// rounding) and V's, for the whole problem, or per K/V head on the
    /// device (`Scales::Head`'s words).
    scales: Descales,
    hopper: HopperState,
}

/// [`Fp8Buffers`]' descales, as the launch takes them.
enum Descales {
    Tensor(f32, f32),
    Head(DeviceBuffer<f32>),
}

impl<T: Element> Fp8Buffers<T> {
    /// Uploads the quantized Q, K, V (checked against the problem: each
    /// with one descale, or all three with one a K/V head of a batch) and
    /// allocates Vᵀ, O and lse.
    pub fn new(gpu: &Gpu, p: &Problem, [q, k, v]: [&Quantized; 3]) -> Result<Self> {
        p.check()?;
        if q.values.len() != p.q_len() || k.values.len() != p.kv_len() || v.values.len() != p.kv_len() {
            return Err(Error::InvalidInput(format!("attention {p}: inputs of the wrong length")));
        }
        // One rounding of each folded scale.
        let fold = |dq: f32, dk: f32| (p.scale as f64 * dq as f64 * dk as f64) as f32;
        let groups = p.batch * p.kv_heads;
        let scales = match [q.descales.len(), k.descales.len(), v.descales.len()] {
            [1, 1, 1] => Descales::Tensor(fold(q.descales[0], k.descales[0]), v.descales[0]),
            lens if lens == [groups; 3] => {
                let folded = (0..groups).map(|g| fold(q.descales[g], k.descales[g]));
                let words: Vec<f32> = folded.chain(v.descales.iter().copied()).collect();
                Descales::Head(gpu.upload(&words)?)
            }
            lens => {
                return Err(Error::InvalidInput(format!(
                    "attention {p}: descales of Q, K and V number {lens:?}: one each, or {groups} each (one a K/V \
                     head of a batch)"
                )));
            }
        };
        let pitch = gpu::attention::hopper::transposed_keys(p.s_k);
        Ok(Fp8Buffers {
            q: gpu.upload(&q.values)?,
            k: gpu.upload(&k.values)?,
            v: gpu.upload(&v.values)?,
            vt: gpu.alloc(p.batch * p.kv_heads * p.d * pitch)?,
            o: gpu.alloc(p.q_len())?,
            lse: gpu.alloc(p.rows())?,
            scales,
            hopper: HopperState::default(),
        })
    }

    /// Vᵀ as the last [`transpose`] wrote it.
    pub fn vt(&self) -> &DeviceBuffer<E4m3> {
        &self.vt
    }
}

/// Vᵀ as [`gpu::attention::hopper::fp8_v_transpose()`] writes it, on the
/// host: `[b kv_heads, d, transposed_keys(s_k)]`, column `x` of a head
/// holding key `16 (x / 16) + fp8_column(x mod 16)` (zeros past `s_k`).
pub fn transposed(p: &Problem, v: &[E4m3]) -> Vec<E4m3> {
    let pitch = gpu::attention::hopper::transposed_keys(p.s_k);
    let mut out = vec![E4m3(0); p.batch * p.kv_heads * p.d * pitch];
    for head in 0..p.batch * p.kv_heads {
        for c in 0..p.d {
            for x in 0..pitch {
                let key = 16 * (x / 16) + gpu::dev::wgmma::fp8_column((x % 16) as u32) as usize;
                if key < p.s_k {
                    out[(head * p.d + c) * pitch + x] = v[(head * p.s_k + key) * p.d + c];
                }
            }
        }
    }
    out
}

/// The FP8 kernel for `p`'s head dimension with O in `T`.
pub fn kernel<T: Input>(p: &Problem) -> Result<&'static Kernel> {
    let name = format!("attention_hopper_e4m3_d{}_{}", p.d, T::NAME);
    registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
}

/// What the transpose pass takes.
type TransposeSignature = (In<E4m3>, Out<E4m3>, u32, u32);

/// Vᵀ from V ([`gpu::attention::hopper::fp8_v_transpose()`]): once per V,
/// before [`launch_fp8`].
pub fn transpose<T: Element>(gpu: &Gpu, p: &Problem, x: &mut Fp8Buffers<T>) -> Result<()> {
    use gpu::attention::hopper::{TRANSPOSE_COLUMNS, TRANSPOSE_KEYS, transposed_keys};
    let kernel = registry::find("fp8_v_transpose")
        .ok_or_else(|| Error::InvalidInput("no kernel fp8_v_transpose".into()))?;
    let typed = kernel.typed::<TransposeSignature>().map_err(Error::InvalidInput)?;
    let grid = Dim3 {
        x: transposed_keys(p.s_k).div_ceil(TRANSPOSE_KEYS) as u32,
        y: (p.d / TRANSPOSE_COLUMNS) as u32,
        z: (p.batch * p.kv_heads) as u32,
    };
    // SAFETY: V holds `b kv_heads s_k d` bytes and Vᵀ `b kv_heads d
    // transposed_keys(s_k)` (`Fp8Buffers::new`); `d` is 64, 128 or 256.
    unsafe { typed.launch(gpu, grid, (&x.v, &mut x.vt, p.s_k as u32, p.d as u32)) }
}

/// The FP8 step on `p`: O and lse into `x` (Vᵀ made by [`transpose`]).
pub fn launch_fp8<T: Element>(gpu: &Gpu, p: &Problem, x: &mut Fp8Buffers<T>) -> Result<()> {
    let kernel = kernel::<T>(p)?;
    let scales = match &x.scales {
        Descales::Tensor(scale, dv) => Scales::Tensor(*scale, *dv),
        Descales::Head(words) => Scales::Head(words),
    };
    let pitch = gpu::attention::hopper::transposed_keys(p.s_k);
    let (q, k, vt) = (&x.q, &x.k, &x.vt);
    let maps = || hopper_maps(gpu, p, (q, k, vt), Some(pitch));
    launch_hopper(gpu, p, kernel, maps, (&mut x.o, &mut x.lse), &mut x.hopper, scales)
}

/// The RMSE of O on one kind of input: the FP8 step's and the bf16
/// Hopper step's, each against the `f64` reference of the unrounded
/// inputs.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Accuracy {
    pub inputs: &'static str,
    pub fp8: f64,
    pub bf16: f64,
    /// The RMS of the reference's O, for scale.
    pub rms: f64,
}

/// One FP8 run's outcome: the worst error against its bound (over every
/// kind of input run), the kernel's time and the transpose pass's, and
/// the accuracy on each kind of input (with `accuracy`).
pub struct Fp8Outcome {
    pub worst: std::result::Result<f64, String>,
    pub timing: Option<Timing>,
    pub transpose: Option<Timing>,
    pub accuracy: Vec<Accuracy>,
    /// On the emulator: the uniform run's bank-conflict and sector
    /// analysis (the Vᵀ pass and the kernel).
    pub analysis: Option<emu::Analysis>,
}

/// Verifies the FP8 step on `p` (outputs poisoned first) on uniform
/// inputs and, with `accuracy`, on the outlier case too, measuring both
/// kinds' RMSE beside the bf16 step's; then, given `runs`, times the
/// kernel and the transpose pass apart.
pub fn run<T: Element>(gpu: &Gpu, p: &Problem, runs: Option<Runs>, accuracy: bool) -> Result<Fp8Outcome> {
    p.check()?;
    let rows = rows_to_check(p);
    let kinds: &[Distribution] = if accuracy { &Distribution::ALL } else { &[Distribution::Uniform] };
    let mut worst = Ok(0.0f64);
    let mut measured = Vec::new();
    let mut timed = None;
    let mut analysis = None;
    for &kind in kinds {
        let raw = kind.draw(p, 0xf8a7);
        let runs = if p.head_descales { p.batch * p.kv_heads } else { 1 };
        let quantized: Vec<Quantized> = raw.iter().map(|x| Quantized::per_run(x, runs)).collect();
        let mut x = Fp8Buffers::<T>::new(gpu, p, [&quantized[0], &quantized[1], &quantized[2]])?;
        let [q, k, v] = [0, 1, 2].map(|i| quantized[i].dequantized());
        let arithmetic = Arithmetic::fp8((T::ROUNDING, T::TINY), gpu::attention::hopper::bc(p.d));
        let want = reference_with(p, (&q, &k, &v), &rows, arithmetic);
        gpu.poison(&mut x.o)?;
        gpu.poison(&mut x.lse)?;
        let analyze = gpu.is_emulator() && kind == Distribution::Uniform;
        gpu.set_analysis(analyze);
        let launched =
            transpose(gpu, p, &mut x).and_then(|()| launch_fp8(gpu, p, &mut x)).and_then(|()| gpu.sync());
        gpu.set_analysis(false);
        if analyze {
            analysis = Some(gpu.take_analysis());
        }
        launched?;
        let (o, lse) = (gpu.download(&x.o)?, gpu.download(&x.lse)?);
        let name = format!("attention hopper e4m3 ({} inputs)", kind.name());
        match (verify(&name, p, &o, &lse, &want), &worst) {
            (Ok(w), Ok(before)) => worst = Ok(before.max(w)),
            (Err(e), Ok(_)) => worst = Err(e),
            _ => {}
        }
        if accuracy {
            measured.push(accuracy_of(gpu, p, kind, &raw, &rows, &o)?);
        }
        if kind == Distribution::Uniform {
            timed = Some(x);
        }
    }
    let (mut timing, mut transposed) = (None, None);
    if let (Some(runs), Ok(_), Some(x), false) = (runs, &worst, timed.as_mut(), gpu.is_emulator()) {
        timing = Some(bench::time(gpu, runs, || launch_fp8(gpu, p, x))?);
        transposed = Some(bench::time(gpu, runs, || transpose(gpu, p, x))?);
    }
    Ok(Fp8Outcome { worst, timing, transpose: transposed, accuracy: measured, analysis })
}

/// The RMSE of the FP8 step's O (`fp8_o`) and of the bf16 Hopper step's
/// on inputs `raw`, against the `f64` reference of `raw` on `rows`.
fn accuracy_of<T: Element>(
    gpu: &Gpu,
    p: &Problem,
    kind: Distribution,
    raw: &[Vec<f32>; 3],
    rows: &[usize],
    fp8_o: &[T],
) -> Result<Accuracy> {
    let exact: Vec<Vec<f64>> = raw.iter().map(|x| x.iter().map(|&v| v as f64).collect()).collect();
    let want =
        reference_with(p, (&exact[0], &exact[1], &exact[2]), rows, Arithmetic::f32_sums((0.0, 0.0), 32));
    let rounded: Vec<Vec<bf16>> =
        raw.iter().map(|x| x.iter().map(|&v| bf16::from_f32(v)).collect()).collect();
    let mut x = Buffers::new(gpu, p, &rounded[0], &rounded[1], &rounded[2])?;
    launch::<Bf16>(gpu, &TensorGemm::new(), Step::Hopper, p, &mut x)?;
    gpu.sync()?;
    let bf16_o = gpu.download(&x.o)?;
    let rmse = |o: &dyn Fn(usize) -> f64| -> f64 {
        let mut sum = 0.0;
        for (n, &row) in rows.iter().enumerate() {
            for c in 0..p.d {
                let e = o(row * p.d + c) - want.o[n * p.d + c];
                sum += e * e;
            }
        }
        (sum / (rows.len() * p.d).max(1) as f64).sqrt()
    };
    let rms = (want.o.iter().map(|x| x * x).sum::<f64>() / want.o.len().max(1) as f64).sqrt();
    Ok(Accuracy {
        inputs: kind.name(),
        fp8: rmse(&|i| fp8_o[i].to_f64()),
        bf16: rmse(&|i| bf16_o[i].to_f64()),
        rms,
    })
}
