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

/// `kernel` as a tensor GEMM kernel: an error if it takes other parameters.
pub fn typed(kernel: &'static Kernel) -> Result<Typed<Signature>> {
    kernel.typed::<Signature>().map_err(Error::InvalidInput)
}

/// Queues `C = A B` with `kernel` after checking the buffers.
pub fn launch(
    gpu: &Gpu,
    kernel: Typed<Signature>,
    (m, n, k): (usize, usize, usize),
    a: &DeviceBuffer<u16>,
    b: &DeviceBuffer<u16>,
    c: &mut DeviceBuffer<f32>,
) -> Result<()> {
    check((m, n, k))?;
    if a.len() < m * k || b.len() < k * n || c.len() < m * n {
        return Err(Error::InvalidInput(format!("tensor GEMM {m}x{n}x{k}: buffers too small")));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let grid = kernel.kernel().launch.grid(n as u32, m as u32);
    // SAFETY: the buffers hold A, B and C (checked above); the grid covers
    // C with the kernel's tile.
    unsafe { kernel.launch(gpu, grid, (a, b, c, m as u32, n as u32, k as u32)) }
}

impl Family for Tensor {
    fn about(&self) -> &'static About {
        &About {
            name: "tensor",
            size_meaning: "N: an N x N x N GEMM, or MxNxK; bf16 A and B, f32 accumulation and C",
            default_sizes: &[1024, 2048, 4096, 8192],
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
        for kernel in kernels {
            let kt = typed(kernel)?;
            records.push(measure(kernel.name, &|c| launch(gpu, kt, (m, n, k), &a, &b, c))?);
        }
        percent_of_cublas(&mut records);
        Ok(records)
    }

    fn notes(&self) -> &'static str {
        "The ladder so far: step 1, `mma.sync` on fragments assembled from shared memory with a two-stage \
         register prefetch, and step 3, the same multiplies fed by a 3-stage `cp.async` pipeline (step 2, \
         `ldmatrix` from a swizzled layout, is still to come). The ncu section of the device checks below \
         profiles both at 4096^3. Step 1's warps wait on global loads most of the time (long scoreboard): one \
         block of 8 warps per SM has too few bytes in flight. Step 3 keeps two k-steps of copies in flight and \
         the long-scoreboard stalls fall away; what remains is the shared-memory pipe (MIO throttle): each lane \
         assembles its B fragments from 16-bit loads, 16 per 16 k, which `ldmatrix.trans` replaces with one \
         instruction per four registers. Then TMA and `wgmma` on Hopper."
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
