//! A build's stamp: what it was made from, so that a build script run
//! for another crate's edit keeps this crate's PTX without a nested cargo.

use std::path::{Path, PathBuf};

use super::{CudaBuilder, LINKER, Toolchain};

/// FNV-1a, 64 bits (a hash that is the same in every build of this crate).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

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
        let mut h = Fnv::default();
        for (path, len, modified) in &files {
            h.add(path.as_os_str().as_encoded_bytes());
            h.add(&len.to_le_bytes());
            h.add(&modified.to_le_bytes());
        }
        for text in [
            include_str!("lib.rs"),
            include_str!("nested.rs"),
            include_str!("stamp.rs"),
            include_str!("ptx_text.rs"),
            LINKER,
        ] {
            h.add(text.as_bytes());
        }
        format!(
            "{:016x} {} files; archs {:?}; parts {:?}; library {}; {}; {}\n",
            h.0,
            files.len(),
            self.archs,
            self.parts,
            self.library,
            toolchain.version,
            toolchain.llc.display()
        )
    }
}
