//! The reduction family on the host: references, error bounds, launches
//! (several passes for the tree kernels, one for the one-pass kernel),
//! verification and benchmark. The kernels are in `gpu/src/reduce.rs`.
//!
//! How a kernel is launched follows from its signature alone: `(In<T>,
//! Out<T>, u64)` is a tree kernel (one partial per block, launched again on
//! the partials until one value is left), `(Out<T>, Out<T>, u64)` the same
//! in place, and `(In<T>, Out<T>, Out<u32>, Out<T>, u64)` the one-pass sum.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::dev::{In, Out};
use gpu::launch::{Kernel, Typed};
use gpu::reduce::{Sum, fast_add_depth, fast_chunk};
use rayon::prelude::*;

use super::{About, Family, Run, Target, percent_target};
use crate::measure::{Rate, Record, Runs, Shape, Stage, bench, trial};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// An element type the reduction kernels are exported for.
pub trait Element: Sum + DeviceRepr + ValidAsZeroBits + Default + PartialEq + Send + Sync + 'static {
    /// `i32`, `f32`, `f64`.
    const NAME: &'static str;
    /// Unit roundoff (0 for the exact, wrapping `i32`).
    const UNIT_ROUNDOFF: f64;
    /// `n` random values from `seed`: `[-1, 1)` for floats, any `i32`.
    fn random(n: usize, seed: u64) -> Vec<Self>;
    fn to_f64(self) -> f64;
    fn bits(self) -> u64;
}

impl Element for i32 {
    const NAME: &'static str = "i32";
    const UNIT_ROUNDOFF: f64 = 0.0;
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::measure::data::random_with(n, seed, |rng| rng.random::<i32>())
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
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::measure::data::random_with(n, seed, |rng| rng.random_range(-1.0f32..1.0))
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
    fn random(n: usize, seed: u64) -> Vec<Self> {
        use rand::Rng;
        crate::measure::data::random_with(n, seed, |rng| rng.random_range(-1.0f64..1.0))
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

/// A tree kernel's parameters: input, partials, `n`.
pub type TreeSignature<T> = (In<T>, Out<T>, u64);
/// An in-place tree kernel's: data (overwritten), partials, `n`.
pub type InPlaceSignature<T> = (Out<T>, Out<T>, u64);
/// The one-pass kernel's: input, per-chunk partials, ticket, result, `n`.
pub type OnePassSignature<T> = (In<T>, Out<T>, Out<u32>, Out<T>, u64);

/// How a reduction kernel runs, from its signature.
#[derive(Clone, Copy)]
enum Strategy<T: Element> {
    /// One partial per block of `per_block` inputs, pass after pass.
    Tree(Typed<TreeSignature<T>>),
    /// The same, summing in place: it overwrites its input.
    InPlace(Typed<InPlaceSignature<T>>),
    /// The whole sum in one launch, with a ticket for the last block.
    OnePass(Typed<OnePassSignature<T>>),
}

/// The tree levels one pass of a tree kernel adds: `log2(block)` for the
/// shared-memory and in-place trees, 5 + 5 for the shuffles of kernel 5 (a
/// warp's five, then warp 0's five over the warps' partials). Part of each
/// kernel's host reference: a new tree kernel adds its depth here.
fn tree_levels(kernel: &Kernel) -> Option<usize> {
    let block = kernel.launch.block.x as usize;
    match kernel.function {
        "reduce_shuffle" => Some(10),
        "reduce_gmem" | "reduce_smem" | "reduce_unroll" | "reduce_dynamic" => {
            Some(block.trailing_zeros() as usize)
        }
        f if f.starts_with("reduce_seed_bug_") => Some(block.trailing_zeros() as usize),
        _ => None,
    }
}

/// Elements one block of a tree kernel reduces per pass.
fn per_block(kernel: &Kernel) -> usize {
    kernel.launch.tile[0] as usize
}

/// The element counts each pass of a tree kernel reduces: `n`,
/// `ceil(n / per_block)`, ... down to the pass that leaves one value.
pub fn passes(kernel: &Kernel, n: usize) -> Vec<usize> {
    let mut counts = Vec::new();
    let mut m = n;
    while m > 1 || counts.is_empty() {
        counts.push(m);
        m = m.div_ceil(per_block(kernel));
    }
    counts
}

/// The most additions any input element goes through in `kernel`'s sum of
/// `n` elements of `size` bytes: the depth `h` of the summation tree. Tree
/// kernels: per pass, `tree_levels`, plus 3 where each thread first sums
/// four blocks' worth (a block covers more elements than it has threads);
/// passes repeat until one value is left. The one-pass kernel: see
/// [`gpu::reduce::fast_add_depth`]. `None` for a kernel the host does not
/// know.
pub fn add_depth(kernel: &Kernel, n: usize, size: usize) -> Option<usize> {
    if kernel.params.len() == 5 {
        return Some(fast_add_depth(n, size));
    }
    let unrolled = if per_block(kernel) == kernel.launch.block.x as usize { 0 } else { 3 };
    Some(passes(kernel, n).len() * (unrolled + tree_levels(kernel)?))
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
    /// Ping-pong partial sums (tree kernels) or per-chunk partials and the
    /// result (one-pass).
    partials: [DeviceBuffer<T>; 2],
    /// The one-pass kernel's ticket counter (zero between launches).
    ticket: DeviceBuffer<u32>,
    /// The input length the workspace was made for.
    n: usize,
}

impl<T: Element> Workspace<T> {
    /// Poisons the partial sums (before a verification run).
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        for p in &mut self.partials {
            gpu.poison(p)?;
        }
        Ok(())
    }
}

/// One reduction kernel for `T`.
pub struct Reduction<T: Element> {
    pub kernel: &'static Kernel,
    plan: Strategy<T>,
    /// Blocks of the one-pass kernel's grid (any value gives the same bits).
    pub grid: u32,
}

impl<T: Element> Reduction<T> {
    /// `kernel` as a reduction of `T`s: an error if its signature is none
    /// of the three.
    pub fn new(gpu: &Gpu, kernel: &'static Kernel) -> Result<Self> {
        let plan = if let Ok(k) = kernel.typed() {
            Strategy::Tree(k)
        } else if let Ok(k) = kernel.typed() {
            Strategy::InPlace(k)
        } else if let Ok(k) = kernel.typed() {
            Strategy::OnePass(k)
        } else {
            return Err(Error::InvalidInput(format!(
                "{} takes {}, which is no reduction of {} the host knows",
                kernel.name,
                kernel.signature_name,
                T::NAME
            )));
        };
        let grid = 4 * gpu.info.multiprocessors.max(1) as u32;
        Ok(Reduction { kernel, plan, grid })
    }

