//! The reduction family on the host: references, error bounds, typed
//! launches (several passes for kernels 1 to 5, one for kernel 6),
//! verification and benchmark. The kernels are in `gpu/src/reduce.rs`.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::launch::Arg;
use gpu::launch::{Dim3, Kernel};
use gpu::reduce::{FAST, Sum, Variant, fast_add_depth, fast_chunk};
use rayon::prelude::*;

use crate::bench::{self, Runs, Stage, Timing};
use crate::device::{DeviceBuffer, Function, Gpu};
use crate::error::{Error, Result};

pub use gpu::reduce::ALL as VARIANTS;

/// An element type the reduction kernels are exported for.
pub trait Element: Sum + DeviceRepr + ValidAsZeroBits + Default + PartialEq + Send + Sync + 'static {
    /// `i32`, `f32`, `f64`.
    const NAME: &'static str;
    /// Unit roundoff (0 for the exact, wrapping `i32`).
    const UNIT_ROUNDOFF: f64;
    /// This type's kernel of `variant`, if it is exported.
    fn kernel(variant: &Variant) -> Option<Kernel>;
    /// `n` random values from `seed`: `[-1, 1)` for floats, any `i32`.
    fn random(n: usize, seed: u64) -> Vec<Self>;
    fn to_f64(self) -> f64;
    fn bits(self) -> u64;
}

