//! A build's stamp: what it was made from, so that a build script run
//! for another crate's edit keeps this crate's PTX without a nested cargo.

use std::path::{Path, PathBuf};

use super::ptx_text::{FNV_OFFSET, fnv1a};
use super::{CudaBuilder, LINKER, Toolchain};

impl CudaBuilder {
    /// What a build is made from: every file under the watched paths
    /// (its path, length and modification time), the settings, the
    /// toolchain and this builder's own source.
    pub(crate) fn stamp(&self, watched: &[PathBuf], toolchain: &Toolchain) -> String {
        fn walk(path: &Path, files: &mut Vec<(PathBuf, u64, u128)>) {
            let Ok(meta) = std::fs::metadata(path) else { return };
            if meta.is_dir() {
                let Ok(entries) = std::fs::read_dir(path) else { return };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    if !name.starts_with('.') && name != "target" {
                        walk(&entry.path(), files);
                    }
                }
            } else {
                let modified =
                    meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                files.push((path.to_path_buf(), meta.len(), modified.map_or(0, |d| d.as_nanos())));
            }
        }
        let mut files = Vec::new();
        for path in watched {
            walk(path, &mut files);
        }
        files.sort();
        files.dedup();
        let mut h = FNV_OFFSET;
        for (path, len, modified) in &files {
            h = fnv1a(path.as_os_str().as_encoded_bytes(), h);
            h = fnv1a(&len.to_le_bytes(), h);
            h = fnv1a(&modified.to_le_bytes(), h);
        }
        for text in [
            include_str!("lib.rs"),
            include_str!("nested.rs"),
            include_str!("stamp.rs"),
            include_str!("ptx_text.rs"),
            LINKER,
        ] {
            h = fnv1a(text.as_bytes(), h);
        }
        format!(
            "{:016x} {} files; archs {:?}; parts {:?}; library {}; {}; {}\n",
            h,
            files.len(),
            self.archs,
            self.parts,
            self.library,
            toolchain.version,
            toolchain.llc.display()
        )
    }
}
