//! The standalone example (`examples/rust-cuda/`), built and tested as its
//! own user would: `cargo test` in its directory (its kernels on the
//! emulator), then `cargo run` (the same checks, on a GPU where there is
//! one). Its own target directory lives under ours.

use std::path::Path;
use std::process::Command;

fn cargo(args: &[&str]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO"))
        .current_dir(root.join("examples/rust-cuda"))
        .args(args)
        .arg("--target-dir")
        .arg(root.join("target/example"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

#[test]
fn the_rust_cuda_example_builds_and_verifies() {
    let test = cargo(&["test", "--release"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&test.stdout), String::from_utf8_lossy(&test.stderr));
    assert!(test.status.success(), "the example's tests failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("test result: ok. 4 passed"), "{stdout}");

    let run = cargo(&["run", "--release", "--quiet"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    for kernel in ["vecadd", "gemm_naive", "gemm_tiled", "block_sum"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(kernel))
            .unwrap_or_else(|| panic!("no {kernel} row:\n{stdout}"));
        assert!(row.ends_with("yes"), "{row}");
    }
}
