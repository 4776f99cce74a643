//! The grouped GEMM of a mixture of experts, as one library call:
//! `D_g = act(alpha scale_a scale_b A_g B_g)` for `G` experts sharing `n`
//! and `k`, each with its own weight `B_g` and its own rows of A and D,
//! in one launch (`gpu::gemm::grouped`).
//!
//! - A is `m x k` row-major: the tokens, sorted by expert;
//! - B is a stack of `G` weights: `k x n` row-major for bf16 and f16, `n x
//!   k` row-major (K-major, a `torch.nn.Linear` weight) for FP8, as the
//!   dense kernels read them;
//! - D is `m x n` row-major (`ldd = n`): row `r` of A gives row `r` of D;
//! - `rows` (on the device, where a router wrote it) shares out the rows
//!   ([`Rows`]): `G + 1` offsets, or `G` counts of a fixed capacity.
//!
//! Rows of D that belong to no group are left as they were.
//!
//! ```ignore
//! let call = Grouped::contiguous(8, 32768, 4096, 7168);
//! GroupedGemm::new().run::<Bf16, bf16>(&gpu, &call, &a, &b, &offsets, &mut d)?;
//! ```

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use gpu::gemm::element::B_BOX_COLS;
use gpu::launch::{Dim3, Kernel};
use rayon::prelude::*;

use super::call::{Act, MAX_DIM};
use super::precision::{Bf16, E4m3, Element, F16, Input, Precision};
use super::reference::{Checked, expected};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result, Unread};

/// How the rows of A and D are shared among the groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// Tokens sorted by expert: group `g` is rows `offsets[g]..offsets[g +
    /// 1]` (`G + 1` offsets, the first usually 0).
    Contiguous,
    /// A fixed capacity per expert: group `g` is the first `counts[g]` of
    /// rows `g capacity..(g + 1) capacity`.
    Masked { capacity: usize },
}

/// A grouped call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grouped {
    pub groups: usize,
    /// A's and D's rows.
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub rows: Rows,
    pub alpha: f32,
    pub act: Act,
    /// FP8's per-tensor scales of A and B (1 otherwise).
    pub scales: (f32, f32),
    /// A bias per expert: `groups x n` values, expert `g`'s row added to
    /// each of its rows of D before the activation.
    pub bias: bool,
}

impl Grouped {
    /// `groups` experts over the `m` rows of A, by offsets.
    pub fn contiguous(groups: usize, m: usize, n: usize, k: usize) -> Grouped {
        Grouped {
            groups,
            m,
            n,
            k,
            rows: Rows::Contiguous,
            alpha: 1.0,
            act: Act::None,
            scales: (1.0, 1.0),
            bias: false,
        }
    }

    /// `groups` experts of `capacity` rows each, by counts.
    pub fn masked(groups: usize, capacity: usize, n: usize, k: usize) -> Grouped {
        let m = groups.saturating_mul(capacity);
        Grouped { rows: Rows::Masked { capacity }, ..Grouped::contiguous(groups, m, n, k) }
    }

    pub fn with_alpha(self, alpha: f32) -> Grouped {
        Grouped { alpha, ..self }
    }

    pub fn with_act(self, act: Act) -> Grouped {
        Grouped { act, ..self }
    }

    pub fn with_scales(self, scale_a: f32, scale_b: f32) -> Grouped {
        Grouped { scales: (scale_a, scale_b), ..self }
    }

    /// With a bias per expert ([`Grouped::bias`]).
    pub fn with_bias(self) -> Grouped {
        Grouped { bias: true, ..self }
    }

    /// Values of the bias: `groups x n` with one, else 0.
    pub fn bias_values(&self) -> usize {
        if self.bias { self.groups.saturating_mul(self.n) } else { 0 }
    }

    /// `alpha scale_a scale_b`.
    pub fn product_scale(&self) -> f32 {
        self.alpha * self.scales.0 * self.scales.1
    }

    /// Values `rows` holds: `G + 1` offsets or `G` counts.
    pub fn row_values(&self) -> usize {
        match self.rows {
            Rows::Contiguous => self.groups + 1,
            Rows::Masked { .. } => self.groups,
        }
    }

