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
    /// The size the emulator verifies and analyses each kernel at.
    pub emulator_size: usize,
    /// Verifies every kernel on the emulator at `emulator_size` with the
    /// analysis on: one record per kernel, no timing.
    pub emulate: fn(&Gpu, &dyn Fn(&str)) -> Result<Vec<Record>>,
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
        emulator_size: 128,
        emulate: emulate_transpose,
    },
    Family {
        name: "reduce",
        size_meaning: "n elements (f32, i32, and f64 for the fast kernel)",
        default_sizes: &[1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28],
        kernels: || reduce::VARIANTS.iter().flat_map(|v| [v.i32, v.f32, v.f64]).flatten().collect(),
        run: run_reduce,
        emulator_size: 100_003,
        emulate: emulate_reduce,
    },
    Family {
        name: "sgemm",
        size_meaning: "m = n = k",
        default_sizes: &[1024, 2048, 4096, 8192],
        kernels: || sgemm::KERNELS.to_vec(),
        run: run_sgemm,
        emulator_size: 128,
        emulate: emulate_sgemm,
    },
    Family {
        name: "lab",
        size_meaning: "n vectors / elements (stride study n/4, bank study n/1024 tiles)",
        default_sizes: &[1 << 24],
        kernels: || {
            let mut k = gpu::lab::LAYOUT.to_vec();
            k.extend([gpu::lab::COPY_OFFSET, gpu::lab::COPY_STRIDE]);
            k.extend(gpu::lab::BANKS);
            k
        },
        run: |gpu, size, runs, progress| {
            crate::lab::run(gpu, crate::lab::Sizes::gpu(size), Some(runs), progress)
        },
        emulator_size: 1000,
        emulate: |gpu, progress| crate::lab::run(gpu, crate::lab::Sizes::EMULATOR, None, progress),
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
    /// The emulator's analysis of the same kernel at the family's
    /// emulator size (see [`Family::emulate`]).
    #[serde(default)]
    pub analysis: Option<AnalysisColumns>,
    /// The swept parameter (the lab's offset or stride), if any.
    #[serde(default)]
    pub param: Option<usize>,
}

/// The emulator's figures for one kernel. Shared "ways": wavefronts over
/// the fewest the same accesses could take (1.0 conflict-free at any access
/// width, 32.0 when all 32 lanes hit one bank). Global: 32-byte sectors per
/// warp request (4.0 for 32 lanes reading 128 contiguous bytes, 32.0 when
/// each lane is in its own sector). `None` where the kernel makes no such
/// access.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct AnalysisColumns {
    pub size: usize,
    pub shared_load_ways: Option<f64>,
    /// Wavefronts per shared-load request (what ncu's
    /// `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld` / instructions is).
    #[serde(default)]
    pub shared_load_wavefronts: Option<f64>,
    pub shared_store_ways: Option<f64>,
    pub global_load_sectors: Option<f64>,
    pub global_store_sectors: Option<f64>,
    /// Least sectors over sectors touched, loads and stores together.
    pub global_efficiency: Option<f64>,
}

impl AnalysisColumns {
    pub fn from(size: usize, a: &emu::Analysis) -> Self {
        let ways = |s: emu::AccessStats| (s.requests > 0).then(|| 1.0 / s.efficiency());
        let sectors = |s: emu::AccessStats| (s.requests > 0).then(|| s.per_request());
        let mut global = a.global_loads;
        global.requests += a.global_stores.requests;
        global.cost += a.global_stores.cost;
        global.ideal += a.global_stores.ideal;
        AnalysisColumns {
            size,
            shared_load_ways: ways(a.shared_loads),
            shared_load_wavefronts: sectors(a.shared_loads),
            shared_store_ways: ways(a.shared_stores),
            global_load_sectors: sectors(a.global_loads),
            global_store_sectors: sectors(a.global_stores),
            global_efficiency: (global.requests > 0).then(|| global.efficiency()),
        }
    }

    /// `ld/st` cells of the summary.
    pub fn cells(&self) -> (String, String) {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        (
            format!("{}/{}", f(self.shared_load_ways), f(self.shared_store_ways)),
            format!("{}/{}", f(self.global_load_sectors), f(self.global_store_sectors)),
        )
    }
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

/// The record of a memory-bound kernel: `bytes` per run over the median
/// time, and that as a percentage of the in-run copy where there is one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bandwidth_record(
    family: &str,
    kernel: &str,
    element: &str,
    size: usize,
    timing: Option<crate::bench::Timing>,
    bytes: usize,
    copy_gbps: Option<f64>,
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
        percent: value.zip(copy_gbps).map(|(v, c)| 100.0 * v / c),
        relative_error: None,
        analysis: None,
        param: None,
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
        Some(r.copy_gb_per_s),
        &Ok(()),
    )];
    records.extend(r.kernels.iter().map(|m| {
        bandwidth_record(
            "transpose",
            m.name,
            "f32",
            size,
            m.timing,
            m.bytes,
            Some(r.copy_gb_per_s),
            &m.verified,
        )
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
            Some(r.copy_gb_per_s),
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
                Some(r.copy_gb_per_s),
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
            analysis: None,
            param: None,
        })
        .collect())
}

