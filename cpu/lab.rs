//! The memory-access lab on the host: inputs, references, verification,
//! timing on a GPU and analysis on the emulator, for every study of
//! `gpu/src/lab.rs`: structure layout, alignment, stride, shared banks.
//!
//! Effective bandwidth counts the bytes the work needs, the same for every
//! variant of a study, so the columns compare access patterns on equal
//! work: 16 bytes per vector for the layout study (12 read, 4 written), 8
//! per element for the copies, 4 (or 8 for `f64`) per shared read for the
//! bank study.

use gpu::launch::Arg;
use gpu::lab::{self, BANK_READS, BLOCK};
use gpu::launch::{Dim3, Kernel};

use crate::bench::{self, Runs, Timing};
use crate::device::{DeviceBuffer, Gpu};
use crate::error::Result;
use crate::suite::{AnalysisColumns, Record, bandwidth_record};
use crate::transpose::random_input;

/// Offsets swept by the alignment study (elements).
pub const OFFSETS: [usize; 11] = [0, 1, 2, 3, 4, 7, 8, 9, 16, 24, 32];
/// Strides swept by the stride study (elements).
pub const STRIDES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Problem sizes of one lab run.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Vectors of the layout study, elements of the alignment study.
    pub n: usize,
    /// Elements of the stride study.
    pub strided: usize,
    /// Blocks (tiles) of the bank study.
    pub tiles: usize,
}

impl Sizes {
    /// The GPU default, `n` from the suite's size.
    pub fn gpu(n: usize) -> Self {
        Sizes { n, strided: (n / 4).max(1), tiles: (n / 1024).max(1) }
    }
    /// Small enough for the emulator.
    pub const EMULATOR: Sizes = Sizes { n: 1000, strided: 700, tiles: 3 };
}

/// Runs one variant: poisons the output, launches, verifies with `check`,
/// then times it (`runs`) or takes the emulator's analysis.
#[allow(clippy::too_many_arguments)]
fn one(
    gpu: &Gpu,
    kernel: &Kernel,
    param: Option<usize>,
    size: usize,
    bytes: usize,
    copy_gbps: Option<f64>,
    runs: Option<Runs>,
    mut launch: impl FnMut() -> Result<()>,
    check: impl FnOnce() -> std::result::Result<(), String>,
) -> Result<Record> {
    gpu.set_analysis(gpu.is_emulator());
    let outcome = launch().and_then(|_| gpu.sync());
    gpu.set_analysis(false);
    let analysis = gpu.take_analysis();
    let verified = outcome.map_err(|e| e.to_string()).and_then(|_| check());
    let timing: Option<Timing> = match runs {
        Some(runs) if verified.is_ok() => Some(bench::time(gpu, runs, &mut launch)?),
        _ => None,
    };
    let name = match param {
        Some(p) if kernel.name.ends_with("offset") => format!("{}+{p}", kernel.name),
        Some(p) => format!("{}*{p}", kernel.name),
        None => kernel.name.to_string(),
    };
    let element = if kernel.name.contains("f64") { "f64" } else { "f32" };
    let mut record = bandwidth_record("lab", &name, element, size, timing, bytes, copy_gbps, &verified);
    record.analysis = gpu.is_emulator().then(|| AnalysisColumns::from(size, &analysis));
    record.param = param;
    Ok(record)
}

fn exact(name: &str, got: &[f32], want: &[f32]) -> std::result::Result<(), String> {
    crate::transpose::verify_exact(name, got, want).map_err(|e| e.to_string())
}

