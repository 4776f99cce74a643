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
    source: Source,
}

/// The text as embedded.
#[derive(Clone, Copy, Debug)]
enum Source {
    Text(&'static str),
    /// DEFLATE-compressed (what `cuda-builder` leaves beside the text):
    /// PTX is repetitive text, a seventh of its size compressed, and the
    /// binaries embed every architecture's.
    Deflated(&'static [u8]),
}

impl Ptx {
    /// The architecture's PTX, for `sm_XY`, `sm_XYZ` or either with a
    /// suffix letter (`sm_90a`).
    pub const fn new(arch: &'static str, text: &'static str) -> Ptx {
        Ptx::with(arch, Source::Text(text))
    }

    /// The architecture's PTX from its DEFLATE stream (`include_ptx!`'s).
    pub const fn deflated(arch: &'static str, bytes: &'static [u8]) -> Ptx {
        Ptx::with(arch, Source::Deflated(bytes))
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

    /// The PTX text: inflated the first time it is asked for (a fifth of
    /// a second for the largest, once per process), kept after that.
    pub fn text(&self) -> &'static str {
        match self.source {
            Source::Text(text) => text,
            Source::Deflated(bytes) => inflated(bytes),
        }
    }
}

/// The text of a DEFLATE stream embedded in the binary, inflated once.
fn inflated(bytes: &'static [u8]) -> &'static str {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, PoisonError};
    static TEXTS: Mutex<BTreeMap<usize, &'static str>> = Mutex::new(BTreeMap::new());
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    texts.entry(bytes.as_ptr() as usize).or_insert_with(|| {
        let raw = miniz_oxide::inflate::decompress_to_vec(bytes)
            .unwrap_or_else(|e| panic!("the embedded PTX does not inflate ({e:?}): the build is broken"));
        let text = String::from_utf8(raw).unwrap_or_else(|_| panic!("the embedded PTX is not UTF-8"));
        // One per module, for the process's life: the kernels' modules
        // are cut from it whenever one is first launched.
        Box::leak(text.into_boxed_str())
    })
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

/// The module of `text` with one kernel, `name`: every line outside a
/// kernel's body (the header, the globals, the device functions and their
/// declarations) and that kernel's `.entry` through its closing brace.
/// `None` when `text` has no such kernel.
///
/// The driver compiles a PTX module whole when it loads it, and our
/// `sm_90a` module is tens of megabytes (the library's `wgmma` GEMM alone
/// is fifteen unrolled instances of some nine seconds of `ptxas` each):
/// loading each kernel from its own module, when it is first launched,
/// costs a program the kernels it runs, not all of them.
///
/// `text` may be several modules one after the other (each from its
/// `.version` line on, as a build in parts leaves them): the kernel's
/// module is cut from the one that holds it.
pub fn entry_module(text: &str, name: &str) -> Option<String> {
    let entry = format!(".entry {name}(");
    let text = modules(text).find(|m| m.contains(&entry))?;
    let mut out = String::with_capacity(text.len().min(1 << 20));
    let (mut inside, mut found) = (None::<&str>, false);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(".visible .entry ").or_else(|| line.strip_prefix(".entry ")) {
            inside = rest.split('(').next().map(str::trim);
        }
        let keep = match inside {
            None => true,
            Some(entry) => entry == name,
        };
        if keep {
            found |= inside.is_some();
            out.push_str(line);
            out.push('\n');
        }
        // A kernel's body ends at the first closing brace in column 0
        // (the braces of its inner scopes are indented).
        if inside.is_some() && line == "}" {
            inside = None;
        }
    }
    found.then_some(out)
}

/// The modules of `text`, each from a `.version` line to the next.
fn modules(text: &str) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = text.match_indices("\n.version ").map(|(at, _)| at + 1).collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([text.len()]).collect();
    starts.into_iter().zip(ends).map(move |(a, b)| &text[a..b])
}

/// The PTX a `cuda-builder` build script left in `OUT_DIR` for the crate
/// `name`, every architecture it builds: `include_ptx!("kernels")`.
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        &[
            $crate::ptx::Ptx::deflated(
                "sm_80",
                include_bytes!(concat!(env!("OUT_DIR"), "/", $name, "_sm_80.ptx.z")),
            ),
            $crate::ptx::Ptx::deflated(
                "sm_90",
                include_bytes!(concat!(env!("OUT_DIR"), "/", $name, "_sm_90.ptx.z")),
            ),
            $crate::ptx::Ptx::deflated(
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
    fn deflated_text_reads_as_the_text() {
        let text = ".version 8.4\n.target sm_90a\n".repeat(100);
        let bytes: &'static [u8] =
            Box::leak(miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 6).into_boxed_slice());
        let p = Ptx::deflated("sm_90a", bytes);
        assert_eq!(p.text(), text);
        assert!(std::ptr::eq(p.text(), p.text()), "inflated once");
        assert_eq!(Ptx::new("sm_80", "x").text(), "x");
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

#[cfg(test)]
mod split {
    use super::{entries, entry_module};

    const TEXT: &str = ".version 8.3\n.target sm_90a\n.address_size 64\n\n.func helper(\n.param .b32 x\n)\n;\n\
        .global .align 4 .b8 table[4];\n\n.visible .entry first(\n.param .u64 p\n)\n{\n\t{\n\tret;\n\t}\n}\n\
        \n.visible .entry second(\n.param .u64 p\n)\n{\n\tret;\n}\n\n.func helper(\n.param .b32 x\n)\n{\n\tret;\n}\n";

    /// Two modules one after the other (a build in parts): each kernel's
    /// module comes from its own, with that module's header and helpers
    /// only.
    #[test]
    fn a_kernel_is_cut_from_the_module_that_holds_it() {
        let other = ".version 8.4\n.target sm_90a\n.address_size 64\n\n.func helper(\n.param .b32 x\n)\n;\n\
            .visible .entry third(\n.param .u64 p\n)\n{\n\tret;\n}\n";
        let both = format!("{TEXT}\n{other}");
        assert_eq!(entries(&both), ["first", "second", "third"]);
        let third = entry_module(&both, "third").unwrap();
        assert_eq!(
            (third.matches(".version").count(), third.matches(".func helper(").count()),
            (1, 1),
            "{third}"
        );
        assert!(third.starts_with(".version 8.4") && third.contains(".entry third("), "{third}");
        let second = entry_module(&both, "second").unwrap();
        assert_eq!(second.trim_end(), entry_module(TEXT, "second").unwrap().trim_end());
    }

    #[test]
    fn a_kernels_module_keeps_everything_but_the_other_kernels() {
        let one = entry_module(TEXT, "second").unwrap();
        assert_eq!(entries(&one), ["second"]);
        for kept in [".target sm_90a", ".global .align 4 .b8 table[4];", ".func helper(", "\tret;"] {
            assert!(one.contains(kept), "{kept} missing from\n{one}");
        }
        assert_eq!(one.matches(".func helper(").count(), 2, "the declaration and the definition");
        let first = entry_module(TEXT, "first").unwrap();
        assert_eq!(entries(&first), ["first"]);
        assert!(first.contains("\t}\n}\n"), "an inner scope's brace does not end the kernel");
        assert_eq!(entry_module(TEXT, "third"), None);
    }
}
