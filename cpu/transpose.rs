//! The transpose family on the host: reference, typed launch, verification
//! and benchmark. The kernels and their launch shapes are in
//! `gpu/src/transpose.rs`.

use gpu::launch::Arg;
use gpu::launch::Kernel;
use rayon::prelude::*;

use crate::bench::{self, Runs, Timing};
use crate::device::{DeviceBuffer, Function, Gpu};
use crate::error::{Error, Result};

pub use gpu::transpose::ALL as KERNELS;

/// The kernels named in `names` (all of [`KERNELS`] when empty; the
/// `transpose_` prefix may be left out), or an error listing them.
pub fn select(names: &[String]) -> Result<Vec<Kernel>> {
    crate::report::select(
        names,
        &KERNELS,
        |k| k.name.strip_prefix("transpose_").unwrap_or(k.name),
        "transpose kernel",
    )
}

/// Host reference: `out[x * ny + y] = input[y * nx + x]` for an `ny` x `nx`
/// row-major input. Blocked by 32 x 32 so both sides stay in cache, and
/// parallel over output rows.
pub fn reference(input: &[f32], nx: usize, ny: usize) -> Vec<f32> {
    assert_eq!(input.len(), nx * ny, "input must hold nx * ny elements");
    let mut out = vec![0.0f32; nx * ny];
    if nx == 0 || ny == 0 {
        return out;
    }
    const B: usize = 32;
    out.par_chunks_mut(ny * B).enumerate().for_each(|(block, rows)| {
        let x0 = block * B;
        for y0 in (0..ny).step_by(B) {
            for (dx, row) in rows.chunks_mut(ny).enumerate() {
                let x = x0 + dx;
                for y in y0..(y0 + B).min(ny) {
                    row[y] = input[y * nx + x];
                }
            }
        }
    });
    out
}

/// Checks that `nx` x `ny` is a problem the kernels can take, and returns
/// the element count. Zero-sized problems are valid (and no-ops).
pub fn check_shape(nx: usize, ny: usize) -> Result<usize> {
    let max_rows = 65_535 * 32; // grid.y is at most 65535 blocks of 32 rows
    if nx > u32::MAX as usize || ny > max_rows {
        return Err(Error::InvalidInput(format!(
            "transpose size {nx} x {ny} is too large: nx must be at most {} and ny at most {max_rows}",
            u32::MAX
        )));
    }
    nx.checked_mul(ny)
        .filter(|n| n.checked_mul(4).is_some())
        .ok_or_else(|| Error::InvalidInput(format!("transpose size {nx} x {ny} overflows")))
}

/// One transpose kernel, loaded and ready to launch.
pub struct Transpose {
    pub kernel: Kernel,
    function: Function,
}

impl Transpose {
    pub fn load(gpu: &Gpu, kernel: Kernel) -> Result<Self> {
        Ok(Transpose { kernel, function: gpu.function(&kernel)? })
    }

