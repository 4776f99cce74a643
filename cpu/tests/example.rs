//! The standalone example (`examples/rust-cuda/`), built and tested as its
//! own user would: `cargo test` in its directory (its kernels on the
//! emulator), then `cargo run` (the same checks, on a GPU where there is
//! one). Its own target directory lives under ours.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// `cargo` with `args` in the example's folder, into our target folder's
/// `example/`: the option goes before a `--`, after which it would be the
/// program's.
fn cargo(args: &[&str]) -> std::process::Output {
    let root = root();
    let split = args.iter().position(|&a| a == "--").unwrap_or(args.len());
    Command::new(env!("CARGO"))
        .current_dir(root.join("examples/rust-cuda"))
        .args(&args[..split])
        .arg("--target-dir")
        .arg(root.join("target/example"))
        .args(&args[split..])
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
    assert!(!stderr.contains("warning"), "the example builds with warnings:\n{stderr}");
    // Its tests/cust.rs (the cust host programs) and tests/emulator.rs,
    // and tests/library.rs (the PTX's host library, with no crate linked).
    assert_eq!(stdout.matches("test result: ok. 4 passed").count(), 2, "{stdout}");
    assert!(stdout.contains("through_its_host_library_with_its_checks ... ok"), "{stdout}");

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

    // The host programs written against cust, as a cust user runs them.
    let run = cargo(&["run", "--release", "--quiet", "--bin", "cust_vecadd", "--", "1001"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && stdout.contains("every element equals the host's sum"), "{stdout}");
    let run = cargo(&["run", "--release", "--quiet", "--bin", "cust_sha256", "--", "5000", "77"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && stdout.contains("65 chunks of up to 77 bytes of 5000: 0 digests differ"),
        "{stdout}"
    );

    // A word where a count belongs: one line, exit status 2.
    for (bin, args, says) in [
        ("cust_vecadd", &["abc"][..], "error: N is a count of elements, not 'abc'"),
        ("cust_sha256", &["5000", "-3"][..], "error: CHUNK is a count of bytes, not '-3'"),
        ("cust_sha256", &["5000", "0"][..], "error: CHUNK must be at least 1"),
    ] {
        let run = cargo(&[&["run", "--release", "--quiet", "--bin", bin, "--"][..], args].concat());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!((run.status.code(), stderr.lines().last()), (Some(2), Some(says)), "{bin} {args:?}");
    }
    // Built once, into the folder named above.
    assert!(
        !root().join("examples/rust-cuda/target").exists(),
        "the example was built into its own folder too"
    );
}
