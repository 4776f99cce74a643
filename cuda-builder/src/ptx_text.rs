//! PTX text as the runtime loads it: the modules of a text, their kernels,
//! and one kernel's module cut from them; and the packed form a build
//! leaves for the host to embed (`<lib>_<arch>.ptx.z`,
//! `lab_runtime::include_ptx!`): each kernel's module DEFLATE-compressed on
//! its own, so that a launch inflates its kernel's module only. The writer
//! (`pack`) and the reader (`unpack`) live here, together; so does the
//! line that names the kernels' host library ([`MARKER`]), which the
//! builder writes first in a PTX text and `lab-cust` reads.

/// The line a PTX text the builder writes starts with, followed by the
/// path of the kernel crate's host build as a shared library (the
/// emulator's, for a program that loads only the PTX).
pub const MARKER: &str = "// lab-emulator-library: ";

/// The library a PTX text names on its [`MARKER`] line, if any (among
/// the comments before its first directive).
pub fn named_library(ptx: &str) -> Option<&str> {
    ptx.lines()
        .take_while(|l| l.starts_with("//") || l.trim().is_empty())
        .find_map(|l| l.strip_prefix(MARKER))
}

/// The start of [`fnv1a`]'s chain.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, of `bytes` after `h` ([`FNV_OFFSET`] to begin): a
/// hash of text that is the same in every build (std's hasher is not
/// promised to be), for what is kept by a text's hash (a build's stamp,
/// ptxas's verdicts).
pub fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
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
/// is 120 unrolled instances):
/// loading each kernel from its own module, when it is first launched,
/// costs a program the kernels it runs, not all of them.
///
/// `text` may be several modules one after the other (each from its
/// `.version` line on, as a build in parts leaves them): the kernel's
/// module is cut from the one that holds it.
pub fn entry_module(text: &str, name: &str) -> Option<String> {
    let entry = format!(".entry {name}(");
    let module = modules(text).find(|m| m.contains(&entry))?;
    Some(module_of(&runs(module), name))
}

/// A module's lines in runs, each outside every kernel (`None`) or inside
/// one: a kernel's `.entry` line through the first closing brace in
/// column 0 (the braces of its inner scopes are indented).
fn runs(module: &str) -> Vec<(Option<&str>, Vec<&str>)> {
    let mut runs: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    let mut inside = None::<&str>;
    for line in module.lines() {
        if let Some(rest) = line.strip_prefix(".visible .entry ").or_else(|| line.strip_prefix(".entry ")) {
            inside = rest.split('(').next().map(str::trim);
        }
        match runs.last_mut() {
            Some((who, lines)) if *who == inside => lines.push(line),
            _ => runs.push((inside, vec![line])),
        }
        if inside.is_some() && line == "}" {
            inside = None;
        }
    }
    runs
}

/// Kernel `name`'s module from its module's runs: every line outside a
/// kernel, and its own.
fn module_of(runs: &[(Option<&str>, Vec<&str>)], name: &str) -> String {
    let mut text = String::new();
    for (_, lines) in runs.iter().filter(|(who, _)| who.is_none() || *who == Some(name)) {
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// The modules of `text`, each from a `.version` line to the next.
pub fn modules(text: &str) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = text.match_indices("\n.version ").map(|(at, _)| at + 1).collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let ends: Vec<usize> = starts.iter().skip(1).copied().chain([text.len()]).collect();
    starts.into_iter().zip(ends).map(move |(a, b)| &text[a..b])
}

/// Every kernel's module ([`entry_module`]) of `text`, in the text's
/// order, each module's lines walked once.
pub fn kernel_modules(text: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    for module in modules(text) {
        let runs = runs(module);
        out.extend(runs.iter().filter_map(|(who, _)| *who).map(|name| (name, module_of(&runs, name))));
    }
    out
}

/// The first bytes of the packed form.
const MAGIC: &[u8] = b"kernel-lab packed ptx 1\n";

/// The packed form of `text`: for each kernel, its name and its module
/// DEFLATE-compressed, each length a little-endian `u32` before it. A
/// text without kernels packs as no records.
pub fn pack(text: &str) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (name, module) in kernel_modules(text) {
        let data = miniz_oxide::deflate::compress_to_vec(module.as_bytes(), 6);
        for field in [name.as_bytes(), &data] {
            out.extend_from_slice(&(field.len() as u32).to_le_bytes());
            out.extend_from_slice(field);
        }
    }
    out
}

