//! `cargo run --release --bin reduce [-- --n N]`: verifies every reduction
//! kernel (exact for i32, within the derived bound for floats, bitwise
//! reproducible) and times it against a device-to-device copy.

use clap::Parser;
use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with};
use kernel_lab::device::Gpu;
use kernel_lab::reduce::{self, Element};

/// Parallel reduction: global-memory tree, shared memory, unrolling,
/// dynamic shared memory, warp shuffles, and a one-pass deterministic kernel.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Elements to sum.
    #[arg(long, default_value_t = 1 << 28)]
    n: usize,
    /// Element types, comma-separated: f32, i32, f64.
    #[arg(long, value_delimiter = ',', default_value = "f32,i32,f64")]
    types: Vec<String>,
    /// Variants to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    variants: Vec<String>,
    /// Timed runs per kernel (the median is reported).
    #[arg(long, default_value_t = 50)]
    iters: usize,
    /// Untimed runs per kernel before timing.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn run<T: Element>(gpu: &Gpu, args: &Args, variants: &[gpu::reduce::Variant]) -> kernel_lab::Result<bool> {
    let runs = Runs { warmup: args.warmup, timed: args.iters };
    let report = reduce::benchmark::<T>(gpu, variants, args.n, runs, 0x5eed)?;
    println!(
        "\nreduce {} x {} ({} runs each, median; GB/s = bytes read / time)",
        args.n,
        T::NAME,
        args.iters
    );
    print!("{}", report.table().render());
    for m in &report.kernels {
        if let Err(e) = &m.verified {
            eprintln!("error: {e}");
        }
    }
    Ok(report.all_verified())
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    main_with(|| {
        let variants = reduce::select(&args.variants)?;
        let types = kernel_lab::report::select(&args.types, &["f32", "i32", "f64"], |t| t, "element type")?;
        let gpu = Gpu::open(args.device)?;
        println!("{}", device_line(&gpu));
        let mut ok = true;
        for t in types {
            ok &= match t {
                "f32" => run::<f32>(&gpu, &args, &variants)?,
                "i32" => run::<i32>(&gpu, &args, &variants)?,
                _ => run::<f64>(&gpu, &args, &variants)?,
            };
        }
        Ok(ok)
    })
}
