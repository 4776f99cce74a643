//! The memory-access lab on the host: inputs, references, verification,
//! timing on a GPU and analysis on the emulator, for every study of
//! `gpu/src/lab.rs`: structure layout, alignment, stride, shared banks.
//!
//! Effective bandwidth counts the bytes the work needs, the same for every
//! variant of a study, so the columns compare access patterns on equal
//! work: 16 bytes per vector for the layout study (12 read, 4 written), 8
//! per element for the copies, 4 (or 8 for `f64`) per shared read for the
//! bank study.

use gpu::dev::{In, Out};
use gpu::lab::{self, BANK_READS, BLOCK};
use gpu::launch::{Kernel, Typed};

use super::{About, Family, Run, Plot, Series};
use crate::measure::{Rate, Record, Runs, Shape, bench, data, trial, verify};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// Offsets swept by the alignment study (elements).
pub const OFFSETS: [usize; 11] = [0, 1, 2, 3, 4, 7, 8, 9, 16, 24, 32];
/// Strides swept by the stride study (elements).
pub const STRIDES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Problem sizes of one lab run, from the suite's size `n`.
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
    pub fn of(n: usize) -> Self {
        Sizes { n, strided: (n / 4).max(1), tiles: (n / 1024).max(1) }
    }
}

/// The studies, each a prefix of its kernels' names and a title.
const STUDIES: [(&str, &str); 4] = [
    ("lab_len2", "Structure layout: |v|^2 of 3-vectors (16 useful bytes per vector)"),
    ("lab_copy_offset", "Alignment: out[i] = in[i + offset]"),
    ("lab_copy_stride", "Stride: out[i] = in[i * stride]"),
    ("lab_bank", "Shared-memory banks (one warp per block, 64 reads per lane)"),
];

/// The family: one kernel per access pattern.
pub struct Lab;

/// Verifies one variant (output poisoned first, compared bit for bit), then
/// times or analyses it: the record of `kernel`.
#[allow(clippy::too_many_arguments)]
fn variant<T: cudarc::driver::DeviceRepr + Copy + Default + Clone>(
    gpu: &Gpu,
    runs: Option<Runs>,
    kernel: &Kernel,
    size: &Shape,
    rate: Rate,
    out: &mut DeviceBuffer<T>,
    launch: impl Fn(&mut DeviceBuffer<T>) -> Result<()>,
    check: impl Fn(&[T]) -> std::result::Result<(), String>,
) -> Result<Record> {
    let measured = trial::of_output(gpu, runs, out, launch, check)?;
    let element = if kernel.name.contains("f64") { "f64" } else { "f32" };
    Ok(Record::of_trial("lab", kernel.name, element, size, &measured, rate))
}

/// An error for a lab kernel the host has no inputs and reference for.
fn unknown(kernel: &Kernel) -> Error {
    Error::InvalidInput(format!("the lab's host side has no reference for {}", kernel.name))
}

impl Family for Lab {
    fn about(&self) -> &'static About {
        &About {
            name: "lab",
            size_meaning: "n vectors / elements (stride study n/4, bank study n/1024 tiles)",
            default_sizes: &[1 << 24],
            emulator_size: 4096,
            method: "every output bit-exact against the host's; GB/s counts the bytes the work needs, equal for every \
         variant of a study, against a device-to-device copy",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let n = size.one("lab")?;
        if !(1024..=u32::MAX as usize / 4).contains(&n) {
            return Err(Error::InvalidInput(format!(
                "lab sizes are from 1024 to {} (got {n})",
                u32::MAX / 4
            )));
        }
        Ok(12 * n * 4 + n * 4 * 8)
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let Run { gpu, size, runs, kernels, progress, .. } = *run;
        let sizes = Sizes::of(size.one("lab")?);
        let n = sizes.n;
        // The copy ceiling, on the layout study's output size.
        let (src, mut dst) = (gpu.upload(&data::uniform_f32(4 * n, 1))?, gpu.alloc::<f32>(4 * n)?);
        let (mut records, copy) = bench::copy_record(gpu, runs, "lab", "f32", size, &src, &mut dst)?;
        drop((src, dst));
        let studies =
            |prefix: &'static str| kernels.iter().copied().filter(move |k| k.name.starts_with(prefix));
        progress("lab: structure layout");
        records.extend(layout(gpu, size, n, studies("lab_len2"), runs, copy)?);
        progress("lab: alignment and stride sweeps");
        records.extend(sweeps(gpu, size, sizes, studies("lab_copy"), runs, copy)?);
        progress("lab: shared-memory banks");
        records.extend(banks(gpu, size, sizes.tiles, studies("lab_bank"), runs, copy)?);
        Ok(records)
    }

