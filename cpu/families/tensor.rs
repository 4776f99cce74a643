//! The tensor-core family on the host: bf16, f16 and tf32 GEMM with `f32`
//! accumulation, their references and error bounds, and cuBLAS's GEMMs in
//! the same precisions as the in-run peers. The kernels are in `gpu/src/tensor.rs`.

use gpu::dev::{In, Out};
use half::f16;
use gpu::launch::{Kernel, Typed};
use rayon::prelude::*;

use super::sgemm::{percent_of, rows_to_check};
use super::{About, Family, Run, Target, percent_target};
use crate::blas::cublas::Cublas;
use crate::measure::{Rate, Record, Shape, data, trial};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// What every tensor-core GEMM kernel takes: A, B (bf16 bits), C, m, n, k.
pub type Signature = (In<u16>, In<u16>, Out<f32>, u32, u32, u32);

/// The family: `C = A B`, bf16, f16 or tf32 inputs, `f32` accumulation
/// and output.
pub struct Tensor;

/// The input type a kernel multiplies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// bf16 bits (`u16`), row-major A (`m x k`) and B (`k x n`).
    Bf16,
    /// IEEE binary16, laid out as bf16.
    F16,
    /// `f32` read as tf32, row-major A (`m x k`) and B transposed (`bt`,
    /// `n x k`): `C = A btᵀ` (`wgmma` reads tf32 B only K-major).
    Tf32,
}

impl Precision {
    /// The records' element type.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
            Precision::Tf32 => "tf32",
        }
    }

    /// The in-run peer's name: cuBLAS in the same precision.
    pub fn peer(self) -> &'static str {
        match self {
            Precision::Bf16 => "cublas",
            Precision::F16 => "cublas_f16",
            Precision::Tf32 => "cublas_tf32",
        }
    }

    /// The bound's factor on `sum_p |a_ip b_pj|` for `k` terms: each of the
    /// `k` additions into the `f32` accumulator may err by one ulp of the
    /// running sum (the ISA does not fix the order or the rounding), `(k +
    /// 1) 2^-23`; bf16 and f16 inputs (rounded on the host) multiply
    /// exactly in `f32`; tf32 inputs are `f32`s the tensor core truncates to 10
    /// mantissa bits, each (normal) one off by less than `2^-10` relative, a product by
    /// less than `2^-9`.
    pub fn unit(self, k: usize) -> f64 {
        let sums = (k as f64 + 1.0) * f64::powi(2.0, -23);
        match self {
            Precision::Bf16 | Precision::F16 => sums,
            Precision::Tf32 => sums + f64::powi(2.0, -9),
        }
    }
}

/// `x` rounded to the nearest bf16 (ties to even), as its bits.
pub fn bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// The `f32` value of bf16 bits.
pub fn f32_of(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `(m, n, k)` of a size: `N` (a cube) or `MxNxK`.
pub fn dims(size: &Shape) -> Result<(usize, usize, usize)> {
    match size.dims()[..] {
        [n] => Ok((n, n, n)),
        [m, n, k] => Ok((m, n, k)),
        _ => Err(Error::InvalidInput(format!("tensor sizes are N or MxNxK, not {size}"))),
    }
}

/// Checks a problem the kernels can take (32-bit dimensions, 64-bit
/// element counts); returns the device bytes of the larger precision's
/// A, B and C (tf32: 4 bytes an element; the precisions run one after
/// the other).
pub fn check((m, n, k): (usize, usize, usize)) -> Result<usize> {
    if [m, n, k].iter().any(|&x| x > u32::MAX as usize / 2) {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: dimensions must fit in 31 bits")));
    }
    let bytes = |x: usize, y: usize| x.checked_mul(y).and_then(|e| e.checked_mul(4));
    match (bytes(m, k), bytes(k, n), bytes(m, n)) {
        (Some(a), Some(b), Some(c)) => {
            a.checked_add(b).and_then(|ab| ab.checked_add(c)).ok_or_else(|| overflows((m, n, k)))
        }
        _ => Err(overflows((m, n, k))),
    }
}

fn overflows((m, n, k): (usize, usize, usize)) -> Error {
    Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k} overflows"))
}

