//! `cargo run --release --bin sgemm [-- --sizes 1024,2048,4096,8192]`:
//! every SGEMM kernel verified against an f64 reference and timed against
//! cuBLAS (FP32, no TF32) in the same run.

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main(
        &kernel_lab::families::sgemm::Sgemm,
        "SGEMM from naive to double-buffered and warp-tiled, against cuBLAS.",
    )
}
