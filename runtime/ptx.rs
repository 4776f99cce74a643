//! PTX modules a host embeds, one per architecture, and the choice of
//! which one a device runs.

/// One embedded PTX module.
#[derive(Clone, Copy, Debug)]
pub struct Ptx {
    /// `sm_80`, `sm_90`, `sm_90a`.
    pub arch: &'static str,
    /// The compute capability it targets, as `major * 10 + minor`.
    pub compute: i32,
    /// Whether it uses architecture-specific features (`sm_90a`): it runs
    /// on that capability only, not on later ones.
    pub specific: bool,
    /// The PTX text.
    pub text: &'static str,
}

impl Ptx {
    /// The architecture's PTX, for `sm_XY`, `sm_XYZ` or either with a
    /// suffix letter (`sm_90a`).
    pub const fn new(arch: &'static str, text: &'static str) -> Ptx {
        let b = arch.as_bytes();
        // "sm_", digits, then an optional letter.
        let (mut compute, mut i) = (0i32, 3);
        while i < b.len() && b[i].is_ascii_digit() {
            compute = compute * 10 + (b[i] - b'0') as i32;
            i += 1;
        }
        Ptx { arch, compute, specific: i < b.len(), text }
    }
}

/// The best of `archs` for a device of compute capability `major.minor`:
/// PTX for `sm_X` runs on any device of capability `X` or later, PTX for
/// `sm_Xa` on capability `X` only; the newest that runs wins, an
/// architecture-specific one over the plain one of the same capability.
pub fn for_device(archs: &[Ptx], major: i32, minor: i32) -> Option<Ptx> {
    let device = major * 10 + minor;
    archs
        .iter()
        .filter(|p| if p.specific { p.compute == device } else { p.compute <= device })
        .max_by_key(|p| (p.compute, p.specific))
        .copied()
}

/// The kernel entry points (`.entry name(`) a PTX module defines.
pub fn entries(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
}

/// The PTX a `cuda-builder` build script left in `OUT_DIR` for the crate
/// `name`, every architecture it builds: `include_ptx!("kernels")`.
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        &[
            $crate::ptx::Ptx::new("sm_80", include_str!(concat!(env!("OUT_DIR"), "/", $name, "_sm_80.ptx"))),
            $crate::ptx::Ptx::new("sm_90", include_str!(concat!(env!("OUT_DIR"), "/", $name, "_sm_90.ptx"))),
            $crate::ptx::Ptx::new(
                "sm_90a",
                include_str!(concat!(env!("OUT_DIR"), "/", $name, "_sm_90a.ptx")),
            ),
        ]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hopper_takes_sm_90a_and_later_devices_the_newest_portable_one() {
        let archs = [Ptx::new("sm_80", ""), Ptx::new("sm_90", ""), Ptx::new("sm_90a", "")];
        assert_eq!(for_device(&archs, 9, 0).unwrap().arch, "sm_90a");
        assert_eq!(for_device(&archs, 8, 9).unwrap().arch, "sm_80");
        assert_eq!(for_device(&archs, 10, 0).unwrap().arch, "sm_90");
        assert!(for_device(&archs, 7, 5).is_none());
        let blackwell = [Ptx::new("sm_90", ""), Ptx::new("sm_100a", "")];
        assert_eq!((blackwell[1].compute, blackwell[1].specific), (100, true));
        assert_eq!(for_device(&blackwell, 10, 0).unwrap().arch, "sm_100a");
    }
}
