//! Output paths (`--json`, `--plots`, `report --out`) are written as `cp`
//! writes them: the path the user gave is opened for writing and written,
//! so a symlink writes its target and a FIFO its reader; a path that
//! cannot be written is rejected (exit 2) before any work, leaving nothing
//! behind; a write that fails after the work is one line, never `wrote`.
//! Every case on temporary paths. And what `report --attention` writes
//! from the attention tables a GPU run printed.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCALE: &str = env!("CARGO_BIN_EXE_scale");
const MAIN: &str = env!("CARGO_BIN_EXE_kernel-lab");

/// `bin` with `args`, run from the repository's root, as a user would.
fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lab-outputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success());
}

/// One small run (scale at 1000 elements) with `args` after it.
fn scale(args: &[&str]) -> Output {
    let mut all = vec!["--quiet", "--sizes", "1000"];
    all.extend_from_slice(args);
    run(SCALE, &all)
}

fn is_run_json(text: &str) {
    let json: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(json["records"].as_array().is_some_and(|r| !r.is_empty()), "{text}");
}

#[test]
fn a_symlink_writes_its_target() {
    let dir = scratch("symlink");
    let target = dir.join("target.json");
    std::fs::write(&target, "old").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = scale(&["--json", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    is_run_json(&std::fs::read_to_string(&target).unwrap());
    assert_eq!(entries(&dir), ["link.json", "target.json"]);
}

#[test]
fn a_fifo_is_written_to_its_reader_and_stays_a_fifo() {
    let dir = scratch("fifo");
    let fifo = dir.join("results.json");
    mkfifo(&fifo);
    let (send, receive) = std::sync::mpsc::channel();
    {
        let fifo = fifo.clone();
        std::thread::spawn(move || send.send(std::fs::read_to_string(fifo).unwrap()));
    }
    let out = scale(&["--json", fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // A reader never met by a writer is left waiting (its thread leaks).
    let read = receive.recv_timeout(std::time::Duration::from_secs(10)).expect("the reader got the JSON");
    is_run_json(&read);
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    assert_eq!(entries(&dir), ["results.json"]);
}

#[test]
fn a_folder_is_rejected_before_any_work() {
    let dir = scratch("folder");
    for (bin, args) in [
        (SCALE, vec!["--json", dir.to_str().unwrap()]),
        (MAIN, vec!["report", "/nonexistent.json", "--out", dir.to_str().unwrap()]),
    ] {
        let out = run(bin, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
}

/// A read-only file: a user other than root cannot write it, and is told
/// so before any work, the file untouched; root can, as with `cp`.
#[test]
fn a_read_only_file_is_rejected_before_any_work_unless_root() {
    let dir = scratch("read-only");
    let file = dir.join("results.json");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = scale(&["--json", file.to_str().unwrap()]);
    if is_root() {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        is_run_json(&std::fs::read_to_string(&file).unwrap());
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    }
    assert_eq!(entries(&dir), ["results.json"]);
}

/// A file under something that is not a folder cannot be written by
/// anyone: exit 2 before any work, and nothing created.
#[test]
fn a_path_under_a_file_is_rejected_and_nothing_is_created() {
    let dir = scratch("under-file");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    for flag in ["--json", "--plots"] {
        let out = scale(&[flag, file.join("out").to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: ") && stderr.contains(flag) && stderr.lines().count() == 1,
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    assert_eq!(entries(&dir), ["a-file"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// An existing file is not truncated or replaced by a run that is
/// rejected, and a run that writes it keeps its inode (written in place).
#[test]
fn an_existing_file_is_written_in_place_and_kept_on_rejection() {
    use std::os::unix::fs::MetadataExt;
    let dir = scratch("existing");
    let file = dir.join("results.json");
    std::fs::write(&file, "old").unwrap();
    let inode = std::fs::metadata(&file).unwrap().ino();
    let out = scale(&["--json", file.to_str().unwrap(), "--sizes", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
    let out = scale(&["--json", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    is_run_json(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode, "the file was replaced, not written");
    assert_eq!(entries(&dir), ["results.json"]);
}

/// A write that fails after the work (here a FIFO whose reader has gone:
/// EPIPE) is an error naming the path, not a success.
#[test]
fn a_failed_write_is_an_error() {
    let dir = scratch("broken-pipe");
    let fifo = dir.join("out");
    mkfifo(&fifo);
    {
        let fifo = fifo.clone();
        // Opens the FIFO (meeting the writer's open) and closes it at once.
        std::thread::spawn(move || drop(std::fs::File::open(fifo).unwrap()));
    }
    // More than a pipe holds, so the write meets the closed end.
    let text = "x".repeat(1 << 22);
    let result = kernel_lab::files::write_file(&fifo, &text);
    let error = result.expect_err("a write into a closed pipe fails").to_string();
    assert!(error.contains("cannot write") && error.contains(fifo.to_str().unwrap()), "{error}");
}

/// A scratch folder `name` for a report: its tables' folder (empty) and
/// a main run's JSON (the scale family alone).
fn report_inputs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let tables = dir.join("attention");
    std::fs::create_dir_all(&tables).unwrap();
    let json = dir.join("run.json");
    let out = run(MAIN, &["--quiet", "--only", "scale", "--sizes", "1000", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, tables, json)
}

/// `report --attention DIR` joins `attention --sweep`'s table with torch's
/// on the same problems: each step's TFLOP/s beside FLASH's and CUDNN's,
/// the best step's ratio to each, and the plot.
#[test]
fn report_adds_the_attention_section_from_both_tables() {
    let (dir, tables, json) = report_inputs("attention-report");
    std::fs::write(
        tables.join("sweep-bf16-h100.md"),
        "NVIDIA H100 (test)\n| precision | problem | step | worst error / bound | ms | TFLOP/s |\n\
         | --- | --- | --- | --- | --- | --- |\n\
         | bf16 | b4 h16/16 s4096 d128 causal | unfused | 0.010 | 9.0 | 50.0 |\n\
         | bf16 | b4 h16/16 s4096 d128 causal | flash | 0.020 | 1.0 | 150.0 |\n\
         | bf16 | b4 h16/4 s1000x4097 d128 causal | flash | 0.020 | 1.0 | 120.0 |\n\
         | bf16 | b8 h16/16 s77 d128 | flash | 0.020 | 1.0 | 30.0 |\n",
    )
    .unwrap();
    std::fs::write(
        tables.join("torch-sdpa-bf16-h100.md"),
        "torch 2.11, NVIDIA H100, bf16\n| b h/kv s_q x s_k d | causal | backend | ms | TFLOP/s |\n\
         | --- | --- | --- | --- | --- |\n\
         | 4 16/16 4096x4096 128 | yes | FLASH | 0.5 | 300.0 |\n\
         | 4 16/16 4096x4096 128 | yes | CUDNN | 0.25 | 600.0 |\n\
         | 4 16/4 1000x4097 128 | yes (top-left) | FLASH | 0.5 | 240.0 |\n\
         | 4 16/4 1000x4097 128 | yes (top-left) | CUDNN | 0.1 | 900.0 |\n\
         | 8 16/16 77x77 128 | no | FLASH | 0.5 | 15.0 |\n\
         | 8 16/16 77x77 128 | no | CUDNN | refused | no kernel |\n",
    )
    .unwrap();
    let (md, plots) = (dir.join("B.md"), dir.join("plots"));
    let args =
        ["report", json.to_str().unwrap(), "--out", md.to_str().unwrap(), "--plots", plots.to_str().unwrap()];
    let out = run(MAIN, &[&args[..], &["--attention", tables.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("## Attention"), "{text}");
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    // The best step (flash, 150) against FLASH (300) and CUDNN (600).
    assert_eq!(
        row("4·16·4096·128 causal"),
        "| 4·16·4096·128 causal | 50.0 | 150.0 | 300.0 | 600.0 | 50.0% | 25.0% |"
    );
    // A step that did not run is a dash, and so is a peer with another
    // mask (torch's top-left causal where the lengths differ) ...
    assert_eq!(
        row("4·16/4·1000x4097·128 causal"),
        "| 4·16/4·1000x4097·128 causal | - | 120.0 | - | - | - | - |"
    );
    // ... and a backend that refused.
    assert_eq!(row("8·16·77·128"), "| 8·16·77·128 | - | 30.0 | 15.0 | - | 200.0% | - |");
    let svg = std::fs::read_to_string(plots.join("attention_bf16.svg")).unwrap();
    assert!(svg.contains("torch CUDNN") && svg.contains("flash"), "{svg}");
    // No backward tables, no backward section.
    assert!(!text.contains("## Attention backward"), "{text}");
    // A folder without our tables is one line and exit 2, and writes nothing.
    std::fs::remove_file(&md).unwrap();
    let out = run(MAIN, &[&args[..], &["--attention", dir.join("plots").to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("no sweep-") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(!md.exists());
}

/// With `attention --backward --sweep`'s table and torch's backward
/// timings beside the forward's, `report --attention` adds the backward
/// section: each backward step beside FLASH's and CUDNN's backward, the
/// best one's ratio to each, the training step (our fastest forward plus
/// backward against cuDNN's), the deterministic mode's cost, the targets,
/// and the plot.
#[test]
fn report_adds_the_attention_backward_section() {
    let (dir, tables, json) = report_inputs("attention-backward-report");
    let ours = "| precision | problem | step | worst error / bound | ms | TFLOP/s |\n| --- | --- | --- | --- | --- | --- |\n";
    std::fs::write(
        tables.join("sweep-bf16-h100.md"),
        format!("NVIDIA H100 (test)\n{ours}| bf16 | b4 h16/16 s4096 d128 | flash | 0.020 | 1.0 | 300.0 |\n"),
    )
    .unwrap();
    std::fs::write(
        tables.join("backward-sweep-bf16-h100.md"),
        format!(
            "NVIDIA H100 (test)\n{ours}\
             | bf16 | b4 h16/16 s4096 d128 | flash | 0.020 | 2.0 | 300.0 |\n\
             | bf16 | b4 h16/16 s4096 d128 | hopper | 0.020 | 1.0 | 600.0 |\n\
             | bf16 | b4 h16/16 s4096 d128 | unfused backward | 0.010 | 30.0 | 50.0 |\n\
             | bf16 | b4 h16/16 s4096 d128 | flash backward | 0.010 | 4.0 | 375.0 |\n\
             | bf16 | b4 h16/16 s4096 d128 deterministic | flash | 0.020 | 2.0 | 300.0 |\n\
             | bf16 | b4 h16/16 s4096 d128 deterministic | flash backward | 0.010 | 5.0 | 300.0 |\n"
        ),
    )
    .unwrap();
    std::fs::write(
        tables.join("torch-sdpa-backward-bf16-h100.md"),
        "torch 2.11, NVIDIA H100, bf16\n\
         | b h/kv s_q x s_k d | causal | backend | forward ms | forward TFLOP/s | backward ms | backward TFLOP/s |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n\
         | 4 16/16 4096x4096 128 | no | FLASH | 2.0 | 300.0 | 5.0 | 300.0 |\n\
         | 4 16/16 4096x4096 128 | no | CUDNN | 1.0 | 600.0 | 3.0 | 500.0 |\n",
    )
    .unwrap();
    let (md, plots) = (dir.join("B.md"), dir.join("plots"));
    let args =
        ["report", json.to_str().unwrap(), "--out", md.to_str().unwrap(), "--plots", plots.to_str().unwrap()];
    let out = run(MAIN, &[&args[..], &["--attention", tables.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    let section = &text[text.find("## Attention backward").unwrap_or_else(|| panic!("{text}"))..];
    let row =
        section.lines().find(|l| l.starts_with("| 4·16·4096·128 ")).unwrap_or_else(|| panic!("{section}"));
    // Backward steps 50 and 375 beside FLASH 300 and CUDNN 500; the
    // training step: hopper's 1.0 + flash backward's 4.0 against cuDNN's
    // 1.0 + 3.0.
    assert_eq!(
        row,
        "| 4·16·4096·128 | 50.0 | 375.0 | 300.0 | 500.0 | 125.0% | 75.0% | 5.000 | 4.000 | 80.0% |"
    );
    // The target (flash backward at d = 128 against FLASH) is met.
    assert!(section.contains("| 125.0% at 4·16·4096·128 | yes |"), "{section}");
    // The deterministic rows: a cost beside the default, not a step of
    // the main table, and its target (at most 15% slower) missed: 300
    // against 375 TFLOP/s is 80%.
    assert!(section.contains("| 4·16·4096·128 | flash backward | 4.0000 | 5.0000 | +25.0% |"), "{section}");
    assert!(section.contains("| 80.0% at 4·16·4096·128 | **no** |"), "{section}");
    // The unfused step's traffic: 26 bytes a score, 4·16·4096² scores,
    // 27.9 GB in 30 ms.
    assert!(section.contains("| 4·16·4096·128 | 30.0000 | 27.9 | 0.93 |"), "{section}");
    let svg = std::fs::read_to_string(plots.join("attention_backward_bf16.svg")).unwrap();
    assert!(svg.contains("torch CUDNN") && svg.contains("flash backward"), "{svg}");
}

/// `report --gemm DIR` with a `gemm --block-scaled` table: each call
/// against cuBLASLt's block-scaled mode (the ratio the table measured,
/// not one from its rounded TFLOP/s), the per-tensor products beside,
/// and the geomean.
#[test]
fn report_adds_the_block_scaled_section() {
    let (dir, _, json) = report_inputs("blockscaled-report");
    let tables = dir.join("gemm");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(
        tables.join("blockscaled-e4m3-bf16-h100.md"),
        "NVIDIA H100 (test), driver 13.0, 2026-12-06\ngit 0123456789ab\n\
         | call | out | worst error / bound (ours, cuBLASLt) | ours ms | ours TFLOP/s | cuBLASLt block-scaled TFLOP/s | ours / cuBLASLt block-scaled | per-tensor (ours) TFLOP/s | cuBLASLt per-tensor TFLOP/s |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n\
         | 4096x7168x16384 e4m3, scales per 1x128 and 128x128 | bf16 | 0.4, 0.5 | 1.0 | 900.0 | 1200.0 | 75.1% | 1500.0 | 1400.0 |\n\
         | 128x7168x16384 e4m3, scales per 1x128 and 128x128 | bf16 | 0.4, 0.5 | 1.0 | 400.0 | 500.0 | 80.0% | 600.0 | 650.0 |\n",
    )
    .unwrap();
    let md = dir.join("B.md");
    let args =
        ["report", json.to_str().unwrap(), "--out", md.to_str().unwrap(), "--gemm", tables.to_str().unwrap()];
    let out = run(MAIN, &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    let section = &text[text.find("### Block-scaled FP8").unwrap_or_else(|| panic!("{text}"))..];
    assert!(section.contains("`e4m3-bf16` on NVIDIA H100, 2026-12-06, git `0123456789ab`"), "{section}");
    assert!(section.contains("| 4096x7168x16384 | 900.0 | 1200.0 | 75.1% | 1500.0 / 1400.0 |"), "{section}");
    assert!(section.contains("| 128x7168x16384 | 400.0 | 500.0 | 80.0% | 600.0 / 650.0 |"), "{section}");
    // sqrt(0.751 x 0.8)
    assert!(section.contains("Geomean against cuBLASLt's block-scaled mode: 77.5%."), "{section}");
}
