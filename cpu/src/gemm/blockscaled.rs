//! Block-scaled FP8 GEMM as one library call (`gpu::gemm::blockscaled`):
//! E4M3 A (`m x k`) and B (`n x k`, K-major, a `torch.nn.Linear` weight),
//! each with `f32` scales, one per 1 x 128 of A (`m x ceil(k / 128)`,
//! row-major) and one per 128 x 128 of B (`ceil(n / 128) x ceil(k /
//! 128)`), as DeepSeek-V3 quantizes activations and weights: `D =
//! act(alpha sum_p A_ip sa_i,p/128 B_jp sb_j/128,p/128)`, D `m x n`
//! row-major.
//!
//! **Its error.** Each block of 128 products is summed by the tensor cores
//! (about `2^-13` of the block's magnitude per `k32` instruction, four of
//! them: [`super::precision::Precision::sum_error`]'s model of FP8) and
//! promoted to `f32` sums: `4 2^-13 + (blocks + 2) 2^-23` of `T = sum_p
//! |A_ip sa B_jp sb|`, whatever k is. The per-tensor kernel's grows with k
//! (`k / 32` instructions' worth).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use gpu::gemm::blockscaled::{BLOCK, gemm_blockscaled_e4m3, gemm_grouped_blockscaled_e4m3};
use gpu::launch::Dim3;
use gpu_isa::fp8::E4m3;

use super::call::{Act, MAX_DIM};
use super::grouped::{Grouped, Rows};
use super::precision::{Element, Input};
use super::reference::Checked;
use crate::runtime::{DeviceBuffer, Error, Gpu, Result, Unread};

/// A block-scaled call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockScaled {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub act: Act,
}

impl BlockScaled {
    pub fn new(m: usize, n: usize, k: usize) -> BlockScaled {
        BlockScaled { m, n, k, alpha: 1.0, act: Act::None }
    }

    pub fn with_alpha(self, alpha: f32) -> BlockScaled {
        BlockScaled { alpha, ..self }
    }

    pub fn with_act(self, act: Act) -> BlockScaled {
        BlockScaled { act, ..self }
    }

    /// Blocks of k: `ceil(k / 128)`.
    pub fn blocks(&self) -> usize {
        self.k.div_ceil(BLOCK)
    }

    /// Elements of A, B, A's scales, B's scales and D (saturating).
    pub fn elements(&self) -> [usize; 5] {
        let mul = |x: usize, y: usize| x.saturating_mul(y);
        let blocks = self.blocks();
        [
            mul(self.m, self.k),
            mul(self.n, self.k),
            mul(self.m, blocks),
            mul(self.n.div_ceil(BLOCK), blocks),
            mul(self.m, self.n),
        ]
    }