/// The f64 reference of rows `rows` of `A B` and, per element, the error
/// bound `unit sum_p |a_ip b_pj|` ([`Precision::unit`]): `a(i)` is
/// element `i` of the row-major A (`m x k`), `b` the row-major B (`k x n`).
pub fn reference(
    a: impl Fn(usize) -> f64 + Sync,
    b: &[f64],
    (_m, n, k): (usize, usize, usize),
    rows: &[usize],
    unit: f64,
) -> Vec<(Vec<f64>, Vec<f64>)> {
    rows.par_iter()
        .map(|&i| {
            let mut value = vec![0.0f64; n];
            let mut bound = vec![0.0f64; n];
            for p in 0..k {
                let x = a(i * k + p);
                let row = &b[p * n..(p + 1) * n];
                for j in 0..n {
                    value[j] += x * row[j];
                    bound[j] += (x * row[j]).abs();
                }
            }
            bound.iter_mut().for_each(|e| *e = *e * unit + f64::MIN_POSITIVE);
            (value, bound)
        })
        .collect()
}

/// B (`k x n`, row-major) as `f64`, from its transpose `bt` (`n x k`).
pub fn untranspose(bt: &[f32], (n, k): (usize, usize)) -> Vec<f64> {
    let mut b = vec![0.0f64; k * n];
    for (j, row) in bt.chunks(k.max(1)).take(n).enumerate() {
        for (p, &x) in row.iter().enumerate() {
            b[p * n + j] = x as f64;
        }
    }
    b
}

/// Compares rows `rows` of `c` with the reference: `Err` names the first
/// element out of its bound; `Ok` the worst error relative to its bound.
pub fn verify(
    name: &str,
    c: &[f32],
    n: usize,
    rows: &[usize],
    want: &[(Vec<f64>, Vec<f64>)],
) -> std::result::Result<f64, String> {
    let mut worst = 0.0f64;
    for (&i, (value, bound)) in rows.iter().zip(want) {
        for j in 0..n {
            let got = c[i * n + j] as f64;
            let err = (got - value[j]).abs();
            if !got.is_finite() || err > bound[j] {
                return Err(format!(
                    "{name}: C[{i}][{j}] = {got}, want {} within {:.3e}",
                    value[j], bound[j]
                ));
            }
            worst = worst.max(err / bound[j]);
        }
    }
    Ok(worst)
}

/// What the bf16 TMA kernels take (`gpu::tensor::hopper`): the tensor
/// maps of A and B (16 words each), A, B, C, m, n, k.
pub type TmaSignature = (In<u64>, In<u16>, In<u16>, Out<f32>, u32, u32, u32);

/// What the tf32 `mma.sync` kernels take: `f32` A, B transposed (`n x
/// k`), C, m, n, k.
pub type Tf32Signature = (In<f32>, In<f32>, Out<f32>, u32, u32, u32);

/// What the f16 `mma.sync` kernels take: as [`Signature`] in binary16.
pub type F16Signature = (In<f16>, In<f16>, Out<f32>, u32, u32, u32);

/// What the f16 TMA kernels take: as [`TmaSignature`] in binary16.
pub type TmaF16Signature = (In<u64>, In<f16>, In<f16>, Out<f32>, u32, u32, u32);

/// What the tf32 TMA kernels take: the maps, A, B transposed (`n x k`), C,
/// m, n, k.
pub type TmaTf32Signature = (In<u64>, In<f32>, In<f32>, Out<f32>, u32, u32, u32);

/// A tensor GEMM kernel, as whichever signature it declares.
#[derive(Clone, Copy)]
pub enum Launchable {
    Plain(Typed<Signature>),
    PlainF16(Typed<F16Signature>),
    PlainTf32(Typed<Tf32Signature>),
    Tma(Typed<TmaSignature>),
    TmaF16(Typed<TmaF16Signature>),
    TmaTf32(Typed<TmaTf32Signature>),
}

