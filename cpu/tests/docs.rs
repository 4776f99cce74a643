//! Docs that cannot drift: README.md's example is the repository's own
//! files; kernel doc comments carry no measured numbers and point at their
//! rows in BENCHMARKS.md; every `unsafe` block in the kernel crate says why
//! it is sound.

use std::path::{Path, PathBuf};

use gpu::launch::registry;
use kernel_lab::families::FAMILIES;

/// The repository: the host crate's parent.
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The code blocks README.md marks with `<!-- file: PATH -->`, each equal to
/// that file, and there are some.
#[test]
fn readme_example_is_the_repository_s_code() {
    let readme = read(&root().join("README.md"));
    let mut checked = Vec::new();
    let mut rest = readme.as_str();
    while let Some(at) = rest.find("<!-- file: ") {
        let after = &rest[at + "<!-- file: ".len()..];
        let path = &after[..after.find(" -->").expect("a closed marker")];
        let block =
            &after[after.find("```rust\n").expect("a rust block after the marker") + "```rust\n".len()..];
        let code = &block[..block.find("```\n").expect("a closed block")];
        assert_eq!(code, read(&root().join(path)), "README.md's block for {path} differs from the file");
        checked.push(path.to_string());
        rest = block;
    }
    assert_eq!(checked, ["gpu/src/scale.rs", "cpu/src/families/scale.rs", "cpu/src/bin/scale.rs"]);
    assert!(readme.contains("`scale::Scale,`"), "README.md names the registry line");
    assert!(read(&root().join("cpu/src/families/mod.rs")).contains("    scale::Scale,\n"));
}

/// Doc comments say what an idea predicts; what a run measured (with a
/// device and a date) belongs in BENCHMARKS.md, which a run regenerates.
#[test]
fn kernel_docs_carry_no_measured_numbers() {
    for file in ["gpu/src", "device/src", "macros/src"].iter().flat_map(|d| sources(&root().join(d))) {
        for (i, line) in read(&file).lines().enumerate() {
            let doc = line.trim_start();
            if !(doc.starts_with("///") || doc.starts_with("//!")) {
                continue;
            }
            let dated = doc.as_bytes().windows(10).any(|w| {
                w.iter()
                    .enumerate()
                    .all(|(k, c)| if k == 4 || k == 7 { *c == b'-' } else { c.is_ascii_digit() })
            });
            let device = ["H100", "H200", "measured on", "Measured on"].iter().any(|d| doc.contains(d));
            assert!(!dated && !device, "{}:{}: a measurement in a doc comment: {doc}", file.display(), i + 1);
        }
    }
}

/// Each family kernel's doc comment ends by pointing at its rows:
/// "Measured: `BENCHMARKS.md`, rows `name`".
#[test]
fn kernel_docs_point_at_their_rows() {
    for family in FAMILIES {
        for kernel in family.kernels() {
            let source = read(&root().join(kernel.file));
            let lines: Vec<&str> = source.lines().collect();
            // The doc block above the declaration: skip back over the
            // attribute (which may span lines) to the last doc line.
            let above = &lines[..kernel.line as usize - 1];
            let end = above.iter().rposition(|l| l.trim_start().starts_with("///")).unwrap_or(0);
            assert!(
                above[end + 1..].iter().all(|l| !l.trim().is_empty() && !l.trim().starts_with('}')),
                "{}: no doc comment above the declaration",
                kernel.name
            );
            let doc: Vec<&str> = above[..=end]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with("///"))
                .copied()
                .collect();
            let pointer = format!("/// Measured: `BENCHMARKS.md`, rows `{}", kernel.function);
            assert!(
                doc.first().is_some_and(|last| last.trim_start().starts_with(&pointer)),
                "{} ({}:{}): its doc comment should end with {pointer}",
                kernel.name,
                kernel.file,
                kernel.line
            );
        }
    }
    assert!(registry::all().len() > 40);
}

/// Every `unsafe { .. }` in the kernel crate and the emulator's kernels is
/// preceded, within its statement, by a `// SAFETY:` comment (what clippy's
/// `undocumented_unsafe_blocks` asks; this keeps CI, which runs no clippy,
/// to it).
#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let files = ["gpu/src", "device/src"]
        .iter()
        .flat_map(|d| sources(&root().join(d)))
        .chain([root().join("cpu/tests/emulator.rs"), root().join("cpu/tests/hazards.rs")]);
    for file in files {
        let source = read(&file);
        let lines: Vec<&str> = source.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap();
            if !code.contains("unsafe {") {
                continue;
            }
            // Walk back over the statement's earlier lines to its comment.
            let mut j = i;
            let documented = loop {
                if lines[j].contains("// SAFETY:") || lines[j].contains("// SAFETY (") {
                    break true;
                }
                if j == 0 {
                    break false;
                }
                j -= 1;
                let previous = lines[j].trim();
                if previous.starts_with("//") {
                    continue;
                }
                if previous.is_empty()
                    || previous.ends_with(';')
                    || previous.ends_with('}')
                    || previous.ends_with('{')
                {
                    break false;
                }
            };
            assert!(
                documented,
                "{}:{}: unsafe block without a SAFETY comment: {}",
                file.display(),
                i + 1,
                line.trim()
            );
        }
    }
}

