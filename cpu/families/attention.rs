//! The attention family on the host: problems and their checks, the
//! steps' launches (the unfused baseline through the GEMM library, the
//! fused kernels of `gpu/src/attention/`), the `f64` reference with each
//! element's error bound, and the family's run.
//!
//! # The error bound
//!
//! The reference computes, in `f64` from the same (rounded) inputs, `s_ij
//! = q_i . k_j`, `z = scale s`, `m_i = max_j z_ij`, `p = e^(z - m)`, `l =
//! sum_j p`, `w = p / l`, `o_i = sum_j w_ij v_j`, `lse_i = m_i + ln l_i`
//! over the keys row `i` sees. A kernel differs by:
//!
//! - **The scores**: `|ŝ - s| <= e_ij = γ_d sum_k |q_ik k_jk|`, `γ_k =
//!   (k + splits + 2) 2^-23` (one `f32` ulp per addition into the
//!   accumulator, products exact; `splits <= k / 64`, the GEMM library's
//!   k-splits: [`gemm::Precision::sum_error`]).
//! - **The exponent's argument**, `(s - m) scale log2 e` in `f32`: the
//!   rounding of `c = scale log2 e`, of the product or the fused
//!   multiply-add, of the reference point `m c` and of a rescale's
//!   argument, each at most `2^-24` of a quantity below `c (|s| + S)`, `S =
//!   max_j |s_ij|`; at most `2^-21 c (|s_ij| + S)` in all. The reference
//!   point's own error cancels (softmax is invariant to it), so per score
//!   the argument errs by `δ_ij = scale (e_ij + 2^-21 (|s_ij| + S))` in
//!   natural units, and `p` by a factor `e^δ`.
//! - **`ex2.approx`**: `2^-22` relative per call ([`EX2_ERROR`]), for `p`
//!   and for every rescale factor (step 2: `alpha`, applied alike to O and
//!   `l`, so its error perturbs a whole tile's weights, once per later
//!   tile; step 1: a lane's running sum, once per larger key, and the five
//!   merges across lanes), and `2^-24` per rescaling multiplication: at
//!   most `tiles + 7` of each, `tiles = ceil(s_k / 32)` (the smallest key
//!   tile, and a lane's keys in step 1), so `(tiles + 7) (2^-22 + 2^-23)`.
//! - **`l`**: a sum of positive `f32` terms, relative error `γ_{s_k}`.
//!
//! So each weight's numerator and denominator carry relative errors within
//! `B = max_j (e^δ_ij - 1) + (tiles + 7) (2^-22 + 2^-23) + γ_{s_k}`; P
//! rounded to the input type adds `u` (bf16 `2^-8`, f16 `2^-11`:
//! [`Input::ROUNDING`]) to the numerator's, and step 1's normalization
//! before that rounding (`1 / l` and the product) `2^-23`: `A = B + u (1 +
//! B) + 2^-23`, and an
//! absolute `τ` (the input type's smallest subnormal, at least `2^-126`,
//! `ex2`'s flush to zero) to each weight. With `o' = sum w (1 + a) v / sum
//! w (1 + b)`, `|o' - o| <= (A W + B |o|) / (1 - B)` where `W_c = sum_j w_j
//! |v_jc|`. The `P V` product adds `γ_{s_k} (1 + A) W / (1 - B)` (its `f32`
//! accumulation, with `ceil(s_k / 32)` rescales or splits), the
//! absolute floor `τ sum_j |v_jc| / (1 - B)`, and the final division and
//! rounding to the output type `(2^-23 + u) (|o| + err) + τ`.
//!
//! LSE: `ln sum e^ẑ` differs from `ln sum e^z` by at most `max δ`, and the
//! sums' errors by `-ln(1 - B)`; `lg2.approx` adds `2^-22 (1 + log2 l)
//! ln 2` ([`LG2_ERROR`]) and the last roundings `2^-21 (|m| + |lse|)`.
//!
//! A row that sees no key must be exactly 0 with `lse = +inf`.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::attention::{Half, visible_keys};
use gpu::dev::math::{EX2_ERROR, LG2_ERROR};
use gpu::dev::{In, Out};
use gpu::launch::{Dim3, Kernel, registry};
use rayon::prelude::*;

use super::{About, Family, Run};
use crate::blas::{Gemm, Layout, Op};
use crate::gemm::{self, Bf16, Call, Element, F16, Input, TensorGemm};
use crate::measure::{AnalysisColumns, Rate, Record, Shape, bench, data};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// The family: fused and unfused attention, bf16 and f16.
pub struct Attention;

