//! `cargo run --release`: the main job. Runs every kernel family, verifies
//! and times each kernel, prints one summary, and optionally writes every
//! measurement as JSON and the plots. `kernel-lab report` turns such a JSON
//! file into `BENCHMARKS.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with, today};
use kernel_lab::device::Gpu;
use kernel_lab::suite::{self, RunReport};
use kernel_lab::{Error, publish};

/// Verify and measure every kernel family on the GPU: transpose, reduce,
/// sgemm. Each kernel is checked against a host reference and timed with
/// CUDA events against a ceiling measured in the same run (a
/// device-to-device copy, or cuBLAS).
#[derive(Parser)]
#[command(version, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Families to run, comma-separated: transpose, reduce, sgemm.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Sizes, comma-separated, for every family run: the matrix edge for
    /// transpose and sgemm, the element count for reduce. Default: each
    /// family's own sweep (transpose and sgemm 1024..8192, reduce 2^20..2^28).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Timed runs per kernel at most (slow kernels get fewer, at least 3).
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Write every measurement, with device, date and git revision, as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw SVG plots (one per family) into this folder.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Write BENCHMARKS.md from a `--json` file.
    Report {
        /// The JSON a `kernel-lab --json FILE` run wrote.
        json: PathBuf,
        /// Where to write the markdown.
        #[arg(long, default_value = "BENCHMARKS.md")]
        out: PathBuf,
        /// A text file of device checks (sanitizer, profiler) to include.
        #[arg(long)]
        checks: Option<PathBuf>,
        /// Also redraw the plots into this folder.
        #[arg(long, value_name = "DIR")]
        plots: Option<PathBuf>,
    },
}

/// The git revision: `KERNEL_LAB_GIT_REV` (set where the binary runs
/// without a checkout), else `git rev-parse`, else `unknown`.
fn git_revision() -> String {
    if let Ok(rev) = std::env::var("KERNEL_LAB_GIT_REV") {
        return rev;
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn read_file(path: &PathBuf) -> kernel_lab::Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", path.display())))
}

fn write_file(path: &PathBuf, text: &str) -> kernel_lab::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| Error::InvalidInput(format!("cannot write {}: {e}", path.display())))
}

fn report(
    json: &PathBuf,
    out: &PathBuf,
    checks: Option<&PathBuf>,
    plots: Option<&PathBuf>,
) -> kernel_lab::Result<bool> {
    let run: RunReport = serde_json::from_str(&read_file(json)?).map_err(|e| {
        Error::InvalidInput(format!("{} is not a kernel-lab --json file: {e}", json.display()))
    })?;
    let checks = checks.map(read_file).transpose()?;
    write_file(out, &publish::markdown(&run, checks.as_deref()))?;
    println!("wrote {}", out.display());
    if let Some(dir) = plots {
        for p in publish::plots(&run, dir)? {
            println!("wrote {}", p.display());
        }
    }
    Ok(true)
}

fn run(args: &Args) -> kernel_lab::Result<bool> {
    // Everything the user could have got wrong is checked before the GPU
    // is touched or anything allocated.
    let families = suite::select(&args.only)?;
    let plan: Vec<(&suite::Family, Vec<usize>)> = families
        .iter()
        .map(|f| (*f, if args.sizes.is_empty() { f.default_sizes.to_vec() } else { args.sizes.clone() }))
        .collect();
    for (family, sizes) in &plan {
        suite::check_sizes(family, sizes)?;
    }
    if args.iters == 0 {
        return Err(Error::InvalidInput("--iters must be at least 1".into()));
    }
    let gpu = match Gpu::open(args.device) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { count: 0, .. })) => {
            println!(
                "{e}: running every kernel on the CPU emulator at small sizes instead (verification and analysis, no timings)"
            );
            return emulate(args, &plan);
        }
        Err(e) => return Err(e),
    };
    for (family, sizes) in &plan {
        for &size in sizes {
            gpu.check_fits(suite::bytes_needed(family, size))?;
        }
    }
    println!("{}", device_line(&gpu));

    let steps: usize = plan.iter().map(|(_, s)| s.len() + 1).sum();
    let bar = progress_bar(steps, args.quiet);
    let runs = Runs { warmup: 3, timed: args.iters };
    let mut records = Vec::new();
    for (family, sizes) in &plan {
        for &size in sizes {
            let progress = |what: &str| bar.set_message(what.to_string());
            records.extend((family.run)(&gpu, size, runs, &progress)?);
            bar.inc(1);
        }
    }
    // The emulator's analysis of every kernel, beside the timings.
    let emulator = Gpu::emulator();
    let mut emulated = Vec::new();
    for (family, _) in &plan {
        emulated.extend((family.emulate)(&emulator, &|what: &str| bar.set_message(what.to_string()))?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    suite::attach_analysis(&mut records, &emulated);

    finish(args, report_of(&gpu, args, &plan, records))
}

fn progress_bar(steps: usize, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar
}

/// No GPU: every family's kernels on the emulator, verified, with the
/// bank-conflict and sector analysis in place of timings.
fn emulate(args: &Args, plan: &[(&suite::Family, Vec<usize>)]) -> kernel_lab::Result<bool> {
    let emulator = Gpu::emulator();
    let bar = progress_bar(plan.len(), args.quiet);
    let mut records = Vec::new();
    for (family, _) in plan {
        records.extend((family.emulate)(&emulator, &|what: &str| bar.set_message(what.to_string()))?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    finish(args, report_of(&emulator, args, plan, records))
}

fn report_of(
    gpu: &Gpu,
    args: &Args,
    plan: &[(&suite::Family, Vec<usize>)],
    records: Vec<suite::Record>,
) -> RunReport {
    let info = &gpu.info;
    RunReport {
        device: info.name.clone(),
        compute_capability: format!("{}.{}", info.major, info.minor),
        multiprocessors: info.multiprocessors,
        memory_bytes: info.total_memory,
        driver: format!("{}.{}", info.driver_version / 1000, info.driver_version % 1000 / 10),
        ptx: info.ptx_arch.to_string(),
        date: today(),
        git_revision: git_revision(),
        families: plan.iter().map(|(f, _)| f.name.to_string()).collect(),
        sizes: plan.iter().map(|(f, s)| (f.name.to_string(), s.clone())).collect(),
        iters: args.iters,
        records,
    }
}

/// Prints the summary, writes the JSON and plots, reports failures.
fn finish(args: &Args, report: RunReport) -> kernel_lab::Result<bool> {
    print!("{}", suite::summary(&report).render());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("records serialise");
        write_file(path, &text)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &args.plots {
        for p in publish::plots(&report, dir)? {
            println!("wrote {}", p.display());
        }
    }
    for r in report.records.iter().filter(|r| !r.verified) {
        eprintln!(
            "error: {} {} {} {}: {}",
            r.family,
            r.kernel,
            r.element,
            r.size,
            r.error.as_deref().unwrap_or("failed")
        );
    }
    Ok(report.all_verified())
}

fn main() -> ExitCode {
    let args = Args::parse();
    main_with(|| match &args.command {
        Some(Command::Report { json, out, checks, plots }) => {
            report(json, out, checks.as_ref(), plots.as_ref())
        }
        None => run(&args),
    })
}