impl Launchable {
    /// The inputs it multiplies.
    pub fn precision(self) -> Precision {
        match self {
            Launchable::Plain(_) | Launchable::Tma(_) => Precision::Bf16,
            Launchable::PlainF16(_) | Launchable::TmaF16(_) => Precision::F16,
            Launchable::PlainTf32(_) | Launchable::TmaTf32(_) => Precision::Tf32,
        }
    }

    fn kernel(self) -> &'static Kernel {
        match self {
            Launchable::Plain(k) => k.kernel(),
            Launchable::PlainF16(k) => k.kernel(),
            Launchable::PlainTf32(k) => k.kernel(),
            Launchable::Tma(k) => k.kernel(),
            Launchable::TmaF16(k) => k.kernel(),
            Launchable::TmaTf32(k) => k.kernel(),
        }
    }
}

/// `kernel` as a tensor GEMM kernel: an error if it takes other parameters.
pub fn typed(kernel: &'static Kernel) -> Result<Launchable> {
    kernel
        .typed::<Signature>()
        .map(Launchable::Plain)
        .or_else(|_| kernel.typed::<F16Signature>().map(Launchable::PlainF16))
        .or_else(|_| kernel.typed::<Tf32Signature>().map(Launchable::PlainTf32))
        .or_else(|_| kernel.typed::<TmaSignature>().map(Launchable::Tma))
        .or_else(|_| kernel.typed::<TmaF16Signature>().map(Launchable::TmaF16))
        .or_else(|_| kernel.typed::<TmaTf32Signature>().map(Launchable::TmaTf32))
        .map_err(Error::InvalidInput)
}

/// A and B on the device, in a kernel's precision.
#[derive(Clone, Copy)]
pub enum Inputs<'a> {
    /// bf16 A (`m x k`) and B (`k x n`).
    Bf16(&'a DeviceBuffer<u16>, &'a DeviceBuffer<u16>),
    /// binary16 A (`m x k`) and B (`k x n`).
    F16(&'a DeviceBuffer<f16>, &'a DeviceBuffer<f16>),
    /// `f32` A (`m x k`) and B transposed (`n x k`).
    Tf32(&'a DeviceBuffer<f32>, &'a DeviceBuffer<f32>),
}

impl Inputs<'_> {
    fn precision(self) -> Precision {
        match self {
            Inputs::Bf16(..) => Precision::Bf16,
            Inputs::F16(..) => Precision::F16,
            Inputs::Tf32(..) => Precision::Tf32,
        }
    }

    /// Elements of the two buffers.
    fn lens(self) -> (usize, usize) {
        match self {
            Inputs::Bf16(a, b) => (a.len(), b.len()),
            Inputs::F16(a, b) => (a.len(), b.len()),
            Inputs::Tf32(a, b) => (a.len(), b.len()),
        }
    }
}

/// A and B uploaded in one precision (what [`Inputs`] borrows).
enum Uploaded {
    Bf16(DeviceBuffer<u16>, DeviceBuffer<u16>),
    F16(DeviceBuffer<f16>, DeviceBuffer<f16>),
    Tf32(DeviceBuffer<f32>, DeviceBuffer<f32>),
}

impl Uploaded {
    fn inputs(&self) -> Inputs<'_> {
        match self {
            Uploaded::Bf16(a, b) => Inputs::Bf16(a, b),
            Uploaded::F16(a, b) => Inputs::F16(a, b),
            Uploaded::Tf32(a, b) => Inputs::Tf32(a, b),
        }
    }
}

/// One problem's operands on the device: its dimensions, A, B and, for
/// the TMA kernels, their tensor maps (encoded once, outside any timing).
pub struct Operands<'a> {
    pub inputs: Inputs<'a>,
    /// `(m, n, k)`, the problem the buffers were checked for.
    dims: (usize, usize, usize),
    maps: Option<DeviceBuffer<u64>>,
}

