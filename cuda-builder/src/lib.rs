//! Compiles a kernel crate to PTX from a build script, in the role of
//! rust-cuda's `cuda_builder`, with stock nightly rustc's own NVPTX backend:
//! no CUDA toolkit, no LLVM 7.
//!
//! ```ignore
//! // build.rs
//! fn main() {
//!     lab_cuda_builder::CudaBuilder::new("kernels").run();
//! }
//! ```
//!
//! leaves `kernels_sm_80.ptx`, `kernels_sm_90.ptx` and `kernels_sm_90a.ptx`
//! in `OUT_DIR`, each with its packed form beside it (`.ptx.z`, each
//! kernel's module compressed on its own: [`ptx_text`]), which
//! `lab_runtime::include_ptx!("kernels")` embeds; the host picks the one
//! that suits the device (`sm_90a` on Hopper).
//!
//! How: a nested `cargo rustc` per architecture, all at once (each with a
//! target directory of its own), for `nvptx64-nvidia-cuda` with
//! `-Zbuild-std=core` (rustup ships no `rust-std` for that target),
//! fat LTO and one codegen unit (a `ptx` profile given on the command
//! line), `no_std` and the `abi_ptx` feature added to the crate from the
//! command line (so a rust-cuda kernel crate needs no attribute of ours),
//! and `ptx-linker` in place of rustc's `llvm-bitcode-linker` (not shipped
//! either): it runs `llc` from the `llvm-tools` component on the one LTO
//! module. Kernels declared with `#[kernel(min_blocks = ..)]` leave launch
//! bounds as data, which becomes `.maxntid`/`.minnctapersm` here.
//!
//! Errors are rustc's own, printed as the nested build reports them; a
//! missing toolchain component is one line saying which and how to get it.
//!
//! Under `cargo clippy` the files are one-line placeholders: clippy lints
//! the host code, and its build-script run is a unit of its own, so
//! building the PTX there would cost the nested build a second time.

mod nested;
pub mod ptx_text;
mod stamp;

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nested::{Nested, host_target_dir, nvptx_target_dir};

const NVPTX: &str = "nvptx64-nvidia-cuda";
const LINKER: &str = include_str!("../ptx-linker");

/// The architectures built unless [`CudaBuilder::archs`] says otherwise:
/// Ampere and later (`sm_80`), Hopper and later (`sm_90`), and Hopper's
/// architecture-specific features (`sm_90a`: `wgmma`, `setmaxnreg`).
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_90", "sm_90a"];