    fn tables<'a>(&self, records: &'a [&'a Record]) -> Vec<(String, Vec<&'a Record>)> {
        STUDIES
            .iter()
            .map(|(prefix, title)| {
                let rows =
                    records.iter().copied().filter(|r| r.kernel.starts_with(prefix) || r.kernel == "copy");
                (title.to_string(), rows.collect())
            })
            .collect()
    }

    /// Bandwidth against the offset, and against the stride.
    fn plots(&self, records: &[&Record], title: &str) -> Vec<Plot> {
        let copy = records.iter().find(|r| r.kernel == "copy").and_then(|r| r.value);
        [
            ("lab_copy_offset", "start offset (elements) of out[i] = in[i + offset]", "lab_offset", false),
            ("lab_copy_stride", "stride (elements) of out[i] = in[i * stride]", "lab_stride", true),
        ]
        .into_iter()
        .filter_map(|(kernel, what, file, log_x)| {
            let points: Vec<(f64, f64)> = records
                .iter()
                .filter(|r| r.kernel.starts_with(kernel))
                .filter_map(|r| Some((r.param? as f64, r.value?)))
                .collect();
            if points.is_empty() {
                return None;
            }
            let mut series = vec![Series { name: kernel.into(), points: points.clone(), ceiling: false }];
            if let Some(c) = copy {
                let line = points.iter().map(|p| (p.0, c)).collect();
                series.push(Series { name: "device-to-device copy".into(), points: line, ceiling: true });
            }
            Some(Plot {
                file: file.into(),
                title: format!("Memory lab: {kernel} - {title}"),
                x_label: what.into(),
                y_label: "GB/s (read + written)".into(),
                log_x,
                categories: None,
                series,
            })
        })
        .collect()
    }

    /// `lab_copy_stride#k` is the k-th stride of [`STRIDES`], and
    /// `lab_copy_offset#k` the k-th offset.
    fn profiled_kernel(&self, label: &str) -> String {
        let (name, k) = label.split_once('#').map_or((label, 1), |(n, k)| (n, k.parse().unwrap_or(1)));
        let at = |list: &[usize]| list.get(k.max(1) - 1).copied().unwrap_or(0);
        match name {
            "lab_copy_stride" => format!("{name}*{}", at(&STRIDES)),
            "lab_copy_offset" => format!("{name}+{}", at(&OFFSETS)),
            _ => name.to_string(),
        }
    }

    fn notes(&self) -> &'static str {
        "How to read it: GB/s counts the bytes the work needs, equal for every variant of a study (16 per \
         vector for the layout study, 8 per element for the copies; for the bank study, the shared-memory \
         bytes read, which is why it exceeds the DRAM copy). Sectors per request count L1 requests, not DRAM \
         traffic: the three loads of the 12-byte AoS each touch ~12 sectors, but the same sectors, so after \
         the first load they hit in L1 and the DRAM bytes equal the SoA's; the 16-byte layout moves a third \
         more DRAM bytes (its pad). Misalignment costs one extra sector per request in L1, mostly absorbed \
         by the caches; stride is not."
    }
}

