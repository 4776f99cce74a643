//! `cargo run --release`: the main job. Runs every kernel family, verifies
//! and times each kernel, prints one summary, and optionally writes every
//! measurement as JSON and the plots. `kernel-lab report` turns such a JSON
//! file into `BENCHMARKS.md`.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::suite_main()
}
