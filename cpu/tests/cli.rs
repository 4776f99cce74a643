//! The binaries' handling of bad input: one line on stderr naming the
//! problem and the accepted values, exit code 2, no backtrace, and nothing
//! run or written; and without a GPU, every kernel on the emulator.

use std::path::PathBuf;
use std::process::{Command, Output};

/// `bin` with `args`, run from the repository's root, as a user would.
fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the binary runs")
}

fn one_line_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    lines[0].to_string()
}

/// A bad-input error: exit 2, one line, and nothing printed on stdout
/// (no work started, not even the device line).
fn rejected(bin: &str, args: &[&str]) -> String {
    let out = run(bin, args);
    assert_eq!(out.status.code(), Some(2), "{bin} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "{bin} {args:?} started work:\n{}", String::from_utf8_lossy(&out.stdout));
    one_line_error(&out)
}

fn has_gpu() -> bool {
    kernel_lab::runtime::open(0).is_ok()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lab-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const MAIN: &str = env!("CARGO_BIN_EXE_kernel-lab");
const FAMILY_BINS: [&str; 5] = [
    env!("CARGO_BIN_EXE_transpose"),
    env!("CARGO_BIN_EXE_reduce"),
    env!("CARGO_BIN_EXE_sgemm"),
    env!("CARGO_BIN_EXE_memory-lab"),
    env!("CARGO_BIN_EXE_scale"),
];

#[test]
fn unknown_family_lists_the_accepted_ones() {
    let line = rejected(MAIN, &["--only", "transpose,fft"]);
    assert!(
        line.contains("unknown family 'fft'")
            && line.contains("transpose, reduce, sgemm, tensor, lab, scale"),
        "{line}"
    );
}

#[test]
fn unknown_kernel_names_in_the_family_binaries() {
    for (bin, accepted) in [
        (FAMILY_BINS[0], "naive_row, naive_col, shared, padded, fast"),
        (FAMILY_BINS[2], "warp_tiled"),
        (FAMILY_BINS[1], "gmem, smem, unroll, dynamic, shuffle, fast"),
    ] {
        let line = rejected(bin, &["--kernels", "nonsense"]);
        assert!(line.contains("'nonsense'") && line.contains(accepted), "{line}");
    }
    // In the main job, a name no family knows.
    let line = rejected(MAIN, &["--kernels", "nonsense"]);
    assert!(line.contains("'nonsense'"), "{line}");
}

#[test]
fn unknown_types_list_the_instances() {
    let line = rejected(FAMILY_BINS[1], &["--types", "f32,f16"]);
    assert!(line.contains("'f16'") && line.contains("f32, f64, i32"), "{line}");
    let line = rejected(FAMILY_BINS[0], &["--types", "f32"]);
    assert!(line.contains("no generic kernels"), "{line}");
}

#[test]
fn bad_sizes_are_rejected_before_the_gpu() {
    for (bin, args, says) in [
        (MAIN, &["--sizes", "0"][..], "must be positive"),
        (FAMILY_BINS[2], &["--sizes", "1024,0"], "must be positive"),
        (MAIN, &["--sizes", "1024,abc"], "'abc' is not a size"),
        (MAIN, &["--only", "transpose", "--sizes", "100000000"], "too large"),
        (FAMILY_BINS[2], &["--sizes", "64x64"], "N (a square, the ladder) or MxNxK"),
        (FAMILY_BINS[2], &["--shape", "64x64"], "is not a shape: MxNxK"),
        (FAMILY_BINS[2], &["--shape", "8x8x8", "--layout", "diag"], "--layout is row, col or all"),
        (FAMILY_BINS[2], &["--shape", "8x8x8", "--tile", "32x32"], "no 32x32 block tile"),
        (FAMILY_BINS[1], &["--sizes", "1000x10"], "one number"),
        (FAMILY_BINS[3], &["--sizes", "100"], "from 1024"),
    ] {
        let line = rejected(bin, args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

#[test]
fn unwritable_destinations_are_rejected_before_any_work() {
    let dir = scratch("destinations");
    let missing = dir.join("no/such/folder/results.json");
    let line = rejected(MAIN, &["--json", missing.to_str().unwrap()]);
    assert!(line.contains("--json") && line.contains("does not exist"), "{line}");
    let line = rejected(MAIN, &["--json", dir.to_str().unwrap()]);
    assert!(line.contains("is a folder"), "{line}");
    // A plots folder that cannot be made (its parent is a file).
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let line = rejected(FAMILY_BINS[4], &["--plots", file.join("plots").to_str().unwrap()]);
    assert!(line.contains("--plots"), "{line}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x", "the file was touched");
    // A file where the plots folder should be: said so, the file untouched.
    let line = rejected(FAMILY_BINS[4], &["--plots", file.to_str().unwrap()]);
    assert!(line.contains("is a file, not a folder"), "{line}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x", "the file was touched");
}

/// Each family binary's `--help` describes that binary.
#[test]
fn family_binaries_describe_themselves() {
    for (bin, says) in [
        (FAMILY_BINS[4], "The example family"),
        (FAMILY_BINS[0], "transpose"),
        (FAMILY_BINS[1], "reduc"),
        (FAMILY_BINS[2], "SGEMM"),
        (FAMILY_BINS[3], "memory"),
    ] {
        let out = run(bin, &["--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0));
        assert!(!help.contains("The options of every binary"), "{bin}: {help}");
        let first = help.lines().next().unwrap_or_default();
        assert!(first.to_lowercase().contains(&says.to_lowercase()), "{bin}: {first}");
    }
}

#[test]
fn malformed_options_are_usage_errors() {
    let out = run(MAIN, &["--iters", "many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'many'"));
}

/// Without a GPU the main job says so in one line and runs every kernel
/// on the emulator instead: verified, with the analysis columns; the JSON
/// and the plots (the emulator's bars) are written.
#[test]
fn no_gpu_main_job_runs_the_emulator_and_draws_its_analysis() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = scratch("emulated");
    let (json, plots) = (dir.join("run.json"), dir.join("plots"));
    let out = run(MAIN, &["--quiet", "--json", json.to_str().unwrap(), "--plots", plots.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // The notice is on stderr, the results alone on stdout.
    assert!(
        stderr.lines().next().unwrap().contains("no GPU found") && stderr.contains("CPU emulator"),
        "{stderr}"
    );
    assert!(!stdout.contains("no GPU found"), "{stdout}");
    for kernel in ["transpose_shared", "reduce_fast_f64", "sgemm_warp_tiled", "lab_bank_column_33", "scale"] {
        assert!(
            stdout.lines().any(|l| l.contains(kernel) && l.contains("yes")),
            "{kernel} not verified:\n{stdout}"
        );
    }
    let shared = stdout.lines().find(|l| l.contains("transpose_shared")).unwrap();
    assert!(shared.contains("32.0/1.0"), "the 32 x 32 tile's column read is 32-way: {shared}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["device"], "CPU emulator");
    for family in ["transpose", "reduce", "sgemm", "tensor", "lab", "scale"] {
        let svg = plots.join(format!("{family}_emulator.svg"));
        let text = std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
        assert!(text.contains("<svg") && text.contains("rect"), "{}", svg.display());
        assert!(stdout.contains(&format!("wrote {}", svg.display())), "{stdout}");
    }
    // `report` turns that JSON into markdown.
    let md = dir.join("BENCHMARKS.md");
    let out = run(MAIN, &["report", json.to_str().unwrap(), "--out", md.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("## scale") && text.contains("<a id=\"transpose_fast\"></a>"), "{text}");
    // The page says where its numbers came from, and claims no timings.
    assert!(text.contains("Verified on the **CPU emulator**") && text.contains("No timings"), "{text}");
    assert!(!text.contains("CUDA-event") && !text.contains("Measured on"), "{text}");

    // Without --out, it does not replace a GPU run's BENCHMARKS.md unless
    // forced.
    let gpu_page = "# Benchmarks\n\nMeasured on **NVIDIA H100** (compute 9.0) ...\n";
    std::fs::write(&md, gpu_page).unwrap();
    let report_here = |args: &[&str]| {
        Command::new(MAIN).current_dir(&dir).arg("report").arg(&json).args(args).output().unwrap()
    };
    let out = report_here(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(one_line_error(&out).contains("--force"));
    assert_eq!(std::fs::read_to_string(&md).unwrap(), gpu_page);
    let out = report_here(&["--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&md).unwrap().contains("CPU emulator"));
    // An emulator page is replaced freely.
    let out = report_here(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The family binaries share the skeleton: without a GPU each runs its
/// family on the emulator, with the chosen kernels only.
#[test]
fn no_gpu_family_binaries_run_the_emulator() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    for bin in FAMILY_BINS {
        let out = run(bin, &["--quiet"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{bin}: {stdout}{stderr}");
        assert!(stderr.contains("CPU emulator") && !stdout.contains(" NO "), "{bin}: {stdout}{stderr}");
    }
    let out = run(FAMILY_BINS[0], &["--quiet", "--kernels", "padded"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("transpose_padded") && !stdout.contains("transpose_fast"), "{stdout}");
    // The lab prints one table per study.
    let out = run(FAMILY_BINS[3], &["--quiet"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Alignment") && stdout.contains("Shared-memory banks"), "{stdout}");
    // sgemm's shapes are verified on the emulator in the form asked for;
    // one too large for it is refused before any work.
    let sgemm = env!("CARGO_BIN_EXE_sgemm");
    let out = run(sgemm, &["--quiet", "--shape", "70x33x21", "--trans-b", "--layout", "col"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("70x33x21 col NT")).collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| l.contains(" yes ")), "{stdout}");
    let line = rejected(sgemm, &["--quiet", "--shape", "70x33x21", "--shape", "4000x4000x4000"]);
    assert!(line.contains("4000x4000x4000") && line.contains("too large for the emulator"), "{line}");
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
    let dir = scratch("report");
    let path = dir.join("not-a-run.json");
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let line =
        rejected(MAIN, &["report", path.to_str().unwrap(), "--out", dir.join("out.md").to_str().unwrap()]);
    assert!(line.contains("is not a kernel-lab --json file"), "{line}");
    assert!(!dir.join("out.md").exists());
}

/// In the main job each family takes the names it knows: `fast` is
/// transpose's (and the reduction's) and `scale` the example family's.
#[test]
fn kernel_names_select_across_families() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let out = run(MAIN, &["--quiet", "--only", "transpose,sgemm,scale", "--kernels", "fast,scale"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains(" yes ")).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows[0].contains("transpose_fast") && rows[1].contains("scale"), "{stdout}");
}

const HAZARDS: &str = env!("CARGO_BIN_EXE_hazards");

#[test]
fn hazards_checks_every_label_and_rejects_bad_input() {
    let out = run(HAZARDS, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().filter(|l| l.ends_with(" ok")).count() >= 25, "{stdout}");
    assert!(!stdout.contains("MISMATCH"), "{stdout}");

    let e = rejected(HAZARDS, &["run", "nope"]);
    assert!(e.contains("unknown hazard kernel 'nope'; accepted:") && e.contains("neighbour_read"), "{e}");
    if !has_gpu() {
        for command in ["run", "device"] {
            let args: &[&str] = if command == "run" { &["run", "neighbour_read"] } else { &["device"] };
            let e = rejected(HAZARDS, args);
            assert!(e.contains(&format!("hazards {command} needs a GPU")), "{e}");
        }
    }
    let e = rejected(HAZARDS, &["report", "/nonexistent/sanitizers.txt"]);
    assert!(e.contains("cannot read /nonexistent/sanitizers.txt"), "{e}");

    let dir = scratch("hazards");
    let results = dir.join("sanitizers.txt");
    std::fs::write(&results, "device: test\nracecheck neighbour_read maybe\n").unwrap();
    let out_md = dir.join("sanitizers.md");
    let e = rejected(HAZARDS, &["report", results.to_str().unwrap(), "--out", out_md.to_str().unwrap()]);
    assert!(e.contains("malformed line 'racecheck neighbour_read maybe'"), "{e}");
    assert!(e.contains(results.to_str().unwrap()), "the error names the file: {e}");
    assert!(!out_md.exists());
    let e = rejected(HAZARDS, &["report", results.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert!(e.contains("is a folder"), "{e}");

    // A well-formed file: the table is written, with what was given.
    std::fs::write(
        &results,
        "device: a test device\nracecheck neighbour_read reported\nsynccheck neighbour_read silent\n",
    )
    .unwrap();
    let out = run(HAZARDS, &["report", results.to_str().unwrap(), "--out", out_md.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(&out_md).unwrap();
    assert!(md.contains("GPU run on a test device"), "{md}");
    assert!(md.contains("| [`neighbour_read`](../gpu/src/hazards/race_shared.rs#L"), "{md}");
    assert!(md.contains("✔ shared race | not run | reported | — | not run |"), "{md}");
    assert!(md.contains("## Emulator speed") && md.contains("| 1024 |"), "{md}");
}

/// Without a GPU the emulator runs the sizes given, exactly, and the
/// run's JSON lists the sizes that ran; a size beyond a family's emulator
/// limit, or one the family cannot take, is exit 2 before any work.
#[test]
fn no_gpu_runs_the_sizes_given() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = scratch("sizes");
    let json = dir.join("run.json");
    let out = run(FAMILY_BINS[4], &["--quiet", "--sizes", "1,33", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sizes: Vec<u64> = report["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kernel"] == "scale")
        .map(|r| r["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [1, 33], "{report}");
    assert_eq!(report["sizes"], serde_json::json!([["scale", ["1", "33"]]]), "{report}");
    // Without --sizes, the family's emulator size, and the JSON says so.
    let out = run(FAMILY_BINS[4], &["--quiet", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["sizes"], serde_json::json!([["scale", ["10007"]]]), "{report}");

    // 4 TB of reduction input: past the emulator's limit.
    let line = rejected(MAIN, &["--only", "reduce", "--sizes", "274877906944"]);
    assert!(line.contains("too large for the emulator"), "{line}");
    let line = rejected(FAMILY_BINS[0], &["--sizes", "4096"]);
    assert!(line.contains("transpose 4096") && line.contains("at most 1048576"), "{line}");
    // A device other than the emulator's.
    let line = rejected(MAIN, &["--device", "5"]);
    assert!(line.contains("no device 5"), "{line}");
}

const ATTENTION: &str = env!("CARGO_BIN_EXE_attention");

/// `attention`'s bad input: an unsupported head dimension, kv-heads not
/// dividing heads, a zero size, an unknown precision or step, a backward
/// of a head dimension a step refuses;
/// decode's options without `--decode` and the prefill's with it, a page
/// size that is not a power of two from 16 to 256, an unknown cache type,
/// an empty sequence; and `--sweep` without a GPU (full-size problems: the
/// emulator cannot).
#[test]
fn attention_rejects_bad_input_before_running() {
    for (args, says) in [
        (&["--head-dim", "96"][..], "head dim 96 is not supported"),
        (&["--heads", "4", "--kv-heads", "3"][..], "kv-heads 3 does not divide heads 4"),
        (&["--seq", "0"][..], "every size must be at least 1"),
        (&["--batch", "0"][..], "every size must be at least 1"),
        (&["--precision", "fp8"][..], "unknown --precision 'fp8'; accepted: bf16, f16"),
        (&["--kernels", "fast"][..], "unknown --kernels 'fast'; accepted: unfused, flash, hopper"),
        (
            &["--backward", "--kernels", "hopper", "--head-dim", "256"][..],
            "the hopper backward takes head dims 64 and 128",
        ),
        (&["--deterministic"][..], "--deterministic applies to the backward"),
        (&["--head-descales"][..], "--head-descales quantizes FP8 inputs: add --precision e4m3"),
        (&["--dump", "/tmp"][..], "--dump writes the backward's tensors"),
        (&["--backward", "--kernels", "flash", "--head-dim", "256"][..], "takes head dims 64 and 128"),
        (&["--page-size", "64"][..], "--page-size applies to decode: add --decode"),
        (&["--kv-cache", "e4m3"][..], "--kv-cache applies to decode"),
        (&["--decode", "--page-size", "48"][..], "a power of two of tokens from 16 to 256, not 48"),
        (&["--decode", "--page-size", "512"][..], "not 512"),
        (&["--decode", "--kv-cache", "fp4"][..], "unknown --kv-cache 'fp4'"),
        (&["--decode", "--backward"][..], "--backward does not apply to --decode"),
        (&["--decode", "--kv-lens", "100,0"][..], "every sequence needs at least one key"),
        (&["--decode", "--kv-len", "9", "--kv-lens", "3,4"][..], "give one"),
        (&["--varlen", "9,4", "--seq", "3"][..], "leave out --seq"),
    ] {
        let line = rejected(ATTENTION, args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    if !has_gpu() {
        let line = rejected(ATTENTION, &["--sweep"]);
        assert!(line.contains("needs a GPU"), "{line}");
    }
}

/// Without a GPU, `attention --decode` verifies a paged FP8-cache call of
/// sequences of three lengths on the emulator: its contiguous and paged
/// rows, and (`--explain`) the plan.
#[test]
fn attention_decode_runs_on_the_emulator() {
    if has_gpu() {
        return;
    }
    let args =
        ["--decode", "--heads", "8", "--kv-heads", "2", "--kv-lens", "300,77,130", "--seq", "2", "--causal"];
    let out =
        run(ATTENTION, &[&args[..], &["--page-size", "32", "--kv-cache", "e4m3", "--explain"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("| contiguous |") && stdout.contains("| paged 32 |"), "{stdout}");
    assert!(stdout.contains("e4m3-cache") && stdout.contains("keys split"), "{stdout}");
}

/// Without a GPU, `attention` verifies every step on the emulator at the
/// shape given and prints their rows.
#[test]
fn attention_runs_on_the_emulator() {
    if has_gpu() {
        return;
    }
    let args =
        ["--heads", "2", "--kv-heads", "1", "--seq", "17", "--seq-k", "33", "--head-dim", "64", "--causal"];
    let out = run(ATTENTION, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for step in ["unfused", "flash", "hopper"] {
        assert!(stdout.contains(&format!("| {step} |")), "{stdout}");
    }
    // With the backward: its steps' rows after the forward's, the FLOP
    // convention stated, and `--dump`'s tensors (Q 2 x 17 x 64, K 33 x 64
    // elements of 2 bytes) with the problem's line.
    let dir = scratch("attention-dump");
    let out = run(ATTENTION, &[&args[..], &["--backward", "--dump", dir.to_str().unwrap()]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for step in ["unfused backward", "flash backward", "hopper backward"] {
        assert!(stdout.contains(&format!("| {step} |")), "{stdout}");
    }
    assert!(stdout.contains("10 b h s_q s_k d"), "{stdout}");
    for (name, elements) in [("q", 2 * 17 * 64), ("dq", 2 * 17 * 64), ("k", 33 * 64), ("dv", 33 * 64)] {
        let bytes = std::fs::metadata(dir.join(format!("{name}.bin"))).unwrap().len();
        assert_eq!(bytes, 2 * elements, "{name}.bin");
    }
    let line = std::fs::read_to_string(dir.join("problem.txt")).unwrap();
    assert!(line.starts_with("1 2 1 17 33 64 1 0.125 bf16 hopper"), "{line}");
}

const GEMM: &str = env!("CARGO_BIN_EXE_gemm");

/// `gemm`'s bad input, each one line and exit 2 before anything runs: an
/// unknown precision, layout or activation, an FP8 output, a malformed
/// shape, a leading dimension below its minimum, a tile or split that does
/// not exist, scales for a precision without them.
#[test]
fn gemm_rejects_bad_input_before_running() {
    let shape = ["--shape", "8x8x8"];
    for (args, says) in [
        (
            &["--precision", "fp4"][..],
            "unknown --precision 'fp4'; accepted: f32, tf32, bf16, f16, e4m3, e5m2",
        ),
        (&["--out", "e4m3"][..], "--out e4m3: D is f32, bf16 or f16"),
        (&["--layout", "diag"][..], "--layout is row or col, not 'diag'"),
        (&["--act", "tanh"][..], "unknown activation 'tanh'"),
        (&["--tile", "64x64"][..], "--tile must be one of 128x256, 128x192, 128x128, 64x128, not 64x64"),
        (&["--splits", "0"][..], "--splits must be at least 1"),
        (&["--batch", "0"][..], "--batch must be at least 1"),
        (&["--random", "3"][..], "--random draws its own shapes; drop --shape"),
        (&["--alpha", "nan"][..], "--alpha must be a finite number, not NaN"),
        (&["--beta", "inf"][..], "--beta must be a finite number, not inf"),
        (&["--scale-a", "2"][..], "--scale-a and --scale-b are for FP8 inputs (e4m3, e5m2), not bf16"),
    ] {
        let precision: &[&str] = if args.contains(&"--precision") { &[] } else { &["--precision", "bf16"] };
        let args = [precision, &shape, args].concat();
        let line = rejected(GEMM, &args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    let line = rejected(GEMM, &["--precision", "bf16", "--shape", "8x8"]);
    assert!(line.contains("'8x8' is not a shape"), "{line}");
    let line = rejected(GEMM, &["--precision", "bf16", "--shape", "10x20x30", "--lda", "5"]);
    assert!(line.contains("lda = 5 is below its minimum 30"), "{line}");
}

/// Without a GPU, `gemm` verifies on the emulator at the shapes given, on
/// the plan forced: here 64 x 128 tiles with k split in two, FP8 in.
#[test]
fn gemm_runs_a_forced_plan_on_the_emulator() {
    if has_gpu() {
        return;
    }
    let args = ["--precision", "e4m3", "--out", "bf16", "--shape", "70x130x300", "--op-b", "t"];
    let out = run(GEMM, &[&args[..], &["--tile", "64x128", "--splits", "2"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("| e4m3 | bf16 | 70x130x300 row NT |"), "{stdout}");
    assert!(stdout.contains("64x128 tiles, splits 2"), "{stdout}");
}

/// A negative number where a count, a size or a shape belongs is one line
/// naming the option and the value (clap alone reads `-5` as a flag and
/// prints five lines that never say the value is negative); a negative
/// scalar where one makes sense still runs.
#[test]
fn negative_numbers_are_one_line_errors() {
    let cases: [(&str, &[&str], &str); 6] = [
        (MAIN, &["--sizes", "-5"], "--sizes -5"),
        (MAIN, &["--iters", "-1"], "--iters -1"),
        (FAMILY_BINS[0], &["--warmup", "-2"], "--warmup -2"),
        (ATTENTION, &["--seq", "-1"], "--seq -1"),
        (GEMM, &["--shape", "-1x5x5"], "--shape -1x5x5"),
        (MAIN, &["--iters=-1"], "--iters=-1"),
    ];
    for (bin, args, given) in cases {
        let e = rejected(bin, args);
        assert_eq!(e, format!("error: {given}: the value must be positive"), "{bin} {args:?}");
    }
    let out = run(GEMM, &["--shape", "8x8x8", "--alpha", "-1.5", "--iters", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Without a GPU, a run's `--json` does not replace a GPU run's records
/// (the committed `results/results.json`, which `report` reads): exit 2
/// before any work, the file untouched.
#[test]
fn an_emulator_run_keeps_gpu_results() {
    if has_gpu() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = scratch("keep-gpu-results");
    let json = dir.join("results.json");
    let gpu_run =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../results/results.json")).unwrap();
    std::fs::write(&json, &gpu_run).unwrap();
    let e = rejected(MAIN, &["--only", "scale", "--json", json.to_str().unwrap()]);
    assert!(e.contains("holds a GPU run's records") && e.contains("give another file"), "{e}");
    assert_eq!(std::fs::read_to_string(&json).unwrap(), gpu_run, "the GPU run's records were touched");
}

/// Without a GPU, each library binary states its emulator budget and keeps
/// to it: a problem past it is one line naming the budget and saying to use
/// a GPU (exit 2, before any work, nothing allocated), and so is a sweep
/// or a device that is not there.
#[test]
fn library_binaries_keep_to_the_emulator_s_budget() {
    if has_gpu() {
        return;
    }
    for (bin, args, says) in [
        (GEMM, &["--shape", "100000x100000x100000"][..], "gemm 100000x100000x100000 row NN is too large"),
        (GEMM, &["--shape", "4095x4095x4095"][..], "(6.9e10 multiply-adds, at most 2^30"),
        (GEMM, &["--shape", "8192x1024x1"][..], "elements of A, B and C, at most 2^23"),
        (GEMM, &["--shape", "512x512x512", "--batch", "9"][..], "multiply-adds, at most 2^30"),
        (ATTENTION, &["--seq", "100000", "--heads", "64", "--batch", "64"][..], "at most 2^26"),
        (ATTENTION, &["--heads", "16"][..], "attention b1 h16/16 s256 d128 is too large"),
    ] {
        let line = rejected(bin, args);
        assert!(line.contains(says) && line.ends_with("run it on a GPU"), "{args:?}: {line}");
    }
    let line = rejected(GEMM, &["--sweep"]);
    assert!(line.contains("--sweep times the public sweep's full-size shapes and needs a GPU"), "{line}");
    let line = rejected(GEMM, &["--random", "5", "--seed", "1"]);
    assert!(line.contains("--random times its full-size shapes and needs a GPU"), "{line}");
    let line = rejected(GEMM, &["--random", "0"]);
    assert!(line.contains("--random must be at least 1"), "{line}");
    for bin in [GEMM, ATTENTION] {
        let line = rejected(bin, &["--device", "3"]);
        assert!(line.contains("no device 3"), "{line}");
    }
}

/// Without a GPU, `gemm` and `attention` with no arguments run the
/// emulator's defaults, in well under a minute, and say what ran.
#[test]
fn library_binaries_defaults_finish_on_the_emulator() {
    if has_gpu() {
        return;
    }
    for (bin, says) in
        [(GEMM, "| bf16 | f32 | 512x384x256 row NN |"), (ATTENTION, "| bf16 | b1 h2/2 s256 d128 | hopper |")]
    {
        let start = std::time::Instant::now();
        let out = run(bin, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bin}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(says), "{bin}: {stdout}");
        assert!(start.elapsed().as_secs() < 60, "{bin} took {:?}", start.elapsed());
    }
}

/// `--json` on the library binaries: checked before the work (a folder,
/// a file of /proc, a GPU run's records are exit 2) and written after it,
/// with the device, the date and every row.
#[test]
fn library_binaries_write_json() {
    let dir = scratch("library-json");
    for (bin, args) in [
        (GEMM, &["--shape", "40x24x72", "--precision", "f16", "--out", "bf16"][..]),
        (ATTENTION, &["--heads", "2", "--seq", "40", "--head-dim", "64", "--kernels", "flash"][..]),
    ] {
        let json = dir.join("rows.json");
        for (path, says) in [
            (dir.to_str().unwrap(), "is a folder, not a file"),
            ("/proc/version", "is a file of the kernel's /proc or /sys"),
        ] {
            let line = rejected(bin, &[args, &["--json", path]].concat());
            assert!(line.contains(says), "{line}");
        }
        if !has_gpu() {
            let gpu_run = concat!(env!("CARGO_MANIFEST_DIR"), "/../results/results.json");
            std::fs::copy(gpu_run, &json).unwrap();
            let line = rejected(bin, &[args, &["--json", json.to_str().unwrap()]].concat());
            assert!(line.contains("holds a GPU run's records"), "{line}");
            std::fs::remove_file(&json).unwrap();
        }
        let out = run(bin, &[args, &["--json", json.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(rows["binary"], bin.rsplit('/').next().unwrap(), "{rows}");
        assert!(rows["device"].is_string() && rows["date"].as_str().is_some_and(|d| d.len() == 10), "{rows}");
        let rows = rows["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let worst = rows[0]["worst_error_over_bound"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&worst), "{rows:?}");
    }
}

/// Forced k-splits that the call cannot take as asked are said, with what
/// ran.
#[test]
fn gemm_says_when_forced_splits_run_otherwise() {
    let out = run(GEMM, &["--shape", "64x64x128", "--tile", "64x128", "--splits", "1000", "--iters", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("note: --splits 1000 ran as 2 (k = 128 is 2 steps of 64"), "{stderr}");
}

#[test]
fn grouped_and_block_scaled_calls_are_checked_before_any_work() {
    for (args, says) in [
        (&["--groups", "0", "--shape", "10x64x64"][..], "0 groups (at least 1)"),
        (&["--groups", "2", "--shape", "10x60x64"], "n = 60 is not a multiple of 8"),
        (&["--groups", "2", "--shape", "10x64x64", "--skew", "9"], "--skew is 0..=8"),
        (&["--groups", "2", "--shape", "10x64x64", "--precision", "tf32"], "bf16, f16 or e4m3"),
        (&["--groups", "2", "--shape", "10x64x64", "--beta", "1"], "not --beta"),
        (&["--groups", "2", "--shape", "10x64x64", "--random", "3"], "drop --sweep and --random"),
        (&["--block-scaled", "--shape", "64x64x64"], "--precision e4m3"),
        (&["--block-scaled", "--precision", "e4m3", "--shape", "64x64x40"], "k = 40 is not a multiple of 16"),
        (
            &["--block-scaled", "--precision", "e4m3", "--shape", "64x64x64", "--scale-a", "2"],
            "draws its own scales",
        ),
    ] {
        let line = rejected(env!("CARGO_BIN_EXE_gemm"), args);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    if !has_gpu() {
        // A bias per expert, verified on the emulator.
        let args =
            ["--groups", "3", "--shape", "40x72x96", "--bias", "--skew", "1", "--out", "bf16", "--quiet"];
        let out = run(env!("CARGO_BIN_EXE_gemm"), &args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("bias"),
            "{}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
