//! Compiles the `gpu/` crate to PTX with rustc's own NVPTX backend, through
//! the same builder a kernel crate of any project uses (`cuda-builder/`),
//! and leaves `gpu_<arch>.ptx` in `OUT_DIR` for the host to embed
//! (`cpu/runtime/ptx.rs`); and the `cuda_std` conformance kernels.

fn main() {
    println!("cargo::rerun-if-changed=rust-toolchain.toml");
    lab_cuda_builder::CudaBuilder::new("gpu")
        .archs(&["sm_80", "sm_90", "sm_90a"])
        .watch("cuda-builder")
        .run();
    // The cuda_std conformance kernels, for tests/cuda_std.rs and the GPU
    // tests: every architecture a user's crate gets.
    lab_cuda_builder::CudaBuilder::new("cuda-std/conformance").run();
}
