//! `cargo run --release --bin transpose [-- --sizes 8191x8193]`: every
//! transpose kernel verified bit for bit and timed against a
//! device-to-device copy measured in the same run.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main(
        &kernel_lab::families::transpose::Transpose,
        "Matrix transpose: naive, shared-memory, padded and fast kernels, against the device-to-device copy.",
    )
}
