//! GPU tests: every transpose kernel on random inputs of awkward shapes,
//! bit-exact against the host reference, outputs poisoned first. Without a
//! GPU they print why they are skipped and pass.
//!
//! (`harness = false`: libtest would hide the skip message.)

use std::process::ExitCode;

use kernel_lab::Error;
use kernel_lab::device::Gpu;
use kernel_lab::transpose::{self, Transpose, random_input, reference, verify_exact};

const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (0, 9),
    (9, 0),
    (1, 1000),
    (1000, 1),
    (31, 33),
    (33, 31),
    (32, 32),
    (64, 64),
    (100, 37),
    (1023, 1025),
    (4099, 17),
    (17, 4099),
    (2048, 1536),
];

fn transpose_shapes(gpu: &Gpu) -> Result<(), String> {
    let kernels = transpose::KERNELS.iter();
    for kernel in kernels {
        let t = Transpose::load(gpu, *kernel).map_err(|e| e.to_string())?;
        for (i, &(nx, ny)) in SHAPES.iter().enumerate() {
            let host = random_input(nx * ny, i as u64);
            let input = gpu.upload(&host).map_err(|e| e.to_string())?;
            let mut output = gpu.alloc::<f32>(nx * ny).map_err(|e| e.to_string())?;
            if nx * ny > 0 {
                gpu.poison(&mut output).map_err(|e| e.to_string())?;
            }
            t.launch(gpu, &input, &mut output, nx, ny).map_err(|e| e.to_string())?;
            gpu.sync().map_err(|e| e.to_string())?;
            let got = gpu.download(&output).map_err(|e| e.to_string())?;
            verify_exact(&format!("{} {nx}x{ny}", kernel.name), &got, &reference(&host, nx, ny))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn launch_rejects_wrong_buffers(gpu: &Gpu) -> Result<(), String> {
    let t = Transpose::load(gpu, transpose::KERNELS[0]).map_err(|e| e.to_string())?;
    let input = gpu.upload(&random_input(12, 1)).map_err(|e| e.to_string())?;
    let mut output = gpu.alloc::<f32>(11).map_err(|e| e.to_string())?;
    match t.launch(gpu, &input, &mut output, 4, 3) {
        Err(Error::InvalidInput(m)) if m.contains("needs buffers of 12 elements") => Ok(()),
        other => Err(format!("expected a size error, got {other:?}")),
    }
}

/// A GPU test: `Err` carries the failure's description.
type GpuTest = fn(&Gpu) -> Result<(), String>;

fn main() -> ExitCode {
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            println!("gpu tests: SKIPPED, {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("gpu tests: could not open the GPU: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("gpu tests on {}", kernel_lab::cli::device_line(&gpu));
    let tests: [(&str, GpuTest); 2] = [
        ("transpose_shapes", transpose_shapes),
        ("launch_rejects_wrong_buffers", launch_rejects_wrong_buffers),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        match test(&gpu) {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED: {e}");
            }
        }
    }
    println!("{} passed, {failed} failed", tests.len() - failed);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
