//! `cargo run --release --bin sgemm [-- --sizes 1024,2048,4096,8192]`:
//! verifies every SGEMM kernel against an f64 reference and times it
//! against cuBLAS (FP32, no TF32) in the same run.

use clap::Parser;
use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with};
use kernel_lab::device::Gpu;
use kernel_lab::sgemm;

/// SGEMM from naive to double-buffered and warp-tiled, against cuBLAS.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Square sizes m = n = k, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1024,2048,4096,8192")]
    sizes: Vec<usize>,
    /// Kernels to run, comma-separated (default: all; cuBLAS always runs).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Timed runs per kernel at most (slow kernels get fewer, at least 3).
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    main_with(|| {
        let kernels = sgemm::select(&args.kernels)?;
        if let Some(0) = args.sizes.iter().copied().find(|&s| s == 0) {
            return Err(kernel_lab::Error::InvalidInput("sgemm sizes must be positive".into()));
        }
        let gpu = Gpu::open(args.device)?;
        println!("{}", device_line(&gpu));
        let mut all = Vec::new();
        for &size in &args.sizes {
            let runs = Runs { warmup: 3, timed: args.iters };
            all.extend(sgemm::benchmark(&gpu, &kernels, size, runs, 0x5eed, &|what| eprintln!("  {what}"))?);
        }
        println!("sgemm, square m = n = k, FP32 FMA (median of CUDA events)");
        print!("{}", sgemm::table(&all).render());
        for r in &all {
            if let Err(e) = &r.verified {
                eprintln!("error: {e}");
            }
        }
        Ok(all.iter().all(|r| r.verified.is_ok()))
    })
}
