//! Compiles the `gpu/` crate to PTX with rustc's own NVPTX backend, once per
//! target architecture, and leaves `gpu_<arch>.ptx` in `OUT_DIR` for the host
//! crate to embed (`cpu/ptx.rs`).
//!
//! The nvptx build runs a nested `cargo rustc` with `-Zbuild-std=core` (rustup
//! ships no `rust-std` for nvptx64) and the `ptx` profile (fat LTO, one
//! codegen unit, abort on panic). rustc's default linker for this target,
//! `llvm-bitcode-linker`, is not shipped either, so `build/ptx-linker` takes
//! its place: it runs `llc` from the `llvm-tools` component on the single LTO
//! module. No CUDA toolkit and no GPU are needed.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The architectures we emit PTX for. The host picks the newest one that is
/// not newer than the device (PTX for sm_80 also runs on sm_90 after the
/// driver's JIT, but uses none of its features).
const ARCHS: &[&str] = &["sm_80", "sm_90"];
const NVPTX: &str = "nvptx64-nvidia-cuda";

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=gpu");
    println!("cargo::rerun-if-changed=dev");
    println!("cargo::rerun-if-changed=macros");
    println!("cargo::rerun-if-changed=build/ptx-linker");
    println!("cargo::rerun-if-changed=rust-toolchain.toml");
    match build_ptx() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            println!("cargo::error={message}");
            ExitCode::SUCCESS // cargo::error already fails the build, in one line
        }
    }
}

fn build_ptx() -> Result<(), String> {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let host = env::var("HOST").unwrap();

    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .ok_or("could not run rustc --print sysroot; run `rustup toolchain install` in the repository")?;
    if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").exists() {
        return Err("the nvptx build needs the rust-src component: run `rustup toolchain install` in the repository (it installs rust-toolchain.toml's components)".into());
    }
    let llc = sysroot.join(format!("lib/rustlib/{host}/bin/llc"));
    if !llc.exists() {
        return Err("the nvptx build needs the llvm-tools component: run `rustup toolchain install` in the repository (it installs rust-toolchain.toml's components)".into());
    }

    // One nvptx target dir shared by every host profile, next to the host's
    // own (so `core` is built once, not once per debug/release/test).
    let target_dir = nvptx_target_dir(&out_dir);
    for arch in ARCHS {
        let output = Command::new(&cargo)
            .current_dir(&root)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTC_WRAPPER")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env("PTX_LLC", &llc)
            .args(["rustc", "--package", "gpu", "--lib", "--crate-type", "cdylib"])
            .args(["--target", NVPTX, "-Zbuild-std=core", "--profile", "ptx"])
            .arg("--target-dir")
            .arg(&target_dir)
            .args(["--", "-C"])
            .arg(format!("target-cpu={arch}"))
            .arg("-C")
            .arg(format!("linker={}", root.join("build/ptx-linker").display()))
            .output()
            .map_err(|e| format!("could not run cargo for the nvptx build: {e}"))?;
        if !output.status.success() {
            // The nested cargo's own report (rustc errors in gpu/) is what
            // the user needs; cargo shows a build script's stderr on failure.
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            return Err(format!(
                "compiling gpu/ to PTX for {arch} failed (the nvptx build's output is above)"
            ));
        }
        let ptx = target_dir.join(NVPTX).join("ptx").join("gpu.ptx");
        let text = std::fs::read_to_string(&ptx)
            .map_err(|e| format!("the nvptx build left no {}: {e}", ptx.display()))?;
        let dest = out_dir.join(format!("gpu_{arch}.ptx"));
        std::fs::write(&dest, add_launch_bounds(&text)?)
            .map_err(|e| format!("could not write {}: {e}", dest.display()))?;
    }
    Ok(())
}

/// The prefix of the data a `#[kernel(min_blocks = ..)]` declaration leaves
/// in the PTX: `.visible .global .align 4 .b8 __launch_bounds__NAME[16] =
/// {...};`, four little-endian `u32` (block x, y, z, minimum blocks per SM).
const BOUNDS_PREFIX: &str = "__launch_bounds__";

/// Moves each kernel's launch bounds from that data into its entry:
/// `.maxntid x, y, z` and `.minnctapersm n` between the parameter list and
/// the body, where LLVM puts them for CUDA C's `__launch_bounds__` (Rust has
/// no attribute that reaches them). The data itself is removed, so the PTX
/// holds only the kernels.
fn add_launch_bounds(ptx: &str) -> Result<String, String> {
    let mut text = String::with_capacity(ptx.len());
    let mut bounds = Vec::new();
    for line in ptx.lines() {
        let Some(rest) = line
            .trim_start()
            .strip_prefix(".visible .global .align 4 .b8 ")
            .and_then(|r| r.strip_prefix(BOUNDS_PREFIX))
        else {
            text.push_str(line);
            text.push('\n');
            continue;
        };
        let (name, data) =
            rest.split_once("[16]").ok_or_else(|| format!("malformed launch bounds: {line}"))?;
        let bytes: Vec<u32> = data
            .trim_start_matches([' ', '=', '{'])
            .trim_end_matches([';', '}'])
            .split(',')
            .filter(|b| !b.trim().is_empty())
            .map(|b| b.trim().parse::<u32>().map_err(|_| format!("malformed launch bounds: {line}")))
            .collect::<Result<_, _>>()?;
        // Trailing zero bytes are left out of the initializer.
        let byte = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let word = |w: usize| (0..4).map(|i| byte(4 * w + i) << (8 * i)).sum::<u32>();
        bounds.push((name.to_string(), [word(0), word(1), word(2), word(3)]));
    }
    for (name, [x, y, z, blocks]) in bounds {
        let header = format!(".entry {name}(");
        let start = text
            .find(&header)
            .ok_or_else(|| format!("kernel {name} has launch bounds but no entry in the PTX"))?;
        // The body's opening brace is the first line that is just "{".
        let brace = text[start..]
            .find("\n{\n")
            .map(|i| start + i + 1)
            .ok_or_else(|| format!("no body found for kernel {name}"))?;
        text.insert_str(brace, &format!(".maxntid {x}, {y}, {z}\n.minnctapersm {blocks}\n"));
    }
    Ok(text)
}

/// `<target>/<profile>/build/<pkg>-<hash>/out` -> `<target>/nvptx`.
fn nvptx_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("nvptx"))
        .unwrap_or_else(|| out_dir.join("nvptx"))
}
