//! The tensor-core family on the host: bf16 GEMM with `f32` accumulation,
//! its reference and error bound, and cuBLAS's bf16 GEMM as the in-run
//! peer. The kernels are in `gpu/src/tensor.rs`.

use gpu::dev::{In, Out};
use gpu::launch::{Kernel, Typed};
use rayon::prelude::*;

use super::sgemm::{percent_of_cublas, rows_to_check};
use super::{About, Family, Run, Target, percent_target};
use crate::blas::cublas::Cublas;
use crate::measure::{Rate, Record, Shape, data, trial};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// What every tensor-core GEMM kernel takes: A, B (bf16 bits), C, m, n, k.
pub type Signature = (In<u16>, In<u16>, Out<f32>, u32, u32, u32);

/// The family: `C = A B`, bf16 inputs, `f32` accumulation and output.
pub struct Tensor;

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
/// element counts); returns the bytes of A, B and C.
pub fn check((m, n, k): (usize, usize, usize)) -> Result<usize> {
    if [m, n, k].iter().any(|&x| x > u32::MAX as usize / 2) {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: dimensions must fit in 31 bits")));
    }
    let elements = |x: usize, y: usize| x.checked_mul(y);
    match (elements(m, k), elements(k, n), elements(m, n)) {
        (Some(a), Some(b), Some(c)) => Ok(2 * a + 2 * b + 4 * c),
        _ => Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k} overflows"))),
    }
}

