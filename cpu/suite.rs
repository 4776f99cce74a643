//! The suite: every kernel family run, verified and measured in one go, its
//! results as records (JSON), a summary table, `BENCHMARKS.md` and plots.
//!
//! The registry is [`FAMILIES`]: a family names its kernels (the `Kernel`
//! constants of `gpu/`), its default sizes, and how one size is run.

use serde::{Deserialize, Serialize};

use crate::bench::Runs;
use crate::device::Gpu;
use crate::error::{Error, Result};
use crate::report::Table;
use crate::{reduce, sgemm, transpose};

/// A kernel family of the suite.
pub struct Family {
    /// `transpose`, `reduce`, `sgemm`: the name `--only` takes.
    pub name: &'static str,
    /// What a size means for this family.
    pub size_meaning: &'static str,
    /// Sizes run when `--sizes` is not given (the last is the headline).
    pub default_sizes: &'static [usize],
    /// Every kernel the family launches (for the registry test).
    pub kernels: fn() -> Vec<gpu::launch::Kernel>,
    /// Runs the whole family at one size.
    pub run: fn(&Gpu, usize, Runs, &dyn Fn(&str)) -> Result<Vec<Record>>,
}

/// The registry: add a family here and it runs in the suite, shows in the
/// report and is checked against the PTX by the tests.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "transpose",
        size_meaning: "an n x n f32 matrix",
        default_sizes: &[1024, 2048, 4096, 8192],
        kernels: || transpose::KERNELS.to_vec(),
        run: run_transpose,
    },
    Family {
        name: "reduce",
        size_meaning: "n elements (f32, i32, and f64 for the fast kernel)",
        default_sizes: &[1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28],
        kernels: || reduce::VARIANTS.iter().flat_map(|v| [v.i32, v.f32, v.f64]).flatten().collect(),
        run: run_reduce,
    },
    Family {
        name: "sgemm",
        size_meaning: "m = n = k",
        default_sizes: &[1024, 2048, 4096, 8192],
        kernels: || sgemm::KERNELS.to_vec(),
        run: run_sgemm,
    },
];

/// One measurement: a kernel (or the ceiling: `copy`, `cublas`) at one size.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub family: String,
    pub kernel: String,
    /// `f32`, `i32`, `f64`.
    pub element: String,
    pub size: usize,
    pub verified: bool,
    /// Why verification failed.
    pub error: Option<String>,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub runs: Option<usize>,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
    pub value: Option<f64>,
    /// What `percent` is of: `copy` (device-to-device copy) or `cublas`.
    pub ceiling: String,
    pub percent: Option<f64>,
    /// Relative error against the f64 reference (sgemm).
    pub relative_error: Option<f64>,
}

/// Everything one run of the suite measured, with where and when.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub device: String,
    pub compute_capability: String,
    pub multiprocessors: i32,
    pub memory_bytes: usize,
    pub driver: String,
    pub ptx: String,
    pub date: String,
    pub git_revision: String,
    pub families: Vec<String>,
    pub sizes: Vec<(String, Vec<usize>)>,
    pub iters: usize,
    pub records: Vec<Record>,
}

impl RunReport {
    pub fn all_verified(&self) -> bool {
        self.records.iter().all(|r| r.verified)
    }
}

fn bandwidth_record(
    family: &str,
    kernel: &str,
    element: &str,
    size: usize,
    timing: Option<crate::bench::Timing>,
    bytes: usize,
    copy_gbps: f64,
    verified: &std::result::Result<(), String>,
) -> Record {
    let value = timing.map(|t| t.gb_per_s(bytes));
    Record {
        family: family.into(),
        kernel: kernel.into(),
        element: element.into(),
        size,
        verified: verified.is_ok(),
        error: verified.clone().err(),
        median_ms: timing.map(|t| t.median_ms),
        min_ms: timing.map(|t| t.min_ms),
        max_ms: timing.map(|t| t.max_ms),
        runs: timing.map(|t| t.runs),
        unit: "GB/s".into(),
        value,
        ceiling: "copy".into(),
        percent: value.map(|v| 100.0 * v / copy_gbps),
        relative_error: None,
    }
}

fn run_transpose(gpu: &Gpu, size: usize, runs: Runs, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    progress(&format!("transpose {size} x {size}"));
    let r = transpose::benchmark(gpu, &transpose::KERNELS, size, size, runs, 0x5eed)?;
    let mut records = vec![bandwidth_record(
        "transpose",
        "copy",
        "f32",
        size,
        Some(r.copy),
        2 * size * size * 4,
        r.copy_gb_per_s,
        &Ok(()),
    )];
    records.extend(r.kernels.iter().map(|m| {
        bandwidth_record("transpose", m.name, "f32", size, m.timing, m.bytes, r.copy_gb_per_s, &m.verified)
    }));
    Ok(records)
}

