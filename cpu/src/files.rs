//! Reading the inputs a user names and writing the outputs where they
//! asked, as `cp` writes: the path given is opened for writing (truncated)
//! and written, so a symlink writes its target, a FIFO its reader and a
//! device the device. Nothing is written beside it: no temporary file, no
//! rename onto the path, no probe file.
//!
//! Whether a destination can be written is checked before any work,
//! without changing it: an existing file is opened for appending (which
//! neither truncates nor writes), a new file's folder is asked with
//! `access(2)`. A FIFO is only asked with `access(2)`: opening it for
//! writing would block until a reader comes; the write at the end blocks
//! until then, as `cp` does.
//!
//! A failed write after the work (a full disk, a reader gone) is one
//! error naming the path; what was written of the file stays, as with `cp`.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::runtime::{Error, Result};

pub fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidInput(format!("cannot read {}: {e}", path.display())))
}

/// Writes `text` to `path` itself: opened for writing, truncated, written.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    let error = |e: std::io::Error| Error::InvalidInput(format!("cannot write {}: {e}", path.display()));
    let mut file = std::fs::File::create(path).map_err(error)?;
    file.write_all(text.as_bytes()).and_then(|()| file.flush()).map_err(error)
}

fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// That a file can be written at `path` when the run ends, checked before
/// any work without changing anything: `path` is not a folder; an existing
/// file or device opens for appending; a FIFO grants write access; a new
/// file's folder exists and grants write and search access. A dangling
/// symlink is judged by its target's folder.
pub fn check_file_destination(flag: &str, path: &Path) -> Result<()> {
    let cannot = |why: String| Error::InvalidInput(format!("{flag} {}: {why}", path.display()));
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(cannot("is a folder, not a file".into())),
        Ok(meta) if meta.file_type().is_fifo() => {
            access(path, libc::W_OK).map_err(|e| cannot(format!("cannot write there: {e}")))
        }
        Ok(meta) if meta.is_file() && kernel_interface(path) => {
            Err(cannot("is a file of the kernel's /proc or /sys, not one to write results into".into()))
        }
        Ok(_) => std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| cannot(format!("cannot write there: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A new file, or a symlink to one: its folder must take it.
            let target = match std::fs::read_link(path) {
                Ok(target) => folder_of(path).join(target),
                Err(_) => path.to_path_buf(),
            };
            let folder = folder_of(&target);
            if !folder.is_dir() {
                return Err(cannot(format!("the folder {} does not exist", folder.display())));
            }
            access(folder, libc::W_OK | libc::X_OK)
                .map_err(|e| cannot(format!("cannot create a file in {}: {e}", folder.display())))
        }
        Err(e) => Err(cannot(format!("cannot write there: {e}"))),
    }
}

/// Whether `path` lies on procfs or sysfs, whose files open for writing
/// (even read-only ones, for root) and fail only at the write.
fn kernel_interface(path: &Path) -> bool {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    const SYSFS_MAGIC: i64 = 0x6265_6572;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `statfs` is plain data, for which all zeroes is a value.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string, `fs` a struct for `statfs` to fill.
    if unsafe { libc::statfs(c.as_ptr(), &mut fs) } != 0 {
        return false;
    }
    [PROC_SUPER_MAGIC, SYSFS_MAGIC].contains(&(fs.f_type as i64))
}

/// That files (plots, tensors) can be written into `dir`: created if
/// missing (the folder asked for), and granting write and search access.
pub fn check_folder_destination(flag: &str, dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::InvalidInput(format!(
            "{flag} {}: is a file, not a folder (it writes files into a folder)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::InvalidInput(format!("{flag} {}: cannot create the folder: {e}", dir.display()))
    })?;
    access(dir, libc::W_OK | libc::X_OK)
        .map_err(|e| Error::InvalidInput(format!("{flag} {}: cannot write there: {e}", dir.display())))
}

/// `access(2)`: whether this process may use `path` as `mode` asks,
/// judged by the kernel (owner, group, mode bits, a read-only mount).
fn access(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `c` is a NUL-terminated string that lives across the call;
    // access only reads it.
    if unsafe { libc::access(c.as_ptr(), mode) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}