/// A record of an emulator run: verified or not, with the analysis.
fn emulated(
    family: &str,
    kernel: &str,
    element: &str,
    size: usize,
    gpu: &Gpu,
    verified: std::result::Result<(), String>,
) -> Record {
    let analysis = gpu.take_analysis();
    Record {
        family: family.into(),
        kernel: kernel.into(),
        element: element.into(),
        size,
        verified: verified.is_ok(),
        error: verified.err(),
        median_ms: None,
        min_ms: None,
        max_ms: None,
        runs: None,
        unit: String::new(),
        value: None,
        ceiling: String::new(),
        percent: None,
        relative_error: None,
        analysis: Some(AnalysisColumns::from(size, &analysis)),
        param: None,
    }
}

fn emulate_transpose(gpu: &Gpu, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    let size = 128;
    let mut records = Vec::new();
    for kernel in transpose::KERNELS {
        progress(&format!("emulator: transpose {} {size} x {size}", kernel.name));
        gpu.set_analysis(true);
        let verified = transpose::run_once(gpu, kernel, size, size, 7);
        gpu.set_analysis(false);
        records.push(emulated("transpose", kernel.name, "f32", size, gpu, verified));
    }
    Ok(records)
}

fn emulate_reduce(gpu: &Gpu, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    fn one<T: reduce::Element>(
        gpu: &Gpu,
        variant: gpu::reduce::Variant,
        n: usize,
        progress: &dyn Fn(&str),
    ) -> Option<Record> {
        let kernel = T::kernel(&variant)?;
        progress(&format!("emulator: {} {n}", kernel.name));
        gpu.set_analysis(true);
        let verified = reduce::run_once::<T>(gpu, variant, n, 7);
        gpu.set_analysis(false);
        Some(emulated("reduce", kernel.name, T::NAME, n, gpu, verified))
    }
    let n = 100_003;
    let mut records = Vec::new();
    for v in reduce::VARIANTS {
        records.extend(one::<f32>(gpu, v, n, progress));
        records.extend(one::<i32>(gpu, v, n, progress));
        records.extend(one::<f64>(gpu, v, n, progress));
    }
    Ok(records)
}

fn emulate_sgemm(gpu: &Gpu, progress: &dyn Fn(&str)) -> Result<Vec<Record>> {
    let size = 128;
    let mut records = Vec::new();
    for kernel in sgemm::KERNELS {
        progress(&format!("emulator: {} {size}^3", kernel.name));
        gpu.set_analysis(true);
        let verified = sgemm::run_once(gpu, kernel, size, 7);
        gpu.set_analysis(false);
        records.push(emulated("sgemm", kernel.name, "f32", size, gpu, verified));
    }
    Ok(records)
}

/// Copies the emulator's analysis of each kernel onto the GPU records of
/// the same kernel and element type.
pub fn attach_analysis(records: &mut [Record], emulated: &[Record]) {
    for r in records.iter_mut() {
        r.analysis = emulated
            .iter()
            .find(|e| e.family == r.family && e.kernel == r.kernel && e.element == r.element)
            .and_then(|e| e.analysis);
    }
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
        "lab" => 12 * size * 4 + size * 4 * 8,
        _ => 4 * size * size * 4,
    }
}

/// The summary table of a run: measured columns where there are timings,
/// and the emulator's analysis (bank-conflict ways of shared loads/stores,
/// sectors per global load/store request) beside them.
pub fn summary(report: &RunReport) -> Table {
    let mut table = Table::new([
        "family",
        "kernel",
        "type",
        "size",
        "verified",
        "median ms",
        "rate",
        "% of",
        "smem ways ld/st",
        "sectors ld/st",
    ]);
    for r in &report.records {
        let (ways, sectors) = r.analysis.map_or(("-".into(), "-".into()), |a| a.cells());
        table.row([
            r.family.clone(),
            r.kernel.clone(),
            r.element.clone(),
            r.size.to_string(),
            if r.verified { "yes" } else { "NO" }.into(),
            r.median_ms.map_or("-".into(), |t| format!("{t:.3}")),
            r.value.map_or("-".into(), |v| format!("{v:.1} {}", r.unit)),
            r.percent.map_or("-".into(), |p| format!("{p:.1}% {}", r.ceiling)),
            ways,
            sectors,
        ]);
    }
    table
}