fn run_reduce(gpu: &Gpu, size: usize, runs: Runs, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    fn one<T: reduce::Element>(gpu: &Gpu, size: usize, runs: Runs, records: &mut Vec<Record>) -> Result<()> {
        let r = reduce::benchmark::<T>(gpu, &reduce::VARIANTS, size, runs, 0x5eed)?;
        let bytes = size * size_of::<T>();
        records.push(bandwidth_record(
            "reduce",
            "copy",
            T::NAME,
            size,
            Some(r.copy),
            2 * bytes,
            r.copy_gb_per_s,
            &Ok(()),
        ));
        records.extend(r.kernels.iter().map(|m| {
            bandwidth_record(
                "reduce",
                &m.name,
                T::NAME,
                size,
                m.timing,
                m.bytes,
                r.copy_gb_per_s,
                &m.verified,
            )
        }));
        Ok(())
    }
    let mut records = Vec::new();
    progress(&format!("reduce {size} f32"));
    one::<f32>(gpu, size, runs, &mut records)?;
    progress(&format!("reduce {size} i32"));
    one::<i32>(gpu, size, runs, &mut records)?;
    progress(&format!("reduce {size} f64"));
    one::<f64>(gpu, size, runs, &mut records)?;
    Ok(records)
}

fn run_sgemm(gpu: &Gpu, size: usize, runs: Runs, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    let measured = sgemm::benchmark(gpu, &sgemm::KERNELS, size, runs, 0x5eed, progress)?;
    let peer = measured.iter().find(|m| m.name == "cublas").and_then(sgemm::Measurement::tflops);
    Ok(measured
        .iter()
        .map(|m| Record {
            family: "sgemm".into(),
            kernel: m.name.clone(),
            element: "f32".into(),
            size,
            verified: m.verified.is_ok(),
            error: m.verified.clone().err(),
            median_ms: m.timing.map(|t| t.median_ms),
            min_ms: m.timing.map(|t| t.min_ms),
            max_ms: m.timing.map(|t| t.max_ms),
            runs: m.timing.map(|t| t.runs),
            unit: "TFLOP/s".into(),
            value: m.tflops(),
            ceiling: "cublas".into(),
            percent: m.tflops().zip(peer).map(|(t, p)| 100.0 * t / p),
            relative_error: m.check.map(|c| c.relative_error),
        })
        .collect())
}

/// The families named in `only` (all when empty), or an error listing them.
pub fn select(only: &[String]) -> Result<Vec<&'static Family>> {
    let all: Vec<&'static Family> = FAMILIES.iter().collect();
    crate::report::select(only, &all, |f| f.name, "family")
}

/// Checks sizes before anything is allocated: positive, and within what
/// the family's kernels take.
pub fn check_sizes(family: &Family, sizes: &[usize]) -> Result<()> {
    for &size in sizes {
        if size == 0 {
            return Err(Error::InvalidInput(format!("{} sizes must be positive (got 0)", family.name)));
        }
        match family.name {
            "transpose" => transpose::check_shape(size, size).map(|_| ())?,
            "sgemm" => sgemm::Problem::square(size).check()?,
            _ => {}
        }
    }
    Ok(())
}

/// Bytes of device memory one size of a family needs at most.
pub fn bytes_needed(family: &Family, size: usize) -> usize {
    match family.name {
        "transpose" => 2 * size * size * 4,
        "reduce" => 2 * size * 8 + 64 * 1024,
        _ => 4 * size * size * 4,
    }
}

/// The summary table of a run.
pub fn summary(report: &RunReport) -> Table {
    let mut table = Table::new(["family", "kernel", "type", "size", "verified", "median ms", "rate", "% of"]);
    for r in &report.records {
        table.row([
            r.family.clone(),
            r.kernel.clone(),
            r.element.clone(),
            r.size.to_string(),
            if r.verified { "yes" } else { "NO" }.into(),
            r.median_ms.map_or("-".into(), |t| format!("{t:.3}")),
            r.value.map_or("-".into(), |v| format!("{v:.1} {}", r.unit)),
            r.percent.map_or("-".into(), |p| format!("{p:.1}% {}", r.ceiling)),
        ]);
    }
    table
}
