//! PTX modules a host embeds, one per architecture, and the choice of
//! which one a device runs.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

pub use lab_cuda_builder::ptx_text::{
    FNV_OFFSET, entries, entry_module, fnv1a, kernel_modules, named_library,
};

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
    source: Source,
}

/// The text as embedded.
#[derive(Clone, Copy, Debug)]
enum Source {
    Text(&'static str),
    /// Packed (`lab_cuda_builder::ptx_text::pack`, what `cuda-builder`
    /// leaves beside the text): each kernel's module DEFLATE-compressed on
    /// its own. PTX is repetitive text, a seventh of its size compressed,
    /// and a launch inflates its kernel's module only.
    Packed(&'static [u8]),
}

impl Ptx {
    /// The architecture's PTX, for `sm_XY`, `sm_XYZ` or either with a
    /// suffix letter (`sm_90a`).
    pub const fn new(arch: &'static str, text: &'static str) -> Ptx {
        Ptx::with(arch, Source::Text(text))
    }

    /// The architecture's PTX in its packed form (`include_ptx!`'s).
    pub const fn packed(arch: &'static str, bytes: &'static [u8]) -> Ptx {
        Ptx::with(arch, Source::Packed(bytes))
    }

    const fn with(arch: &'static str, source: Source) -> Ptx {
        let b = arch.as_bytes();
        // "sm_", digits, then an optional letter.
        let (mut compute, mut i) = (0i32, 3);
        while i < b.len() && b[i].is_ascii_digit() {
            compute = compute * 10 + (b[i] - b'0') as i32;
            i += 1;
        }
        Ptx { arch, compute, specific: i < b.len(), source }
    }

    /// The kernels it holds, in order.
    pub fn entries(&self) -> Vec<&'static str> {
        match self.source {
            Source::Text(text) => entries(text),
            Source::Packed(bytes) => records(bytes).iter().map(|(name, _)| *name).collect(),
        }
    }

    /// Kernel `name`'s module ([`entry_module`]), inflated alone from the
    /// packed form; `None` when it holds no such kernel.
    pub fn module(&self, name: &str) -> Option<String> {
        match self.source {
            Source::Text(text) => entry_module(text, name),
            Source::Packed(bytes) => {
                records(bytes).iter().find(|(n, _)| *n == name).map(|(_, data)| inflated(data))
            }
        }
    }

    /// The whole text: for the packed form, every kernel's module one
    /// after the other (each a module [`entry_module`] cuts whole), made
    /// the first time it is asked for and kept.
    pub fn text(&self) -> &'static str {
        match self.source {
            Source::Text(text) => text,
            Source::Packed(bytes) => {
                static TEXTS: Mutex<BTreeMap<usize, &'static str>> = Mutex::new(BTreeMap::new());
                let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
                texts.entry(bytes.as_ptr() as usize).or_insert_with(|| {
                    let modules: Vec<String> =
                        records(bytes).iter().map(|(_, data)| inflated(data)).collect();
                    Box::leak(modules.join("\n").into_boxed_str())
                })
            }
        }
    }
}

/// The records of a packed PTX embedded in the binary, read once.
fn records(bytes: &'static [u8]) -> &'static [(&'static str, &'static [u8])] {
    type Records = &'static [(&'static str, &'static [u8])];
    static READ: Mutex<BTreeMap<usize, Records>> = Mutex::new(BTreeMap::new());
    let mut read = READ.lock().unwrap_or_else(PoisonError::into_inner);
    read.entry(bytes.as_ptr() as usize).or_insert_with(|| {
        let records = lab_cuda_builder::ptx_text::unpack(bytes)
            .unwrap_or_else(|e| panic!("the embedded PTX is broken ({e}): rebuild"));
        Box::leak(records.into_boxed_slice())
    })
}

/// A packed module's text.
fn inflated(data: &[u8]) -> String {
    lab_cuda_builder::ptx_text::inflate(data)
        .unwrap_or_else(|e| panic!("the embedded PTX is broken ({e}): rebuild"))
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

/// The PTX a `cuda-builder` build script left in `OUT_DIR` for the crate
/// `name`, every architecture it builds: `include_ptx!("kernels")`.
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        &[
            $crate::ptx::Ptx::packed(
                "sm_80",
                include_bytes!(concat!(env!("OUT_DIR"), "/", $name, "_sm_80.ptx.z")),
            ),
            $crate::ptx::Ptx::packed(
                "sm_90",
                include_bytes!(concat!(env!("OUT_DIR"), "/", $name, "_sm_90.ptx.z")),
            ),
            $crate::ptx::Ptx::packed(
                "sm_90a",
                include_bytes!(concat!(env!("OUT_DIR"), "/", $name, "_sm_90a.ptx.z")),
            ),
        ]
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_text_reads_kernel_by_kernel() {
        let text = ".version 8.4\n.target sm_90a\n.address_size 64\n\n.visible .entry k(\n)\n{\n\tret;\n}\n\
            \n.visible .entry j(\n)\n{\n\tret;\n}\n";
        let bytes: &'static [u8] = Box::leak(lab_cuda_builder::ptx_text::pack(text).into_boxed_slice());
        let p = Ptx::packed("sm_90a", bytes);
        assert_eq!(p.entries(), ["k", "j"]);
        assert_eq!(p.module("j"), entry_module(text, "j"));
        assert_eq!(p.module("x"), None);
        assert_eq!(entries(p.text()), ["k", "j"]);
        assert!(std::ptr::eq(p.text(), p.text()), "made once");
        assert_eq!(Ptx::new("sm_80", text).module("k"), entry_module(text, "k"));
    }

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
