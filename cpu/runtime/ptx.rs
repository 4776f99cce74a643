//! The PTX `build.rs` compiled from `gpu/`, embedded in the binary, and the
//! choice of which one a device runs.

/// One embedded PTX module.
#[derive(Clone, Copy, Debug)]
pub struct Ptx {
    /// `sm_80`, `sm_90`.
    pub arch: &'static str,
    /// The compute capability it targets, as `major * 10 + minor`.
    pub compute: i32,
    /// The PTX text.
    pub text: &'static str,
}

/// Every embedded PTX, oldest architecture first.
pub const ARCHS: &[Ptx] = &[
    Ptx { arch: "sm_80", compute: 80, text: include_str!(concat!(env!("OUT_DIR"), "/gpu_sm_80.ptx")) },
    Ptx { arch: "sm_90", compute: 90, text: include_str!(concat!(env!("OUT_DIR"), "/gpu_sm_90.ptx")) },
];

/// The newest PTX a device of compute capability `major.minor` can run:
/// PTX for `sm_X` runs on any device of capability `X` or later.
pub fn for_device(major: i32, minor: i32) -> Option<Ptx> {
    let device = major * 10 + minor;
    ARCHS.iter().rev().find(|p| p.compute <= device).copied()
}

/// The kernel entry points (`.entry name(`) a PTX module defines.
pub fn entries(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
}
