//! The suite: families run at their sizes, on a GPU or on the emulator,
//! and what one run measured, with where and when ([`RunReport`], the
//! JSON a run writes).

use gpu::launch::Kernel;
use serde::{Deserialize, Serialize};

use super::table::Table;
use crate::families::{Family, Run};
use crate::measure::{Record, Runs, Shape};
use crate::runtime::{Gpu, Result};

/// One family's part of a run: its sizes and the kernels chosen.
pub struct Job {
    pub family: &'static dyn Family,
    pub sizes: Vec<Shape>,
    pub kernels: Vec<&'static Kernel>,
    /// The sizes the emulator runs: those given within the family's
    /// emulator limit, or the family's emulator sizes.
    pub emulated: Vec<Shape>,
    /// The given sizes beyond the emulator's limit (a run without a GPU
    /// refuses them).
    pub too_large_to_emulate: Vec<Shape>,
    /// Bytes of device memory its largest size needs.
    pub needs: usize,
}

/// How the suite reports progress: a message for the step under way, and
/// one tick per finished step.
pub struct Progress<'a> {
    pub message: &'a dyn Fn(&str),
    pub tick: &'a dyn Fn(),
}

/// Verifies and times (when `runs` is given) every job at every size on `gpu`.
pub fn run(gpu: &Gpu, jobs: &[Job], runs: Option<Runs>, progress: &Progress) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    for job in jobs {
        for size in &job.sizes {
            let run = Run { gpu, size, kernels: &job.kernels, runs, progress: progress.message };
            records.extend(job.family.run(&run)?);
            (progress.tick)();
        }
    }
    Ok(records)
}

/// Verifies every job's kernels on the emulator at its emulated sizes,
/// with the analysis: one record per kernel and size, no timing.
pub fn emulate(jobs: &[Job], progress: &Progress) -> Result<Vec<Record>> {
    let emulator = Gpu::emulator();
    let mut records = Vec::new();
    for job in jobs {
        for size in &job.emulated {
            let message = |what: &str| (progress.message)(&format!("emulator: {what}"));
            let run = Run { gpu: &emulator, size, kernels: &job.kernels, runs: None, progress: &message };
            records.extend(job.family.run(&run)?);
        }
        (progress.tick)();
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

/// The device name of a run on the CPU emulator.
pub const EMULATOR: &str = "CPU emulator";

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
    /// Each family's sizes, as given (`8192`, `8191x8193`).
    pub sizes: Vec<(String, Vec<String>)>,
    pub iters: usize,
    pub records: Vec<Record>,
}

impl RunReport {
    /// A run on the CPU emulator: verification and analysis, no timings.
    pub fn emulated(&self) -> bool {
        self.device == EMULATOR
    }

    pub fn all_verified(&self) -> bool {
        self.records.iter().all(|r| r.verified)
    }

    /// The records of `family`.
    pub fn of(&self, family: &str) -> Vec<&Record> {
        self.records.iter().filter(|r| r.family == family).collect()
    }

    /// `NVIDIA H100 80GB HBM3 2026-11-21`: what plot titles name.
    pub fn title(&self) -> String {
        format!("{} {}", self.device, self.date)
    }
}

/// A table of records: measured columns where there are timings, and the
/// emulator's analysis (bank-conflict ways of shared loads/stores, sectors
/// per global load/store request) beside them. The family column only when
/// the records span several.
pub fn table<'a>(records: impl IntoIterator<Item = &'a Record>) -> Table {
    let records: Vec<&Record> = records.into_iter().collect();
    let several = records.windows(2).any(|w| w[0].family != w[1].family);
    let mut header = vec![
        "kernel",
        "type",
        "size",
        "verified",
        "median ms",
        "rate",
        "% of",
        "smem ways ld/st",
        "sectors ld/st",
    ];
    if several {
        header.insert(0, "family");
    }
    let mut table = Table::new(header);
    for r in records {
        let (ways, sectors) = r.analysis.map_or(("-".into(), "-".into()), |a| a.cells());
        let mut row = vec![
            r.kernel.clone(),
            r.element.clone(),
            if r.shape.is_empty() { r.size.to_string() } else { r.shape.clone() },
            if r.verified { "yes" } else { "NO" }.into(),
            r.median_ms.map_or("-".into(), |t| format!("{t:.3}")),
            r.value.map_or("-".into(), |v| format!("{v:.1} {}", r.unit)),
            r.percent.map_or("-".into(), |p| format!("{p:.1}% {}", r.ceiling)),
            ways,
            sectors,
        ];
        if several {
            row.insert(0, r.family.clone());
        }
        table.row(row);
    }
    table
}
