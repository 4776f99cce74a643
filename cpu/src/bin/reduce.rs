//! `cargo run --release --bin reduce [-- --sizes 268435456 --types f32]`:
//! every reduction kernel verified (exact for i32, within the derived bound
//! for floats, bitwise reproducible) and timed against a device-to-device
//! copy.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main(
        &kernel_lab::families::reduce::Reduce,
        "Parallel reduction: global-memory tree, shared memory, unrolling, dynamic shared memory, warp \
         shuffles, and a one-pass deterministic kernel.",
    )
}
