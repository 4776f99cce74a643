//! The PTX `build.rs` compiled from `gpu/`, embedded in the binary
//! (compressed), and the choice of which one a device runs.

pub use lab_runtime::ptx::{FNV_OFFSET, Ptx, entries, entry_module, fnv1a, kernel_modules};

/// Every embedded PTX, oldest architecture first.
pub const ARCHS: &[Ptx] = lab_runtime::include_ptx!("gpu");