/// README.md's `[[bin]]` block, the lines a new binary needs, is the host
/// crate's `cpu/Cargo.toml` entry for that binary, word for word.
#[test]
fn readme_bin_entry_is_cargo_toml_s() {
    let readme = read(&root().join("README.md"));
    let start = readme.find("```toml\n[[bin]]").expect("README.md shows a [[bin]] entry") + "```toml\n".len();
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(read(&root().join("cpu/Cargo.toml")).contains(block), "not in cpu/Cargo.toml:\n{block}");
}

/// The names in backticks that start the rows of the markdown table whose
/// header line is `header` in `text`.
fn first_cells(text: &str, header: &str) -> Vec<String> {
    let at = text.find(header).unwrap_or_else(|| panic!("no table headed {header}"));
    text[at..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_start_matches('|').split('|').next().unwrap().trim().to_string())
        .collect()
}

/// README.md's `#[kernel]` key table lists exactly the keys the macro
/// parses (`macros/src/args.rs`), and the macro's error message names
/// them all.
#[test]
fn kernel_key_table_is_the_macro_s() {
    let args = read(&root().join("macros/src/args.rs"));
    let mut parsed: Vec<String> = args
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix('"')?;
            let (key, after) = rest.split_once('"')?;
            after.trim_start().starts_with("=>").then(|| key.to_string())
        })
        .collect();
    parsed.sort();
    assert!(parsed.len() >= 8, "{parsed:?}");
    let readme = read(&root().join("README.md"));
    let mut documented: Vec<String> = first_cells(&readme, "| key | meaning | default |")
        .iter()
        .map(|c| c.trim_matches('`').to_string())
        .collect();
    documented.sort();
    assert_eq!(documented, parsed, "README.md's key table and macros/src/args.rs differ");
    let keys_line = args.lines().find(|l| l.starts_with("const KEYS")).expect("the KEYS message");
    for key in &parsed {
        assert!(keys_line.contains(key.as_str()), "KEYS lacks {key}: {keys_line}");
    }
}

/// README.md's crate map names every workspace member and every folder of
/// the host crate's source (`cpu/src/`), and every path it names exists.
#[test]
fn crate_map_is_the_workspace() {
    let readme = read(&root().join("README.md"));
    let rows = first_cells(&readme, "| path | what |");
    let paths: Vec<String> = rows
        .iter()
        .flat_map(|cell| cell.split(", ").map(|p| p.trim_matches('`').trim_end_matches('/').to_string()))
        .collect();
    for p in &paths {
        assert!(root().join(p).exists(), "README.md's crate map names {p}, which does not exist");
    }
    let cargo = read(&root().join("Cargo.toml"));
    let members = &cargo[cargo.find("members = [").unwrap()..];
    let members = &members[..members.find(']').unwrap()];
    for member in members.split('"').skip(1).step_by(2).filter(|m| *m != ".") {
        assert!(paths.iter().any(|p| p == member), "README.md's crate map lacks the member {member}/");
    }
    // Every top-level folder is in the map, itself or a folder inside it.
    for entry in std::fs::read_dir(root()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() && !name.starts_with('.') && name != "target" {
            assert!(
                paths.iter().any(|p| p == &name || p.starts_with(&format!("{name}/"))),
                "README.md's crate map lacks {name}/"
            );
        }
    }
    for entry in std::fs::read_dir(root().join("cpu/src")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = format!("cpu/src/{}", path.file_name().unwrap().to_string_lossy());
            assert!(paths.contains(&name), "README.md's crate map lacks {name}/");
        }
    }
}

/// docs/emulator.md's count of labelled hazard kernels is the registry's.
#[test]
fn hazard_count_is_the_registry_s() {
    let count = registry::tree("gpu::hazards").len();
    let doc = read(&root().join("docs/emulator.md"));
    let said = format!("labelled suite of {count} small kernels");
    assert!(doc.contains(&said), "docs/emulator.md should say \"{said}\"");
}

/// Every Rust file of the workspace (not build outputs or installed tools).
fn workspace_sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                files.extend(workspace_sources(&path));
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    files
}

/// A file is one idea a reader can hold: at most 800 lines, or its first
/// line says why it must be longer ("Over 800 lines: ...").
#[test]
fn no_source_file_is_over_800_lines_without_its_reason() {
    let files = workspace_sources(&root());
    assert!(files.len() > 100, "{} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = read(path);
            let first = text.lines().next().unwrap_or_default();
            (text.lines().count() > 800 && !first.starts_with("// Over 800 lines: "))
                .then(|| format!("{} ({} lines)", path.display(), text.lines().count()))
        })
        .collect();
    assert!(long.is_empty(), "over 800 lines with no reason on the first line: {long:?}");
}
