//! `cargo run --release --bin memory-lab`: coalescing, alignment, stride
//! and shared-memory bank studies, each variant verified, timed on the GPU
//! and analysed on the emulator, side by side. Without a GPU: the emulator
//! columns alone.

use clap::Parser;
use kernel_lab::Error;
use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with};
use kernel_lab::device::Gpu;
use kernel_lab::lab::{self, Sizes};
use kernel_lab::report::Table;
use kernel_lab::suite::{self, Record};

/// The memory-access lab: structure layout, alignment, stride and bank
/// conflicts, measured and explained.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Vectors of the layout study and elements of the alignment study
    /// (stride study n/4, bank study n/1024 tiles).
    #[arg(long, default_value_t = 1 << 24)]
    n: usize,
    /// Timed runs per variant (0: verify only, one launch each, e.g. for a
    /// profiler).
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

fn study(title: &str, records: &[&Record]) {
    println!("\n{title}");
    let mut t = Table::new([
        "variant",
        "median us",
        "GB/s",
        "% of copy",
        "verified",
        "smem ways ld/st",
        "sectors/req ld/st",
    ]);
    for r in records {
        let (ways, sectors) = r.analysis.map_or(("-".into(), "-".into()), |a| a.cells());
        t.row([
            r.kernel.clone(),
            r.median_ms.map_or("-".into(), |m| format!("{:.1}", m * 1e3)),
            r.value.map_or("-".into(), |v| format!("{v:.0}")),
            r.percent.map_or("-".into(), |p| format!("{p:.1}")),
            if r.verified { "yes" } else { "NO" }.into(),
            ways,
            sectors,
        ]);
    }
    print!("{}", t.render());
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    main_with(|| {
        if args.n < 1024 {
            return Err(Error::InvalidInput(format!("--n must be at least 1024 (got {})", args.n)));
        }
        let emulator = Gpu::emulator();
        let analysed = lab::run(&emulator, Sizes::EMULATOR, None, &|_| {})?;
        let mut records = match Gpu::open(args.device) {
            Ok(gpu) => {
                println!("{}", device_line(&gpu));
                gpu.check_fits(suite::bytes_needed(&suite::FAMILIES[3], args.n))?;
                let runs = (args.iters > 0).then_some(Runs { warmup: 3, timed: args.iters });
                lab::run(&gpu, Sizes::gpu(args.n), runs, &|_| {})?
            }
            Err(e @ (Error::NoDriver | Error::NoDevice { count: 0, .. })) => {
                println!("{e}: emulator analysis only (no timings)");
                analysed.clone()
            }
            Err(e) => return Err(e),
        };
        suite::attach_analysis(&mut records, &analysed);
        let pick = |prefix: &str| {
            records.iter().filter(|r| r.kernel.starts_with(prefix) || r.kernel == "copy").collect::<Vec<_>>()
        };
        study("Structure layout: |v|^2 of 3-vectors (16 useful bytes per vector)", &pick("lab_len2"));
        study("Alignment: out[i] = in[i + offset]", &pick("lab_copy_offset"));
        study("Stride: out[i] = in[i * stride]", &pick("lab_copy_stride"));
        study("Shared-memory banks (one warp per block, 64 reads per lane)", &pick("lab_bank"));
        for r in records.iter().filter(|r| !r.verified) {
            eprintln!("error: {}: {}", r.kernel, r.error.as_deref().unwrap_or("failed"));
        }
        Ok(records.iter().all(|r| r.verified))
    })
}
