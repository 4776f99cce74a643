//! `cargo run --release --bin scale`: the example family, `y = a x`,
//! verified and timed against a device-to-device copy.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main(&kernel_lab::families::scale::Scale, "The example family: y = a x.")
}
