//! The tensor-core family on the host: bf16, f16 and tf32 GEMM with `f32`
//! accumulation, their references and error bounds, and cuBLAS's GEMMs in
//! the same precisions as the in-run peers. The kernels are in `gpu/src/tensor.rs`.

use std::marker::PhantomData;

use gpu::dev::{In, Out};
use gpu::launch::{Kernel, Typed};
use gpu::tensor::hopper::RingElement;

use rayon::prelude::*;

use super::sgemm::{percent_of, rows_to_check};
use super::{About, Family, Run, Target, percent_target};
use crate::peers::Cublas;
use crate::gemm::{self, Bf16, F16, Tf32};
use crate::measure::{Rate, Record, Shape, data, trial};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// The family: `C = A B`, bf16, f16 or tf32 inputs, `f32` accumulation
/// and output.
pub struct Tensor;

/// What the ladder needs of a precision beyond the library's axis
/// ([`gemm::Precision`]: the input type and its rounding, the products'
/// error, B's layout, cuBLAS's compute type): the device element its
/// `wgmma` steps stage, its peer's name. A precision of the ladder is one
/// impl of this and one entry in [`PRECISIONS`].
pub trait Ladder: gemm::Precision {
    /// The element as the `wgmma` steps stage it (its k per stage, B's
    /// TMA box).
    type Stage: RingElement;
    /// The in-run peer's name: cuBLAS in the same precision.
    const PEER: &'static str;

    /// The bound's factor on `sum_p |a_ip b_pj|` for `k` terms: each of the
    /// `k` additions into the `f32` accumulator may err by one ulp of the
    /// running sum (the ISA does not fix the order or the rounding), `(k +
    /// 1) 2^-23`, plus the error of one product
    /// ([`gemm::Precision::PRODUCT_ERROR`]: 0 for bf16 and f16, exact in
    /// `f32`; `2^-9` for tf32, each input truncated to 10 mantissa bits).
    fn unit(k: usize) -> f64 {
        (k as f64 + 1.0) * f64::powi(2.0, -23) + Self::PRODUCT_ERROR
    }
}

/// bf16, row-major A (`m x k`) and B (`k x n`).
impl Ladder for Bf16 {
    type Stage = half::bf16;
    const PEER: &'static str = "cublas";
}

/// IEEE binary16, laid out as bf16.
impl Ladder for F16 {
    type Stage = half::f16;
    const PEER: &'static str = "cublas_f16";
}

/// `f32` read as tf32, row-major A (`m x k`) and B transposed (`bt`,
/// `n x k`): `C = A btᵀ` (`wgmma` reads tf32 B only K-major:
/// [`gemm::Precision::B_K_MAJOR`]).
impl Ladder for Tf32 {
    type Stage = gpu::dev::Tf32;
    const PEER: &'static str = "cublas_tf32";
}

/// The ladder's precisions, in the order a run takes them.
pub const PRECISIONS: [&dyn Rung; 3] = [&On::<Bf16>(PhantomData), &On::<F16>(PhantomData), &On::<Tf32>(PhantomData)];