    /// Elements of A, B and D (saturating).
    pub fn elements(&self) -> (usize, usize, usize) {
        let mul = |x: &[usize]| x.iter().fold(1usize, |a, &y| a.saturating_mul(y));
        (mul(&[self.m, self.k]), mul(&[self.groups, self.k, self.n]), mul(&[self.m, self.n]))
    }

    /// The kernels' limits and the copy engine's alignment for precision
    /// `P`, then that buffers of `a`, `b`, `rows`, `d` and `bias` elements
    /// hold the call: one line naming the first problem, before anything
    /// runs.
    pub fn check<P: Precision>(
        &self,
        (a, b, rows, d, bias): (usize, usize, usize, usize, usize),
    ) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidInput(format!("grouped gemm {self}: {why}")));
        if self.groups == 0 || self.groups > u32::MAX as usize / 2 {
            return bad(format!("{} groups (at least 1)", self.groups));
        }
        if [self.m, self.n, self.k].iter().any(|&x| x == 0 || x > MAX_DIM) {
            return bad(format!("m, n and k must be 1..={MAX_DIM}"));
        }
        if let Rows::Masked { capacity } = self.rows
            && (capacity == 0 || self.m != self.groups * capacity)
        {
            return bad(format!("a capacity of {capacity} rows a group (at least 1)"));
        }
        let per16 = P::Input::PER_16;
        if !self.k.is_multiple_of(per16) {
            return bad(format!(
                "k = {} is not a multiple of {per16}: the copy engine reads A's rows (and FP8 B's) from 16-byte boundaries",
                self.k
            ));
        }
        if !P::B_K_MAJOR && !self.n.is_multiple_of(per16) {
            return bad(format!(
                "n = {} is not a multiple of {per16}: the copy engine reads B's k x n rows from 16-byte boundaries",
                self.n
            ));
        }
        if !(self.scales.0.is_finite() && self.scales.1.is_finite() && self.alpha.is_finite()) {
            return bad("alpha and the scales must be finite".into());
        }
        let (na, nb, nd) = self.elements();
        let lens = [("A", na, a), ("B", nb, b), ("rows", self.row_values(), rows), ("D", nd, d)];
        for (name, need, len) in lens.into_iter().chain([("the bias", self.bias_values(), bias)]) {
            if need.checked_mul(4).is_none() {
                return bad(format!("{name} overflows the address space"));
            }
            if len < need {
                return bad(format!("{name} needs {need} elements, the buffer has {len}"));
            }
        }
        Ok(())
    }

    /// Each group's first row and its number of rows, as the kernel reads
    /// `rows`: a count clamped to the capacity, each group starting no
    /// earlier than the last one's end and ending inside A, so that no two
    /// groups share a row whatever `rows` holds.
    pub fn spans(&self, rows: &[u32]) -> Vec<(usize, usize)> {
        let mut floor = 0;
        (0..self.groups)
            .map(|g| {
                let (start, end) = match self.rows {
                    Rows::Contiguous => (rows[g] as usize, rows[g + 1] as usize),
                    Rows::Masked { capacity } => {
                        (g * capacity, g * capacity + (rows[g] as usize).min(capacity))
                    }
                };
                let start = start.max(floor).min(self.m);
                let end = end.min(self.m).max(start);
                floor = end;
                (start, end - start)
            })
            .collect()
    }

    /// `2 n k` for every row of every group.
    pub fn flops(&self, spans: &[(usize, usize)]) -> f64 {
        2.0 * (self.n * self.k) as f64 * spans.iter().map(|s| s.1 as f64).sum::<f64>()
    }
}

impl fmt::Display for Grouped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} groups, m {} n {} k {}", self.groups, self.m, self.n, self.k)?;
        if let Rows::Masked { capacity } = self.rows {
            write!(f, " (masked, {capacity} a group)")?;
        }
        if self.alpha != 1.0 {
            write!(f, " alpha {}", self.alpha)?;
        }
        if self.act != Act::None {
            write!(f, " {:?}", self.act)?;
        }
        if self.scales != (1.0, 1.0) {
            write!(f, " scales {}x{}", self.scales.0, self.scales.1)?;
        }
        if self.bias {
            write!(f, " bias")?;
        }
        Ok(())
    }
}