/// The records of a packed text: each kernel's name and its compressed
/// module, or why the bytes are not a packed text.
pub fn unpack(bytes: &[u8]) -> Result<Vec<(&str, &[u8])>, String> {
    let mut rest = bytes.strip_prefix(MAGIC).ok_or("not a packed PTX (no header)")?;
    let mut records = Vec::new();
    while !rest.is_empty() {
        let name = field(&mut rest)?;
        let name = std::str::from_utf8(name).map_err(|_| "a kernel name that is not UTF-8")?;
        records.push((name, field(&mut rest)?));
    }
    Ok(records)
}

/// The field at the start of `rest` (its length, then its bytes), taken
/// off it.
fn field<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let short = || "a packed PTX cut short".to_string();
    let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(short)?;
    let (field, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize).ok_or_else(short)?;
    *rest = tail;
    Ok(field)
}

/// A compressed module's text.
pub fn inflate(data: &[u8]) -> Result<String, String> {
    let raw = miniz_oxide::inflate::decompress_to_vec(data).map_err(|e| format!("{e:?}"))?;
    String::from_utf8(raw).map_err(|_| "a module that is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_line_is_found_only_in_the_leading_comments() {
        let ptx = format!("//\n{MARKER}/tmp/libk.so\n.version 8.0\n{MARKER}/elsewhere\n");
        assert_eq!(named_library(&ptx), Some("/tmp/libk.so"));
        assert_eq!(named_library(".version 8.0\n// lab-emulator-library: /x\n"), None);
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // FNV-1a 64 of "a" and of "foobar", as its authors list them.
        assert_eq!(fnv1a(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar", FNV_OFFSET), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a(b"bar", fnv1a(b"foo", FNV_OFFSET)), fnv1a(b"foobar", FNV_OFFSET));
    }

    const TEXT: &str = ".version 8.3\n.target sm_90a\n.address_size 64\n\n.func helper(\n.param .b32 x\n)\n;\n\
        .global .align 4 .b8 table[4];\n\n.visible .entry first(\n.param .u64 p\n)\n{\n\t{\n\tret;\n\t}\n}\n\
        \n.visible .entry second(\n.param .u64 p\n)\n{\n\tret;\n}\n\n.func helper(\n.param .b32 x\n)\n{\n\tret;\n}\n";

    /// Every kernel's module, cut in one pass and packed, reads back as
    /// `entry_module` cuts it, from both modules of a text in parts.
    #[test]
    fn packed_modules_are_the_entry_modules() {
        let other =
            ".version 8.4\n.target sm_90a\n.address_size 64\n\n.visible .entry third(\n)\n{\n\tret;\n}\n";
        let both = format!("//\n// Generated by LLVM NVPTX Back-End\n//\n\n{TEXT}\n{other}");
        let records = unpack_owned(&pack(&both));
        assert_eq!(records.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["first", "second", "third"]);
        for (name, module) in &records {
            assert_eq!(Some(module.clone()), entry_module(&both, name), "{name}");
        }
        assert_eq!(unpack(&pack("")).unwrap(), []);
        assert!(unpack(b"not packed").is_err() && unpack(&pack(&both)[..40]).is_err());
    }

    fn unpack_owned(bytes: &[u8]) -> Vec<(String, String)> {
        unpack(bytes).unwrap().into_iter().map(|(n, d)| (n.to_string(), inflate(d).unwrap())).collect()
    }

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