/// The head dimensions the kernels take.
pub const HEAD_DIMS: [usize; 3] = [64, 128, 256];

/// One attention problem. `scale` multiplies the scores (by default `1 /
/// sqrt(d)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Problem {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub s_q: usize,
    pub s_k: usize,
    pub d: usize,
    pub causal: bool,
    pub scale: f32,
    /// The Hopper step's consumers take turns (`gpu::attention::hopper::PING_PONG`).
    pub ping_pong: bool,
    /// The Hopper step splits its last round where that pays
    /// (`gpu::attention::hopper::SPLIT`, [`hopper_split`]).
    pub split: bool,
}

/// The sweep's text: `bench/attention-sweep.txt`, embedded when the binary
/// is built.
pub const SWEEP: &str = include_str!("../../bench/attention-sweep.txt");

/// The sweep's problems, in file order: per line batch, query heads, K/V
/// heads, query length, key length, head dimension, `causal` or `full`.
pub fn sweep() -> Vec<Problem> {
    SWEEP
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let n = |i: usize| w.get(i).and_then(|x| x.parse().ok());
            match (n(0), n(1), n(2), n(3), n(4), n(5), w.get(6)) {
                (Some(b), Some(h), Some(kv), Some(s_q), Some(s_k), Some(d), Some(&mask @ ("causal" | "full"))) => {
                    Problem::new(b, h, kv, (s_q, s_k), d, mask == "causal")
                }
                _ => panic!("bench/attention-sweep.txt: a line is `b h kv s_q s_k d causal|full`, not '{line}'"),
            }
        })
        .collect()
}

impl Problem {
    /// A problem with the usual scale `1 / sqrt(d)`.
    pub fn new(batch: usize, heads: usize, kv_heads: usize, (s_q, s_k): (usize, usize), d: usize, causal: bool) -> Self {
        let scale = 1.0 / (d as f32).sqrt();
        Problem { batch, heads, kv_heads, s_q, s_k, d, causal, scale, ping_pong: false, split: true }
    }

    /// Checks what the kernels take: every size at least 1, `d` 64, 128 or
    /// 256, `kv_heads` dividing `heads`, a finite positive scale, and
    /// element counts and grids in range.
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("attention {self}: {m}")));
        let Problem { batch, heads, kv_heads, s_q, s_k, d, .. } = *self;
        if [batch, heads, kv_heads, s_q, s_k, d].contains(&0) {
            return bad("every size must be at least 1".into());
        }
        if !HEAD_DIMS.contains(&d) {
            return bad(format!("head dim {d} is not supported (64, 128 or 256)"));
        }
        if !heads.is_multiple_of(kv_heads) {
            return bad(format!("kv-heads {kv_heads} does not divide heads {heads}"));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return bad(format!("the scale must be finite and positive, not {}", self.scale));
        }
        if batch * heads > 65535 {
            return bad("batch x heads must be at most 65535 (the grid's y)".into());
        }
        // Rows go to the kernels as u32; elements (the baseline's scores
        // too) are 64-bit indices, and their bytes must not overflow.
        let rows = batch.checked_mul(heads).and_then(|x| x.checked_mul(s_q.max(s_k)));
        let elements = rows.and_then(|r| r.checked_mul(d.max(s_k))).and_then(|e| e.checked_mul(8));
        if rows.is_none_or(|r| r > u32::MAX as usize) || elements.is_none() {
            return bad("too large (rows must fit in 32 bits)".into());
        }
        Ok(())
    }

    /// The sizes (what the Hopper step's tensor maps depend on).
    pub fn shape(&self) -> [usize; 6] {
        [self.batch, self.heads, self.kv_heads, self.s_q, self.s_k, self.d]
    }

    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }

    /// Elements of Q (and O), and of K (and V).
    pub fn q_len(&self) -> usize {
        self.batch * self.heads * self.s_q * self.d
    }
    pub fn kv_len(&self) -> usize {
        self.batch * self.kv_heads * self.s_k * self.d
    }
    /// Rows of scores: `b h s_q`.
    pub fn rows(&self) -> usize {
        self.batch * self.heads * self.s_q
    }

    /// The FLOPs rates count: `4 b h s_q s_k d`, halved when causal.
    pub fn flops(&self) -> f64 {
        let all = 4.0 * (self.batch * self.heads) as f64 * self.s_q as f64 * self.s_k as f64 * self.d as f64;
        if self.causal { all / 2.0 } else { all }
    }

    /// Device bytes of one precision's run of both steps: Q, K, V, O
    /// (2 bytes), lse (4), and the baseline's S (4) and P (2).
    pub fn device_bytes(&self) -> usize {
        let scores = self.rows() * self.s_k;
        2 * (2 * self.q_len() + 2 * self.kv_len()) + 4 * self.rows() + 6 * scores
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "b{} h{}/{} s{}", self.batch, self.heads, self.kv_heads, self.s_q)?;
        if self.s_k != self.s_q {
            write!(f, "x{}", self.s_k)?;
        }
        write!(f, " d{}{}", self.d, if self.causal { " causal" } else { "" })?;
        write!(f, "{}", if self.ping_pong { " ping-pong" } else { "" })
    }
}

