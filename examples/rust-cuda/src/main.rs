//! `cargo run --release`: every kernel verified on device 0, or on the
//! emulator without a GPU. Exit status 1 if any check fails.

use std::process::ExitCode;

fn main() -> ExitCode {
    let gpu = match rust_cuda_example::open() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    println!("running on: {} ({})", gpu.info.name, gpu.info.ptx_arch);
    let (vector, shape) =
        if gpu.is_emulator() { (100_003, (77, 65, 33)) } else { (10_000_019, (1000, 777, 513)) };
    let checks = match rust_cuda_example::all(&gpu, vector, shape) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    println!("{:<12} {:>14} {:>12} {:>12}  verified", "kernel", "shape", "max error", "bound");
    for c in &checks {
        println!(
            "{:<12} {:>14} {:>12.3e} {:>12.3e}  {}",
            c.kernel,
            c.shape,
            c.worst,
            c.bound,
            if c.passed { "yes" } else { "NO" }
        );
    }
    if checks.iter().all(|c| c.passed) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