/// Why a build failed, in one line (rustc's own errors are printed above).
#[derive(Debug)]
pub enum BuildError {
    CrateNotFound(PathBuf),
    /// The toolchain lacks something the nvptx build needs.
    Toolchain(String),
    /// The nested build failed for this architecture (rustc's errors are
    /// above).
    Failed {
        krate: String,
        arch: String,
    },
    Io(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::CrateNotFound(p) => {
                write!(f, "no kernel crate at {} (no Cargo.toml there)", p.display())
            }
            BuildError::Toolchain(m) | BuildError::Io(m) => f.write_str(m),
            BuildError::Failed { krate, arch } => {
                write!(f, "compiling {krate} to PTX for {arch} failed (rustc's errors are above)")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// A kernel crate to compile to PTX.
pub struct CudaBuilder {
    krate: PathBuf,
    archs: Vec<String>,
    /// The parts an architecture's PTX is built in ([`CudaBuilder::parts`]).
    parts: Vec<(String, Vec<String>)>,
    copy_to: Option<PathBuf>,
    watch: Vec<PathBuf>,
    /// Also build the crate for the host as a shared library
    /// ([`CudaBuilder::emulator_library`]).
    library: bool,
}

impl CudaBuilder {
    /// The kernel crate at `path` (relative to the calling package's
    /// manifest directory).
    pub fn new(path: impl AsRef<Path>) -> Self {
        let base = env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default();
        CudaBuilder {
            krate: base.join(path),
            archs: DEFAULT_ARCHS.iter().map(|a| a.to_string()).collect(),
            parts: Vec::new(),
            copy_to: None,
            watch: Vec::new(),
            library: true,
        }
    }

    /// The architectures to build (`sm_80`, `sm_90`, `sm_90a`, ...).
    pub fn archs(mut self, archs: &[&str]) -> Self {
        self.archs = archs.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Builds the PTX of each of `archs` in `parts`, at once: one nested
    /// build per part, with `--cfg ptx_part="<part>"` and `--cfg
    /// ptx_parts`, from which the crate leaves out the kernels other parts
    /// hold (`#[cfg(any(not(ptx_parts), ptx_part = "..."))]` on what one
    /// part holds, which keeps it in a build not in parts). Each part
    /// keeps a target directory of its own, and rustc's record of the
    /// files a build read leaves out the modules a part left out, so an
    /// edit rebuilds only the parts that read the file edited. The
    /// architecture's PTX is the
    /// parts' modules one after the other, in this order (the runtime cuts
    /// each kernel's module from the part that holds it). For a crate one
    /// family of whose kernels is most of the PTX, an edit elsewhere skips
    /// that family's minutes.
    pub fn parts(mut self, archs: &[&str], parts: &[&str]) -> Self {
        let parts: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
        self.parts.extend(archs.iter().map(|a| (a.to_string(), parts.clone())));
        self
    }

    /// Also copy the first architecture's PTX to `path` (rust-cuda's
    /// `copy_to`, for a host that embeds one file).
    pub fn copy_to(mut self, path: impl AsRef<Path>) -> Self {
        self.copy_to = Some(path.as_ref().to_path_buf());
        self
    }

    /// Rebuild when this path changes too (besides the crate and every
    /// path dependency its manifests name).
    pub fn watch(mut self, path: impl AsRef<Path>) -> Self {
        self.watch.push(path.as_ref().to_path_buf());
        self
    }

    /// Whether to build the crate for the host too, as a shared library,
    /// and name it in each PTX text written (on by default): a program
    /// that embeds only the PTX (a rust-cuda host, `Module::from_ptx`)
    /// then runs the kernels on the emulator where there is no GPU,
    /// unchanged. A program that links the kernel crate itself (its host
    /// build is in the program) has no use for it: `false` saves the
    /// build. The library builds beside the PTX, at once; if it fails,
    /// the build goes on with a warning, and only the emulator lacks it.
    pub fn emulator_library(mut self, build: bool) -> Self {
        self.library = build;
        self
    }

    /// Builds, or fails the build script: rustc's errors from the nested
    /// build, then one line saying what failed, on the script's stderr,
    /// which cargo shows.
    pub fn run(self) {
        if let Err(e) = self.build() {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }

    /// Builds every architecture; returns the PTX files written.
    pub fn build(self) -> Result<Vec<PathBuf>, BuildError> {
        let manifest = self.krate.join("Cargo.toml");
        if !manifest.exists() {
            return Err(BuildError::CrateNotFound(self.krate.clone()));
        }
        let (package, lib) = names(&manifest)?;
        let watched: Vec<PathBuf> =
            watched(&self.krate, self.library).into_iter().chain(self.watch.iter().cloned()).collect();
        for path in &watched {
            println!("cargo::rerun-if-changed={}", path.display());
        }
        let out_dir = PathBuf::from(
            env::var("OUT_DIR").map_err(|_| io("OUT_DIR is not set: run from a build script"))?,
        );
        if under_clippy() {
            return self.placeholders(&out_dir, &lib);
        }
        let toolchain = Toolchain::find()?;
        // The build script runs again when any path it watches changes,
        // which for a script building two crates is often the other's: a
        // crate none of whose files changed since its last build here
        // keeps that build's PTX, without a nested cargo.
        let stamp = self.stamp(&watched, &toolchain);
        let stamp_file = out_dir.join(format!("{lib}.stamp"));
        let outputs: Vec<PathBuf> =
            self.archs.iter().map(|a| out_dir.join(format!("{lib}_{a}.ptx"))).collect();
        // (And the host library the PTX names is still there.)
        let library_there = |ptx: &Path| {
            use std::io::BufRead;
            let mut first = String::new();
            let read = std::fs::File::open(ptx).map(|f| std::io::BufReader::new(f).read_line(&mut first));
            read.is_ok()
                && ptx_text::named_library(&first).is_some_and(|path| Path::new(path.trim_end()).exists())
        };
        if std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str())
            && outputs.iter().all(|p| p.exists() && p.with_extension("ptx.z").exists())
            && (!self.library || outputs.first().is_some_and(|p| library_there(p)))
        {
            self.copy_first(&outputs, false)?;
            return Ok(outputs);
        }
        let _ = std::fs::remove_file(&stamp_file);
        let linker = out_dir.join("ptx-linker");
        write_executable(&linker, LINKER)?;
        let target_dir = nvptx_target_dir(&out_dir);
        let nested =
            Nested { toolchain: &toolchain, manifest: &manifest, package: &package, linker: &linker };
        let jobs: Vec<(&str, Option<&str>)> = (self.archs.iter())
            .flat_map(|arch| match self.parts.iter().find(|(a, _)| a == arch) {
                Some((_, parts)) => parts.iter().map(|p| (arch.as_str(), Some(p.as_str()))).collect(),
                None => vec![(arch.as_str(), None)],
            })
            .collect();
        // The host library beside them (a job of its own, last).
        let (texts, library) = std::thread::scope(|s| {
            let library = self.library.then(|| s.spawn(|| nested.library(&host_target_dir(&out_dir), &lib)));
            let texts = if self.parts.is_empty() {
                // One target directory, one architecture after another:
                // the dependencies (`core` among them) are the same bits for
                // every architecture (only the crate itself gets
                // `target-cpu`), so they build once, and a small crate's
                // own build is a second or two an architecture.
                let dir = target_dir.join("shared");
                jobs.iter()
                    .map(|&(arch, part)| add_launch_bounds(&nested.build(arch, part, &dir, &lib)?))
                    .collect()
            } else {
                // A crate built in parts is large: every architecture and
                // part at once, each in a target directory of its own (one
                // would lock the others out, and would rebuild a part
                // whenever another's flags ran last): an edit waits for
                // the slowest build it touched, not for the sum.
                in_parallel(&jobs, |&(arch, part)| {
                    let dir = target_dir.join(part.map_or(arch.to_string(), |p| format!("{arch}-{p}")));
                    add_launch_bounds(&nested.build(arch, part, &dir, &lib)?)
                })
            };
            (texts, library.map(|l| l.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
        });
        let marker = match library {
            Some(Ok(path)) => format!("{}{}\n", ptx_text::MARKER, path.display()),
            Some(Err(why)) => {
                println!(
                    "cargo::warning=the host build of {package} failed, so without a GPU the emulator cannot \
                     run its kernels: {why}"
                );
                String::new()
            }
            None => String::new(),
        };
        let mut texts = jobs.iter().map(|(arch, _)| *arch).zip(texts).peekable();
        let mut modules: Vec<(&str, String)> = Vec::new();
        while let Some((arch, text)) = texts.next() {
            let mut text = text?;
            while let Some((_, more)) = texts.next_if(|(next, _)| *next == arch) {
                text.push('\n');
                text.push_str(&more?);
            }
            modules.push((arch, text));
        }
        let written = in_parallel(&modules, |(arch, text)| write_ptx(&out_dir, &lib, arch, &marker, text));
        let written = written.into_iter().collect::<Result<Vec<_>, _>>()?;
        self.copy_first(&written, false)?;
        // (Not after a failed host library: the next run tries again.)
        if !self.library || !marker.is_empty() {
            let _ = std::fs::write(&stamp_file, stamp);
        }
        Ok(written)
    }

    /// Under clippy: one line in place of each PTX, no nested build (the
    /// build script's run for clippy is a unit of its own, so the real
    /// build would compile every architecture again, minutes, for a
    /// file no one loads; clippy does not see into the nvptx build
    /// either way). A PTX a real build left at `copy_to` stays: only a
    /// missing file (which the host's `include_str!` needs) gets one.
    fn placeholders(self, out_dir: &Path, lib: &str) -> Result<Vec<PathBuf>, BuildError> {
        let written = (self
            .archs
            .iter()
            .map(|arch| write_ptx(out_dir, lib, arch, "", "// cargo clippy: PTX not built\n")))
        .collect::<Result<Vec<_>, _>>()?;
        self.copy_first(&written, true)?;
        Ok(written)
    }

    /// The first architecture's PTX copied to `copy_to`, if one is asked
    /// for (and, with `keep`, no file is there yet).
    fn copy_first(&self, written: &[PathBuf], keep: bool) -> Result<(), BuildError> {
        if let (Some(to), Some(first)) = (&self.copy_to, written.first())
            && !(keep && to.exists())
        {
            std::fs::copy(first, to)
                .map_err(|e| io(&format!("could not copy the PTX to {}: {e}", to.display())))?;
        }
        Ok(())
    }
}

/// `f` of every item, each on a thread of its own, in the items' order (a
/// panic on one is passed on).
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    std::thread::scope(|s| {
        let f = &f;
        let runs: Vec<_> = items.iter().map(|item| s.spawn(move || f(item))).collect();
        runs.into_iter().map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    })
}

/// Writes `text` as `lib`'s PTX for `arch` in `out_dir`
/// (`<lib>_<arch>.ptx`, to read, after the `marker` line naming the host
/// library, if any), and its packed form beside it (`<lib>_<arch>.ptx.z`,
/// each kernel's module compressed on its own: what `include_ptx!`
/// embeds, a seventh of the size; [`ptx_text::pack`]).
fn write_ptx(out_dir: &Path, lib: &str, arch: &str, marker: &str, text: &str) -> Result<PathBuf, BuildError> {
    let dest = out_dir.join(format!("{lib}_{arch}.ptx"));
    std::fs::write(&dest, format!("{marker}{text}"))
        .map_err(|e| io(&format!("could not write {}: {e}", dest.display())))?;
    let packed = dest.with_extension("ptx.z");
    std::fs::write(&packed, ptx_text::pack(text))
        .map_err(|e| io(&format!("could not write {}: {e}", packed.display())))?;
    Ok(dest)
}

/// Whether the build script runs for `cargo clippy`, which lints the host
/// code and reads the PTX files only as `include_str!`'s text: cargo
/// hands the build script the wrapper it compiles the workspace with.
fn under_clippy() -> bool {
    is_clippy(env::var_os("RUSTC_WORKSPACE_WRAPPER").as_deref())
}

/// Whether `wrapper` (the workspace's rustc wrapper) is clippy's driver.
fn is_clippy(wrapper: Option<&std::ffi::OsStr>) -> bool {
    wrapper
        .and_then(|w| Path::new(w).file_stem())
        .is_some_and(|s| s.to_string_lossy().starts_with("clippy-driver"))
}

fn io(message: &str) -> BuildError {
    BuildError::Io(message.to_string())
}

/// The tools the nvptx build needs, or which is missing.
struct Toolchain {
    cargo: String,
    llc: PathBuf,
    /// `rustc --version`.
    version: String,
}

impl Toolchain {
    fn find() -> Result<Toolchain, BuildError> {
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let host = env::var("HOST").map_err(|_| io("HOST is not set: run from a build script"))?;
        Toolchain::check(cargo, &rustc, &host)
    }

    /// What `rustc` (for `host`) lacks, if anything.
    fn check(cargo: String, rustc: &str, host: &str) -> Result<Toolchain, BuildError> {
        let missing = |what: &str| {
            BuildError::Toolchain(format!(
                "the nvptx build needs {what}: use a nightly toolchain with the rust-src and llvm-tools components \
                 (rustup component add rust-src llvm-tools)"
            ))
        };
        let version = Command::new(rustc).arg("--version").output().ok().filter(|o| o.status.success());
        let version =
            version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        if !version.contains("nightly") {
            return Err(missing("a nightly rustc (-Zbuild-std)"));
        }
        let sysroot = Command::new(rustc)
            .args(["--print", "sysroot"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .ok_or_else(|| missing("rustc --print sysroot to work"))?;
        if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").exists() {
            return Err(missing("the rust-src component"));
        }
        let llc = sysroot.join(format!("lib/rustlib/{host}/bin/llc"));
        if !llc.exists() {
            return Err(missing("the llvm-tools component"));
        }
        Ok(Toolchain { cargo, llc, version })
    }
}

/// The package's name and its library's (`kernels`, `my_kernels`).
fn names(manifest: &Path) -> Result<(String, String), BuildError> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| io(&format!("cannot read {}: {e}", manifest.display())))?;
    let mut section = String::new();
    let (mut package, mut lib) = (None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if let Some(value) =
            line.strip_prefix("name").map(str::trim_start).and_then(|r| r.strip_prefix('='))
        {
            let value = value.trim().trim_matches('"').to_string();
            match section.as_str() {
                "[package]" => package = Some(value),
                "[lib]" => lib = Some(value),
                _ => {}
            }
        }
    }
    let package = package.ok_or_else(|| io(&format!("{} names no [package]", manifest.display())))?;
    let lib = lib.unwrap_or_else(|| package.replace('-', "_"));
    Ok((package, lib))
}

/// The crate and every path dependency its manifests name for the nvptx
/// build, recursively: not its dev-dependencies, nor (unless `host`: the
/// host library is built too) the dependencies of its host build alone
/// (`[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]`, an
/// emulator, say), whose edits leave the PTX as it was.
fn watched(krate: &Path, host: bool) -> Vec<PathBuf> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut todo = vec![krate.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(dir) = dir.canonicalize() else { continue };
        if seen.contains(&dir) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) {
            todo.extend(device_paths(&text, host).into_iter().map(|p| dir.join(p)));
        }
        seen.push(dir);
    }
    seen
}

/// The `path = "..."` values of a manifest, but for those in sections the
/// nvptx build does not read (and, unless `host`, its host build alone).
fn device_paths(manifest: &str, host: bool) -> Vec<String> {
    let mut paths = Vec::new();
    let mut skip = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            skip = compact.contains("dev-dependencies")
                || (!host && compact.contains("not(target_arch=\"nvptx64\")"));
            continue;
        }
        if skip {
            continue;
        }
        for part in line.split("path").skip(1) {
            let value = part.trim_start().strip_prefix('=').map(str::trim_start);
            if let Some(rest) = value.and_then(|v| v.strip_prefix('"'))
                && let Some(end) = rest.find('"')
            {
                paths.push(rest[..end].to_string());
            }
        }
    }
    paths
}