impl<'a> Operands<'a> {
    /// Checks the problem and the buffers: A holds `m k`, B `k n`
    /// elements (bf16).
    pub fn new(
        dims: (usize, usize, usize),
        a: &'a DeviceBuffer<u16>,
        b: &'a DeviceBuffer<u16>,
    ) -> Result<Operands<'a>> {
        Operands::of(dims, Inputs::Bf16(a, b))
    }

    /// As [`Operands::new`] for f16 kernels.
    pub fn f16(dims: (usize, usize, usize), a: &'a DeviceBuffer<f16>, b: &'a DeviceBuffer<f16>) -> Result<Operands<'a>> {
        Operands::of(dims, Inputs::F16(a, b))
    }

    /// As [`Operands::new`] for tf32 kernels: `f32` A (`m x k`) and B
    /// transposed (`bt`, `n x k`).
    pub fn tf32(
        dims: (usize, usize, usize),
        a: &'a DeviceBuffer<f32>,
        bt: &'a DeviceBuffer<f32>,
    ) -> Result<Operands<'a>> {
        Operands::of(dims, Inputs::Tf32(a, bt))
    }

    /// Checks the problem and `inputs`' buffers (A `m k` elements, B `k n`).
    pub fn of((m, n, k): (usize, usize, usize), inputs: Inputs<'a>) -> Result<Operands<'a>> {
        check((m, n, k))?;
        let (a, b) = inputs.lens();
        if a < m * k || b < k * n {
            return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: buffers too small")));
        }
        Ok(Operands { inputs, dims: (m, n, k), maps: None })
    }

    /// Errors unless every row of A and B starts on 16 bytes, as TMA needs
    /// (and the 16-bit kernels' paired stores of C, whose rows are `n`
    /// long): even when a dimension is 0 and no copy is made.
    fn rows_on_16(&self) -> Result<()> {
        let (m, n, k) = self.dims;
        let (name, per_16, lengths) = match self.inputs {
            Inputs::Bf16(..) => ("bf16", 8, [k, n]),
            Inputs::F16(..) => ("f16", 8, [k, n]),
            Inputs::Tf32(..) => ("f32", 4, [k, k]),
        };
        match lengths.into_iter().find(|x| !x.is_multiple_of(per_16)) {
            Some(bad) => Err(Error::InvalidInput(format!(
                "tensor GEMM {m}x{n}x{k}, {name}: TMA needs every row to start on 16 bytes, so the row length must \
                 be a multiple of {per_16}, not {bad}"
            ))),
            None => Ok(()),
        }
    }

    /// The tensor maps the TMA kernels read, A's then B's: 128-row boxes
    /// of A, B in the boxes its element type takes, all rows of 128 bytes,
    /// 128-byte swizzled (`gpu::tensor::hopper`). Errors if a row does not
    /// start on 16 bytes (bf16: `k` or `n` not a multiple of 8; tf32: `k`
    /// not a multiple of 4).
    fn maps(&mut self, gpu: &Gpu) -> Result<&DeviceBuffer<u64>> {
        use gpu::tensor::hopper::{BM, Bf16, Element, F16, Tf32};
        let (m, n, k) = self.dims;
        self.rows_on_16()?;
        if self.maps.is_none() {
            let words = if m == 0 || n == 0 || k == 0 {
                // Nothing to copy: the kernel reads no map.
                vec![0u64; 32]
            } else {
                let of = |what: &str, r: Result<[u64; 16]>| {
                    r.map_err(|e| Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}, {what}: {e}")))
                };
                let (a, b) = match self.inputs {
                    Inputs::Bf16(a, b) => (
                        gpu.tensor_map_bf16(a, (m, k), (BM, Bf16::BK)),
                        gpu.tensor_map_bf16(b, (k, n), Bf16::B_BOX),
                    ),
                    Inputs::F16(a, b) => (
                        gpu.tensor_map_f16(a, (m, k), (BM, F16::BK)),
                        gpu.tensor_map_f16(b, (k, n), F16::B_BOX),
                    ),
                    Inputs::Tf32(a, bt) => (
                        gpu.tensor_map_f32(a, (m, k), (BM, Tf32::BK)),
                        gpu.tensor_map_f32(bt, (n, k), Tf32::B_BOX),
                    ),
                };
                [of("A", a)?, of("B", b)?].concat()
            };
            self.maps = Some(gpu.upload(&words)?);
        }
        Ok(self.maps.as_ref().expect("just set"))
    }

    /// Readies what `kernel` needs beyond A and B (the tensor maps);
    /// errors if it multiplies another precision.
    pub fn prepare(&mut self, gpu: &Gpu, kernel: Launchable) -> Result<()> {
        if kernel.precision() != self.inputs.precision() {
            return Err(Error::InvalidInput(format!(
                "{} multiplies {}, these operands are {}",
                kernel.kernel().name,
                kernel.precision().name(),
                self.inputs.precision().name()
            )));
        }
        if let Launchable::Tma(_) | Launchable::TmaF16(_) | Launchable::TmaTf32(_) = kernel {
            self.maps(gpu)?;
        }
        Ok(())
    }
}