/// The layout study: |v|^2 of `n` vectors stored four ways.
fn layout(
    gpu: &Gpu,
    size: &Shape,
    n: usize,
    kernels: impl Iterator<Item = &'static Kernel>,
    runs: Option<Runs>,
    copy: Option<f64>,
) -> Result<Vec<Record>> {
    let (xs, ys, zs) = (data::uniform_f32(n, 2), data::uniform_f32(n, 3), data::uniform_f32(n, 4));
    let want: Vec<f32> = (0..n).map(|i| lab::len2(xs[i], ys[i], zs[i])).collect();
    let aos12: Vec<f32> = (0..n).flat_map(|i| [xs[i], ys[i], zs[i]]).collect();
    // The pad is NaN: a kernel that read it would produce NaN.
    let aos16: Vec<f32> = (0..n).flat_map(|i| [xs[i], ys[i], zs[i], f32::NAN]).collect();
    let (d12, d16) = (gpu.upload(&aos12)?, gpu.upload(&aos16)?);
    let (dx, dy, dz) = (gpu.upload(&xs)?, gpu.upload(&ys)?, gpu.upload(&zs)?);
    let mut out = gpu.alloc::<f32>(n)?;
    let grid = n.div_ceil(BLOCK) as u32;
    let rate = Rate::Bandwidth { bytes: 16 * n, copy };
    kernels
        .map(|kernel| {
            let launch = |out: &mut DeviceBuffer<f32>| match kernel.name {
                "lab_len2_aos12" => lab::lab_len2_aos12::launch(gpu, grid, &d12, out),
                "lab_len2_aos16" => lab::lab_len2_aos16::launch(gpu, grid, &d16, out),
                "lab_len2_soa" => lab::lab_len2_soa::launch(gpu, grid, &dx, &dy, &dz, out),
                "lab_len2_aos12_staged" => {
                    // SAFETY: `d12` holds the 3 n floats of the `n` vectors of
                    // `out`, and the grid covers `out` with one thread each.
                    unsafe { lab::lab_len2_aos12_staged::launch(gpu, grid, &d12, out) }
                }
                _ => Err(unknown(kernel)),
            };
            variant(gpu, runs, kernel, size, rate, &mut out, launch, |got| {
                verify::exact(kernel.name, got, &want)
            })
        })
        .collect()
}

/// The alignment and stride sweeps: copies at offsets and strides.
fn sweeps(
    gpu: &Gpu,
    size: &Shape,
    sizes: Sizes,
    kernels: impl Iterator<Item = &'static Kernel>,
    runs: Option<Runs>,
    copy: Option<f64>,
) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for kernel in kernels {
        let (m, params, separator): (usize, &[usize], char) = match kernel.name {
            "lab_copy_offset" => (sizes.n, &OFFSETS, '+'),
            "lab_copy_stride" => (sizes.strided, &STRIDES, '*'),
            _ => return Err(unknown(kernel)),
        };
        let input = data::uniform_f32(m * 32 + 32, 5);
        let dinput = gpu.upload(&input)?;
        let mut out = gpu.alloc::<f32>(m)?;
        let grid = m.div_ceil(BLOCK) as u32;
        let rate = Rate::Bandwidth { bytes: 8 * m, copy };
        for &p in params {
            let check = |got: &[f32]| {
                let want: Vec<f32> = if separator == '+' {
                    input[p..p + m].to_vec()
                } else {
                    (0..m).map(|i| input[i * p]).collect()
                };
                verify::exact(kernel.name, got, &want)
            };
            let launch = |out: &mut DeviceBuffer<f32>| {
                if separator == '+' {
                    lab::lab_copy_offset::launch(gpu, grid, &dinput, out, p as u32)
                } else {
                    lab::lab_copy_stride::launch(gpu, grid, &dinput, out, p as u32)
                }
            };
            records.push(
                variant(gpu, runs, kernel, size, rate, &mut out, launch, check)?.with_param(separator, p),
            );
        }
    }
    Ok(records)
}

