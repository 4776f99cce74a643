//! Reading the inputs a user names and writing the outputs where they
//! asked.

use std::path::{Path, PathBuf};

use crate::runtime::{Error, Result};

pub fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", path.display())))
}

/// Writes `text` to `path` through a temporary file beside it, so that a
/// failed write leaves the old file as it was.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    let error = |e: std::io::Error| Error::InvalidInput(format!("cannot write {}: {e}", path.display()));
    let temporary = sibling(path, "tmp");
    std::fs::write(&temporary, text).map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

/// `dir/.name.<pid>.<what>`: a scratch file next to `path`.
fn sibling(path: &Path, what: &str) -> PathBuf {
    let name = path.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    folder_of(path).join(format!(".{name}.{}.{what}", std::process::id()))
}

fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// That a file can be written at `path` when the run ends: its folder
/// exists and takes a new file, and `path` is not a folder. Checked before
/// any work, so that a run's results are never lost at the end.
pub fn check_file_destination(flag: &str, path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Error::InvalidInput(format!("{flag} {}: is a folder, not a file", path.display())));
    }
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{flag} {}: the folder {} does not exist",
            path.display(),
            folder.display()
        )));
    }
    probe(flag, path, &sibling(path, "probe"))
}

/// That plots can be written into `dir`: created if missing, and writable.
pub(super) fn check_folder_destination(flag: &str, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::InvalidInput(format!("{flag} {}: cannot create the folder: {e}", dir.display()))
    })?;
    probe(flag, dir, &dir.join(format!(".probe.{}", std::process::id())))
}

/// Creates and removes `scratch`, to learn that its folder is writable.
fn probe(flag: &str, shown: &Path, scratch: &Path) -> Result<()> {
    std::fs::write(scratch, b"")
        .and_then(|()| std::fs::remove_file(scratch))
        .map_err(|e| Error::InvalidInput(format!("{flag} {}: cannot write there: {e}", shown.display())))
}