/// A precision with a grouped kernel: bf16, f16, FP8 E4M3.
pub trait GroupedPrecision: Precision {
    /// The grouped kernel for output type `O`.
    fn grouped<O: Element>() -> &'static Kernel;

    /// Launches it.
    ///
    /// # Safety
    /// The maps describe A and B's stack within live buffers; `rows`, `d`
    /// and the bias hold what the call says (the kernel's contract).
    unsafe fn launch_grouped<O: Element>(
        gpu: &Gpu,
        grid: Dim3,
        buffers: (&DeviceBuffer<u64>, &mut DeviceBuffer<O>, &DeviceBuffer<u32>, &DeviceBuffer<f32>),
        call: &Grouped,
    ) -> Result<()>;
}

macro_rules! grouped_precision {
    ($marker:ty, $kernel:ident) => {
        impl GroupedPrecision for $marker {
            fn grouped<O: Element>() -> &'static Kernel {
                use gpu::gemm::grouped::$kernel;
                &$kernel::KERNELS[<O as $kernel::Instance>::INDEX]
            }

            unsafe fn launch_grouped<O: Element>(
                gpu: &Gpu,
                grid: Dim3,
                (maps, d, rows, bias): (
                    &DeviceBuffer<u64>,
                    &mut DeviceBuffer<O>,
                    &DeviceBuffer<u32>,
                    &DeviceBuffer<f32>,
                ),
                c: &Grouped,
            ) -> Result<()> {
                let capacity = match c.rows {
                    Rows::Contiguous => 0,
                    Rows::Masked { capacity } => capacity as u32,
                };
                let k_steps = c.k.div_ceil(<$marker as Precision>::BK) as u32;
                // SAFETY: the caller's contract.
                unsafe {
                    gpu::gemm::grouped::$kernel::launch::<O, _>(
                        gpu,
                        grid,
                        maps,
                        d,
                        rows,
                        c.groups as u32,
                        capacity,
                        c.m as u32,
                        c.n as u32,
                        k_steps,
                        c.n as u32,
                        c.product_scale(),
                        c.act.code(),
                        bias,
                        c.bias as u32,
                    )
                }
            }
        }
    };
}

grouped_precision!(Bf16, gemm_grouped_bf16);
grouped_precision!(F16, gemm_grouped_f16);
grouped_precision!(E4m3, gemm_grouped_e4m3);

/// The grouped GEMM: keeps its tensor maps between calls (a timed loop
/// encodes nothing after its first call).
#[derive(Default)]
pub struct GroupedGemm {
    maps: RefCell<HashMap<String, DeviceBuffer<u64>>>,
    /// Passed for the bias of a call without one.
    no_bias: Unread,
    /// The persistent grid's size instead of as many blocks as the device
    /// holds at once (tests on the emulator's one SM).
    pub blocks: Option<usize>,
}

impl GroupedGemm {
    pub fn new() -> GroupedGemm {
        GroupedGemm::default()
    }

    /// `call` on A, B's stack, the device's `rows`, into D, adding `bias`
    /// (`groups x n`, exactly when the call has one).
    #[allow(clippy::too_many_arguments)]
    pub fn run<P: GroupedPrecision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Grouped,
        a: &DeviceBuffer<P::Input>,
        b: &DeviceBuffer<P::Input>,
        rows: &DeviceBuffer<u32>,
        d: &mut DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<()> {
        call.check::<P>((a.len(), b.len(), rows.len(), d.len(), bias_len(call, bias)?))?;
        let kernel = P::grouped::<O>();
        let (bm, bn) = (gpu::gemm::tile::BM, gpu::gemm::tile::BN);
        let key = format!(
            "{} {:x} {:x} {} {}x{}x{}",
            P::NAME,
            a.address(),
            b.address(),
            call.groups,
            call.m,
            call.n,
            call.k
        );
        if !self.maps.borrow().contains_key(&key) {
            let mut words = Vec::with_capacity(32);
            words.extend(gpu.tensor_map(a, (call.m, call.k), (bm, P::BK))?);
            words.extend(if P::B_K_MAJOR {
                gpu.tensor_map_stack(b, (call.groups, call.n, call.k), (bn, P::BK))?
            } else {
                gpu.tensor_map_stack(b, (call.groups, call.k, call.n), (P::BK, B_BOX_COLS))?
            });
            let uploaded = gpu.upload(&words)?;
            self.maps.borrow_mut().insert(key.clone(), uploaded);
        }
        let maps = self.maps.borrow();
        let blocks = match self.blocks {
            Some(blocks) => blocks.max(1),
            None => gpu.resident_blocks(kernel)? as usize,
        };
        let none = self.no_bias.get(gpu)?;
        let bias = bias.unwrap_or(none);
        // SAFETY: the maps describe A and B's stack inside `a` and `b`, D
        // holds m x n, rows and the bias their values (checked above).
        unsafe { P::launch_grouped(gpu, Dim3::xy(blocks as u32, 1), (&maps[&key], d, rows, bias), call) }
    }
}