fn write_executable(path: &Path, text: &str) -> Result<(), BuildError> {
    std::fs::write(path, text).map_err(|e| io(&format!("could not write {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io(&format!("could not make {} executable: {e}", path.display())))?;
    }
    Ok(())
}

/// The prefix of the data a `#[kernel(min_blocks = .., cluster = ..)]`
/// declaration leaves in the PTX: `.visible .global .align 4 .b8
/// __launch_bounds__NAME[32] = {...};`, eight little-endian `u32`: block x,
/// y, z, minimum blocks per SM, cluster x, y, z, and flags (1: the bounds
/// are given, 2: the cluster is).
const BOUNDS_PREFIX: &str = "__launch_bounds__";

/// Moves each kernel's launch bounds from that data into its entry:
/// `.maxntid x, y, z` and `.minnctapersm n`, and `.reqnctapercluster x, y,
/// z`, between the parameter list and the body, where LLVM puts them for
/// CUDA C's `__launch_bounds__` and `__cluster_dims__` (Rust has no
/// attribute that reaches them). The data itself is removed, so the PTX
/// holds only the kernels.
pub fn add_launch_bounds(ptx: &str) -> Result<String, BuildError> {
    let malformed = |line: &str| io(&format!("malformed launch bounds: {line}"));
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
        let (name, data) = rest.split_once("[32]").ok_or_else(|| malformed(line))?;
        let bytes: Vec<u32> = data
            .trim_start_matches([' ', '=', '{'])
            .trim_end_matches([';', '}'])
            .split(',')
            .filter(|b| !b.trim().is_empty())
            .map(|b| b.trim().parse::<u32>().map_err(|_| malformed(line)))
            .collect::<Result<_, _>>()?;
        // Trailing zero bytes are left out of the initializer.
        let byte = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let word = |w: usize| (0..4).map(|i| byte(4 * w + i) << (8 * i)).sum::<u32>();
        bounds.push((name.to_string(), core::array::from_fn::<u32, 8, _>(word)));
    }
    for (name, [x, y, z, blocks, cx, cy, cz, flags]) in bounds {
        let header = format!(".entry {name}(");
        let start = text
            .find(&header)
            .ok_or_else(|| io(&format!("kernel {name} has launch bounds but no entry in the PTX")))?;
        // The body's opening brace is the first line that is just "{".
        let brace = text[start..]
            .find("\n{\n")
            .map(|i| start + i + 1)
            .ok_or_else(|| io(&format!("no body found for kernel {name}")))?;
        let mut directives = String::new();
        if flags & 1 != 0 {
            directives += &format!(".maxntid {x}, {y}, {z}\n.minnctapersm {blocks}\n");
        }
        if flags & 2 != 0 {
            directives += &format!(".reqnctapercluster {cx}, {cy}, {cz}\n");
        }
        text.insert_str(brace, &directives);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nested::pinned;

    /// A fake `rustc` printing `version` and using `sysroot`.
    fn fake_rustc(dir: &Path, version: &str, sysroot: &Path) -> PathBuf {
        let path = dir.join("rustc");
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; else echo '{}'; fi\n",
            sysroot.display()
        );
        write_executable(&path, &script).unwrap();
        path
    }

    /// A build is kept while nothing it was made from changed: the stamp
    /// moves with a watched file, the toolchain or the settings, and not
    /// with a target directory's contents.
    #[test]
    fn the_stamp_moves_with_what_the_build_is_made_from() {
        let dir = std::env::temp_dir().join(format!("lab-stamp-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "a").unwrap();
        let builder = CudaBuilder::new(&dir).archs(&["sm_80"]).emulator_library(false);
        let toolchain = Toolchain { cargo: "cargo".into(), llc: "llc".into(), version: "rustc 1".into() };
        let stamp = |b: &CudaBuilder, t: &Toolchain| b.stamp(std::slice::from_ref(&dir), t);
        let first = stamp(&builder, &toolchain);
        assert_eq!(first, stamp(&builder, &toolchain));
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::write(dir.join("target/out"), "x").unwrap();
        assert_eq!(first, stamp(&builder, &toolchain), "a target directory is not the source");
        std::fs::write(dir.join("src/lib.rs"), "ab").unwrap();
        let edited = stamp(&builder, &toolchain);
        assert_ne!(first, edited);
        let other = Toolchain { version: "rustc 2".into(), ..toolchain };
        assert_ne!(edited, stamp(&builder, &other));
        assert_ne!(edited, stamp(&builder.archs(&["sm_80", "sm_90"]), &other));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The PTX is rebuilt for the crate's device dependencies, not for
    /// its dev-dependencies, nor for its host build's own unless the host
    /// library is built too.
    #[test]
    fn host_only_and_dev_dependencies_are_not_watched() {
        let manifest = r#"
[dependencies]
gpu-device = { path = "../device" }
seq-macro = "0.3"

[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]
emu = { path = "../emu" }

[dev-dependencies]
helper = { path = "../helper" }

[target.'cfg(target_arch = "nvptx64")'.dependencies]
ptx-only = { path = "../ptx-only" }
"#;
        assert_eq!(device_paths(manifest, false), ["../device", "../ptx-only"]);
        assert_eq!(device_paths(manifest, true), ["../device", "../emu", "../ptx-only"]);
    }

    /// The PTX build restates its profile for the kernel crate, ahead of
    /// any `[profile.release.package.<crate>]` of the workspace.
    #[test]
    fn the_kernel_crate_gets_the_ptx_profile_whatever_release_says() {
        let pinned = pinned("my-kernels");
        for setting in ["opt-level=3", "codegen-units=1", "incremental=false"] {
            assert!(pinned.contains(&format!("profile.ptx.package.my-kernels.{setting}")), "{pinned:?}");
        }
    }

    /// Under clippy each architecture's file is one line, and `copy_to`
    /// gets it only where no file is (a real build's PTX stays).
    #[test]
    fn clippy_gets_placeholders_and_keeps_a_built_copy() {
        use std::ffi::OsStr;
        assert!(is_clippy(Some(OsStr::new("/home/u/.rustup/toolchains/nightly/bin/clippy-driver"))));
        assert!(!is_clippy(Some(OsStr::new("/usr/bin/sccache"))) && !is_clippy(None));
        let dir = env::temp_dir().join(format!("cuda-builder-clippy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (kept, made) = (dir.join("kept.ptx"), dir.join("made.ptx"));
        std::fs::write(&kept, ".version 8.3").unwrap();
        let _ = std::fs::remove_file(&made);
        for (to, want) in [(&kept, ".version 8.3"), (&made, "// cargo clippy: PTX not built\n")] {
            let builder = CudaBuilder::new(&dir).archs(&["sm_80", "sm_90a"]).copy_to(to);
            let written = builder.placeholders(&dir, "kernels").unwrap();
            assert_eq!(written, [dir.join("kernels_sm_80.ptx"), dir.join("kernels_sm_90a.ptx")]);
            assert_eq!(std::fs::read_to_string(&written[1]).unwrap(), "// cargo clippy: PTX not built\n");
            assert_eq!(std::fs::read_to_string(to).unwrap(), want);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_toolchain_piece_is_one_line_naming_it() {
        let dir = env::temp_dir().join(format!("cuda-builder-test-{}", std::process::id()));
        let sysroot = dir.join("sysroot");
        std::fs::create_dir_all(&sysroot).unwrap();
        let message = |version: &str| {
            let rustc = fake_rustc(&dir, version, &sysroot);
            match Toolchain::check("cargo".into(), rustc.to_str().unwrap(), "x86_64-unknown-linux-gnu") {
                Err(e) => e.to_string(),
                Ok(_) => panic!("a toolchain without {version} passed"),
            }
        };
        assert!(message("rustc 1.95.0 (59807616e 2026-04-14)").contains("needs a nightly rustc"));
        assert!(
            message("rustc 1.97.0-nightly (e50aa6fba 2026-05-19)").contains("needs the rust-src component")
        );
        let core = sysroot.join("lib/rustlib/src/rust/library/core");
        std::fs::create_dir_all(&core).unwrap();
        std::fs::write(core.join("Cargo.toml"), "").unwrap();
        let text = message("rustc 1.97.0-nightly (e50aa6fba 2026-05-19)");
        assert!(text.contains("needs the llvm-tools component") && !text.contains('\n'), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn launch_bounds_become_directives() {
        let ptx = ".visible .global .align 4 .b8 __launch_bounds__k[32] = {0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, \
                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};\n\
                   .visible .global .align 4 .b8 __launch_bounds__c[32] = {128, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, \
                   0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3};\n\
                   .visible .entry k(\n.param .u64 p\n)\n{\nret;\n}\n\
                   .visible .entry c(\n.param .u64 p\n)\n{\nret;\n}\n";
        let out = add_launch_bounds(ptx).unwrap();
        assert!(out.contains("k(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{"), "{out}");
        assert!(
            out.contains(
                "c(\n.param .u64 p\n)\n.maxntid 384, 1, 1\n.minnctapersm 1\n.reqnctapercluster 2, 1, 1\n{"
            ),
            "{out}"
        );
        assert!(!out.contains("__launch_bounds__"));
    }

    #[test]
    fn manifest_names_give_the_library_file() {
        let dir = env::temp_dir().join(format!("cuda-builder-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        std::fs::write(&manifest, "[package]\nname = \"my-kernels\"\n[dependencies]\nname = \"x\"\n")
            .unwrap();
        assert_eq!(names(&manifest).unwrap(), ("my-kernels".into(), "my_kernels".into()));
        std::fs::write(&manifest, "[package]\nname = \"a\"\n[lib]\nname = \"b\"\n").unwrap();
        assert_eq!(names(&manifest).unwrap(), ("a".into(), "b".into()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