/// The f64 reference of rows `rows` of `A B` and, per element, the error
/// bound: with bf16 inputs every product is exact in `f32`, and each of the
/// `k` additions into the `f32` accumulator may err by one ulp of the
/// running sum (the ISA does not fix the order or the rounding), so
/// `|C - exact| <= (k + 1) 2^-23 sum_p |a_ip b_pj|`.
pub fn reference(
    a: &[u16],
    b: &[u16],
    (_m, n, k): (usize, usize, usize),
    rows: &[usize],
) -> Vec<(Vec<f64>, Vec<f64>)> {
    let b: Vec<f64> = b.iter().map(|&x| f32_of(x) as f64).collect();
    let unit = (k as f64 + 1.0) * f64::powi(2.0, -23);
    rows.par_iter()
        .map(|&i| {
            let mut value = vec![0.0f64; n];
            let mut bound = vec![0.0f64; n];
            for p in 0..k {
                let x = f32_of(a[i * k + p]) as f64;
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

/// What the TMA kernels take (`gpu::tensor::hopper`): the tensor maps of
/// A and B (16 words each), A, B, C, m, n, k.
pub type TmaSignature = (In<u64>, In<u16>, In<u16>, Out<f32>, u32, u32, u32);

/// A tensor GEMM kernel, as whichever signature it declares.
#[derive(Clone, Copy)]
pub enum Launchable {
    Plain(Typed<Signature>),
    Tma(Typed<TmaSignature>),
}

/// `kernel` as a tensor GEMM kernel: an error if it takes other parameters.
pub fn typed(kernel: &'static Kernel) -> Result<Launchable> {
    kernel
        .typed::<Signature>()
        .map(Launchable::Plain)
        .or_else(|_| kernel.typed::<TmaSignature>().map(Launchable::Tma))
        .map_err(Error::InvalidInput)
}

/// One problem's operands on the device: A, B and, for the TMA kernels,
/// their tensor maps (encoded once, outside any timing).
pub struct Operands<'a> {
    pub a: &'a DeviceBuffer<u16>,
    pub b: &'a DeviceBuffer<u16>,
    maps: Option<DeviceBuffer<u64>>,
}

impl<'a> Operands<'a> {
    /// Checks the problem and the buffers: A holds `m k`, B `k n`
    /// elements.
    pub fn new(
        (m, n, k): (usize, usize, usize),
        a: &'a DeviceBuffer<u16>,
        b: &'a DeviceBuffer<u16>,
    ) -> Result<Operands<'a>> {
        check((m, n, k))?;
        if a.len() < m * k || b.len() < k * n {
            return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: buffers too small")));
        }
        Ok(Operands { a, b, maps: None })
    }

    /// The tensor maps the TMA kernels read: A in 128 x 64 boxes, B in 64
    /// x 64, both 128-byte swizzled (`gpu::tensor::hopper`). Errors if a
    /// row does not start on 16 bytes (`k` or `n` not a multiple of 8).
    fn maps(&mut self, gpu: &Gpu, (m, n, k): (usize, usize, usize)) -> Result<&DeviceBuffer<u64>> {
        use gpu::tensor::hopper::{B_BOX_COLS, BK, BM};
        if self.maps.is_none() {
            let words = if m == 0 || n == 0 || k == 0 {
                // Nothing to copy: the kernel reads no map.
                vec![0u64; 32]
            } else {
                let of = |what: &str, r: Result<[u64; 16]>| {
                    r.map_err(|e| Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}, {what}: {e}")))
                };
                let a = of("A", gpu.tensor_map_bf16(self.a, (m, k), (BM, BK)))?;
                let b = of("B", gpu.tensor_map_bf16(self.b, (k, n), (BK, B_BOX_COLS)))?;
                [a, b].concat()
            };
            self.maps = Some(gpu.upload(&words)?);
        }
        Ok(self.maps.as_ref().expect("just set"))
    }

    /// Readies what `kernel` needs beyond A and B (the tensor maps).
    pub fn prepare(&mut self, gpu: &Gpu, kernel: Launchable, dims: (usize, usize, usize)) -> Result<()> {
        if let Launchable::Tma(_) = kernel {
            self.maps(gpu, dims)?;
        }
        Ok(())
    }
}

/// Queues `C = A B` with `kernel` after checking C (A and B were checked
/// by [`Operands::new`]; [`Operands::prepare`] readied them for `kernel`).
pub fn launch(
    gpu: &Gpu,
    kernel: Launchable,
    (m, n, k): (usize, usize, usize),
    ops: &Operands,
    c: &mut DeviceBuffer<f32>,
) -> Result<()> {
    if c.len() < m * n {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: C too small")));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (a, b) = (ops.a, ops.b);
    let dims = (m as u32, n as u32, k as u32);
    match kernel {
        Launchable::Plain(kt) => {
            let grid = kt.kernel().launch.grid(n as u32, m as u32);
            // SAFETY: the buffers hold A, B and C (checked); the grid covers
            // C with the kernel's tile.
            unsafe { kt.launch(gpu, grid, (a, b, c, dims.0, dims.1, dims.2)) }
        }
        Launchable::Tma(kt) => {
            let maps = ops.maps.as_ref().ok_or_else(|| {
                Error::InvalidInput(format!("{}: its tensor maps were not prepared", kt.kernel().name))
            })?;
            let grid = kt.kernel().launch.grid_on(n as u32, m as u32, gpu.info.multiprocessors as u32);
            // SAFETY: as above, and the maps describe A and B (prepared for
            // this problem).
            unsafe { kt.launch(gpu, grid, (maps, a, b, c, dims.0, dims.1, dims.2)) }
        }
    }
}

/// Runs `kernel` once on `ops` into `c` (for tests): prepares, launches.
pub fn run_once(
    gpu: &Gpu,
    kernel: &'static Kernel,
    dims: (usize, usize, usize),
    ops: &mut Operands,
    c: &mut DeviceBuffer<f32>,
) -> Result<()> {
    let kt = typed(kernel)?;
    ops.prepare(gpu, kt, dims)?;
    launch(gpu, kt, dims, ops, c)
}

impl Family for Tensor {
    fn about(&self) -> &'static About {
        &About {
            name: "tensor",
            size_meaning: "N: an N x N x N GEMM, or MxNxK; bf16 A and B, f32 accumulation and C",
            default_sizes: &[1024, 2048, 4096, 6144, 8192],
            emulator_size: 72,
            method: "C against an f64 reference on up to 512 rows, each element within (k + 1) 2^-23 sum |a b| \
                     (bf16 products are exact in f32; one f32 ulp per addition); the peer is cuBLAS's bf16 GEMM \
                     (cublasGemmEx, f32 compute) on the same buffers",
        }
    }

    fn check(&self, size: &Shape) -> Result<usize> {
        check(dims(size)?)
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

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let Run { gpu, size, runs, kernels, progress, .. } = *run;
        let (m, n, k) = dims(size)?;
        check((m, n, k))?;
        let a_host: Vec<u16> = data::uniform_f32(m * k, 0x7e45).into_iter().map(bf16).collect();
        let b_host: Vec<u16> = data::uniform_f32(k * n, 0x7e46).into_iter().map(bf16).collect();
        let rows = rows_to_check(m, 512, 0x7e47);
        let want = reference(&a_host, &b_host, (m, n, k), &rows);
        let (a, b) = (gpu.upload(&a_host)?, gpu.upload(&b_host)?);
        let mut c = gpu.alloc::<f32>(m * n)?;
        let flops = 2.0 * (m * n) as f64 * k as f64;
        let rate = || Rate::Flops { flops, peer: "cublas", peer_tflops: None };
        let mut records = Vec::new();
        let mut measure = |name: &str,
                           run: &dyn Fn(&mut DeviceBuffer<f32>) -> Result<()>|
         -> Result<Record> {
            progress(&format!("tensor {size}: {name}"));
            let mut worst = 0.0;
            let measured = trial::of_output(gpu, runs, &mut c, run, |got| {
                verify(name, got, n, &rows, &want).map(|w| worst = w)
            })?;
            let mut record = Record::of_trial("tensor", name, "bf16", size, &measured, rate());
            record.relative_error = Some(worst);
            Ok(record)
        };
        if runs.is_some() && !gpu.is_emulator() {
            let cublas = Cublas::new(gpu)?;
            records.push(measure("cublas", &|c| cublas.gemm_bf16_rows((m, n, k), &a, &b, c))?);
        }
        let mut ops = Operands::new((m, n, k), &a, &b)?;
        for kernel in kernels {
            let kt = typed(kernel)?;
            // A kernel this device's PTX lacks (sm_90a kernels elsewhere),
            // or a shape its TMA cannot take, is left out of the table.
            if let Err(e) = ops.prepare(gpu, kt, (m, n, k)).and_then(|()| gpu.has_kernel(kernel)) {
                progress(&format!("tensor {size}: {} left out: {e}", kernel.name));
                continue;
            }
            records.push(measure(kernel.name, &|c| launch(gpu, kt, (m, n, k), &ops, c))?);
        }
        percent_of_cublas(&mut records);
        Ok(records)
    }

    fn notes(&self) -> &'static str {
        "The ladder: (1) `mma.sync` on fragments loaded register by register from padded shared tiles, with a \
         register prefetch; (2) `ldmatrix` from a swizzled layout; (3) a 3-stage `cp.async` pipeline; (4) \
         Hopper's `wgmma` reading swizzled tiles that TMA writes, a 4-stage mbarrier ring; (5) warp \
         specialization: one producer warpgroup, two consumers, `setmaxnreg`; (6) persistent blocks over a \
         grouped tile order. Steps 4-6 are in the sm_90a PTX only and need `k` and `n` multiples of 8 (TMA row \
         strides); elsewhere they are left out of the table. The ncu section of the device checks profiles every \
         step and cuBLAS's own kernel. What limits each: steps 1 and 2 wait on global loads (one block of 8 \
         warps per SM, 32 of 161 registers holding the prefetch, too few bytes in flight); step 3 on the \
         shared-memory pipe and on too few warps to hide `mma.sync` latency (`mma.sync` cannot reach `wgmma`'s \
         rate on Hopper in any case); step 4 stops the tensor cores once per stage (`wait_group 0` and a block \
         barrier before each refill); step 5 streams all of B from DRAM on every wave of 132 row-ordered tiles \
         (L2 hit rate and DRAM throughput in the ncu rows); step 6 fixes the order. What remains, in the ncu rows for step 6 and \
         cuBLAS's kernel at 4096^3 and 8192^3: their tensor pipe is busier; our warps stall mostly on long \
         scoreboards, that is in the mbarrier waits for stages still in flight (latency, not bandwidth: DRAM and L2 \
         are no busier than cuBLAS's), and the consumers store each tile's 128 KB of `f32` sums while the tensor \
         cores wait. cuBLAS's kernel (clusters of 2, larger tiles) keeps more bytes in flight per SM and reads the \
         shared operand once per cluster. Next: TMA multicast across a cluster of 2, and the epilogue through shared \
         memory and TMA stores so it overlaps the next tile's `wgmma`s. docs/notes.md lists the variants measured. TF32 kernels are still to come: `wgmma` takes tf32 B only K-major, which needs \
         a transposed B or a TN layout."
    }

    fn targets(&self, records: &[&Record]) -> Vec<Target> {
        let first = |size| {
            let chosen: Vec<&Record> =
                records.iter().copied().filter(|r| r.kernel == "tc_mma_bf16" || r.kernel == "cublas").collect();
            percent_target(&chosen, "bf16", size, &format!("tensor {size}^3: the first mma.sync step"), 50.0)
        };
        let best = |size| percent_target(records, "bf16", size, &format!("tensor {size}^3, best kernel"), 90.0);
        [first(4096), first(8192), best(4096), best(8192)].into_iter().flatten().collect()
    }
}