/// A precision attention runs in: bf16 or f16 inputs, P and O.
pub trait Precision: gemm::Precision<Input = Self::T> {
    /// The element, as the kernels take it.
    type T: Input + Element + Half + DeviceRepr + ValidAsZeroBits + Default;
}

impl Precision for Bf16 {
    type T = half::bf16;
}

impl Precision for F16 {
    type T = half::f16;
}

/// What the fused kernels take.
pub type FlashSignature<T> = (In<T>, In<T>, In<T>, Out<T>, Out<f32>, u32, u32, u32, u32, f32, u32);
/// What the Hopper kernels take: the tensor maps of Q, K and V (read
/// through them alone), O and lse, a split's workspace, then
/// as [`FlashSignature`] from the heads, with the batch before them.
pub type HopperSignature<T> = (In<u64>, Out<T>, Out<f32>, Out<f32>, u32, u32, u32, u32, u32, f32, u32);
/// What the Hopper step's merge kernel takes.
pub type MergeSignature<T> = (In<f32>, Out<T>, Out<f32>, u32, u32, u32, u32, u32, u32, f32);
/// What the softmax kernel takes.
pub type SoftmaxSignature<T> = (In<f32>, Out<T>, Out<f32>, u32, u32, u32, f32, u32);

/// The steps of the family, as a binary names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// 1: GEMM, softmax kernel, GEMM.
    Unfused,
    /// 2: the FlashAttention-2 kernel.
    Flash,
    /// 3: the FlashAttention-3 kernel (sm_90a).
    Hopper,
}

impl Step {
    pub const ALL: [Step; 3] = [Step::Unfused, Step::Flash, Step::Hopper];

    pub fn name(self) -> &'static str {
        match self {
            Step::Unfused => "unfused",
            Step::Flash => "flash",
            Step::Hopper => "hopper",
        }
    }

    /// The kernel of this step in precision `name` (`bf16`, `f16`) for
    /// head dimension `d`: the softmax kernel for the baseline.
    pub fn kernel(self, precision: &str, d: usize) -> Result<&'static Kernel> {
        let name = match self {
            Step::Unfused => format!("attention_softmax_{precision}"),
            Step::Flash => format!("attention_flash_d{d}_{precision}"),
            Step::Hopper => format!("attention_hopper_d{d}_{precision}"),
        };
        registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
    }
}

