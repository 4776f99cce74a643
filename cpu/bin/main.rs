//! `cargo run --release`: the main job. Runs every kernel family at its
//! default size, verifies and measures it, and prints one table per family.

use kernel_lab::bench::Runs;
use kernel_lab::cli::{device_line, main_with};
use kernel_lab::device::Gpu;
use kernel_lab::transpose;

fn main() -> std::process::ExitCode {
    main_with(|| {
        let gpu = Gpu::open(0)?;
        println!("{}", device_line(&gpu));
        let report = transpose::benchmark(&gpu, &transpose::KERNELS, 8192, 8192, Runs::default(), 0x5eed)?;
        println!("\ntranspose 8192 x 8192 f32");
        print!("{}", report.table().render());
        Ok(report.all_verified())
    })
}