/// Queues `C = A B` with `kernel` on the operands' problem after checking
/// C (A and B were checked by [`Operands::of`]; [`Operands::prepare`]
/// readied them for `kernel`).
pub fn launch(gpu: &Gpu, kernel: Launchable, ops: &Operands, c: &mut DeviceBuffer<f32>) -> Result<()> {
    let (m, n, k) = ops.dims;
    if c.len() < m * n {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: C too small")));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let dims = (m as u32, n as u32, k as u32);
    let name = kernel.kernel().name;
    let unprepared = || Error::InvalidInput(format!("{name}: its operands were not prepared for it"));
    let maps = || ops.maps.as_ref().ok_or_else(unprepared);
    let launch = kernel.kernel().launch;
    let plain = launch.grid(n as u32, m as u32);
    let on_sms = launch.persistent_grid(n as u32, m as u32, gpu.resident_blocks(kernel.kernel())?);
    // SAFETY: (each arm) the buffers hold A, B and C for this problem
    // (checked by `Operands::of` and above, in the kernel's precision); the grid covers C with the kernel's tile; the
    // maps describe A and B (prepared for this problem).
    unsafe {
        match (kernel, ops.inputs) {
            (Launchable::Plain(kt), Inputs::Bf16(a, b)) => kt.launch(gpu, plain, (a, b, c, dims.0, dims.1, dims.2)),
            (Launchable::PlainF16(kt), Inputs::F16(a, b)) => kt.launch(gpu, plain, (a, b, c, dims.0, dims.1, dims.2)),
            (Launchable::PlainTf32(kt), Inputs::Tf32(a, bt)) => kt.launch(gpu, plain, (a, bt, c, dims.0, dims.1, dims.2)),
            (Launchable::Tma(kt), Inputs::Bf16(a, b)) => kt.launch(gpu, on_sms, (maps()?, a, b, c, dims.0, dims.1, dims.2)),
            (Launchable::TmaF16(kt), Inputs::F16(a, b)) => kt.launch(gpu, on_sms, (maps()?, a, b, c, dims.0, dims.1, dims.2)),
            (Launchable::TmaTf32(kt), Inputs::Tf32(a, bt)) => kt.launch(gpu, on_sms, (maps()?, a, bt, c, dims.0, dims.1, dims.2)),
            _ => Err(unprepared()),
        }
    }
}

/// Runs `kernel` once on `ops` into `c` (for tests): prepares, launches.
pub fn run_once(gpu: &Gpu, kernel: &'static Kernel, ops: &mut Operands, c: &mut DeviceBuffer<f32>) -> Result<()> {
    let kt = typed(kernel)?;
    ops.prepare(gpu, kt)?;
    launch(gpu, kt, ops, c)
}

impl Family for Tensor {
    fn about(&self) -> &'static About {
        &About {
            name: "tensor",
            size_meaning: "N: an N x N x N GEMM, or MxNxK; bf16 or f16 A and B (tf32: f32 A and B transposed), \
                           f32 accumulation and C",
            default_sizes: &[1024, 2048, 4096, 6144, 8192],
            emulator_size: 72,
            method: "C against an f64 reference on up to 512 rows, each element within (k + 1) 2^-23 sum |a b| \
                     (bf16 and f16 products are exact in f32; one f32 ulp per addition), plus 2^-9 sum |a b| for \
                     tf32 (each f32 input truncated to 10 mantissa bits); the peers are cuBLAS's bf16, f16 and TF32 \
                     GEMMs (cublasGemmEx, f32 and fast-TF32 compute, B transposed for TF32 as ours) on the same \
                     buffers",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        check(dims(size)?)
    }

    /// Multiply-adds, at most sgemm's limit.
    fn emulator_work(&self, size: &Shape) -> usize {
        dims(size).map_or(usize::MAX, |(m, n, k)| m.saturating_mul(n).saturating_mul(k))
    }

    fn emulator_limit(&self) -> usize {
        super::sgemm::shapes::EMULATED_WORK
    }

    /// The emulator size, and a shape with edges in every direction (not
    /// multiples of the 128 x 128 x 32 tile, nor of 8: the unaligned path).
    fn emulator_sizes(&self, _sizes: &[Shape]) -> Vec<Shape> {
        vec![self.emulator_size(), "70x45x37".parse().expect("a valid shape")]
    }

    /// The kernels of `gpu::tensor` and its `hopper` module.
    fn kernels(&self) -> Vec<&'static Kernel> {
        gpu::launch::registry::tree("gpu::tensor")
    }

    /// Each precision its kernels were chosen in, one after the other:
    /// its inputs, its reference, its cuBLAS peer, its kernels.
    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let (m, n, k) = dims(run.size)?;
        check((m, n, k))?;
        let mut chosen: Vec<(&'static Kernel, Launchable)> = Vec::new();
        for &kernel in run.kernels {
            chosen.push((kernel, typed(kernel)?));
        }
        let mut records = Vec::new();
        for precision in [Precision::Bf16, Precision::F16, Precision::Tf32] {
            let these: Vec<_> = chosen.iter().copied().filter(|(_, kt)| kt.precision() == precision).collect();
            if !these.is_empty() {
                records.extend(run_precision(run, (m, n, k), precision, &these)?);
            }
        }
        Ok(records)
    }

    fn notes(&self) -> &'static str {
        "The ladder: (1) `mma.sync` with shared-memory tiles fed through registers (loaded two k-steps ahead, \
         stored one ahead; block tiles inside C without bounds checks), every fragment one 16-byte shared load (k and the rows of each m16 in an order of our choosing, B turned n-major on its \
         way in), 64 x 64 warp tiles, 128 x 128 blocks, two per SM; (2) `ldmatrix` from a swizzled layout \
         (128 x 256 blocks, as step 3); (3) a 3-stage `cp.async` pipeline; (4) \
         Hopper's `wgmma` reading swizzled tiles that TMA writes, a 4-stage mbarrier ring; (5) warp \
         specialization: one producer warpgroup, two consumers, `setmaxnreg`; (6) persistent blocks over a \
         grouped tile order; (7) clusters of two blocks one above the other, each loading half of their shared B \
         and multicasting it into both (TMA multicast; stages released in both blocks by remote mbarrier \
         arrivals); steps 3 and 6 in f16 (`tc_mma_f16_async`, `tc_wgmma_persistent_f16`, the bf16 kernel's layouts with \
         `wgmma`'s f16 form, against cuBLAS f16) and steps 1 and 6 in tf32 (`tc_mma_tf32`, `tc_wgmma_persistent_tf32`: `f32` A and B \
         transposed, since `wgmma` reads tf32 B only K-major; its peer is cuBLAS TF32 on the same transposed B). Steps 4-7 are in \
         the sm_90a PTX only and need rows on 16 bytes (bf16 and f16: `k` and `n` multiples of 8; tf32: `k` a \
         multiple of 4); elsewhere they are left out of the table. The ncu section of the device checks profiles every step \
         and cuBLAS's own kernels. What limits each: steps 1-3 draw their tiles from L2 at about \
         half the bytes per second of the TMA-fed steps 5-7 (lts bytes over time in the ncu rows), and their \
         rates follow their tiles' FLOPs per byte: 64 for step 1's 128 x 128 blocks, 85 for the 128 x 256 of \
         steps 2 and 3; at 64 FLOP per byte, step 1's 50% of cuBLAS would need L2 to deliver about what step 5 \
         draws. Its warps wait at the top of each k-step for the loads issued a k-step before (long scoreboard \
         in its ncu rows), and at the barrier for the warps that do; cutting its integer work by more than half, \
         L2 prefetches a few k-steps ahead, loads three k-steps ahead (twice the bytes in flight) and 128 x 256 \
         blocks each measured the same or slower (docs/notes.md): the plateau is in the path of per-thread \
         loads and `cp.async` copies (step 3's deeper ring did not lift it either), which TMA does not take. \
         Step 4 stops the tensor cores once per stage (`wait_group 0` and \
         a block barrier before each refill); step 5 streams all of B from DRAM on every wave of 132 row-ordered \
         tiles (L2 hit rate and DRAM throughput in the ncu rows); step 6 fixes the order, and computes each \
         tile's TMA origins once per tile rather than per stage (the producer is one thread: its arithmetic is \
         on every stage's critical path). Step 7's blocks ask L2 for a third fewer bytes per stage (a pair reads 64 KB, not \
         96), though ncu's count of L2 bytes (lts bytes in the ncu rows) falls by much less than that; it pays \
         where memory is the limit (the largest sizes); the cluster launch itself costs a little \
         (pairs of blocks start together), and a cluster-scope release on each remote arrival costs a fence \
         per stage (docs/notes.md). What remains against cuBLAS, in the ncu rows for steps 6 and 7 and \
         cuBLAS's kernels: the consumers store each tile's 128 KB of `f32` sums while the tensor cores wait, \
         where cuBLAS overlaps its epilogue; and a 4096^3 problem is 3.9 waves of 128 x 256 tiles on 132 SMs. \
         Next: the epilogue through shared memory and TMA stores. \
         TF32 at 8192^3 runs milliseconds a launch and the clocks fall over a run: cuBLAS's own time there moves \
         between runs, and the ratio with it (docs/notes.md, which also lists the variants measured)."
    }

    fn targets(&self, records: &[&Record]) -> Vec<Target> {
        let first = |size| {
            let chosen: Vec<&Record> =
                records.iter().copied().filter(|r| r.kernel == "tc_mma_bf16" || r.kernel == "cublas").collect();
            percent_target(&chosen, "bf16", size, &format!("tensor {size}^3: the first mma.sync step"), 50.0)
        };
        let best = |element, size| {
            percent_target(records, element, size, &format!("tensor {element} {size}^3, best kernel"), 90.0)
        };
        [first(4096), first(8192), best("bf16", 4096), best("bf16", 8192), best("tf32", 4096), best("tf32", 8192)]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// One precision's part of [`Tensor`]'s run: random inputs (bf16 rounded
/// on the host; tf32 as `f32`, B transposed), the reference of up to 512
/// rows, the peer (on a GPU, when timing), then each kernel, verified.
fn run_precision(
    run: &Run,
    (m, n, k): (usize, usize, usize),
    precision: Precision,
    kernels: &[(&'static Kernel, Launchable)],
) -> Result<Vec<Record>> {
    let Run { gpu, size, runs, progress, .. } = *run;
    let a32 = data::uniform_f32(m * k, 0x7e45);
    // B: `k x n` for bf16, its transpose `n x k` for tf32.
    let b32 = data::uniform_f32(k * n, 0x7e46);
    let rows = rows_to_check(m, 512, 0x7e47);
    let unit = precision.unit(k);
    // The inputs in this precision, on the device, and the reference.
    let (uploaded, want) = match precision {
        Precision::Bf16 => {
            let (a, b): (Vec<u16>, Vec<u16>) = (a32.iter().map(|&x| bf16(x)).collect(), b32.iter().map(|&x| bf16(x)).collect());
            let b64: Vec<f64> = b.iter().map(|&x| f32_of(x) as f64).collect();
            let want = reference(|i| f32_of(a[i]) as f64, &b64, (m, n, k), &rows, unit);
            (Uploaded::Bf16(gpu.upload(&a)?, gpu.upload(&b)?), want)
        }
        Precision::F16 => {
            let (a, b): (Vec<f16>, Vec<f16>) =
                (a32.iter().map(|&x| f16::from_f32(x)).collect(), b32.iter().map(|&x| f16::from_f32(x)).collect());
            let b64: Vec<f64> = b.iter().map(|&x| x.to_f64()).collect();
            let want = reference(|i| a[i].to_f64(), &b64, (m, n, k), &rows, unit);
            (Uploaded::F16(gpu.upload(&a)?, gpu.upload(&b)?), want)
        }
        Precision::Tf32 => {
            let want = reference(|i| a32[i] as f64, &untranspose(&b32, (n, k)), (m, n, k), &rows, unit);
            (Uploaded::Tf32(gpu.upload(&a32)?, gpu.upload(&b32)?), want)
        }
    };
    let mut ops = Operands::of((m, n, k), uploaded.inputs())?;
    let mut c = gpu.alloc::<f32>(m * n)?;
    let flops = 2.0 * (m * n) as f64 * k as f64;
    let (element, peer) = (precision.name(), precision.peer());
    let mut records = Vec::new();
    let mut measure = |name: &str, run: &dyn Fn(&mut DeviceBuffer<f32>) -> Result<()>| -> Result<Record> {
        progress(&format!("tensor {size} {element}: {name}"));
        let mut worst = 0.0;
        let measured = trial::of_output(gpu, runs, &mut c, run, |got| {
            verify(name, got, n, &rows, &want).map(|w| worst = w)
        })?;
        let rate = Rate::Flops { flops, peer, peer_tflops: None };
        let mut record = Record::of_trial("tensor", name, element, size, &measured, rate);
        record.relative_error = Some(worst);
        Ok(record)
    };
    if runs.is_some() && !gpu.is_emulator() {
        let cublas = Cublas::new(gpu)?;
        let record = match ops.inputs {
            Inputs::Bf16(a, b) => measure(peer, &|c| cublas.gemm_bf16_rows((m, n, k), a, b, c))?,
            Inputs::F16(a, b) => measure(peer, &|c| cublas.gemm_f16_rows((m, n, k), a, b, c))?,
            Inputs::Tf32(a, bt) => measure(peer, &|c| cublas.gemm_tf32_rows_nt((m, n, k), a, bt, c))?,
        };
        records.push(record);
    }
    for &(kernel, kt) in kernels {
        // A kernel this device's PTX lacks (sm_90a kernels elsewhere), or a
        // shape its TMA cannot take, is left out of the table.
        if let Err(e) = ops.prepare(gpu, kt).and_then(|()| gpu.has_kernel(kernel)) {
            progress(&format!("tensor {size} {element}: {} left out: {e}", kernel.name));
            continue;
        }
        records.push(measure(kernel.name, &|c| launch(gpu, kt, &ops, c))?);
    }
    percent_of(&mut records, peer);
    Ok(records)
}