/// The length of `bias` for [`Grouped::check`], or why a call with a bias
/// has none (or one without, one).
pub(crate) fn bias_len(call: &Grouped, bias: Option<&DeviceBuffer<f32>>) -> Result<usize> {
    match (call.bias, bias) {
        (true, None) => {
            Err(Error::InvalidInput(format!("grouped gemm {call}: the call has a bias; pass its buffer")))
        }
        (false, Some(_)) => {
            Err(Error::InvalidInput(format!("grouped gemm {call}: a bias buffer for a call without a bias")))
        }
        (_, b) => Ok(b.map_or(0, DeviceBuffer::len)),
    }
}

/// Checks `got` (D after the call) against the `f64` reference of `call`
/// on `a`, `b`, `bias` (empty without one) and the host's copy of `rows`,
/// `d0` (D before it): the rows `sample` of each group (all of them if
/// `None`) within their bounds ([`super::reference`]'s, one split), every
/// row outside the groups unchanged bit for bit.
#[allow(clippy::too_many_arguments)]
pub fn check<P: Precision, O: Element>(
    call: &Grouped,
    (a, b, bias): (&[P::Input], &[P::Input], &[f32]),
    rows: &[u32],
    d0: &[O],
    got: &[O],
    sample: Option<usize>,
) -> Checked {
    let (n, k) = (call.n, call.k);
    let product = |g: usize, r: usize, p: usize, j: usize| {
        let at = if P::B_K_MAJOR { (g * n + j) * k + p } else { (g * k + p) * n + j };
        a[r * k + p].to_f64() * b[at].to_f64()
    };
    let unit = P::sum_error(k, 1) + P::PRODUCT_ERROR;
    check_with(call, (rows, bias), (d0, got), sample, unit, product)
}

/// [`check`] for products `product(g, r, p, j)` (group `g`, row `r` of A,
/// `p` of k, column `j`) summed with relative error `unit` of the sum of
/// their magnitudes (block-scaled FP8's, say), plus `bias` (`groups x n`,
/// empty without one).
pub fn check_with<O: Element>(
    call: &Grouped,
    (rows, bias): (&[u32], &[f32]),
    (d0, got): (&[O], &[O]),
    sample: Option<usize>,
    unit: f64,
    product: impl Fn(usize, usize, usize, usize) -> f64 + Sync,
) -> Checked {
    let (n, k) = (call.n, call.k);
    let spans = call.spans(rows);
    let mut inside = vec![false; call.m];
    let mut work = Vec::new();
    for (g, &(start, count)) in spans.iter().enumerate() {
        inside[start..start + count].iter_mut().for_each(|x| *x = true);
        let picked: Vec<usize> = match sample {
            Some(s) if count > s => (0..s).map(|i| start + i * (count - 1) / (s - 1).max(1)).collect(),
            _ => (start..start + count).collect(),
        };
        work.extend(picked.into_iter().map(|r| (g, r)));
    }
    for (r, _) in inside.iter().enumerate().filter(|(_, x)| !**x) {
        if let Some(j) = (0..n).find(|&j| got[r * n + j].bits() != d0[r * n + j].bits()) {
            return Err(format!("D[{r}][{j}] lies in no group and was changed"));
        }
    }
    let alpha = call.product_scale() as f64;
    let worst = work
        .par_iter()
        .map(|&(g, r)| -> Checked {
            let mut worst = 0.0f64;
            for j in 0..n {
                let (mut dot, mut abs) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = product(g, r, p, j);
                    dot += x;
                    abs += x.abs();
                }
                let bias = if call.bias { bias[g * n + j] as f64 } else { 0.0 };
                let (want, bound) = expected::<O>(unit, call.act, alpha, (dot, abs), (0.0, bias));
                let value = got[r * n + j].to_f64();
                let err = (value - want).abs();
                if !value.is_finite() || err > bound {
                    return Err(format!(
                        "D[{r}][{j}] (group {g}) = {value}, want {want} within {bound:.3e} (off by {err:.3e})"
                    ));
                }
                worst = worst.max(err / bound);
            }
            Ok(worst)
        })
        .collect::<std::result::Result<Vec<f64>, String>>()?;
    Ok(worst.into_iter().fold(0.0, f64::max))
}