    /// The instance of the generic kernel `function` for `T`.
    pub fn of(gpu: &Gpu, function: &str) -> Result<Self> {
        let kernel = gpu::launch::registry::all()
            .into_iter()
            .find(|k| k.function == function && k.instance == Some(T::NAME))
            .ok_or_else(|| Error::InvalidInput(format!("{function} has no {} instance", T::NAME)))?;
        Reduction::new(gpu, kernel)
    }

    /// The same kernel with a different grid for the one-pass kernel.
    pub fn with_grid(mut self, grid: u32) -> Self {
        self.grid = grid.max(1);
        self
    }

    /// Whether the kernel overwrites its input.
    pub fn in_place(&self) -> bool {
        matches!(self.plan, Strategy::InPlace(_))
    }

    /// Buffers for sums of `n` elements, poisoned.
    pub fn workspace(&self, gpu: &Gpu, n: usize) -> Result<Workspace<T>> {
        let (first, second) = match self.plan {
            Strategy::OnePass(_) => (n.div_ceil(fast_chunk(size_of::<T>())).max(1), 1),
            _ => {
                let m = n.div_ceil(per_block(self.kernel)).max(1);
                (m, m.div_ceil(per_block(self.kernel)).max(1))
            }
        };
        let mut ws =
            Workspace { partials: [gpu.alloc(first)?, gpu.alloc(second)?], ticket: gpu.zeros(1)?, n };
        ws.poison(gpu)?;
        Ok(ws)
    }

