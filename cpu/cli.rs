//! The command-line skeleton every binary shares: the same options
//! ([`Common`]), checked in full before the device is opened; the same run
//! (the GPU, or the emulator where there is none); the same output (tables,
//! JSON, plots) and exit codes.
//!
//! The main job is [`suite_main`]; each family's binary is
//! [`family_main`] with that family.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::families::{self, FAMILIES, Family};
use crate::measure::{Runs, Shape};
use crate::report::{self, Job, Progress, RunReport, suite};
use crate::runtime::{Error, Gpu, Result};

/// Exit code for a user's mistake: bad sizes, unknown names, an absent
/// device index, a problem that does not fit, an unwritable destination.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a result failed verification or the GPU could not run.
pub const EXIT_FAILURE: u8 = 1;

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
struct SuiteArgs {
    #[command(subcommand)]
    command: Option<Command>,
    /// Families to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    #[command(flatten)]
    common: Common,
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

/// The main job: every family (or `--only` some), or `report`.
pub fn suite_main() -> ExitCode {
    let args = SuiteArgs::parse();
    main_with(|| match &args.command {
        Some(Command::Report { json, out, checks, plots }) => {
            write_report(json, out, checks.as_ref(), plots.as_ref())
        }
        None => {
            let all: Vec<&'static dyn Family> = FAMILIES.to_vec();
            let chosen = if args.only.is_empty() {
                all
            } else {
                args.only
                    .iter()
                    .map(|name| {
                        all.iter().copied().find(|f| f.name() == name).ok_or_else(|| {
                            let names: Vec<&str> = all.iter().map(|f| f.name()).collect();
                            Error::InvalidInput(format!(
                                "unknown family '{name}'; accepted: {}",
                                names.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<_>>()?
            };
            run(&chosen, &args.common)
        }
    })
}

/// A family's binary: the same options and run as the main job, for one
/// family, described by `about`.
pub fn family_main(family: &'static dyn Family, about: &'static str) -> ExitCode {
    let command = clap::Command::new(family.name()).version(env!("CARGO_PKG_VERSION")).about(about);
    let matches = Common::augment_args(command).get_matches();
    let common = Common::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    main_with(|| run(&[family], &common))
}

/// A family's binary with options of its own (`X`), which `build` turns
/// into the family, and may turn into sizes (`--shape`), before the run;
/// its errors are bad input (exit 2), reported before anything runs.
pub fn family_main_with<X: Args + FromArgMatches>(
    name: &'static str,
    about: &'static str,
    build: impl FnOnce(X, &mut Common) -> Result<Box<dyn Family>>,
) -> ExitCode {
    let command = clap::Command::new(name).version(env!("CARGO_PKG_VERSION")).about(about);
    let matches = Common::augment_args(X::augment_args(command)).get_matches();
    let mut common = Common::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let own = X::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    main_with(|| {
        let family: &'static dyn Family = Box::leak(build(own, &mut common)?);
        run(&[family], &common)
    })
}

/// Runs a binary's body: `Ok(true)` when everything verified, `Ok(false)`
/// when something did not (exit 1), `Err` printed as one line.
pub fn main_with(body: impl FnOnce() -> Result<bool>) -> ExitCode {
    match body() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// What a run is to do, every part checked before anything runs.
fn plan(families: &[&'static dyn Family], common: &Common) -> Result<Vec<Job>> {
    if let Some(path) = &common.json {
        check_file_destination("--json", path)?;
    }
    if let Some(dir) = &common.plots {
        check_folder_destination("--plots", dir)?;
    }
    let given: Vec<Shape> = common
        .sizes
        .iter()
        .map(|s| s.parse::<Shape>().map_err(Error::InvalidInput))
        .collect::<Result<_>>()?;
    let mut jobs = Vec::new();
    for (&family, mut kernels) in families.iter().zip(families::select(families, &common.kernels)?) {
        kernels.retain(|k| {
            common.types.is_empty() || k.instance.is_none_or(|t| common.types.iter().any(|w| w == t))
        });
        if kernels.is_empty() && !common.kernels.is_empty() {
            // The names chosen are other families'.
            continue;
        }
        let sizes = if common.sizes.is_empty() { family.default_sizes() } else { given.clone() };
        let needs = sizes.iter().map(|size| family.check(size)).collect::<Result<Vec<_>>>()?;
        jobs.push(Job { family, sizes, kernels, needs: needs.into_iter().max().unwrap_or(0) });
    }
    let instances: Vec<&str> =
        jobs.iter().flat_map(|j| j.family.kernels()).filter_map(|k| k.instance).collect();
    if let Some(unknown) = common.types.iter().find(|t| !instances.contains(&t.as_str())) {
        let mut accepted = instances.clone();
        accepted.sort_unstable();
        accepted.dedup();
        return Err(Error::InvalidInput(format!(
            "no kernel here has a '{unknown}' instance; accepted: {}",
            if accepted.is_empty() { "none (no generic kernels)".into() } else { accepted.join(", ") }
        )));
    }
    Ok(jobs)
}

/// The run every binary makes.
fn run(families: &[&'static dyn Family], common: &Common) -> Result<bool> {
    let jobs = plan(families, common)?;
    let gpu = match crate::runtime::open(common.device) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { count: 0, .. })) => {
            println!(
                "{e}: running every kernel on the CPU emulator at small sizes instead (verification and analysis, no timings)"
            );
            let bar = progress_bar(jobs.len(), common.quiet);
            let (message, tick) = (|what: &str| bar.set_message(what.to_string()), || bar.inc(1));
            let records = suite::emulate(&jobs, &Progress { message: &message, tick: &tick })?;
            bar.finish_and_clear();
            return finish(common, &jobs, report_of(&Gpu::emulator(), common, &jobs, records));
        }
        Err(e) => return Err(e),
    };
    for job in &jobs {
        gpu.check_fits(job.needs)?;
    }
    println!("{}", device_line(&gpu));
    let bar = progress_bar(jobs.iter().map(|j| j.sizes.len() + 1).sum(), common.quiet);
    let (message, tick) = (|what: &str| bar.set_message(what.to_string()), || bar.inc(1));
    let progress = Progress { message: &message, tick: &tick };
    let runs = (common.iters > 0).then_some(Runs { warmup: common.warmup, timed: common.iters });
    let mut records = suite::run(&gpu, &jobs, runs, &progress)?;
    // The emulator's analysis of every kernel, beside the timings.
    let emulated = suite::emulate(&jobs, &progress)?;
    bar.finish_and_clear();
    suite::attach_analysis(&mut records, &emulated);
    finish(common, &jobs, report_of(&gpu, common, &jobs, records))
}

fn progress_bar(steps: usize, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn report_of(gpu: &Gpu, common: &Common, jobs: &[Job], records: Vec<crate::measure::Record>) -> RunReport {
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
        families: jobs.iter().map(|j| j.family.name().to_string()).collect(),
        sizes: jobs
            .iter()
            .map(|j| (j.family.name().to_string(), j.sizes.iter().map(Shape::to_string).collect()))
            .collect(),
        iters: common.iters,
        records,
    }
}

/// Prints the tables, writes the JSON and plots, reports failures.
fn finish(common: &Common, jobs: &[Job], report: RunReport) -> Result<bool> {
    if let [job] = jobs {
        let records = report.of(job.family.name());
        for (title, rows) in job.family.tables(&records) {
            println!("\n{title}");
            print!("{}", suite::table(rows).render());
        }
    } else {
        print!("{}", suite::table(&report.records).render());
    }
    if let Some(path) = &common.json {
        let text = serde_json::to_string_pretty(&report).expect("records serialise");
        write_file(path, &text)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &common.plots {
        for p in report::plots::draw(&report, dir)? {
            println!("wrote {}", p.display());
        }
    }
    for r in report.records.iter().filter(|r| !r.verified) {
        eprintln!(
            "error: {} {} {} {}: {}",
            r.family,
            r.kernel,
            r.element,
            r.shape,
            r.error.as_deref().unwrap_or("failed")
        );
    }
    Ok(report.all_verified())
}

/// `kernel-lab report`: BENCHMARKS.md (and the plots) from a run's JSON.
fn write_report(json: &Path, out: &Path, checks: Option<&PathBuf>, plots: Option<&PathBuf>) -> Result<bool> {
    let run: RunReport = serde_json::from_str(&read_file(json)?).map_err(|e| {
        Error::InvalidInput(format!("{} is not a kernel-lab --json file: {e}", json.display()))
    })?;
    check_file_destination("--out", out)?;
    if let Some(dir) = plots {
        check_folder_destination("--plots", dir)?;
    }
    let checks = checks.map(|c| read_file(c)).transpose()?;
    write_file(out, &report::markdown::markdown(&run, checks.as_deref()))?;
    println!("wrote {}", out.display());
    if let Some(dir) = plots {
        for p in report::plots::draw(&run, dir)? {
            println!("wrote {}", p.display());
        }
    }
    Ok(true)
}

pub fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", path.display())))
}

/// Writes `text` to `path` through a temporary file beside it, so that a
/// failed write leaves the old file as it was.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    let error = |e: std::io::Error| Error::InvalidInput(format!("cannot write {}: {e}", path.display()));
    let temporary = sibling(path, "tmp");
    std::fs::write(&temporary, text).map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

/// `dir/.name.<pid>.<what>`: a scratch file next to `path`.
fn sibling(path: &Path, what: &str) -> PathBuf {
    let name = path.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    folder_of(path).join(format!(".{name}.{}.{what}", std::process::id()))
}

fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// That a file can be written at `path` when the run ends: its folder
/// exists and takes a new file, and `path` is not a folder. Checked before
/// any work, so that a run's results are never lost at the end.
pub fn check_file_destination(flag: &str, path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Error::InvalidInput(format!("{flag} {}: is a folder, not a file", path.display())));
    }
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{flag} {}: the folder {} does not exist",
            path.display(),
            folder.display()
        )));
    }
    probe(flag, path, &sibling(path, "probe"))
}

/// That plots can be written into `dir`: created if missing, and writable.
fn check_folder_destination(flag: &str, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::InvalidInput(format!("{flag} {}: cannot create the folder: {e}", dir.display()))
    })?;
    probe(flag, dir, &dir.join(format!(".probe.{}", std::process::id())))
}

/// Creates and removes `scratch`, to learn that its folder is writable.
fn probe(flag: &str, shown: &Path, scratch: &Path) -> Result<()> {
    std::fs::write(scratch, b"")
        .and_then(|()| std::fs::remove_file(scratch))
        .map_err(|e| Error::InvalidInput(format!("{flag} {}: cannot write there: {e}", shown.display())))
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

/// `NVIDIA H100 80GB HBM3 (device 0, compute 9.0, 132 SMs, 79.2 GiB), driver 13.0, PTX sm_90, 2026-11-21`
pub fn device_line(gpu: &Gpu) -> String {
    let i = &gpu.info;
    format!(
        "{} (device {}, compute {}.{}, {} SMs, {}), driver {}.{}, PTX {}, {}",
        i.name,
        i.index,
        i.major,
        i.minor,
        i.multiprocessors,
        crate::runtime::error::human_bytes(i.total_memory),
        i.driver_version / 1000,
        i.driver_version % 1000 / 10,
        i.ptx_arch,
        today()
    )
}

/// Today's UTC date as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
