//! Compiles the `gpu/` crate to PTX with rustc's own NVPTX backend, through
//! the same builder a kernel crate of any project uses (`cuda-builder/`),
//! and leaves `gpu_<arch>.ptx` in `OUT_DIR` for the host to embed
//! (`src/runtime/ptx.rs`); and the `cuda_std` conformance kernels. Also
//! the git revision the binaries are built from (`KERNEL_LAB_BUILD_REV`),
//! which they report as their own whatever folder they run in.

fn main() {
    println!("cargo::rerun-if-changed=../rust-toolchain.toml");
    lab_cuda_builder::CudaBuilder::new("../gpu")
        .archs(&["sm_80", "sm_90", "sm_90a"])
        // The GEMM library's wgmma instances apart from every other
        // kernel, and split three ways (`gpu/src/lib.rs`): an edit rebuilds
        // only the parts that read the file, and the parts run at once.
        .parts(&["sm_90a"], &["rest", "dense", "fp8", "moe"])
        .watch("../cuda-builder")
        // The binaries link `gpu` itself: the emulator runs that.
        .emulator_library(false)
        .run();
    // The cuda_std conformance kernels, for cpu/tests/cuda_std.rs and the GPU
    // tests: every architecture a user's crate gets.
    lab_cuda_builder::CudaBuilder::new("../cuda-std/conformance").emulator_library(false).run();
    revision();
}

/// The commit checked out at build time, `unknown` outside a git checkout;
/// the build runs again when HEAD or the branch it names moves.
fn revision() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=KERNEL_LAB_BUILD_REV={rev}");
    // `--git-path` names each file where it lies, in a worktree too (its
    // own HEAD, the shared branches and packed refs).
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let names = ["HEAD", "packed-refs"].into_iter().map(String::from).chain(branch);
    let watched: Vec<std::path::PathBuf> =
        names.filter_map(|name| git(&["rev-parse", "--git-path", &name])).map(Into::into).collect();
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}