    /// `2 m n k`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The kernels' limits and the copy engine's alignment, then that the
    /// buffers (`lens`, as [`BlockScaled::elements`] orders them) hold the
    /// call: one line naming the first problem, before anything runs.
    pub fn check(&self, lens: [usize; 5]) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidInput(format!("block-scaled gemm {self}: {why}")));
        if [self.m, self.n, self.k].iter().any(|&x| x == 0 || x > MAX_DIM) {
            return bad(format!("m, n and k must be 1..={MAX_DIM}"));
        }
        if !self.k.is_multiple_of(16) {
            return bad(format!(
                "k = {} is not a multiple of 16: the copy engine reads A's and B's rows from 16-byte boundaries",
                self.k
            ));
        }
        if !self.alpha.is_finite() {
            return bad("alpha must be finite".into());
        }
        let names = ["A", "B", "A's scales", "B's scales", "D"];
        for ((name, need), len) in names.iter().zip(self.elements()).zip(lens) {
            if need.checked_mul(4).is_none() {
                return bad(format!("{name} overflows the address space"));
            }
            if len < need {
                return bad(format!("{name} needs {need} elements, the buffer has {len}"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for BlockScaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{} e4m3, scales per 1x128 and 128x128", self.m, self.n, self.k)?;
        if self.alpha != 1.0 {
            write!(f, " alpha {}", self.alpha)?;
        }
        if self.act != Act::None {
            write!(f, " {:?}", self.act)?;
        }
        Ok(())
    }
}

/// The block-scaled GEMM: keeps its tensor maps between calls.
#[derive(Default)]
pub struct BlockScaledGemm {
    maps: RefCell<HashMap<String, DeviceBuffer<u64>>>,
    /// Passed for the bias of a grouped call without one.
    no_bias: Unread,
    /// The persistent grid's size instead of as many blocks as the device
    /// holds at once (tests on the emulator's one SM).
    pub blocks: Option<usize>,
}

/// A call's buffers: A, B, A's scales, B's scales.
pub struct Operands<'a> {
    pub a: &'a DeviceBuffer<E4m3>,
    pub b: &'a DeviceBuffer<E4m3>,
    pub scale_a: &'a DeviceBuffer<f32>,
    pub scale_b: &'a DeviceBuffer<f32>,
}

impl BlockScaledGemm {
    pub fn new() -> BlockScaledGemm {
        BlockScaledGemm::default()
    }

    /// `call` on `x` into D.
    pub fn run<O: Element>(
        &self,
        gpu: &Gpu,
        call: &BlockScaled,
        x: &Operands<'_>,
        d: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        call.check([x.a.len(), x.b.len(), x.scale_a.len(), x.scale_b.len(), d.len()])?;
        let kernel = &gemm_blockscaled_e4m3::KERNELS[<O as gemm_blockscaled_e4m3::Instance>::INDEX];
        let key = format!("{:x} {:x} {}x{}x{}", x.a.address(), x.b.address(), call.m, call.n, call.k);
        if !self.maps.borrow().contains_key(&key) {
            let mut words = Vec::with_capacity(32);
            words.extend(gpu.tensor_map(x.a, (call.m, call.k), (BLOCK, BLOCK))?);
            words.extend(gpu.tensor_map(x.b, (call.n, call.k), (BLOCK, BLOCK))?);
            let uploaded = gpu.upload(&words)?;
            self.maps.borrow_mut().insert(key.clone(), uploaded);
        }
        let maps = self.maps.borrow();
        let tiles = call.m.div_ceil(BLOCK) * call.n.div_ceil(BLOCK);
        let resident = match self.blocks {
            Some(blocks) => blocks.max(1),
            None => gpu.resident_blocks(kernel)? as usize,
        };
        let grid = Dim3::xy(tiles.min(resident) as u32, 1);
        let u = |x: usize| x as u32;
        // SAFETY: the maps describe A and B inside their buffers, which
        // hold them, as the scales' and D's buffers hold theirs (checked
        // above).
        unsafe {
            gemm_blockscaled_e4m3::launch::<O, _>(
                gpu,
                grid,
                &maps[&key],
                d,
                x.scale_a,
                x.scale_b,
                u(call.m),
                u(call.n),
                u(call.blocks()),
                u(call.n),
                call.alpha,
                call.act.code(),
            )
        }
    }
}

impl BlockScaledGemm {
    /// The grouped form: `call` ([`Grouped`]: A `m x k`, B `groups`
    /// matrices `n x k`, E4M3) with A's scales (`m x ceil(k / 128)`) and
    /// B's (`groups x ceil(n / 128) x ceil(k / 128)`) in `x`, the device's
    /// `rows`, into D (`m x n`), adding `bias` (`groups x n`, exactly when
    /// the call has one). `call`'s alpha and per-tensor scales multiply
    /// the product too.
    pub fn run_grouped<O: Element>(
        &self,
        gpu: &Gpu,
        call: &Grouped,
        x: &Operands<'_>,
        (rows, bias): (&DeviceBuffer<u32>, Option<&DeviceBuffer<f32>>),
        d: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        let bias_len = super::grouped::bias_len(call, bias)?;
        call.check::<super::E4m3>((x.a.len(), x.b.len(), rows.len(), d.len(), bias_len))?;
        let (na, nb) = grouped_scales(call);
        if x.scale_a.len() < na || x.scale_b.len() < nb {
            return Err(Error::InvalidInput(format!(
                "grouped block-scaled gemm {call}: the scales need {na} (A) and {nb} (B) values, the buffers hold {} and {}",
                x.scale_a.len(),
                x.scale_b.len()
            )));
        }
        let kernel =
            &gemm_grouped_blockscaled_e4m3::KERNELS[<O as gemm_grouped_blockscaled_e4m3::Instance>::INDEX];
        let key = format!(
            "{:x} {:x} {} {}x{}x{}",
            x.a.address(),
            x.b.address(),
            call.groups,
            call.m,
            call.n,
            call.k
        );
        if !self.maps.borrow().contains_key(&key) {
            let mut words = Vec::with_capacity(32);
            words.extend(gpu.tensor_map(x.a, (call.m, call.k), (BLOCK, BLOCK))?);
            words.extend(gpu.tensor_map_stack(x.b, (call.groups, call.n, call.k), (BLOCK, BLOCK))?);
            let uploaded = gpu.upload(&words)?;
            self.maps.borrow_mut().insert(key.clone(), uploaded);
        }
        let maps = self.maps.borrow();
        let blocks = match self.blocks {
            Some(blocks) => blocks.max(1),
            None => gpu.resident_blocks(kernel)? as usize,
        };
        let capacity = match call.rows {
            Rows::Contiguous => 0,
            Rows::Masked { capacity } => capacity as u32,
        };
        let u = |x: usize| x as u32;
        let none = self.no_bias.get(gpu)?;
        let bias = bias.unwrap_or(none);
        // SAFETY: the maps describe A and B's stack inside their buffers;
        // the scales', the rows', the bias's and D's buffers hold theirs
        // (checked above).
        unsafe {
            gemm_grouped_blockscaled_e4m3::launch::<O, _>(
                gpu,
                Dim3::xy(u(blocks), 1),
                &maps[&key],
                d,
                x.scale_a,
                x.scale_b,
                rows,
                u(call.groups),
                capacity,
                u(call.m),
                u(call.n),
                u(call.k.div_ceil(BLOCK)),
                call.product_scale(),
                call.act.code(),
                bias,
                call.bias as u32,
            )
        }
    }
}

/// Values of A's and B's scales of a grouped call: `m x ceil(k / 128)` and
/// `groups x ceil(n / 128) x ceil(k / 128)` (saturating).
pub fn grouped_scales(call: &Grouped) -> (usize, usize) {
    let blocks = call.k.div_ceil(BLOCK);
    let b = [call.groups, call.n.div_ceil(BLOCK), blocks].iter().fold(1usize, |x, &y| x.saturating_mul(y));
    (call.m.saturating_mul(blocks), b)
}

/// Host inputs of a call drawn from a seed: A and B uniform in `[-1, 1)`
/// rounded to E4M3 (the quantized values), and scales `2^e`, `e` uniform
/// in `[-4, 4)` (blocks whose ranges differ 256-fold).
pub struct Inputs {
    pub a: Vec<E4m3>,
    pub b: Vec<E4m3>,
    pub scale_a: Vec<f32>,
    pub scale_b: Vec<f32>,
}

impl Inputs {
    pub fn random(call: &BlockScaled, seed: u64) -> Inputs {
        let [na, nb, nsa, nsb, _] = call.elements();
        Inputs::of_sizes([na, nb, nsa, nsb], seed)
    }

    /// Inputs of a grouped call ([`BlockScaledGemm::run_grouped`]).
    pub fn grouped(call: &Grouped, seed: u64) -> Inputs {
        let ((na, nb, _), (nsa, nsb)) = (call.elements(), grouped_scales(call));
        Inputs::of_sizes([na, nb, nsa, nsb], seed)
    }

    fn of_sizes([na, nb, nsa, nsb]: [usize; 4], seed: u64) -> Inputs {
        use crate::measure::data::uniform_f32;
        let values = |n: usize, s: u64| uniform_f32(n, seed ^ s).into_iter().map(E4m3::from_f32).collect();
        let scales =
            |n: usize, s: u64| uniform_f32(n, seed ^ s).into_iter().map(|x| (4.0 * x).exp2()).collect();
        Inputs { a: values(na, 1), b: values(nb, 2), scale_a: scales(nsa, 3), scale_b: scales(nsb, 4) }
    }
}

/// Checks `got` (D after the call) against the `f64` reference: `sample`
/// rows spread over D (all of them if `None`), every element within its
/// bound. A dense call is the grouped check's one group of every row.
pub fn check<O: Element>(call: &BlockScaled, x: &Inputs, got: &[O], sample: Option<usize>) -> Checked {
    let one = Grouped::contiguous(1, call.m, call.n, call.k).with_alpha(call.alpha).with_act(call.act);
    let rows = [0, call.m as u32];
    // No row lies outside the one group: D before the call is not read.
    super::grouped::check_with(
        &one,
        (&rows, &[]),
        (got, got),
        sample,
        unit(call.blocks()),
        product(x, (call.n, call.k)),
    )
}

/// The exact product of element `p` of row `r` of A and of column `j` of
/// matrix `g` of B (`n x k` each), each scaled by its block's scale.
fn product(x: &Inputs, (n, k): (usize, usize)) -> impl Fn(usize, usize, usize, usize) -> f64 + Sync + '_ {
    let (blocks, columns) = (k.div_ceil(BLOCK), n.div_ceil(BLOCK));
    move |g, r, p, j| {
        let sa = x.scale_a[r * blocks + p / BLOCK] as f64;
        let sb = x.scale_b[(g * columns + j / BLOCK) * blocks + p / BLOCK] as f64;
        x.a[r * k + p].to_f64() * sa * x.b[(g * n + j) * k + p].to_f64() * sb
    }
}

