//! Every `cargo run --release` command that README.md and the guides in
//! `docs/` show, run as written on a machine without a GPU, in a scratch
//! folder holding a copy of `results/` (so that the commands which write
//! `BENCHMARKS.md`, plots or `docs/sanitizers.md` write there): each
//! finishes within a time bound, with exit status 0, or says in one line
//! why it needs a GPU (exit status 2). On a GPU machine the commands are
//! full runs, and this test leaves them to the user.

mod common;

use common::copy_tree;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The most one command may take on the emulator.
const BOUND: Duration = Duration::from_secs(120);

/// The executable `cargo run --release --bin name` runs, for the host
/// crate's binaries; `None` for another project's (the rust-cuda
/// example's own, which `tests/example.rs` runs in its folder).
fn executable(name: &str) -> Option<&'static str> {
    Some(match name {
        "kernel-lab" => env!("CARGO_BIN_EXE_kernel-lab"),
        "transpose" => env!("CARGO_BIN_EXE_transpose"),
        "reduce" => env!("CARGO_BIN_EXE_reduce"),
        "memory-lab" => env!("CARGO_BIN_EXE_memory-lab"),
        "sgemm" => env!("CARGO_BIN_EXE_sgemm"),
        "scale" => env!("CARGO_BIN_EXE_scale"),
        "gemm" => env!("CARGO_BIN_EXE_gemm"),
        "attention" => env!("CARGO_BIN_EXE_attention"),
        "hazards" => env!("CARGO_BIN_EXE_hazards"),
        _ => return None,
    })
}

/// The `cargo run --release ...` commands of a markdown text: the lines
/// of its `sh` blocks and its inline code spans (which may wrap), with
/// `./scripts/setup && ` and trailing `# comments` dropped.
fn commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_sh = false;
    let mut spans = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.starts_with("```sh");
            continue;
        }
        if in_sh {
            found.push(line.to_string());
        } else {
            spans.push_str(line);
            spans.push(' ');
        }
    }
    // Inline spans: the text between pairs of backticks (blocks' fences
    // were left out above).
    found.extend(spans.split('`').skip(1).step_by(2).map(str::to_string));
    found
        .iter()
        .map(|c| {
            let c = c.split(" #").next().unwrap();
            let c = c.trim().trim_start_matches("./scripts/setup && ");
            c.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|c| c.starts_with("cargo run --release"))
        .collect()
}

/// The binary and arguments of a `cargo run --release` command.
fn program(command: &str) -> (String, Vec<String>) {
    let words: Vec<&str> = command.split_whitespace().skip(3).collect();
    let (cargo_args, args) = match words.iter().position(|&w| w == "--") {
        Some(at) => (&words[..at], &words[at + 1..]),
        None => (&words[..], &[][..]),
    };
    let bin = match cargo_args {
        [] => "kernel-lab",
        ["--bin", name] => name,
        other => panic!("{command}: cargo options this test does not know: {other:?}"),
    };
    (bin.to_string(), args.iter().map(|a| a.to_string()).collect())
}

#[test]
fn the_docs_commands_run_as_written_without_a_gpu() {
    if kernel_lab::runtime::open(0).is_ok() {
        eprintln!("skipped: on a GPU the docs' commands are full runs");
        return;
    }
    let mut all = Vec::new();
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        // The history of the work quotes commands as they were then.
        if path.extension().is_some_and(|e| e == "md") && !path.ends_with("notes.md") {
            pages.push(path);
        }
    }
    for page in &pages {
        for command in commands(&std::fs::read_to_string(page).unwrap()) {
            if !all.contains(&command) {
                all.push(command);
            }
        }
    }
    assert!(all.len() >= 10, "{all:#?}");

    let scratch = std::env::temp_dir().join(format!("kernel-lab-commands-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    copy_tree(&root().join("results"), &scratch.join("results"));
    std::fs::create_dir_all(scratch.join("docs")).unwrap();

    let mut ran = 0;
    for command in &all {
        let (bin, args) = program(command);
        let Some(exe) = executable(&bin) else { continue };
        let start = Instant::now();
        let mut child = Command::new(exe)
            .args(&args)
            .current_dir(&scratch)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > BOUND {
                child.kill().unwrap();
                panic!("`{command}` ran past {BOUND:?} without a GPU");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        match status.code() {
            Some(0) => assert!(errors.is_empty(), "`{command}`: {stderr}"),
            Some(2) => assert!(
                errors.len() == 1 && errors[0].contains("GPU") && stderr.lines().count() == 1,
                "`{command}` should say in one line why it needs a GPU:\n{stderr}"
            ),
            other => panic!("`{command}` exited with {other:?}:\n{stderr}"),
        }
        eprintln!("{:>6.1} s  exit {}  {command}", start.elapsed().as_secs_f64(), status.code().unwrap());
        ran += 1;
    }
    assert!(ran >= 8, "{ran} commands ran");
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// [`executable`] knows every binary of `cpu/Cargo.toml`.
#[test]
fn every_binary_is_known() {
    let manifest = std::fs::read_to_string(root().join("cpu/Cargo.toml")).unwrap();
    let bins: Vec<&str> =
        manifest.split("[[bin]]").skip(1).map(|entry| entry.split('"').nth(1).expect("a name")).collect();
    assert!(bins.len() >= 9, "{bins:?}");
    for bin in bins {
        assert!(executable(bin).is_some(), "{bin} is not in `executable`");
    }
}