    /// Queues the sum of `input` (all of it; `ws` was made for its length).
    /// An in-place kernel overwrites `input`. Returns where the sum will
    /// be: `ws.partials[index][0]`.
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
        let [a, b] = &mut ws.partials;
        if let Strategy::OnePass(k) = self.plan {
            let chunks = n.div_ceil(fast_chunk(size_of::<T>())) as u32;
            // SAFETY: `a` holds one partial per chunk, `b` and the ticket one
            // element each, the ticket is zero (the workspace starts so and
            // the kernel resets it), and the grid has at most `chunks`
            // blocks: the kernel's contract.
            unsafe { k.launch(gpu, self.grid.min(chunks), (&*input, a, &mut ws.ticket, b, n as u64)) }?;
            return Ok(1);
        }
        // Tree kernels: pass k reduces `counts[k]` elements into partials,
        // alternating between the two buffers.
        let counts = passes(self.kernel, n);
        for (k, &m) in counts.iter().enumerate() {
            let grid = m.div_ceil(per_block(self.kernel)) as u32;
            let (src, dst): (&mut DeviceBuffer<T>, &mut DeviceBuffer<T>) = if k == 0 {
                (&mut *input, a)
            } else if k % 2 == 1 {
                (&mut *a, b)
            } else {
                (&mut *b, a)
            };
            // SAFETY: `src` holds at least `m` elements (the input, or the
            // previous pass's partials) and `dst` at least one per block of
            // this pass's grid (the workspace is sized for the first two
            // passes, and each later one is smaller): the kernels' contract.
            unsafe {
                match self.plan {
                    Strategy::Tree(t) => t.launch(gpu, grid, (&*src, dst, m as u64)),
                    Strategy::InPlace(t) => t.launch(gpu, grid, (src, dst, m as u64)),
                    Strategy::OnePass(_) => unreachable!("handled above"),
                }
            }?;
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

/// Checks a sum against the host reference: exactly for `i32`, within the
/// derived bound for floats.
pub fn verify<T: Element>(kernel: &Kernel, input: &[T], got: T) -> std::result::Result<(), String> {
    let depth = add_depth(kernel, input.len(), size_of::<T>()).ok_or_else(|| {
        format!("{}: the host does not know its summation depth (see tree_levels)", kernel.name)
    })?;
    if T::UNIT_ROUNDOFF == 0.0 {
        let want = reference_i32(as_i32(input));
        return if got.bits() == want as u32 as u64 {
            Ok(())
        } else {
            Err(format!("{} n={}: sum {} expected {want}", kernel.name, input.len(), got.to_f64()))
        };
    }
    let (exact, magnitude) = reference_float(input);
    let bound = error_bound(depth, T::UNIT_ROUNDOFF, magnitude);
    let error = (got.to_f64() - exact).abs();
    if error <= bound {
        Ok(())
    } else {
        Err(format!(
            "{} n={}: sum {} differs from {exact} by {error:.3e}, bound {bound:.3e} (depth {depth})",
            kernel.name,
            input.len(),
            got.to_f64()
        ))
    }
}

/// `input` as `&[i32]` when `T` is `i32`.
fn as_i32<T: Element>(input: &[T]) -> &[i32] {
    assert_eq!(T::NAME, "i32");
    // SAFETY: T is i32 (checked by name; Element is only implemented for
    // i32, f32, f64), so the layouts are identical.
    unsafe { std::slice::from_raw_parts(input.as_ptr() as *const i32, input.len()) }
}

/// One verification run of `kernel` (an instance for `T`) on `n` random
/// values: `Err` says why it failed (a wrong sum, or the launch itself).
pub fn run_once<T: Element>(
    gpu: &Gpu,
    kernel: &'static Kernel,
    n: usize,
    seed: u64,
) -> std::result::Result<(), String> {
    let host = T::random(n, seed);
    let run = || -> Result<T> {
        let mut input = gpu.upload(&host)?;
        Reduction::<T>::new(gpu, kernel)?.sum(gpu, &mut input)
    };
    verify(kernel, &host, run().map_err(|e| e.to_string())?)
}

/// The buffers of one kernel's trial.
struct State<T: Element> {
    scratch: DeviceBuffer<T>,
    ws: Workspace<T>,
    /// Where the last run's sum is.
    at: usize,
}

/// Verifies and times the `T` instances among `kernels` on `n` random
/// values: the copy ceiling first, then per kernel two sums (their bits must
/// agree, and pass [`verify`]), then timed sums. An in-place kernel's input
/// is restored from a pristine copy before each run, outside the timed
/// region.
fn run_type<T: Element>(
    gpu: &Gpu,
    size: &Shape,
    kernels: &[&'static Kernel],
    runs: Option<Runs>,
    progress: &dyn Fn(&str),
) -> Result<Vec<Record>> {
    let n = size.lead();
    let kernels: Vec<&'static Kernel> =
        kernels.iter().copied().filter(|k| k.instance == Some(T::NAME)).collect();
    if kernels.is_empty() {
        return Ok(Vec::new());
    }
    let host = T::random(n, 0x5eed);
    let pristine = gpu.upload(&host)?;
    let mut scratch = gpu.alloc::<T>(n)?;
    let (mut records, copy) =
        bench::copy_record(gpu, runs, "reduce", T::NAME, size, &pristine, &mut scratch)?;
    for kernel in kernels {
        progress(&format!("reduce {n} {}: {}", T::NAME, kernel.name));
        let reduce = Reduction::<T>::new(gpu, kernel)?;
        let ws = reduce.workspace(gpu, n)?;
        let mut state = State { scratch, ws, at: 0 };
        let measured = trial(
            gpu,
            runs,
            &mut state,
            |s, stage| match stage {
                Stage::Prepare => {
                    s.ws.poison(gpu)?;
                    gpu.copy(&pristine, &mut s.scratch)
                }
                Stage::Restore if reduce.in_place() => gpu.copy(&pristine, &mut s.scratch),
                Stage::Restore => Ok(()),
                Stage::Run => {
                    s.at = reduce.launch(gpu, &mut s.scratch, &mut s.ws)?;
                    Ok(())
                }
            },
            |s| {
                let error = |e: Error| e.to_string();
                let first = gpu.download(&s.ws.partials[s.at]).map_err(error)?[0];
                // A second run from a fresh input and poisoned partials must
                // give the same bits.
                gpu.copy(&pristine, &mut s.scratch).map_err(error)?;
                s.ws.poison(gpu).map_err(error)?;
                let at = reduce.launch(gpu, &mut s.scratch, &mut s.ws).map_err(error)?;
                gpu.sync().map_err(error)?;
                let second = gpu.download(&s.ws.partials[at]).map_err(error)?[0];
                if first.bits() != second.bits() {
                    return Err(format!("{}: two runs gave different bits", kernel.name));
                }
                verify(kernel, &host, first)
            },
        )?;
        scratch = state.scratch;
        let rate = Rate::Bandwidth { bytes: n * size_of::<T>(), copy };
        records.push(Record::of_trial("reduce", kernel.name, T::NAME, size, &measured, rate));
    }
    Ok(records)
}

/// The family: the sum of `n` elements, for `f32`, `i32` and `f64`.
pub struct Reduce;

impl Family for Reduce {
    fn about(&self) -> &'static About {
        &About {
            name: "reduce",
            size_meaning: "n elements (f32, i32, and f64 for the one-pass kernel)",
            default_sizes: &[1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28],
            emulator_size: 100_003,
            method: "exact for i32, within the derived rounding bound (gamma_h times the sum of magnitudes) for floats, \
         and bitwise equal over two runs; GB/s counts the bytes read, against a device-to-device copy \
         counting bytes read and written",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let n = size.one("reduce")?;
        if n.checked_mul(8).is_none() {
            return Err(Error::InvalidInput(format!("reduce size {n} overflows")));
        }
        // Input, pristine copy and partials of the widest type.
        Ok(2 * n * 8 + 64 * 1024)
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let Run { gpu, size, runs, kernels, progress, .. } = *run;
        let mut records = run_type::<f32>(gpu, size, kernels, runs, progress)?;
        records.extend(run_type::<i32>(gpu, size, kernels, runs, progress)?);
        records.extend(run_type::<f64>(gpu, size, kernels, runs, progress)?);
        Ok(records)
    }

    fn targets(&self, records: &[&Record]) -> Vec<Target> {
        percent_target(records, "f32", 1 << 28, "reduce 2^28 f32, best kernel", 95.0).into_iter().collect()
    }

    fn plots(&self, records: &[&Record], title: &str) -> Vec<super::Plot> {
        // The f32 kernels, the one-pass kernel's other types, and one copy.
        let shown: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| r.element == "f32" || (r.kernel.starts_with("reduce_fast") && r.kernel != r.ceiling))
            .collect();
        let mut plots = super::default_plots(self, &shown, title);
        for plot in &mut plots {
            plot.title = format!("Reduction: read bandwidth, with the device-to-device copy - {title}");
        }
        plots
    }
}
