//! The binaries' handling of bad input: one line on stderr naming the
//! problem and the accepted values, exit code 2, no backtrace; and no GPU:
//! one line, exit code 1.

use std::process::{Command, Output};

fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin).args(args).env("RUST_BACKTRACE", "1").output().expect("the binary runs")
}

fn one_line_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    lines[0].to_string()
}

fn has_gpu() -> bool {
    kernel_lab::device::Gpu::open(0).is_ok()
}

const MAIN: &str = env!("CARGO_BIN_EXE_kernel-lab");

#[test]
fn unknown_family_lists_the_accepted_ones() {
    let out = run(MAIN, &["--only", "transpose,fft"]);
    assert_eq!(out.status.code(), Some(2));
    let line = one_line_error(&out);
    assert!(line.contains("unknown family 'fft'") && line.contains("transpose, reduce, sgemm"), "{line}");
}

#[test]
fn unknown_kernel_names_in_the_family_binaries() {
    for (bin, flag, accepted) in [
        (env!("CARGO_BIN_EXE_transpose"), "--kernels", "naive_row, naive_col, shared, padded, fast"),
        (env!("CARGO_BIN_EXE_sgemm"), "--kernels", "warp_tiled"),
        (env!("CARGO_BIN_EXE_reduce"), "--variants", "gmem, smem, unroll, dynamic, shuffle, fast"),
    ] {
        let out = run(bin, &[flag, "nonsense"]);
        assert_eq!(out.status.code(), Some(2), "{bin}");
        let line = one_line_error(&out);
        assert!(line.contains("'nonsense'") && line.contains(accepted), "{line}");
    }
}

#[test]
fn size_zero_is_rejected() {
    let out = run(MAIN, &["--sizes", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("must be positive"));
    let out = run(env!("CARGO_BIN_EXE_sgemm"), &["--sizes", "1024,0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("must be positive"));
}

#[test]
fn sizes_beyond_the_kernels_are_rejected_before_the_gpu() {
    let out = run(MAIN, &["--only", "transpose", "--sizes", "100000000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("too large"));
}

#[test]
fn malformed_numbers_are_usage_errors() {
    let out = run(MAIN, &["--sizes", "1024,abc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid value '1024,abc'")
            || String::from_utf8_lossy(&out.stderr).contains("invalid value 'abc'")
    );
}

#[test]
fn no_gpu_is_one_line_and_exit_1_for_the_measuring_binaries() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    for bin in [env!("CARGO_BIN_EXE_transpose"), env!("CARGO_BIN_EXE_reduce"), env!("CARGO_BIN_EXE_sgemm")] {
        let out = run(bin, &[]);
        assert_eq!(out.status.code(), Some(1), "{bin}");
        assert!(one_line_error(&out).contains("no GPU found"), "{bin}");
    }
}

/// Without a GPU the main job says so in one line and runs every kernel
/// on the emulator instead: verified, with the analysis columns.
#[test]
fn no_gpu_main_job_runs_the_emulator() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let out = run(MAIN, &["--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.lines().next().unwrap().contains("no GPU found") && stdout.contains("CPU emulator"),
        "{stdout}"
    );
    for kernel in ["transpose_shared", "reduce_fast_f64", "sgemm_warp_tiled"] {
        assert!(
            stdout.lines().any(|l| l.contains(kernel) && l.contains("yes")),
            "{kernel} not verified:\n{stdout}"
        );
    }
    let shared = stdout.lines().find(|l| l.contains("transpose_shared")).unwrap();
    assert!(shared.contains("32.0/1.0"), "the 32 x 32 tile's column read is 32-way: {shared}");
}

#[test]
fn absent_device_and_too_large_problem_on_a_gpu() {
    if !has_gpu() {
        eprintln!("skipped: no GPU");
        return;
    }
    let out = run(MAIN, &["--device", "99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("no device 99"));
    // 2 x 2^38 x 8 bytes: more than any GPU has.
    let out = run(MAIN, &["--only", "reduce", "--sizes", "274877906944"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("device memory"));
}

#[test]
fn report_rejects_a_file_that_is_not_a_run() {
    let path = std::env::temp_dir().join(format!("not-a-run-{}.json", std::process::id()));
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let out = run(MAIN, &["report", path.to_str().unwrap(), "--out", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("is not a kernel-lab --json file"));
}
