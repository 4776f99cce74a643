//! `cargo run --release --bin memory-lab`: coalescing, alignment, stride
//! and shared-memory bank studies, each variant verified, timed on the GPU
//! and analysed on the emulator, side by side, one table per study.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main(
        &kernel_lab::families::lab::Lab,
        "The memory-access lab: structure layout, alignment, stride and bank conflicts, measured and explained.",
    )
}