    /// Queues `output = inputᵀ` for an `ny` x `nx` input on the GPU's stream.
    pub fn launch(
        &self,
        gpu: &Gpu,
        input: &DeviceBuffer<f32>,
        output: &mut DeviceBuffer<f32>,
        nx: usize,
        ny: usize,
    ) -> Result<()> {
        let n = check_shape(nx, ny)?;
        if input.len() != n || output.len() != n {
            return Err(Error::InvalidInput(format!(
                "transpose of {nx} x {ny} needs buffers of {n} elements, got input {} and output {}",
                input.len(),
                output.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        let (nx, ny) = (nx as u32, ny as u32);
        gpu.launch(
            &self.function,
            self.kernel.grid(nx, ny),
            &[input.arg(), output.arg(), Arg::U32(nx), Arg::U32(ny)],
        )?;
        Ok(())
    }
}

/// One verification run of `kernel` on a random `ny` x `nx` input, output
/// poisoned first: `Err` says why it failed (a mismatch, or the launch
/// itself, e.g. an emulator error).
pub fn run_once(
    gpu: &Gpu,
    kernel: Kernel,
    nx: usize,
    ny: usize,
    seed: u64,
) -> std::result::Result<(), String> {
    let run = || -> Result<()> {
        let t = Transpose::load(gpu, kernel)?;
        let host = random_input(nx * ny, seed);
        let input = gpu.upload(&host)?;
        let mut output = gpu.alloc::<f32>(nx * ny)?;
        gpu.poison(&mut output)?;
        t.launch(gpu, &input, &mut output, nx, ny)?;
        gpu.sync()?;
        verify_exact(kernel.name, &gpu.download(&output)?, &reference(&host, nx, ny))
    };
    run().map_err(|e| e.to_string())
}

/// Bit-exact comparison; on failure says where and how many.
pub fn verify_exact(name: &str, got: &[f32], want: &[f32]) -> Result<()> {
    if got.len() != want.len() {
        return Err(Error::Mismatch(format!("{name}: {} elements, expected {}", got.len(), want.len())));
    }
    let bad = got.par_iter().zip(want).filter(|(g, w)| g.to_bits() != w.to_bits()).count();
    if bad == 0 {
        return Ok(());
    }
    let first = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()).unwrap();
    Err(Error::Mismatch(format!(
        "{name}: {bad} of {} elements differ, first at {first}: got {} (bits {:#010x}), expected {}",
        got.len(),
        got[first],
        got[first].to_bits(),
        want[first]
    )))
}

/// `n` random `f32` in [-1, 1), from `seed`.
pub fn random_input(n: usize, seed: u64) -> Vec<f32> {
    use rand::Rng;
    crate::data::random_with(n, seed, |rng| rng.random_range(-1.0f32..1.0))
}

/// One measured kernel.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub name: &'static str,
    pub timing: Option<Timing>,
    /// Bytes read + written per run.
    pub bytes: usize,
    /// `Ok` if the output matched the reference bit for bit.
    pub verified: Result<(), String>,
}

/// The family's results at one size, with the copy ceiling of the same run.
#[derive(Clone, Debug)]
pub struct Report {
    pub nx: usize,
    pub ny: usize,
    pub copy: Timing,
    pub copy_gb_per_s: f64,
    pub kernels: Vec<Measurement>,
}

/// Verifies and times `kernels` on a random `ny` x `nx` input.
///
/// For each kernel: poison the output, run once, compare every element with
/// the host reference, then time `runs` launches (median of CUDA events).
/// A kernel that fails verification is reported and not timed.
pub fn benchmark(
    gpu: &Gpu,
    kernels: &[Kernel],
    nx: usize,
    ny: usize,
    runs: Runs,
    seed: u64,
) -> Result<Report> {
    let n = check_shape(nx, ny)?;
    if n == 0 {
        return Err(Error::InvalidInput(format!("cannot measure an empty {nx} x {ny} transpose")));
    }
    gpu.check_fits(2 * n * 4)?;
    let host_input = random_input(n, seed);
    let expected = reference(&host_input, nx, ny);
    let input = gpu.upload(&host_input)?;
    let mut output = gpu.alloc::<f32>(n)?;
    let bytes = 2 * n * 4;

    let (copy, copy_gb_per_s) = bench::copy_ceiling(gpu, &input, &mut output, runs)?;
    let mut measured = Vec::new();
    for kernel in kernels {
        let transpose = Transpose::load(gpu, *kernel)?;
        gpu.poison(&mut output)?;
        transpose.launch(gpu, &input, &mut output, nx, ny)?;
        gpu.sync()?;
        let verified =
            verify_exact(kernel.name, &gpu.download(&output)?, &expected).map_err(|e| e.to_string());
        let timing = match verified {
            Ok(()) => Some(bench::time(gpu, runs, || transpose.launch(gpu, &input, &mut output, nx, ny))?),
            Err(_) => None,
        };
        measured.push(Measurement { name: kernel.name, timing, bytes, verified });
    }
    Ok(Report { nx, ny, copy, copy_gb_per_s, kernels: measured })
}

impl Report {
    /// The family's table: the copy ceiling, then one row per kernel.
    pub fn table(&self) -> crate::report::Table {
        crate::report::bandwidth_table(
            self.copy,
            self.copy_gb_per_s,
            self.kernels.iter().map(|m| (m.name, m.timing, m.bytes, &m.verified)),
        )
    }

    pub fn all_verified(&self) -> bool {
        self.kernels.iter().all(|m| m.verified.is_ok())
    }
}