impl Element for i32 {
    const NAME: &'static str = "i32";
    const UNIT_ROUNDOFF: f64 = 0.0;
    fn kernel(variant: &Variant) -> Option<Kernel> {
        variant.i32
    }
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::data::random_with(n, seed, |rng| rng.random::<i32>())
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn bits(self) -> u64 {
        self as u32 as u64
    }
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;
    fn kernel(variant: &Variant) -> Option<Kernel> {
        variant.f32
    }
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::data::random_with(n, seed, |rng| rng.random_range(-1.0f32..1.0))
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
    fn kernel(variant: &Variant) -> Option<Kernel> {
        variant.f64
    }
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::data::random_with(n, seed, |rng| rng.random_range(-1.0f64..1.0))
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Host reference for `i32`: the wrapping sum (exact, order-independent).
pub fn reference_i32(input: &[i32]) -> i32 {
    input.par_iter().fold(|| 0i32, |a, &x| a.wrapping_add(x)).reduce(|| 0, i32::wrapping_add)
}

/// Host reference for floats: the sum in `f64` with Neumaier compensation
/// (error about one `f64` rounding, far below any `f32` kernel's), and the
/// sum of magnitudes the error bound scales with.
pub fn reference_float<T: Element>(input: &[T]) -> (f64, f64) {
    let (sum, compensation, magnitude) = input
        .par_chunks(1 << 16)
        .map(|chunk| {
            let (mut sum, mut c, mut magnitude) = (0.0f64, 0.0f64, 0.0f64);
            for &x in chunk {
                let x = x.to_f64();
                let t = sum + x;
                c += if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
                sum = t;
                magnitude += x.abs();
            }
            (sum, c, magnitude)
        })
        .reduce(|| (0.0, 0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    (sum + compensation, magnitude)
}

/// The most additions any input element goes through in `variant`'s sum of
/// `n` elements of `size` bytes: the depth `h` of the summation tree.
///
/// Kernels 1 and 2: one tree of `log2(block)` levels per pass. Kernels 3 to
/// 5: 3 more adds per pass (the four strided loads), and for kernel 5 the
/// tree is the two shuffle levels of 5 each. Kernel 6: see
/// [`gpu::reduce::fast_add_depth`]. Passes repeat until one value is left.
pub fn add_depth(variant: &Variant, n: usize, size: usize) -> usize {
    if variant.name == FAST.name {
        return fast_add_depth(n, size);
    }
    let block = variant.block;
    let per_pass = if variant.per_block == block { 0 } else { 3 }
        + if variant.name == gpu::reduce::SHUFFLE.name { 10 } else { block.trailing_zeros() as usize };
    passes(variant, n).len() * per_pass
}

/// The element counts each pass of a tree variant reduces: `n`,
/// `ceil(n / per_block)`, ... down to the pass that leaves one value.
pub fn passes(variant: &Variant, n: usize) -> Vec<usize> {
    let mut counts = Vec::new();
    let mut m = n;
    while m > 1 || counts.is_empty() {
        counts.push(m);
        m = m.div_ceil(variant.per_block);
    }
    counts
}

/// The bound on `|gpu - exact|` for a float sum: `gamma_h * sum |x|`,
/// `gamma_h = h u / (1 - h u)` (Higham, Accuracy and Stability of Numerical
/// Algorithms, eq. 4.4, for any summation tree of depth `h`).
pub fn error_bound(depth: usize, unit_roundoff: f64, magnitude: f64) -> f64 {
    let hu = depth as f64 * unit_roundoff;
    hu / (1.0 - hu) * magnitude
}

/// Device buffers one reduction needs besides its input.
pub struct Workspace<T> {
    /// Ping-pong partial sums (tree variants) or per-chunk partials (fast).
    partials: [DeviceBuffer<T>; 2],
    /// The fast kernel's ticket counter (zero between launches).
    ticket: DeviceBuffer<u32>,
    /// Where the sum lands: (buffer index, element) into `partials` for the
    /// tree variants; the fast kernel writes `partials[1][0]`.
    n: usize,
}

/// One variant's kernel for `T`, loaded.
pub struct Reduce<T> {
    pub variant: Variant,
    pub kernel: Kernel,
    function: Function,
    /// Blocks of the fast kernel's grid (any value gives the same bits).
    pub grid: u32,
    _marker: std::marker::PhantomData<T>,
}

impl<T: Element> Reduce<T> {
    /// Loads `variant`'s kernel for `T`; an error if it is not exported for `T`.
    pub fn load(gpu: &Gpu, variant: Variant) -> Result<Self> {
        let kernel = T::kernel(&variant).ok_or_else(|| {
            Error::InvalidInput(format!("reduction variant {} has no {} kernel", variant.name, T::NAME))
        })?;
        let grid = 4 * gpu.info.multiprocessors.max(1) as u32;
        Ok(Reduce { variant, kernel, function: gpu.function(&kernel)?, grid, _marker: Default::default() })
    }

    /// The same kernel with a different grid for the fast variant.
    pub fn with_grid(mut self, grid: u32) -> Self {
        self.grid = grid.max(1);
        self
    }

    /// Buffers for sums of `n` elements.
    pub fn workspace(&self, gpu: &Gpu, n: usize) -> Result<Workspace<T>> {
        let (first, second) = if self.variant.name == FAST.name {
            (n.div_ceil(fast_chunk(size_of::<T>())).max(1), 1)
        } else {
            let m = n.div_ceil(self.variant.per_block).max(1);
            (m, m.div_ceil(self.variant.per_block).max(1))
        };
        let mut partials = [gpu.alloc::<T>(first)?, gpu.alloc::<T>(second)?];
        for p in &mut partials {
            gpu.poison(p)?;
        }
        let ticket = gpu.zeros::<u32>(1)?;
        Ok(Workspace { partials, ticket, n })
    }

    /// Queues the sum of `input` (all of it; `ws` was made for its length).
    /// The in-place variant (kernel 1) overwrites `input`. Returns where
    /// the sum will be: `ws.partials[index][0]`.
    pub fn launch(&self, gpu: &Gpu, input: &mut DeviceBuffer<T>, ws: &mut Workspace<T>) -> Result<usize> {
        let n = input.len();
        if n != ws.n {
            return Err(Error::InvalidInput(format!("workspace made for {} elements, input has {n}", ws.n)));
        }
        if n == 0 {
            // The empty sum: no launch, a zero in place of the result.
            gpu.zero(&mut ws.partials[0])?;
            return Ok(0);
        }
        if self.variant.name == FAST.name {
            let chunks = n.div_ceil(fast_chunk(size_of::<T>())) as u32;
            let grid = self.grid.min(chunks);
            let [partials, out] = &ws.partials;
            let args = [input.arg(), partials.arg(), ws.ticket.arg(), out.arg(), Arg::U64(n as u64)];
            gpu.launch(&self.function, Dim3::x(grid), &args)?;
            return Ok(1);
        }
        // Tree variants: pass k reduces `counts[k]` elements into partials.
        let counts = passes(&self.variant, n);
        let per_block = self.variant.per_block;
        for (k, &m) in counts.iter().enumerate() {
            let [a, b] = &ws.partials;
            let (src, dst) = if k % 2 == 1 { (a, b) } else { (b, a) };
            let source = if k == 0 { input.arg() } else { src.arg() };
            let grid = Dim3::x(m.div_ceil(per_block) as u32);
            gpu.launch(&self.function, grid, &[source, dst.arg(), Arg::U64(m as u64)])?;
        }
        Ok((counts.len() - 1) % 2)
    }

    /// Runs the sum of `input` and returns it (for tests and verification).
    pub fn sum(&self, gpu: &Gpu, input: &mut DeviceBuffer<T>) -> Result<T> {
        let mut ws = self.workspace(gpu, input.len())?;
        let at = self.launch(gpu, input, &mut ws)?;
        gpu.sync()?;
        Ok(gpu.download(&ws.partials[at])?[0])
    }
}

/// One verification run of `variant` for `T` on `n` random values: `Err`
/// says why it failed (a wrong sum, or the launch itself).
pub fn run_once<T: Element>(
    gpu: &Gpu,
    variant: Variant,
    n: usize,
    seed: u64,
) -> std::result::Result<(), String> {
    let host = T::random(n, seed);
    let run = || -> Result<T> {
        let mut input = gpu.upload(&host)?;
        Reduce::<T>::load(gpu, variant)?.sum(gpu, &mut input)
    };
    verify(&variant, &host, run().map_err(|e| e.to_string())?)
}

/// Checks a sum against the host reference: exactly for `i32`, within the
/// derived bound for floats.
pub fn verify<T: Element>(variant: &Variant, input: &[T], got: T) -> std::result::Result<(), String> {
    let depth = add_depth(variant, input.len(), size_of::<T>());
    if T::UNIT_ROUNDOFF == 0.0 {
        let want = reference_i32(bytemuck_i32(input));
        return if got.bits() == want as u32 as u64 {
            Ok(())
        } else {
            Err(format!("{} {}: sum {} expected {want}", variant.name, T::NAME, got.to_f64()))
        };
    }
    let (exact, magnitude) = reference_float(input);
    let bound = error_bound(depth, T::UNIT_ROUNDOFF, magnitude);
    let error = (got.to_f64() - exact).abs();
    if error <= bound {
        Ok(())
    } else {
        Err(format!(
            "{} {} n={}: sum {} differs from {exact} by {error:.3e}, bound {bound:.3e} (depth {depth})",
            variant.name,
            T::NAME,
            input.len(),
            got.to_f64()
        ))
    }
}

/// `input` as `&[i32]` when `T` is `i32`.
fn bytemuck_i32<T: Element>(input: &[T]) -> &[i32] {
    assert_eq!(T::NAME, "i32");
    // SAFETY: T is i32 (checked by name; Element is only implemented for
    // i32, f32, f64), so the layouts are identical.
    unsafe { std::slice::from_raw_parts(input.as_ptr() as *const i32, input.len()) }
}

/// One measured kernel of the family.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub name: String,
    pub timing: Option<Timing>,
    /// Bytes read per run.
    pub bytes: usize,
    pub verified: std::result::Result<(), String>,
}

/// The family's results at one size, with the copy ceiling of the same run.
#[derive(Clone, Debug)]
pub struct Report {
    pub n: usize,
    pub copy: Timing,
    pub copy_gb_per_s: f64,
    pub kernels: Vec<Measurement>,
}

/// Verifies and times every variant exported for `T` on `n` random values.
///
/// Each variant: poison the workspace, sum twice (the two results must be
/// bitwise equal and pass [`verify`]), then time `runs` full sums. Kernel 1
/// sums in place: its input is restored from the pristine copy before each
/// run, outside the timed region.
pub fn benchmark<T: Element>(
    gpu: &Gpu,
    variants: &[Variant],
    n: usize,
    runs: Runs,
    seed: u64,
) -> Result<Report> {
    if n == 0 {
        return Err(Error::InvalidInput("cannot measure a reduction of 0 elements".into()));
    }
    gpu.check_fits(2 * n * size_of::<T>())?;
    let host = T::random(n, seed);
    let pristine = gpu.upload(&host)?;
    let mut scratch = gpu.alloc::<T>(n)?;
    let (copy, copy_gb_per_s) = bench::copy_ceiling(gpu, &pristine, &mut scratch, runs)?;
    let mut kernels = Vec::new();
    for variant in variants {
        let Some(_) = T::kernel(variant) else { continue };
        let reduce = Reduce::<T>::load(gpu, *variant)?;
        let mut ws = reduce.workspace(gpu, n)?;
        let mut results = Vec::new();
        for _ in 0..2 {
            gpu.copy(&pristine, &mut scratch)?;
            for p in &mut ws.partials {
                gpu.poison(p)?;
            }
            let at = reduce.launch(gpu, &mut scratch, &mut ws)?;
            gpu.sync()?;
            results.push(gpu.download(&ws.partials[at])?[0]);
        }
        let verified = if results[0].bits() != results[1].bits() {
            Err(format!("{} {}: two runs gave different bits", variant.name, T::NAME))
        } else {
            verify(variant, &host, results[0])
        };
        let timing = if verified.is_ok() {
            Some(bench::time_staged(gpu, runs, |stage| match stage {
                Stage::Setup if variant.in_place => gpu.copy(&pristine, &mut scratch),
                Stage::Setup => Ok(()),
                Stage::Run => reduce.launch(gpu, &mut scratch, &mut ws).map(|_| ()),
            })?)
        } else {
            None
        };
        kernels.push(Measurement {
            name: reduce.kernel.name.to_string(),
            timing,
            bytes: n * size_of::<T>(),
            verified,
        });
    }
    Ok(Report { n, copy, copy_gb_per_s, kernels })
}

impl Report {
    /// The family's table: the copy ceiling, then one row per kernel.
    pub fn table(&self) -> crate::report::Table {
        crate::report::bandwidth_table(
            self.copy,
            self.copy_gb_per_s,
            self.kernels.iter().map(|m| (m.name.as_str(), m.timing, m.bytes, &m.verified)),
        )
    }

    pub fn all_verified(&self) -> bool {
        self.kernels.iter().all(|m| m.verified.is_ok())
    }
}

/// The variants named in `names` (all when empty), or an error listing them.
pub fn select(names: &[String]) -> Result<Vec<Variant>> {
    crate::report::select(names, &VARIANTS, |v| v.name, "reduction variant")
}