/// The device buffers of one problem: inputs, outputs, and the baseline's
/// scores and probabilities (allocated when the baseline runs).
pub struct Buffers<T: DeviceRepr> {
    pub q: DeviceBuffer<T>,
    pub k: DeviceBuffer<T>,
    pub v: DeviceBuffer<T>,
    pub o: DeviceBuffer<T>,
    pub lse: DeviceBuffer<f32>,
    scores: Option<(DeviceBuffer<f32>, DeviceBuffer<T>)>,
    /// The Hopper step's tensor maps, encoded at its first launch on a
    /// shape (`Problem::shape`).
    maps: Option<([usize; 6], DeviceBuffer<u64>)>,
    /// The Hopper step's causal deal: shape, grid, heads per group
    /// ([`deal_group`]), picked at its first causal launch on them.
    deal: Option<([usize; 6], u32, u32)>,
    /// The Hopper step's split workspace (the chunks' states), grown to
    /// the largest split launched on them.
    split: Option<DeviceBuffer<f32>>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> Buffers<T> {
    /// Uploads Q, K, V (checked against the problem) and allocates O and lse.
    pub fn new(gpu: &Gpu, problem: &Problem, q: &[T], k: &[T], v: &[T]) -> Result<Self> {
        problem.check()?;
        if q.len() != problem.q_len() || k.len() != problem.kv_len() || v.len() != problem.kv_len() {
            return Err(Error::InvalidInput(format!("attention {problem}: inputs of the wrong length")));
        }
        Ok(Buffers {
            q: gpu.upload(q)?,
            k: gpu.upload(k)?,
            v: gpu.upload(v)?,
            o: gpu.alloc(problem.q_len())?,
            lse: gpu.alloc(problem.rows())?,
            scores: None,
            maps: None,
            deal: None,
            split: None,
        })
    }
}

/// Runs `step` on `problem` in precision `P`: O and lse into `x`.
pub fn launch<P: Precision>(gpu: &Gpu, lib: &TensorGemm, step: Step, p: &Problem, x: &mut Buffers<P::T>) -> Result<()> {
    p.check()?;
    let (sq, sk) = (p.s_q as u32, p.s_k as u32);
    let causal = u32::from(p.causal);
    match step {
        Step::Flash => {
            let kernel = Step::Flash.kernel(<P::T as Input>::NAME, p.d)?;
            let typed = kernel.typed::<FlashSignature<P::T>>().map_err(Error::InvalidInput)?;
            let grid = kernel.launch.grid(sq, (p.batch * p.heads) as u32);
            let dims = (p.heads as u32, p.kv_heads as u32, sq, sk);
            // SAFETY: the buffers hold Q, K, V, O and lse of this checked
            // problem (`Buffers::new`); the grid is the kernel's.
            unsafe {
                typed.launch(
                    gpu,
                    grid,
                    (&x.q, &x.k, &x.v, &mut x.o, &mut x.lse, dims.0, dims.1, dims.2, dims.3, p.scale, causal),
                )
            }
        }
        Step::Hopper => {
            use gpu::attention::hopper::{CAUSAL, GROUP_SHIFT, PING_PONG, SPLIT, merge_threads, part_floats};
            let kernel = Step::Hopper.kernel(<P::T as Input>::NAME, p.d)?;
            let typed = kernel.typed::<HopperSignature<P::T>>().map_err(Error::InvalidInput)?;
            if x.maps.as_ref().is_none_or(|(shape, _)| *shape != p.shape()) {
                x.maps = Some((p.shape(), gpu.upload(&hopper_maps(gpu, p, x)?)?));
            }
            let maps = &x.maps.as_ref().expect("just encoded").1;
            let resident = gpu.resident_blocks(kernel)?;
            // A split runs on every block, even with fewer tiles than blocks.
            let split = hopper_split(p, resident);
            let grid = match split {
                Some(_) => Dim3::xy(resident, 1),
                None => kernel.launch.persistent_grid(sq, (p.batch * p.heads) as u32, resident),
            };
            let words = split.map_or(1, |_| grid.x as usize * part_floats(p.d));
            if x.split.as_ref().is_none_or(|w| w.len() < words) {
                // (Zeros: the merge reads only what the product wrote, but a
                // buffer the sanitizer's initcheck sees written.)
                x.split = Some(gpu.zeros(words)?);
            }
            let workspace = x.split.as_mut().expect("just allocated");
            let group = if p.causal {
                if x.deal.is_none_or(|(shape, g, _)| shape != p.shape() || g != grid.x) {
                    x.deal = Some((p.shape(), grid.x, deal_group(p, grid.x)));
                }
                x.deal.expect("just picked").2
            } else {
                0
            };
            let hopper_flags = if p.causal { CAUSAL } else { 0 }
                | if p.ping_pong { PING_PONG } else { 0 }
                | if split.is_some() { SPLIT } else { 0 }
                | group << GROUP_SHIFT;
            let dims = (p.batch as u32, p.heads as u32, p.kv_heads as u32, sq, sk);
            // SAFETY: the buffers hold Q, K, V, O and lse of this checked
            // problem (`Buffers::new`), and the maps describe them as the
            // kernel reads them (`hopper_maps`); a split's workspace its
            // size; the grid is the kernel's.
            unsafe {
                typed.launch(
                    gpu,
                    grid,
                    (
                        maps,
                        &mut x.o,
                        &mut x.lse,
                        workspace,
                        dims.0,
                        dims.1,
                        dims.2,
                        dims.3,
                        dims.4,
                        p.scale,
                        hopper_flags,
                    ),
                )
            }?;
            let Some(tail) = split else { return Ok(()) };
            let merge = registry::find(&format!("attention_merge_{}", <P::T as Input>::NAME))
                .ok_or_else(|| Error::InvalidInput("no kernel attention_merge".into()))?;
            let typed = merge.typed::<MergeSignature<P::T>>().map_err(Error::InvalidInput)?;
            let threads = merge_threads(p.d, tail.tiles as usize) as u32;
            let workspace = x.split.as_ref().expect("allocated above");
            // SAFETY: the product launch just wrote the chunks' states for
            // this problem on `grid` blocks; O and lse are the problem's.
            unsafe {
                typed.launch(
                    gpu,
                    Dim3::xy(merge.launch.blocks(threads), 1),
                    (workspace, &mut x.o, &mut x.lse, dims.0, dims.1, dims.3, dims.4, p.d as u32, grid.x, p.scale),
                )
            }
        }
        Step::Unfused => {
            let kernel = Step::Unfused.kernel(<P::T as Input>::NAME, p.d)?;
            let typed = kernel.typed::<SoftmaxSignature<P::T>>().map_err(Error::InvalidInput)?;
            let scores = p.rows() * p.s_k;
            if x.scores.as_ref().is_none_or(|(s, _)| s.len() < scores) {
                x.scores = Some((gpu.alloc(scores)?, gpu.alloc(scores)?));
            }
            let (s, pr) = x.scores.as_mut().expect("just allocated");
            // The query heads of one K/V head are consecutive: their rows
            // are one `group s_q x d` matrix, and one strided batch of `b
            // kv_heads` GEMMs makes every head's S (rows in Q's order).
            let (m, batch) = (p.group() * p.s_q, p.batch * p.kv_heads);
            let qk = Call::new(Gemm::new(Layout::Row, Op::N, Op::T, m, p.s_k, p.d)).packed(batch);
            lib.run::<P, f32>(gpu, &qk, &x.q, &x.k, s, None)?;
            let rows = p.rows() as u32;
            // SAFETY: S and P hold `rows s_k` elements, lse `rows`; the
            // grid covers the rows, 4 a block.
            unsafe {
                typed.launch(gpu, kernel.launch.blocks(rows), (&*s, &mut *pr, &mut x.lse, rows, sq, sk, p.scale, causal))
            }?;
            let pv = Call::new(Gemm::new(Layout::Row, Op::N, Op::N, m, p.d, p.s_k)).packed(batch);
            lib.run::<P, P::T>(gpu, &pv, pr, &x.v, &mut x.o, None).map(drop)
        }
    }
}

/// The Hopper step's split of its last round on `grid` blocks
/// (`hopper::Tail`, whose module says why), where it pays: not causal,
/// and not turned off (`Problem::split`).
pub fn hopper_split(p: &Problem, grid: u32) -> Option<gpu::attention::hopper::Tail> {
    use gpu::attention::hopper::{Tail, bc};
    if p.causal || !p.split {
        return None;
    }
    Tail::of_problem((p.batch * p.heads) as u32, (p.s_q as u32, p.s_k as u32), bc(p.d) as u32, grid)
}

/// Heads per group of the Hopper step's causal deal on `grid` blocks
/// (`hopper::GROUP_SHIFT`; the scheduler's module says why): the smallest
/// group of whole K/V heads that divides `b heads`, has tiles for two
/// rounds, and whose deal the model (`hopper::causal_deal_loads`) puts
/// within 1% of dealing every head at once (or within 2% of even); 0,
/// every head at once, if no group is.
pub fn deal_group(p: &Problem, grid: u32) -> u32 {
    use gpu::attention::hopper::{BR, GROUP_SHIFT, bc, causal_deal_loads};
    let dims = (p.batch as u32, p.heads as u32, p.kv_heads as u32, p.s_q as u32, p.s_k as u32);
    let all = dims.0 * dims.1;
    let m_blocks = p.s_q.div_ceil(BR).max(1) as u32;
    // The busiest block's work over the mean.
    let spread = |group: u32| {
        let loads: Vec<u64> = causal_deal_loads(grid, dims, group, bc(p.d)).collect();
        let mean = loads.iter().sum::<u64>() as f64 / loads.len().max(1) as f64;
        loads.iter().max().copied().unwrap_or(0) as f64 / mean.max(1.0)
    };
    let per_kv = p.group().max(1) as u32;
    let mut groups = (per_kv..all)
        .step_by(per_kv as usize)
        .filter(|&g| all.is_multiple_of(g) && g * m_blocks >= 2 * grid && g < 1 << (32 - GROUP_SHIFT))
        .peekable();
    // (No candidate, no model run: most small problems.)
    if groups.peek().is_none() {
        return 0;
    }
    let target = (spread(all) + 0.01).max(1.02);
    groups.find(|&g| spread(g) <= target).unwrap_or(0)
}

/// The Hopper step's tensor maps, with the 128-byte swizzle, each box a
/// tile's rows by 64 columns: Q's (every head's rows, `b heads s_q x d`,
/// boxes of 128 rows), then each K/V head's K and V (`s_k x d`, boxes of
/// `bc(d)` rows, so a head's last tile reads zeros past `s_k`).
fn hopper_maps<T: Input>(gpu: &Gpu, p: &Problem, x: &Buffers<T>) -> Result<Vec<u64>> {
    use gpu::attention::hopper::{BR, bc};
    let mut words = Vec::with_capacity(16 * (1 + 2 * p.batch * p.kv_heads));
    words.extend(gpu.tensor_map_pitched(&x.q, 0, (p.batch * p.heads * p.s_q, p.d), p.d, (BR, 64))?);
    for head in 0..p.batch * p.kv_heads {
        for buffer in [&x.k, &x.v] {
            words.extend(gpu.tensor_map_pitched(buffer, head * p.s_k * p.d, (p.s_k, p.d), p.d, (bc(p.d), 64))?);
        }
    }
    Ok(words)
}

/// The reference of some rows: O (`d` a row) and lse, each with its bound.
pub struct Reference {
    /// The rows (of `b h s_q`) checked.
    pub rows: Vec<usize>,
    pub o: Vec<f64>,
    pub o_bound: Vec<f64>,
    pub lse: Vec<f64>,
    pub lse_bound: Vec<f64>,
}

/// The `f64` reference of rows `rows` of `problem` from the inputs' values,
/// with the bounds the module documentation derives, for elements with
/// relative rounding `u` and absolute floor `tiny`.
pub fn reference(
    p: &Problem,
    (q, k, v): (&[f64], &[f64], &[f64]),
    rows: &[usize],
    (u, tiny): (f64, f64),
) -> Reference {
    let d = p.d;
    let two = |e: i32| f64::powi(2.0, e);
    let gamma = |k: usize| (k + k.div_ceil(32) + 2) as f64 * two(-23);
    let scale = p.scale as f64;
    let tiles = p.s_k.div_ceil(32) as f64;
    let tau = tiny.max(two(-126));
    let per_row: Vec<(Vec<f64>, Vec<f64>, f64, f64)> = rows
        .par_iter()
        .map(|&row| {
            let (bh, i) = (row / p.s_q, row % p.s_q);
            let (b, h) = (bh / p.heads, bh % p.heads);
            let kv = (b * p.kv_heads + h / p.group()) * p.s_k;
            let keys = visible_keys(i, p.s_q, p.s_k, p.causal);
            if keys == 0 {
                return (vec![0.0; d], vec![0.0; d], f64::INFINITY, 0.0);
            }
            let qi = &q[row * d..(row + 1) * d];
            let (mut s, mut e) = (vec![0.0; keys], vec![0.0; keys]);
            for j in 0..keys {
                let kj = &k[(kv + j) * d..(kv + j + 1) * d];
                s[j] = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>();
                e[j] = gamma(d) * qi.iter().zip(kj).map(|(a, b)| (a * b).abs()).sum::<f64>();
            }
            let top = s.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let big = s.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
            let m = scale * top;
            let w: Vec<f64> = s.iter().map(|&x| (scale * x - m).exp()).collect();
            let l: f64 = w.iter().sum();
            let w: Vec<f64> = w.iter().map(|x| x / l).collect();
            let delta: Vec<f64> = (0..keys).map(|j| scale * (e[j] + two(-21) * (s[j].abs() + big))).collect();
            let dmax = delta.iter().fold(0.0f64, |a, &b| a.max(b));
            let bb = dmax.exp_m1() + (tiles + 7.0) * (EX2_ERROR + two(-23)) + gamma(p.s_k);
            let aa = bb + u * (1.0 + bb) + two(-23);
            let (mut o, mut bound) = (vec![0.0; d], vec![0.0; d]);
            for c in 0..d {
                let (mut oc, mut wc, mut vc) = (0.0, 0.0, 0.0);
                for j in 0..keys {
                    let x = v[(kv + j) * d + c];
                    oc += w[j] * x;
                    wc += w[j] * x.abs();
                    vc += x.abs();
                }
                let err = (aa * wc + bb * oc.abs()) / (1.0 - bb)
                    + gamma(p.s_k) * (1.0 + aa) / (1.0 - bb) * wc
                    + tau * vc / (1.0 - bb);
                o[c] = oc;
                bound[c] = err + (two(-23) + u) * (oc.abs() + err) + tau + f64::MIN_POSITIVE;
            }
            let lse = m + l.ln();
            let lse_bound = dmax
                - (1.0 - bb).ln()
                + LG2_ERROR * (1.0 + l.log2()) * std::f64::consts::LN_2
                + two(-21) * (m.abs() + lse.abs())
                + f64::MIN_POSITIVE;
            (o, bound, lse, lse_bound)
        })
        .collect();
    let mut r = Reference { rows: rows.to_vec(), o: vec![], o_bound: vec![], lse: vec![], lse_bound: vec![] };
    for (o, bound, lse, lse_bound) in per_row {
        r.o.extend(o);
        r.o_bound.extend(bound);
        r.lse.push(lse);
        r.lse_bound.push(lse_bound);
    }
    r
}

/// The rows a run checks: all of them up to 4096, else a sample of about
/// 256 (the first and last of every head among them).
pub fn rows_to_check(p: &Problem) -> Vec<usize> {
    let rows = p.rows();
    if rows <= 4096 {
        return (0..rows).collect();
    }
    let mut r: Vec<usize> = (0..256).map(|i| i * (rows - 1) / 255).collect();
    r.extend([p.s_q - 1, rows - p.s_q]);
    r.sort_unstable();
    r.dedup();
    r
}

/// Compares O and lse with the reference: `Err` names the first element
/// out of its bound; `Ok` the worst error relative to its bound.
pub fn verify<T: Input>(name: &str, p: &Problem, o: &[T], lse: &[f32], want: &Reference) -> std::result::Result<f64, String> {
    let d = p.d;
    let mut worst = 0.0f64;
    for (n, &row) in want.rows.iter().enumerate() {
        let (l, wl, bl) = (lse[row] as f64, want.lse[n], want.lse_bound[n]);
        let ok = if wl.is_infinite() { l == wl } else { l.is_finite() && (l - wl).abs() <= bl };
        if !ok {
            return Err(format!("{name} {p}: lse[{row}] = {l}, want {wl} within {bl:.3e}"));
        }
        if wl.is_finite() {
            worst = worst.max((l - wl).abs() / bl);
        }
        for c in 0..d {
            let (got, want_c, bound) = (o[row * d + c].to_f64(), want.o[n * d + c], want.o_bound[n * d + c]);
            let err = (got - want_c).abs();
            if !got.is_finite() || err > bound {
                return Err(format!("{name} {p}: O[{row}][{c}] = {got}, want {want_c} within {bound:.3e}"));
            }
            worst = worst.max(err / bound);
        }
    }
    Ok(worst)
}

/// Random inputs of `p` in `P`'s element type: uniform in [-1, 1) for K
/// and V, [-2, 2) for Q (scores spread enough that the softmax is not
/// flat), rounded to the type.
pub fn inputs<T: Input>(p: &Problem, seed: u64) -> (Vec<T>, Vec<T>, Vec<T>) {
    let round = |x: Vec<f32>, by: f32| -> Vec<T> { x.into_iter().map(|x| T::round_f32(by * x)).collect() };
    (
        round(data::uniform_f32(p.q_len(), seed), 2.0),
        round(data::uniform_f32(p.kv_len(), seed + 1), 1.0),
        round(data::uniform_f32(p.kv_len(), seed + 2), 1.0),
    )
}

/// The reference of `rows` for inputs in `T`.
pub fn reference_of<T: Input>(p: &Problem, (q, k, v): (&[T], &[T], &[T]), rows: &[usize]) -> Reference {
    let f = |x: &[T]| -> Vec<f64> { x.par_iter().map(|&x| x.to_f64()).collect() };
    reference(p, (&f(q), &f(k), &f(v)), rows, (T::ROUNDING, T::TINY))
}

/// One step's outcome: the worst error against its bound, and its time.
pub struct Outcome {
    pub worst: std::result::Result<f64, String>,
    pub timing: Option<bench::Timing>,
    /// On the emulator: the verification run's bank-conflict and sector
    /// analysis (every launch of the step).
    pub analysis: Option<emu::Analysis>,
}

/// Verifies (outputs poisoned first) then, given `runs`, times each of
/// `steps` on `p` in precision `P`.
pub fn run_steps<P: Precision>(
    gpu: &Gpu,
    p: &Problem,
    steps: &[Step],
    runs: Option<bench::Runs>,
) -> Result<Vec<(Step, Outcome)>> {
    p.check()?;
    let (q, k, v) = inputs::<P::T>(p, 0xa77e);
    let rows = rows_to_check(p);
    let want = reference_of(p, (&q, &k, &v), &rows);
    let mut x = Buffers::new(gpu, p, &q, &k, &v)?;
    let lib = TensorGemm::new();
    let mut out = Vec::new();
    for &step in steps {
        gpu.poison(&mut x.o)?;
        gpu.poison(&mut x.lse)?;
        gpu.set_analysis(gpu.is_emulator());
        let launched = launch::<P>(gpu, &lib, step, p, &mut x).and_then(|()| gpu.sync());
        gpu.set_analysis(false);
        let analysis = gpu.is_emulator().then(|| gpu.take_analysis());
        launched?;
        let (o, lse) = (gpu.download(&x.o)?, gpu.download(&x.lse)?);
        let name = format!("attention {}", step.name());
        let worst = verify(&name, p, &o, &lse, &want);
        let timing = match runs {
            Some(runs) if worst.is_ok() && !gpu.is_emulator() => {
                Some(bench::time(gpu, runs, || launch::<P>(gpu, &lib, step, p, &mut x))?)
            }
            _ => None,
        };
        out.push((step, Outcome { worst, timing, analysis }));
    }
    Ok(out)
}

/// The suite's problem at size `s`: batch 4, 16 heads, d = 128, not causal
/// (the sweep's shape); on the emulator, batch 1 and 2 heads.
fn suite_problem(s: usize, emulator: bool) -> Problem {
    let (b, h) = if emulator { (1, 2) } else { (4, 16) };
    Problem::new(b, h, h, (s, s), 128, false)
}

/// The precisions, by name.
fn run_precision<P: Precision>(run: &Run, s: usize, kernels: &[&'static Kernel]) -> Result<Vec<Record>> {
    let p = suite_problem(s, run.gpu.is_emulator());
    let name = <P::T as Input>::NAME;
    let mut steps = Vec::new();
    for &kernel in kernels {
        for step in Step::ALL {
            // (A kernel this device's PTX lacks, sm_90a's elsewhere, is left out.)
            if step.kernel(name, p.d).is_ok_and(|k| std::ptr::eq(k, kernel)) && run.gpu.has_kernel(kernel).is_ok() {
                steps.push((step, kernel));
            }
        }
    }
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    (run.progress)(&format!("attention {p} {name}"));
    let outcomes = run_steps::<P>(run.gpu, &p, &steps.iter().map(|s| s.0).collect::<Vec<_>>(), run.runs)?;
    Ok(outcomes
        .into_iter()
        .zip(&steps)
        .map(|((_, outcome), (_, kernel))| {
            let mut r = Record::new("attention", kernel.name, name, run.size);
            r.verified = outcome.worst.is_ok();
            r.error = outcome.worst.clone().err();
            r.relative_error = outcome.worst.ok();
            r.analysis = outcome.analysis.as_ref().map(|a| AnalysisColumns::from(run.size.lead(), a));
            r.timed(outcome.timing, Rate::Flops { flops: p.flops(), peer: "-", peer_tflops: None })
        })
        .collect())
}

impl Family for Attention {
    fn about(&self) -> &'static About {
        &About {
            name: "attention",
            size_meaning: "s: batch 4, 16 heads, s queries and keys, d = 128, not causal (emulator: batch 1, 2 heads)",
            default_sizes: &[1024, 2048, 4096],
            emulator_size: 77,
            method: "every element of O and lse against an f64 reference on the same inputs (up to 4096 rows; a \
                     sample beyond), within a bound derived from the f32 scores, the exponent's argument, \
                     ex2.approx, P rounded to the input type, the f32 sums and the output rounding (the module \
                     documentation of cpu/families/attention.rs); the softmax kernel's rows time the whole \
                     unfused baseline (GEMM, softmax, GEMM)",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let p = suite_problem(size.one("attention")?, false);
        p.check()?;
        Ok(p.device_bytes())
    }

    fn emulator_work(&self, size: &Shape) -> usize {
        size.dims().iter().product::<usize>().pow(2)
    }

    fn emulator_limit(&self) -> usize {
        1 << 16
    }

    fn kernels(&self) -> Vec<&'static Kernel> {
        registry::tree("gpu::attention")
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let s = run.size.one("attention")?;
        let mut records = run_precision::<Bf16>(run, s, run.kernels)?;
        records.extend(run_precision::<F16>(run, s, run.kernels)?);
        Ok(records)
    }

    fn notes(&self) -> &'static str {
        "Step 1 (the rows `attention_softmax_*`) is the unfused baseline timed whole: S = Q Kᵀ by the GEMM \
         library (f32 out), the softmax kernel writing P in the input type and lse, then P V by the GEMM library; \
         it moves at least 16 bytes per score. Step 2 (`attention_flash_d*`) is FlashAttention-2 on `mma.sync`: S \
         and P stay in registers. Step 3 (`attention_hopper_d*`, sm_90a) is FlashAttention-3 style: TMA, \
         mbarriers, `wgmma` with P from registers, a producer and two consumer warpgroups taking turns, \
         persistent blocks. The fused kernels' rows are at d = 128 only here; the `attention` binary runs \
         every head dimension."
    }
}