/// Runs `call` once on random inputs (`seed`) into a D of NaN and checks
/// `sample` rows of it (all if `None`); `Err` for a launch error,
/// `Ok(Err(why))` for a wrong result.
pub fn verify<O: Element>(
    gpu: &Gpu,
    lib: &BlockScaledGemm,
    call: &BlockScaled,
    seed: u64,
    sample: Option<usize>,
) -> Result<Checked> {
    let x = Inputs::random(call, seed);
    let (a, b) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?);
    let (scale_a, scale_b) = (gpu.upload(&x.scale_a)?, gpu.upload(&x.scale_b)?);
    let mut d = gpu.upload(&vec![O::round_f32(f32::NAN); call.elements()[4]])?;
    lib.run::<O>(gpu, call, &Operands { a: &a, b: &b, scale_a: &scale_a, scale_b: &scale_b }, &mut d)?;
    let got = gpu.download(&d)?;
    Ok(check::<O>(call, &x, &got, sample))
}

/// Runs the grouped `call` once with `rows` on random inputs (`seed`) into
/// a D of NaN and checks it ([`super::grouped::check_with`]: `sample` rows
/// of each group, all if `None`, and every row in no group unchanged).
pub fn verify_grouped<O: Element>(
    gpu: &Gpu,
    lib: &BlockScaledGemm,
    call: &Grouped,
    rows: &[u32],
    seed: u64,
    sample: Option<usize>,
) -> Result<Checked> {
    let x = Inputs::grouped(call, seed);
    let (a, b, r) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?, gpu.upload(rows)?);
    let (scale_a, scale_b) = (gpu.upload(&x.scale_a)?, gpu.upload(&x.scale_b)?);
    let bias_values = crate::measure::data::uniform_f32(call.bias_values(), seed ^ 5);
    let bias = if call.bias { Some(gpu.upload(&bias_values)?) } else { None };
    let d0 = vec![O::round_f32(f32::NAN); call.elements().2];
    let mut d = gpu.upload(&d0)?;
    let operands = Operands { a: &a, b: &b, scale_a: &scale_a, scale_b: &scale_b };
    lib.run_grouped::<O>(gpu, call, &operands, (&r, bias.as_ref()), &mut d)?;
    let got = gpu.download(&d)?;
    let product = product(&x, (call.n, call.k));
    let unit = unit(call.k.div_ceil(BLOCK));
    Ok(super::grouped::check_with(call, (rows, &bias_values), (&d0, &got), sample, unit, product))
}

/// The relative error of a block-scaled sum over `blocks` blocks of k, of
/// the sum of its products' magnitudes (the module's derivation).
fn unit(blocks: usize) -> f64 {
    4.0 * f64::powi(2.0, -13) + (blocks + 2) as f64 * f64::powi(2.0, -23)
}