/// What lane `l` reads at step `r` in each bank kernel (mirrors the
/// kernels' patterns): the tile's rows, the active lanes, and the pattern.
type Pattern = fn(usize, usize) -> (usize, usize);

fn bank_pattern(name: &str) -> Option<(usize, usize, Pattern)> {
    Some(match name {
        "lab_bank_column_31" => (31, 31, |l, r| (l, r % 31)),
        "lab_bank_row" | "lab_bank_f64_row" => (32, 32, |l, r| (r % 32, l)),
        "lab_bank_broadcast" => (32, 32, |_, r| (r % 32, 0)),
        "lab_bank_column_32" | "lab_bank_column_33" | "lab_bank_f64_column" | "lab_bank_f64_column_33" => {
            (32, 32, |l, r| (l, r % 32))
        }
        _ => return None,
    })
}

/// What every bank kernel takes: the tiles' input and one output per lane.
type BankSignature<T> = (In<T>, Out<T>);

/// An element type of the bank study: the host sums a lane's reads in it,
/// in the kernel's order, so the sums compare bit for bit.
trait Lane: verify::Exact + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Default + 'static {
    const BYTES: usize;
    fn of(x: f32) -> Self;
    fn add(self, other: Self) -> Self;
}

impl Lane for f32 {
    const BYTES: usize = 4;
    fn of(x: f32) -> Self {
        x
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
}

impl Lane for f64 {
    const BYTES: usize = 8;
    fn of(x: f32) -> Self {
        x as f64
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
}

/// The bank study: each kernel's per-lane sums against the host's, in the
/// kernel's order and type.
fn banks(
    gpu: &Gpu,
    size: &Shape,
    tiles: usize,
    kernels: impl Iterator<Item = &'static Kernel>,
    runs: Option<Runs>,
    copy: Option<f64>,
) -> Result<Vec<Record>> {
    kernels
        .map(|kernel| {
            let study = Bank { gpu, size, tiles, kernel, runs, copy };
            if kernel.name.contains("f64") { study.run::<f64>() } else { study.run::<f32>() }
        })
        .collect()
}

/// One kernel of the bank study.
struct Bank<'a> {
    gpu: &'a Gpu,
    size: &'a Shape,
    tiles: usize,
    kernel: &'static Kernel,
    runs: Option<Runs>,
    copy: Option<f64>,
}

impl Bank<'_> {
    fn run<T: Lane>(&self) -> Result<Record> {
        let Bank { gpu, size, tiles, kernel, runs, copy } = *self;
        let (rows, lanes, at) = bank_pattern(kernel.name).ok_or_else(|| unknown(kernel))?;
        let input = data::uniform_f32(tiles * rows * rows, 8);
        // What lane `l` of tile `t` sums: its reads, in the kernel's order.
        let want: Vec<T> = (0..tiles)
            .flat_map(|t| (0..32).map(move |l| (t, l)))
            .map(|(t, l)| {
                let read = |r| {
                    let (row, col) = at(l, r);
                    T::of(input[t * rows * rows + row * rows + col])
                };
                if l < lanes { (0..BANK_READS).fold(T::default(), |acc, r| acc.add(read(r))) } else { T::default() }
            })
            .collect();
        let k: Typed<BankSignature<T>> = kernel.typed().map_err(Error::InvalidInput)?;
        let din = gpu.upload(&input.iter().map(|&x| T::of(x)).collect::<Vec<_>>())?;
        let mut out = gpu.alloc::<T>(32 * tiles)?;
        // SAFETY: `din` holds rows x rows elements per tile and `out` 32 per
        // tile, for a grid of `tiles` blocks: the bank kernels' contract.
        let launch = |out: &mut DeviceBuffer<T>| unsafe { k.launch(gpu, tiles as u32, (&din, out)) };
        let rate = Rate::Bandwidth { bytes: T::BYTES * 32 * BANK_READS * tiles, copy };
        variant(gpu, runs, kernel, size, rate, &mut out, launch, |got| verify::exact(kernel.name, got, &want))
    }
}