/// One precision of the ladder behind a `dyn` (for [`PRECISIONS`]).
pub trait Rung {
    /// The records' element type ([`gemm::Precision::NAME`]).
    fn name(&self) -> &'static str;
    /// Whether `kernel` multiplies in this precision.
    fn takes(&self, kernel: &'static Kernel) -> bool;
    /// This precision's part of a run: `kernels` are all its own.
    fn run(&self, run: &Run, dims: (usize, usize, usize), kernels: &[&'static Kernel]) -> Result<Vec<Record>>;
}

/// Precision `P` as a [`Rung`].
pub struct On<P>(PhantomData<P>);

impl<P: Ladder> Rung for On<P> {
    fn name(&self) -> &'static str {
        P::NAME
    }
    fn takes(&self, kernel: &'static Kernel) -> bool {
        Step::<P>::of(kernel).is_ok()
    }
    fn run(&self, run: &Run, dims: (usize, usize, usize), kernels: &[&'static Kernel]) -> Result<Vec<Record>> {
        let steps = kernels.iter().map(|&k| Ok((k, Step::<P>::of(k)?))).collect::<Result<Vec<_>>>()?;
        run_precision::<P>(run, dims, &steps)
    }
}

/// The precision `kernel` multiplies in: an error if it is no kernel of
/// the ladder.
pub fn precision(kernel: &'static Kernel) -> Result<&'static dyn Rung> {
    PRECISIONS.into_iter().find(|p| p.takes(kernel)).ok_or_else(|| {
        Error::InvalidInput(format!(
            "kernel {} is no tensor GEMM kernel: it takes none of the ladder's signatures ({})",
            kernel.name,
            PRECISIONS.map(|p| p.name()).join(", ")
        ))
    })
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
/// bound `unit sum_p |a_ip b_pj|` ([`Ladder::unit`]): `a(i)` is
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

/// B (`k x n`, row-major) from its transpose `bt` (`n x k`).
pub fn untranspose(bt: &[f64], (n, k): (usize, usize)) -> Vec<f64> {
    let mut b = vec![0.0f64; k * n];
    for (j, row) in bt.chunks(k.max(1)).take(n).enumerate() {
        for (p, &x) in row.iter().enumerate() {
            b[p * n + j] = x;
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

/// What the `mma.sync` steps take: A, B (bf16: as bits; tf32: B
/// transposed, `n x k`), C, m, n, k.
pub type PlainSignature<E> = (In<E>, In<E>, Out<f32>, u32, u32, u32);

/// What the TMA steps take (`gpu::tensor::hopper`): the tensor maps of A
/// and B (16 words each; the kernels read A and B through them alone),
/// then C, m, n, k.
pub type TmaSignature = (In<u64>, Out<f32>, u32, u32, u32);

/// A tensor GEMM kernel in precision `P`, as whichever signature it
/// declares.
pub enum Step<P: Ladder> {
    Plain(Typed<PlainSignature<P::Input>>),
    Tma(Typed<TmaSignature>),
}

impl<P: Ladder> Clone for Step<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: Ladder> Copy for Step<P> {}

impl<P: Ladder> Step<P> {
    /// `kernel` as a step in `P`: an error if it takes other parameters.
    /// A `mma.sync` step's element parameters name its precision; a TMA
    /// step takes only maps, and its name ends with its precision
    /// (`tc_wgmma_persistent_tf32`; a test holds every TMA kernel to it).
    pub fn of(kernel: &'static Kernel) -> Result<Step<P>> {
        kernel
            .typed()
            .map(Step::Plain)
            .or_else(|e| match kernel.typed() {
                Ok(typed) if kernel.name.ends_with(&format!("_{}", P::NAME)) => Ok(Step::Tma(typed)),
                Ok(_) => Err(format!("{}: a TMA step in another precision", kernel.name)),
                Err(_) => Err(e),
            })
            .map_err(|e| Error::InvalidInput(format!("{e} (no {} tensor GEMM kernel)", P::NAME)))
    }

    pub fn kernel(self) -> &'static Kernel {
        match self {
            Step::Plain(k) => k.kernel(),
            Step::Tma(k) => k.kernel(),
        }
    }
}

/// One problem's operands on the device, in precision `P`: its
/// dimensions, A (`m x k`), B (`k x n`; `n x k` where
/// [`gemm::Precision::B_K_MAJOR`]) and, for the TMA kernels, their tensor
/// maps (encoded once, outside any timing).
pub struct Operands<'a, P: Ladder> {
    pub a: &'a DeviceBuffer<P::Input>,
    pub b: &'a DeviceBuffer<P::Input>,
    /// `(m, n, k)`, the problem the buffers were checked for.
    dims: (usize, usize, usize),
    maps: Option<DeviceBuffer<u64>>,
}

impl<'a, P: Ladder> Operands<'a, P> {
    /// Checks the problem and the buffers: A holds `m k` elements, B `k n`.
    pub fn new(
        (m, n, k): (usize, usize, usize),
        a: &'a DeviceBuffer<P::Input>,
        b: &'a DeviceBuffer<P::Input>,
    ) -> Result<Operands<'a, P>> {
        check((m, n, k))?;
        if a.len() < m * k || b.len() < k * n {
            return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: buffers too small")));
        }
        Ok(Operands { a, b, dims: (m, n, k), maps: None })
    }

    /// Errors unless every row of A and B starts on 16 bytes, as TMA needs
    /// (and the 16-bit kernels' paired stores of C, whose rows are `n`
    /// long): even when a dimension is 0 and no copy is made.
    fn rows_on_16(&self) -> Result<()> {
        let (m, n, k) = self.dims;
        let (name, per_16) = (<P::Input as gemm::Input>::NAME, <P::Input as gemm::Input>::PER_16);
        let lengths = if P::B_K_MAJOR { [k, k] } else { [k, n] };
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
        use gpu::tensor::hopper::BM;
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
                let b_shape = if P::B_K_MAJOR { (n, k) } else { (k, n) };
                let a = gpu.tensor_map(self.a, (m, k), (BM, P::Stage::BK));
                let b = gpu.tensor_map(self.b, b_shape, P::Stage::B_BOX);
                [of("A", a)?, of("B", b)?].concat()
            };
            self.maps = Some(gpu.upload(&words)?);
        }
        Ok(self.maps.as_ref().expect("just set"))
    }

    /// Readies what `kernel` needs beyond A and B (the tensor maps).
    pub fn prepare(&mut self, gpu: &Gpu, kernel: Step<P>) -> Result<()> {
        if let Step::Tma(_) = kernel {
            self.maps(gpu)?;
        }
        Ok(())
    }
}

/// Queues `C = A B` with `kernel` on the operands' problem after checking
/// C (A and B were checked by [`Operands::new`]; [`Operands::prepare`]
/// readied them for `kernel`).
pub fn launch<P: Ladder>(gpu: &Gpu, kernel: Step<P>, ops: &Operands<P>, c: &mut DeviceBuffer<f32>) -> Result<()> {
    let (m, n, k) = ops.dims;
    if c.len() < m * n {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: C too small")));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let name = kernel.kernel().name;
    let launch = kernel.kernel().launch;
    // SAFETY: (each arm) the buffers hold A, B and C for this problem
    // (checked by `Operands::new` and above, in the kernel's precision); the grid covers C with the kernel's tile; the
    // maps describe A and B (prepared for this problem).
    unsafe {
        match kernel {
            Step::Plain(kt) => kt.launch(gpu, launch.grid(nu, mu), (ops.a, ops.b, c, mu, nu, ku)),
            Step::Tma(kt) => {
                let maps = ops.maps.as_ref().ok_or_else(|| {
                    Error::InvalidInput(format!("{name}: its operands were not prepared for it"))
                })?;
                let on_sms = launch.persistent_grid(nu, mu, gpu.resident_blocks(kernel.kernel())?);
                kt.launch(gpu, on_sms, (maps, c, mu, nu, ku))
            }
        }
    }
}

/// Runs `kernel` once on `ops` into `c` (for tests): prepares, launches;
/// errors if it multiplies another precision.
pub fn run_once<P: Ladder>(
    gpu: &Gpu,
    kernel: &'static Kernel,
    ops: &mut Operands<P>,
    c: &mut DeviceBuffer<f32>,
) -> Result<()> {
    let step = Step::<P>::of(kernel)?;
    ops.prepare(gpu, step)?;
    launch(gpu, step, ops, c)
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
        // Every kernel is one of the ladder's, before anything runs.
        for &kernel in run.kernels {
            precision(kernel)?;
        }
        let mut records = Vec::new();
        for rung in PRECISIONS {
            let these: Vec<_> = run.kernels.iter().copied().filter(|&kernel| rung.takes(kernel)).collect();
            if !these.is_empty() {
                records.extend(rung.run(run, (m, n, k), &these)?);
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

/// One precision's part of [`Tensor`]'s run: random inputs (rounded to
/// `P`'s input type on the host; B transposed where `P` reads it K-major),
/// the reference of up to 512 rows, the peer (on a GPU, when timing), then
/// each kernel, verified.
fn run_precision<P: Ladder>(
    run: &Run,
    (m, n, k): (usize, usize, usize),
    kernels: &[(&'static Kernel, Step<P>)],
) -> Result<Vec<Record>> {
    let Run { gpu, size, runs, progress, .. } = *run;
    // A, and B: `k x n`, or its transpose `n x k` where `P` reads it
    // K-major; in `P`'s input type.
    let round = |x: Vec<f32>| -> Vec<P::Input> { x.into_iter().map(<P::Input as gemm::Input>::round_f32).collect() };
    let a = round(data::uniform_f32(m * k, 0x7e45));
    let b = round(data::uniform_f32(k * n, 0x7e46));
    let rows = rows_to_check(m, 512, 0x7e47);
    let value = |x: P::Input| gemm::Input::to_f64(x);
    let b64: Vec<f64> = b.iter().map(|&x| value(x)).collect();
    let b64 = if P::B_K_MAJOR { untranspose(&b64, (n, k)) } else { b64 };
    let want = reference(|i| value(a[i]), &b64, (m, n, k), &rows, P::unit(k));
    // The inputs on the device, as the kernels take them.
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut ops = Operands::<P>::new((m, n, k), &da, &db)?;
    let mut c = gpu.alloc::<f32>(m * n)?;
    let flops = 2.0 * (m * n) as f64 * k as f64;
    let (element, peer) = (P::NAME, P::PEER);
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
        records.push(measure(peer, &|c| cublas.gemm_rows::<P, _>((m, n, k), &da, &db, c))?);
    }
    for &(kernel, step) in kernels {
        // A kernel this device's PTX lacks (sm_90a kernels elsewhere), or a
        // shape its TMA cannot take, is left out of the table.
        if let Err(e) = ops.prepare(gpu, step).and_then(|()| gpu.has_kernel(kernel)) {
            progress(&format!("tensor {size} {element}: {} left out: {e}", kernel.name));
            continue;
        }
        records.push(measure(kernel.name, &|c| launch(gpu, step, &ops, c))?);
    }
    percent_of(&mut records, peer);
    Ok(records)
}
