//! The nested builds: the kernel crate for one architecture (and part)
//! to PTX, and for the host as the emulator's shared library.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BuildError, NVPTX, Toolchain, io};

/// One architecture's nested build of the kernel crate.
pub(crate) struct Nested<'a> {
    pub(crate) toolchain: &'a Toolchain,
    pub(crate) manifest: &'a Path,
    pub(crate) package: &'a str,
    pub(crate) linker: &'a Path,
}

impl Nested<'_> {
    /// The PTX of library `lib` for `arch`, built in `target_dir`; on
    /// failure, rustc's errors are printed first.
    pub(crate) fn build(
        &self,
        arch: &str,
        part: Option<&str>,
        target_dir: &Path,
        lib: &str,
    ) -> Result<String, BuildError> {
        let output = self
            .cargo_rustc()
            .env("PTX_LLC", &self.toolchain.llc)
            .args(["--target", NVPTX, "-Zbuild-std=core", "--profile", "ptx"])
            .args(PTX_PROFILE.iter().flat_map(|c| ["--config", c]))
            .args(pinned(self.package).iter().flat_map(|c| ["--config".to_string(), c.clone()]))
            .arg("--target-dir")
            .arg(target_dir)
            // A crate that says these itself would see them twice.
            .args(["--", "-Zcrate-attr=no_std", "-Zcrate-attr=feature(abi_ptx)"])
            .args(["-A", "duplicate-features", "-A", "unused-attributes", "-C"])
            .arg(format!("target-cpu={arch}"))
            .args(ptx_isa(arch))
            .args(
                part.map(|p| {
                    ["--cfg".to_string(), format!("ptx_part=\"{p}\""), "--cfg".into(), "ptx_parts".into()]
                })
                .into_iter()
                .flatten(),
            )
            .arg("-C")
            .arg(format!("linker={}", self.linker.display()))
            .output()
            .map_err(|e| io(&format!("could not run cargo for the nvptx build: {e}")))?;
        if !output.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            let arch = part.map_or(arch.to_string(), |p| format!("{arch} (part {p})"));
            return Err(BuildError::Failed { krate: self.package.to_string(), arch });
        }
        let ptx = target_dir.join(NVPTX).join("ptx").join(format!("{lib}.ptx"));
        std::fs::read_to_string(&ptx)
            .map_err(|e| io(&format!("the nvptx build left no {}: {e}", ptx.display())))
    }
}

impl Nested<'_> {
    /// `cargo rustc` of the crate's library as a `cdylib`, from its own
    /// folder, with none of the outer build's flags, target or wrappers.
    fn cargo_rustc(&self) -> Command {
        let mut command = Command::new(&self.toolchain.cargo);
        command
            .current_dir(self.manifest.parent().unwrap_or(Path::new(".")))
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTC_WRAPPER")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .args(["rustc", "--manifest-path"])
            .arg(self.manifest)
            .args(["--package", self.package, "--lib", "--crate-type", "cdylib"]);
        command
    }

    /// The crate built for the host as a shared library in `target_dir`
    /// (release): its path, or the last lines of rustc's errors.
    pub(crate) fn library(&self, target_dir: &Path, lib: &str) -> Result<PathBuf, String> {
        let output = self
            .cargo_rustc()
            .arg("--release")
            // The emulator reports a kernel's panic (a bounds check) by
            // unwinding to its scheduler, whatever the workspace's profile
            // says.
            .args(["--config", "profile.release.panic=\"unwind\""])
            .arg("--target-dir")
            .arg(target_dir)
            .output()
            .map_err(|e| format!("could not run cargo: {e}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).take(3).collect();
            return Err(errors.join("; "));
        }
        let file = format!("{}{lib}{}", env::consts::DLL_PREFIX, env::consts::DLL_SUFFIX);
        let path = target_dir.join("release").join(file);
        path.canonicalize().map_err(|_| format!("cargo left no {}", path.display()))
    }
}

/// The PTX ISA version beyond LLVM's default for `arch`: 8.4 for Hopper's
/// architecture-specific PTX, whose kernels fence tensor maps the host
/// wrote (`fence.proxy.tensormap`, new in 8.3) and multiply FP8 with
/// `mma.sync` (new in 8.4; drivers from CUDA 12.4 on take it). `llc` sets the module's `.version` from its own `-mattr`, not
/// from the functions' features, so `ptx-linker` gets it too.
fn ptx_isa(arch: &str) -> Vec<String> {
    match arch {
        "sm_90a" => {
            ["-C", "target-feature=+ptx84", "-C", "link-arg=-mattr=+ptx84"].map(String::from).to_vec()
        }
        _ => Vec::new(),
    }
}

/// The `ptx` profile: fat LTO into one module for `ptx-linker`, abort on
/// panic (a trap), no debug info.
pub(crate) const PTX_PROFILE: &[&str] = &[
    "profile.ptx.inherits=\"release\"",
    "profile.ptx.opt-level=3",
    "profile.ptx.panic=\"abort\"",
    "profile.ptx.lto=\"fat\"",
    "profile.ptx.codegen-units=1",
    "profile.ptx.debug=false",
    "profile.ptx.strip=\"none\"",
    "profile.ptx.debug-assertions=false",
    "profile.ptx.overflow-checks=false",
];

/// The `ptx` profile's settings again for the kernel crate itself: the
/// profile inherits `release`, and a workspace may tune its host build of
/// the crate there (`[profile.release.package.gpu]`, a lower `opt-level`
/// and `incremental` for the emulator's build), which would otherwise
/// reach the PTX, ahead of the profile's own settings.
pub(crate) fn pinned(package: &str) -> Vec<String> {
    ["opt-level=3", "codegen-units=1", "incremental=false", "debug=false"]
        .iter()
        .map(|setting| format!("profile.ptx.package.{package}.{setting}"))
        .collect()
}

/// `<target>/<profile>/build/<pkg>-<hash>/out` -> `<target>/nvptx`: one
/// nvptx target dir for every host profile (so `core` is built once).
pub(crate) fn nvptx_target_dir(out_dir: &Path) -> PathBuf {
    beside_target(out_dir, "nvptx")
}

/// `<target>/emulator-library`: the host library's nested build, one for
/// every host profile.
pub(crate) fn host_target_dir(out_dir: &Path) -> PathBuf {
    beside_target(out_dir, "emulator-library")
}

fn beside_target(out_dir: &Path, name: &str) -> PathBuf {
    out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join(name))
        .unwrap_or_else(|| out_dir.join(name))
}
