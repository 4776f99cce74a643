//! The transpose family on the host: reference, launch, verification and
//! benchmark. The kernels are in `gpu/src/transpose.rs`.

use gpu::dev::{In, Out};
use gpu::launch::{Kernel, Typed};
use rayon::prelude::*;

use super::{About, Family, Plot, Run, Series, Target, default_plots, order_target, percent_target};
use crate::measure::{Rate, Record, Shape, bench, data, trial, verify};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// What every transpose kernel takes: input, output, `nx`, `ny`.
pub type Signature = (In<f32>, Out<f32>, u32, u32);

/// The family: `output = inputᵀ` for an `ny` x `nx` row-major `f32` input.
pub struct Transpose;

/// Odd shapes (`NXxNY`) the suite runs beside the squares: rows that start
/// inside sectors on one side, the other, or both, and long and flat ones.
pub const ODD_SHAPES: [&str; 6] = ["8191x8193", "8192x8191", "8191x8192", "4097x4095", "1000x9000", "9000x1000"];

/// A record of a non-square run (`8191x8193`).
fn is_odd(r: &Record) -> bool {
    r.shape.contains('x')
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

/// Queues `output = inputᵀ` for an `ny` x `nx` input with `kernel`, after
/// checking the buffers hold `nx * ny` elements (what every transpose
/// kernel's contract asks). Zero-sized problems launch nothing.
pub fn launch(
    gpu: &Gpu,
    kernel: Typed<Signature>,
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
    let grid = kernel.kernel().launch.grid(nx, ny);
    // SAFETY: both buffers hold nx * ny elements (checked above) and the grid
    // covers the matrix with the kernel's tile: the kernels' contract.
    unsafe { kernel.launch(gpu, grid, (input, output, nx, ny)) }
}

/// `kernel` as a transpose kernel: an error if it takes other parameters.
pub fn typed(kernel: &'static Kernel) -> Result<Typed<Signature>> {
    kernel.typed::<Signature>().map_err(Error::InvalidInput)
}

/// One verification run of `kernel` on a random `ny` x `nx` input, output
/// poisoned first: `Err` says why it failed (a mismatch, or the launch
/// itself, e.g. an emulator error).
pub fn run_once(
    gpu: &Gpu,
    kernel: &'static Kernel,
    nx: usize,
    ny: usize,
    seed: u64,
) -> std::result::Result<(), String> {
    let run = || -> Result<std::result::Result<(), String>> {
        let host = data::uniform_f32(nx * ny, seed);
        let input = gpu.upload(&host)?;
        let mut output = gpu.alloc::<f32>(nx * ny)?;
        gpu.poison(&mut output)?;
        launch(gpu, typed(kernel)?, &input, &mut output, nx, ny)?;
        gpu.sync()?;
        Ok(verify::exact(kernel.name, &gpu.download(&output)?, &reference(&host, nx, ny)))
    };
    run().map_err(|e| e.to_string())?
}

impl Family for Transpose {
    fn about(&self) -> &'static About {
        &About {
            name: "transpose",
            size_meaning: "an n x n f32 matrix (NXxNY: NX columns, NY rows)",
            default_sizes: &[1024, 2048, 4096, 8192],
            emulator_size: 128,
            method: "every element bit-exact against the host's transpose; the ceiling is a device-to-device copy, \
         GB/s counting bytes read and written",
        }
    }

    fn default_sizes(&self) -> Vec<Shape> {
        let squares = self.about().default_sizes.iter().copied().map(Shape::n);
        squares.chain(ODD_SHAPES.iter().map(|s| s.parse().expect("a valid shape"))).collect()
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let (nx, ny) = size.pair("transpose")?;
        Ok(2 * 4 * check_shape(nx, ny)?)
    }

    /// `N` is an `N x N` matrix.
    fn emulator_work(&self, size: &Shape) -> usize {
        size.pair("transpose").map_or(usize::MAX, |(a, b)| a.saturating_mul(b))
    }

    fn runs(&self, kernel: &'static Kernel) -> Result<()> {
        typed(kernel).map(drop)
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let Run { gpu, size, runs, kernels, progress, .. } = *run;
        let (nx, ny) = size.pair("transpose")?;
        let n = check_shape(nx, ny)?;
        let host = data::uniform_f32(n, 0x5eed);
        let want = reference(&host, nx, ny);
        let input = gpu.upload(&host)?;
        let mut output = gpu.alloc::<f32>(n)?;
        let (mut records, copy) =
            bench::copy_record(gpu, runs, "transpose", "f32", size, &input, &mut output)?;
        for kernel in kernels {
            progress(&format!("transpose {size}: {}", kernel.name));
            let k = typed(kernel)?;
            let run = |output: &mut DeviceBuffer<f32>| launch(gpu, k, &input, output, nx, ny);
            let measured = trial::of_output(gpu, runs, &mut output, run, |got| verify::exact(kernel.name, got, &want))?;
            let rate = Rate::Bandwidth { bytes: 2 * 4 * n, copy };
            records.push(Record::of_trial("transpose", kernel.name, "f32", size, &measured, rate));
        }
        Ok(records)
    }

    fn targets(&self, records: &[&Record]) -> Vec<Target> {
        let order = ["transpose_naive_row", "transpose_shared", "transpose_padded"];
        // A non-square record's size is its nx: 8192x8191 is not 8192^2.
        let (odd, squares): (Vec<&Record>, Vec<&Record>) = records.iter().partition(|r| is_odd(r));
        let fast: Vec<&Record> = odd
            .iter()
            .copied()
            .filter(|r| r.kernel == "transpose_fast" && r.percent.is_some())
            .filter(|r| size_of_shape(&r.shape).is_some_and(|(nx, ny)| nx * ny >= 1024 * 1024))
            .collect();
        let worst = fast.iter().min_by(|a, b| a.percent.unwrap_or(0.0).total_cmp(&b.percent.unwrap_or(0.0)));
        let odd_target = worst.map(|w| {
            let p = w.percent.unwrap_or(0.0);
            Target {
                what: "transpose_fast at every odd shape of at least 1024^2 elements: at least 90% of the in-run copy"
                    .into(),
                measured: format!("lowest {p:.1}% at {} (of {} shapes)", w.shape, fast.len()),
                met: p >= 90.0 && fast.iter().all(|r| r.verified),
            }
        });
        [
            percent_target(&squares, "f32", 8192, "transpose 8192 x 8192, best kernel", 90.0),
            order_target(&squares, "transpose 8192 x 8192: naive < shared < padded", &order, "f32", 8192),
            odd_target,
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The squares' rates against the size, and a bar per odd shape of each
    /// tiled kernel's percentage of the in-run copy.
    fn plots(&self, records: &[&Record], title: &str) -> Vec<Plot> {
        let (odd, squares): (Vec<&Record>, Vec<&Record>) = records.iter().partition(|r| is_odd(r));
        let mut plots = default_plots(self, &squares, title);
        let mut shapes: Vec<String> = Vec::new();
        for r in &odd {
            if !shapes.contains(&r.shape) {
                shapes.push(r.shape.clone());
            }
        }
        let mut series: Vec<Series> = Vec::new();
        for r in odd.iter().filter(|r| r.percent.is_some() && r.kernel != r.ceiling) {
            let x = shapes.iter().position(|s| *s == r.shape).unwrap_or(0) as f64;
            let point = (x, r.percent.unwrap_or(0.0));
            match series.iter_mut().find(|s| s.name == r.kernel) {
                Some(s) => s.points.push(point),
                None => series.push(Series { name: r.kernel.clone(), points: vec![point], ceiling: false }),
            }
        }
        if !series.is_empty() {
            series.push(Series {
                name: "copy".into(),
                points: (0..shapes.len()).map(|i| (i as f64, 100.0)).collect(),
                ceiling: true,
            });
            plots.push(Plot {
                file: "transpose_odd".into(),
                title: format!("transpose at odd shapes as % of the in-run copy - {title}"),
                x_label: "shape (nx x ny)".into(),
                y_label: "% of the copy".into(),
                log_x: false,
                categories: Some(shapes),
                series,
            });
        }
        plots
    }
}

/// `(nx, ny)` of a record's `NXxNY` shape.
fn size_of_shape(shape: &str) -> Option<(usize, usize)> {
    let (nx, ny) = shape.split_once('x')?;
    Some((nx.parse().ok()?, ny.parse().ok()?))
}
