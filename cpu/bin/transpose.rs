//! `cargo run --release --bin transpose [-- --nx N --ny M]`: verifies every
//! transpose kernel bit for bit and times it against a device-to-device copy
//! measured in the same run.

use clap::Parser;
use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with};
use kernel_lab::device::Gpu;
use kernel_lab::transpose;

/// Matrix transpose: naive, shared-memory, padded and fast kernels,
/// against the device-to-device copy bandwidth.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Columns of the input matrix.
    #[arg(long, default_value_t = 8192)]
    nx: usize,
    /// Rows of the input matrix.
    #[arg(long, default_value_t = 8192)]
    ny: usize,
    /// Timed launches per kernel (the median is reported).
    #[arg(long, default_value_t = 50)]
    iters: usize,
    /// Untimed launches per kernel before timing.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Kernels to run, comma-separated (default: all five).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    main_with(|| {
        let kernels = transpose::select(&args.kernels)?;
        let gpu = Gpu::open(args.device)?;
        println!("{}", device_line(&gpu));
        let runs = Runs { warmup: args.warmup, timed: args.iters };
        let report = transpose::benchmark(&gpu, &kernels, args.nx, args.ny, runs, 0x5eed)?;
        println!("transpose {} x {} f32 ({} runs each, median)", args.nx, args.ny, args.iters);
        print!("{}", report.table().render());
        for m in &report.kernels {
            if let Err(e) = &m.verified {
                eprintln!("error: {e}");
            }
        }
        Ok(report.all_verified())
    })
}
