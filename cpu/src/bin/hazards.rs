//! `cargo run --release --bin hazards`: the labelled hazard suite
//! (`gpu/src/hazards/`) on the emulator, every verdict against its label.
//!
//! - `hazards list`: the suite's kernels, one per line;
//! - `hazards run NAME`: launches one on the GPU (what the device run
//!   puts under each compute-sanitizer tool);
//! - `hazards device`: the GPU's description line;
//! - `hazards report RESULTS --out docs/sanitizers.md`: the comparison
//!   table from a GPU run's results, with the emulator's speed;
//! - `hazards speed`: the emulator's speed by block size, on one OS thread and on every core, checks on and off; real kernels' launches; the body compiled for the CPU.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kernel_lab::Error;
use kernel_lab::cli::{device_line, main_with, today};
use kernel_lab::sanitize::{self, kernels, speed, table};

#[derive(Parser)]
#[command(
    version,
    about = "The labelled race/barrier/uninitialized-read suite, on the emulator and under compute-sanitizer"
)]
struct Args {
    /// Print every report, not only those of kernels whose verdict differs
    /// from their label.
    #[arg(long)]
    reports: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The suite's kernel names, one per line.
    List,
    /// Launch one kernel on the GPU once (no checks of its own).
    Run {
        name: String,
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// The GPU's description line.
    Device {
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Write the comparison with compute-sanitizer from a GPU run's results.
    Report {
        results: PathBuf,
        #[arg(long, default_value = "docs/sanitizers.md")]
        out: PathBuf,
        /// The device run's checks.txt: its compute-sanitizer lines on our
        /// own binaries go into the report too.
        #[arg(long, value_name = "FILE")]
        checks: Option<PathBuf>,
    },
    /// The emulator's speed by block size, on one OS thread and on every
    /// core, checks on and off; real kernels' launches; the same body
    /// compiled for the CPU.
    Speed,
}

fn main() -> ExitCode {
    let args: Args = kernel_lab::cli::parse();
    main_with(|| match args.command {
        None => {
            let mut all_right = true;
            println!("{:<44} {:<20} {:<20}", "kernel", "label", "emulator");
            for h in sanitize::suite() {
                let (verdict, report) = sanitize::emulate(&h);
                let right = verdict == h.label;
                all_right &= right;
                println!(
                    "{:<44} {:<20} {:<20} {}",
                    h.kernel.name,
                    h.label.name(),
                    verdict.name(),
                    if right { "ok" } else { "MISMATCH" }
                );
                if let (true, Some(r)) = (args.reports || !right, report) {
                    println!("    {}", r.replace('\n', "\n    "));
                }
            }
            Ok(all_right)
        }
        Some(Command::List) => {
            for h in sanitize::suite() {
                println!("{}", h.kernel.name);
            }
            Ok(true)
        }
        Some(Command::Run { name, device }) => {
            let hazard = sanitize::find(&name)?;
            sanitize::launch(&gpu("run", device)?, &hazard)?;
            Ok(true)
        }
        Some(Command::Device { device }) => {
            println!("{}", device_line(&gpu("device", device)?));
            Ok(true)
        }
        Some(Command::Report { results, out, checks }) => {
            kernel_lab::files::check_file_destination("--out", &out)?;
            let text = kernel_lab::files::read_file(&results)?;
            let checks = checks.map(|c| kernel_lab::files::read_file(&c)).transpose()?.unwrap_or_default();
            let suite = sanitize::suite();
            let gpu = table::GpuResults::parse(&text, &suite).map_err(|e| match e {
                Error::InvalidInput(why) => Error::InvalidInput(format!("{}: {why}", results.display())),
                e => e,
            })?;
            let speeds = speed::sweep(1 << 16, 3);
            let md = table::markdown(&suite, &gpu, &checks, &speeds, &machine()) + &kernel_times(&speeds)?;
            kernel_lab::files::write_file(&out, &md)?;
            println!("wrote {}", out.display());
            Ok(true)
        }
        Some(Command::Speed) => {
            let speeds = speed::sweep(1 << 16, 3);
            print!("{}{}", speed::markdown(&speeds, &machine()), kernel_times(&speeds)?);
            Ok(true)
        }
    })
}

/// GPU `device`, for the subcommand `what`, which needs one: on a machine
/// without a GPU, a bad-input error (exit 2) that says so and what runs
/// there instead.
fn gpu(what: &str, device: usize) -> kernel_lab::Result<kernel_lab::runtime::Gpu> {
    kernel_lab::runtime::open(device).map_err(|e| match e {
        Error::NoDriver | Error::NoDevice { count: 0, .. } => Error::InvalidInput(format!(
            "hazards {what} needs a GPU ({e}); `hazards` alone checks every label on the emulator"
        )),
        e => e,
    })
}

/// Real kernels' launches on the emulator, and the speed body compiled
/// for the CPU against the emulator's checked rate on one OS thread.
fn kernel_times(speeds: &[speed::Speed]) -> kernel_lab::Result<String> {
    let emulated = speeds
        .iter()
        .find(|s| s.block == 256 && s.workers == 1 && s.checks)
        .map_or(f64::NAN, speed::Speed::threads_per_second);
    let native = kernels::native(256, 1 << 16, 5);
    Ok(kernels::markdown(&kernels::measure(3)?, (native, emulated)))
}

/// This machine, for the speed table: CPU model, cores, date.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "an unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({cores} cores available), {}", today())
}