/// Rows for `call`, drawn from `seed`: each group's share of A's rows
/// (contiguous) or of its capacity (masked), even (`skew = 0`: `m / G`
/// each, the last taking the rest) or uneven (each group's weight `e^(skew
/// x)`, `x` uniform in `[-1, 1)`, as a router's load is: some experts
/// several times others' share, a few near none).
pub fn draw_rows(call: &Grouped, skew: f64, seed: u64) -> Vec<u32> {
    let g = call.groups;
    let weights: Vec<f64> = crate::measure::data::uniform_f32(g, seed ^ 0x6a0f)
        .into_iter()
        .map(|x| (skew * x as f64).exp())
        .collect();
    match call.rows {
        Rows::Contiguous => {
            let total: f64 = weights.iter().sum();
            let mut offsets = vec![0u32];
            let mut acc = 0.0;
            for (i, w) in weights.iter().enumerate() {
                acc += w;
                let end = if i + 1 == g { call.m } else { (call.m as f64 * acc / total).round() as usize };
                offsets.push(end.min(call.m) as u32);
            }
            offsets
        }
        Rows::Masked { capacity } => {
            let most = weights.iter().cloned().fold(0.0, f64::max);
            weights.iter().map(|w| (capacity as f64 * w / most).round() as u32).collect()
        }
    }
}

/// Host inputs of a grouped call, drawn from a seed: A and B uniform in
/// `[-1, 1)` rounded to their type, the bias (if any) uniform in `[-1,
/// 1)`, D all NaN (rows in no group must stay so).
pub struct GroupedInputs<P: Precision, O: Element> {
    pub a: Vec<P::Input>,
    pub b: Vec<P::Input>,
    pub bias: Vec<f32>,
    pub d: Vec<O>,
}

impl<P: Precision, O: Element> GroupedInputs<P, O> {
    pub fn random(call: &Grouped, seed: u64) -> GroupedInputs<P, O> {
        use crate::measure::data::uniform_f32;
        let (na, nb, nd) = call.elements();
        let of = |n: usize, s: u64| uniform_f32(n, seed ^ s).into_iter().map(P::Input::round_f32).collect();
        let bias = uniform_f32(call.bias_values(), seed ^ 3);
        GroupedInputs { a: of(na, 1), b: of(nb, 2), bias, d: vec![O::of_f32(f32::NAN); nd] }
    }
}

/// Runs `call` once with `rows` on random inputs (`seed`) and checks D
/// (`sample` rows of each group, all if `None`; every row in no group);
/// `Err` for a launch error, `Ok(Err(why))` for a wrong result.
pub fn verify<P: GroupedPrecision, O: Element>(
    gpu: &Gpu,
    lib: &GroupedGemm,
    call: &Grouped,
    rows: &[u32],
    seed: u64,
    sample: Option<usize>,
) -> Result<Checked> {
    let x = GroupedInputs::<P, O>::random(call, seed);
    let (a, b, r) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?, gpu.upload(rows)?);
    let bias = if call.bias { Some(gpu.upload(&x.bias)?) } else { None };
    let mut d = gpu.upload(&x.d)?;
    lib.run::<P, O>(gpu, call, &a, &b, &r, &mut d, bias.as_ref())?;
    let got = gpu.download(&d)?;
    Ok(check::<P, O>(call, (&x.a, &x.b, &x.bias), rows, &x.d, &got, sample))
}
