//! What every binary accepts: [`Common`], and the main job's own
//! arguments (`--only`, `report`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The options of every binary.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Sizes, comma-separated: a number (`4096`, a matrix edge or an element
    /// count) or dimensions (`8191x8193`), as each family reads them
    /// (`--help` of the main job lists them). Default: each family's sweep.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Kernels to run, comma-separated, with or without the family's prefix
    /// (`fast`, `transpose_fast`); a generic kernel's name selects all its
    /// instances. Default: all.
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Instances of generic kernels to run, by element type (`f32,i32,f64`).
    /// Default: all.
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<String>,
    /// Timed runs per kernel at most (slow kernels get fewer, at least 3);
    /// 0 verifies only, one launch per kernel (for a profiler or sanitizer).
    #[arg(long, default_value_t = 20)]
    pub iters: usize,
    /// Untimed runs per kernel before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Write every measurement, with device, date and git revision, as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw SVG plots into this folder (without a GPU: the emulator's
    /// bank-conflict ways and sectors per request, per kernel).
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Verify and measure every kernel family on the GPU: each kernel checked
/// against a host reference and timed with CUDA events against a ceiling
/// measured in the same run (a device-to-device copy, or cuBLAS). Without a
/// GPU, every kernel runs on the CPU emulator instead, with its
/// bank-conflict and coalescing analysis.
#[derive(Parser)]
#[command(name = "kernel-lab", version, args_conflicts_with_subcommands = true)]
pub(super) struct SuiteArgs {
    #[command(subcommand)]
    pub(super) command: Option<Command>,
    /// Families to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(super) only: Vec<String>,
    #[command(flatten)]
    pub(super) common: Common,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Write BENCHMARKS.md from a `--json` file.
    Report {
        /// The JSON a `kernel-lab --json FILE` run wrote.
        json: PathBuf,
        /// Where to write the markdown (default: BENCHMARKS.md, which an
        /// emulator run's page replaces only with `--force`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Let an emulator run's page replace a GPU run's BENCHMARKS.md.
        #[arg(long)]
        force: bool,
        /// A text file of device checks (sanitizer, profiler) to include.
        #[arg(long)]
        checks: Option<PathBuf>,
        /// Also redraw the plots into this folder.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
        /// Add the GEMM library's section from the `gemm --sweep` tables
        /// (`sweep-*.md`) in this folder.
        #[arg(long, value_name = "DIR")]
        gemm: Option<PathBuf>,
        /// Add the attention family's section from `attention --sweep`'s
        /// tables (`sweep-*.md`) and torch's beside them
        /// (`torch-sdpa-*.md`) in this folder.
        #[arg(long, value_name = "DIR")]
        attention: Option<PathBuf>,
    },
}
