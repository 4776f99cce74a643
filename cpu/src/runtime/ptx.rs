//! The PTX `build.rs` compiled from `gpu/`, embedded in the binary, and the
//! choice of which one a device runs.

pub use lab_runtime::ptx::{Ptx, entries, entry_module};

/// Every embedded PTX, oldest architecture first.
pub const ARCHS: &[Ptx] = &[
    Ptx::new("sm_80", include_str!(concat!(env!("OUT_DIR"), "/gpu_sm_80.ptx"))),
    Ptx::new("sm_90", include_str!(concat!(env!("OUT_DIR"), "/gpu_sm_90.ptx"))),
    Ptx::new("sm_90a", include_str!(concat!(env!("OUT_DIR"), "/gpu_sm_90a.ptx"))),
];