/// Every study at `sizes`: timed when `runs` is given (a GPU), analysed
/// otherwise (the emulator).
pub fn run(gpu: &Gpu, sizes: Sizes, runs: Option<Runs>, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    let n = sizes.n;

    // The copy ceiling, on the layout study's output size.
    let copy_gbps = match runs {
        Some(runs) => {
            let src = gpu.upload(&random_input(4 * n, 1))?;
            let mut dst = gpu.alloc::<f32>(4 * n)?;
            let (copy, gbps) = bench::copy_ceiling(gpu, &src, &mut dst, runs)?;
            records.push(bandwidth_record(
                "lab",
                "copy",
                "f32",
                n,
                Some(copy),
                2 * 4 * n * 4,
                Some(gbps),
                &Ok(()),
            ));
            Some(gbps)
        }
        None => None,
    };

    // Structure layout.
    progress("lab: structure layout");
    let (xs, ys, zs) = (random_input(n, 2), random_input(n, 3), random_input(n, 4));
    let want: Vec<f32> = (0..n).map(|i| lab::len2(xs[i], ys[i], zs[i])).collect();
    let aos12: Vec<f32> = (0..n).flat_map(|i| [xs[i], ys[i], zs[i]]).collect();
    // The pad is NaN: a kernel that read it would produce NaN.
    let aos16: Vec<f32> = (0..n).flat_map(|i| [xs[i], ys[i], zs[i], f32::NAN]).collect();
    let (d12, d16) = (gpu.upload(&aos12)?, gpu.upload(&aos16)?);
    let (dx, dy, dz) = (gpu.upload(&xs)?, gpu.upload(&ys)?, gpu.upload(&zs)?);
    let mut out = gpu.alloc::<f32>(n)?;
    let grid = Dim3::x(n.div_ceil(BLOCK) as u32);
    for kernel in lab::LAYOUT {
        let f = gpu.function(&kernel)?;
        let inputs: Vec<Arg> = match kernel.name {
            "lab_len2_aos16" => vec![d16.arg()],
            "lab_len2_soa" => vec![dx.arg(), dy.arg(), dz.arg()],
            _ => vec![d12.arg()],
        };
        let args: Vec<Arg> = inputs.into_iter().chain([out.arg(), Arg::U32(n as u32)]).collect();
        gpu.poison(&mut out)?;
        let out_ref: &DeviceBuffer<f32> = &out;
        let rec = one(
            gpu,
            &kernel,
            None,
            n,
            16 * n,
            copy_gbps,
            runs,
            || gpu.launch(&f, grid, &args),
            || exact(kernel.name, &gpu.download(out_ref).map_err(|e| e.to_string())?, &want),
        )?;
        records.push(rec);
    }

    // Alignment: out[i] = input[i + offset].
    progress("lab: alignment sweep");
    let input = random_input(n + 32, 5);
    let dinput = gpu.upload(&input)?;
    let f = gpu.function(&lab::COPY_OFFSET)?;
    for offset in OFFSETS {
        gpu.poison(&mut out)?;
        let args = [dinput.arg(), out.arg(), Arg::U32(n as u32), Arg::U32(offset as u32)];
        let out_ref: &DeviceBuffer<f32> = &out;
        let rec = one(
            gpu,
            &lab::COPY_OFFSET,
            Some(offset),
            n,
            8 * n,
            copy_gbps,
            runs,
            || gpu.launch(&f, grid, &args),
            || {
                exact(
                    "lab_copy_offset",
                    &gpu.download(out_ref).map_err(|e| e.to_string())?,
                    &input[offset..offset + n],
                )
            },
        )?;
        records.push(rec);
    }

    // Stride: out[i] = input[i * stride].
    progress("lab: stride sweep");
    let m = sizes.strided;
    let input = random_input(m * 32, 6);
    let dinput = gpu.upload(&input)?;
    let mut sout = gpu.alloc::<f32>(m)?;
    let f = gpu.function(&lab::COPY_STRIDE)?;
    let sgrid = Dim3::x(m.div_ceil(BLOCK) as u32);
    for stride in STRIDES {
        gpu.poison(&mut sout)?;
        let args = [dinput.arg(), sout.arg(), Arg::U32(m as u32), Arg::U32(stride as u32)];
        let want: Vec<f32> = (0..m).map(|i| input[i * stride]).collect();
        let out_ref: &DeviceBuffer<f32> = &sout;
        let rec = one(
            gpu,
            &lab::COPY_STRIDE,
            Some(stride),
            m,
            8 * m,
            copy_gbps,
            runs,
            || gpu.launch(&f, sgrid, &args),
            || exact("lab_copy_stride", &gpu.download(out_ref).map_err(|e| e.to_string())?, &want),
        )?;
        records.push(rec);
    }

    // Shared-memory banks.
    progress("lab: shared-memory banks");
    records.extend(banks(gpu, sizes.tiles, copy_gbps, runs)?);
    Ok(records)
}

/// What lane `l` reads at step `r` in each bank kernel (mirrors the
/// kernels' closures), and the tile's rows.
/// Lane and step to the (row, column) read.
type Pattern = fn(usize, usize) -> (usize, usize);

fn bank_pattern(name: &str) -> (usize, usize, Pattern) {
    match name {
        "lab_bank_column_31" => (31, 31, |l, r| (l, r % 31)),
        "lab_bank_row" | "lab_bank_f64_row" => (32, 32, |l, r| (r % 32, l)),
        "lab_bank_broadcast" => (32, 32, |_, r| (r % 32, 0)),
        _ => (32, 32, |l, r| (l, r % 32)),
    }
}

/// The bank study: each kernel's per-lane sums against the host's.
fn banks(gpu: &Gpu, tiles: usize, copy_gbps: Option<f64>, runs: Option<Runs>) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    let grid = Dim3::x(tiles as u32);
    for kernel in lab::BANKS {
        let (rows, lanes, at) = bank_pattern(kernel.name);
        let f = gpu.function(&kernel)?;
        let input = random_input(tiles * rows * rows, 8);
        // What lane `l` of tile `t` sums, in the kernel's order, in `T`.
        let expected = |tile: usize, l: usize| (0..BANK_READS).map(move |r| (tile, at(l, r)));
        let value =
            |(tile, (row, col)): (usize, (usize, usize))| input[tile * rows * rows + row * rows + col];
        let reads = 32 * BANK_READS * tiles;
        let rec = if kernel.name.contains("f64") {
            let input64: Vec<f64> = input.iter().map(|&x| x as f64).collect();
            let din = gpu.upload(&input64)?;
            let mut out = gpu.alloc::<f64>(32 * tiles)?;
            gpu.poison(&mut out)?;
            let args = [din.arg(), out.arg()];
            let out_ref: &DeviceBuffer<f64> = &out;
            let want: Vec<f64> = (0..tiles)
                .flat_map(|t| (0..32).map(move |l| (t, l)))
                .map(|(t, l)| {
                    if l < lanes { expected(t, l).fold(0.0f64, |acc, x| acc + value(x) as f64) } else { 0.0 }
                })
                .collect();
            one(
                gpu,
                &kernel,
                None,
                tiles,
                8 * reads,
                copy_gbps,
                runs,
                || gpu.launch(&f, grid, &args),
                || {
                    let got = gpu.download(out_ref).map_err(|e| e.to_string())?;
                    if got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()) {
                        Ok(())
                    } else {
                        Err(format!("{}: sums differ", kernel.name))
                    }
                },
            )?
        } else {
            let din = gpu.upload(&input)?;
            let mut out = gpu.alloc::<f32>(32 * tiles)?;
            gpu.poison(&mut out)?;
            let args = [din.arg(), out.arg()];
            let out_ref: &DeviceBuffer<f32> = &out;
            let want: Vec<f32> = (0..tiles)
                .flat_map(|t| (0..32).map(move |l| (t, l)))
                .map(
                    |(t, l)| {
                        if l < lanes { expected(t, l).fold(0.0f32, |acc, x| acc + value(x)) } else { 0.0 }
                    },
                )
                .collect();
            one(
                gpu,
                &kernel,
                None,
                tiles,
                4 * reads,
                copy_gbps,
                runs,
                || gpu.launch(&f, grid, &args),
                || exact(kernel.name, &gpu.download(out_ref).map_err(|e| e.to_string())?, &want),
            )?
        };
        records.push(rec);
    }
    Ok(records)
}
