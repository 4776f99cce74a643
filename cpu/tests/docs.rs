//! Docs that cannot drift: README.md's example is the repository's own
//! files; kernel doc comments carry no measured numbers and point at their
//! rows in BENCHMARKS.md; every `unsafe` block in the kernel crate says why
//! it is sound.

mod common;

use common::copy_tree;
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

/// The code blocks README.md marks with `<!-- file: PATH -->` under `root`:
/// each is the start of that file (a user's kernels go below what the page
/// shows). Their paths, or the first that differs.
fn readme_blocks(root: &Path) -> Result<Vec<String>, String> {
    let readme = read(&root.join("README.md"));
    let mut checked = Vec::new();
    let mut rest = readme.as_str();
    while let Some(at) = rest.find("<!-- file: ") {
        let after = &rest[at + "<!-- file: ".len()..];
        let path = &after[..after.find(" -->").expect("a closed marker")];
        let block =
            &after[after.find("```rust\n").expect("a rust block after the marker") + "```rust\n".len()..];
        let code = &block[..block.find("```\n").expect("a closed block")];
        if !read(&root.join(path)).starts_with(code) {
            return Err(format!("README.md's block for {path} is not the start of the file"));
        }
        checked.push(path.to_string());
        rest = block;
    }
    Ok(checked)
}

#[test]
fn readme_example_is_the_repository_s_code() {
    let checked = readme_blocks(&root()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked, ["gpu/src/scale.rs", "cpu/src/families/scale.rs", "cpu/src/bin/scale.rs"]);
    // The family's own files are shown whole.
    let readme = read(&root().join("README.md"));
    for path in &checked[1..] {
        assert!(readme.contains(&read(&root().join(path))), "README.md shows {path} in part");
    }
    assert!(readme.contains("`scale::Scale,`"), "README.md names the registry line");
    assert!(read(&root().join("cpu/src/families/mod.rs")).contains("    scale::Scale,\n"));
}

/// Doc comments say what an idea predicts; what a run measured (with a
/// device and a date) belongs in BENCHMARKS.md, which a run regenerates.
/// The first doc line under `root` that carries a measurement.
fn measured_numbers(root: &Path) -> Result<(), String> {
    for file in ["gpu/src", "device/src", "macros/src"].iter().flat_map(|d| sources(&root.join(d))) {
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
            if dated || device {
                return Err(format!("{}:{}: a measurement in a doc comment: {doc}", file.display(), i + 1));
            }
        }
    }
    Ok(())
}

#[test]
fn kernel_docs_carry_no_measured_numbers() {
    measured_numbers(&root()).unwrap_or_else(|e| panic!("{e}"));
}

/// The `#[kernel]` declarations of the families' sources under `root`
/// (not the hazard suite's or the GEMM library's), read from the text:
/// each one's file, the line of its function's name (as the registry
/// has it), and the name.
fn declarations(root: &Path) -> Vec<(PathBuf, usize, String)> {
    let gpu = root.join("gpu/src");
    let mut found = Vec::new();
    for file in sources(&gpu) {
        if file.starts_with(gpu.join("hazards")) || file.starts_with(gpu.join("gemm")) {
            continue;
        }
        let text = read(&file);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.trim_start().starts_with("#[kernel") {
                continue;
            }
            let (at, name) = lines[i..]
                .iter()
                .enumerate()
                .find_map(|(j, l)| {
                    let rest = l.trim_start().strip_prefix("pub ")?;
                    let rest = rest.strip_prefix("unsafe ").unwrap_or(rest).strip_prefix("fn ")?;
                    Some((i + j + 1, rest[..rest.find(['(', '<']).unwrap_or(rest.len())].to_string()))
                })
                .expect("a function after #[kernel]");
            found.push((file.clone(), at, name));
        }
    }
    found
}

/// That the doc comment above line `line` of `source` (the declaration's
/// attribute, which may span lines) ends by pointing at `function`'s rows.
fn points_at_rows(source: &str, line: usize, function: &str) -> Result<(), String> {
    let lines: Vec<&str> = source.lines().collect();
    // Skip back over the attribute to the last doc line.
    let above = &lines[..line - 1];
    let end = above.iter().rposition(|l| l.trim_start().starts_with("///")).unwrap_or(0);
    if !above[end + 1..].iter().all(|l| !l.trim().is_empty() && !l.trim().starts_with('}')) {
        return Err("no doc comment above the declaration".into());
    }
    let pointer = format!("/// Measured: `BENCHMARKS.md`, rows `{function}");
    let last = above[..=end].iter().rev().take_while(|l| l.trim_start().starts_with("///")).next();
    if !last.is_some_and(|last| last.trim_start().starts_with(&pointer)) {
        return Err(format!("its doc comment should end with {pointer}"));
    }
    Ok(())
}

/// Where the registry's kernels that no family runs are declared (the
/// seeds' bugs kept for the tests): file and line.
fn run_by_no_family() -> Vec<(String, usize)> {
    let families: Vec<&str> = FAMILIES.iter().flat_map(|f| f.kernels()).map(|k| k.name).collect();
    registry::all()
        .iter()
        .filter(|k| !families.contains(&k.name))
        .map(|k| (k.file.to_string(), k.line as usize))
        .collect()
}

/// [`points_at_rows`] for every family kernel declared under `root`: not
/// those a `macro_rules!` declares (whose docs its callers give), nor
/// those no family runs.
fn kernel_docs(root: &Path) -> Result<usize, String> {
    let skip = run_by_no_family();
    let found: Vec<_> = declarations(root)
        .into_iter()
        .filter(|(file, line, f)| {
            let at = (file.strip_prefix(root).unwrap().display().to_string(), *line);
            !f.starts_with('$') && !skip.contains(&at)
        })
        .collect();
    for (file, line, function) in &found {
        points_at_rows(&read(file), *line, function)
            .map_err(|e| format!("{function} ({}:{line}): {e}", file.display()))?;
    }
    Ok(found.len())
}

/// Each family kernel's doc comment ends by pointing at its rows:
/// "Measured: `BENCHMARKS.md`, rows `name`"; the registry's kernels and
/// those the sources declare are the same.
#[test]
fn kernel_docs_point_at_their_rows() {
    let mut registered = std::collections::BTreeSet::new();
    for family in FAMILIES {
        for kernel in family.kernels() {
            points_at_rows(&read(&root().join(kernel.file)), kernel.line as usize, kernel.function)
                .unwrap_or_else(|e| panic!("{} ({}:{}): {e}", kernel.name, kernel.file, kernel.line));
            registered.insert((kernel.file.to_string(), kernel.line as usize));
        }
    }
    kernel_docs(&root()).unwrap_or_else(|e| panic!("{e}"));
    // What the text declares is what the registry holds, besides what
    // macros declare (which the registry places at their callers' lines).
    let (by_macro, declared): (Vec<_>, Vec<_>) = declarations(&root())
        .into_iter()
        .map(|(file, line, f)| ((file.strip_prefix(root()).unwrap().display().to_string(), line), f))
        .partition(|(_, f)| f.starts_with('$'));
    let skip = run_by_no_family();
    let declared: std::collections::BTreeSet<_> =
        declared.into_iter().map(|(at, _)| at).filter(|at| !skip.contains(at)).collect();
    assert!(declared.is_subset(&registered), "{:?}", declared.difference(&registered));
    for (file, line) in registered.difference(&declared) {
        assert!(by_macro.iter().any(|((f, _), _)| f == file), "{file}:{line} is registered, not declared");
    }
    assert!(registry::all().len() > 40);
}

/// Every `unsafe { .. }` in the kernel crate and the emulator's kernels is
/// preceded, within its statement, by a `// SAFETY:` comment (what clippy's
/// `undocumented_unsafe_blocks` asks, held here as text, for any build).
fn unsafe_blocks(root: &Path) -> Result<(), String> {
    let files = ["gpu/src", "device/src"]
        .iter()
        .flat_map(|d| sources(&root.join(d)))
        .chain(["cpu/tests/emulator.rs", "cpu/tests/hazards.rs"].map(|f| root.join(f)));
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
            if !documented {
                return Err(format!(
                    "{}:{}: unsafe block without a SAFETY comment: {}",
                    file.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    unsafe_blocks(&root()).unwrap_or_else(|e| panic!("{e}"));
}

/// README.md's "Adding a kernel", followed on a copy of the sources the
/// docs checks read: `scale` copied below itself in `gpu/src/scale.rs`,
/// renamed `scale_mine`, its body changed, its doc comment's last line
/// pointing at the new name. Every docs check passes on the copy; with the
/// pointer left at `scale`, the rows check names the kernel.
#[test]
fn adding_a_kernel_as_the_guide_says_keeps_the_checks_green() {
    let readme = read(&root().join("README.md"));
    assert!(
        readme.contains("copy `scale` below it") && readme.contains("rows `scale_mine`"),
        "the guide moved"
    );
    let scratch = std::env::temp_dir().join(format!("kernel-lab-guide-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    for folder in ["gpu/src", "device/src", "macros/src", "cpu/src/families", "cpu/src/bin"] {
        copy_tree(&root().join(folder), &scratch.join(folder));
    }
    std::fs::create_dir_all(scratch.join("cpu/tests")).unwrap();
    for file in ["README.md", "cpu/tests/emulator.rs", "cpu/tests/hazards.rs"] {
        std::fs::copy(root().join(file), scratch.join(file)).unwrap();
    }

    let file = scratch.join("gpu/src/scale.rs");
    let source = read(&file);
    let start = source.find("/// `y[i] = a x[i]`").expect("scale's doc comment");
    let end = start + source[start..].find("\n}\n").expect("scale's end") + 3;
    let mine = source[start..end]
        .replace("rows `scale`", "rows `scale_mine`")
        .replace("pub fn scale(", "pub fn scale_mine(")
        .replace("*y = a * x;", "*y = x * a;");
    assert!(mine.contains("scale_mine(") && mine.contains("x * a"), "{mine}");
    std::fs::write(&file, format!("{source}\n{mine}")).unwrap();

    let names = |r: Result<(), String>| r.unwrap_or_else(|e| panic!("after the guide's step: {e}"));
    readme_blocks(&scratch).unwrap_or_else(|e| panic!("after the guide's step: {e}"));
    names(measured_numbers(&scratch));
    names(unsafe_blocks(&scratch));
    let before = kernel_docs(&root()).unwrap();
    assert_eq!(kernel_docs(&scratch), Ok(before + 1));

    // The same step without the pointer's rename fails, naming the kernel.
    std::fs::write(&file, format!("{source}\n{}", mine.replace("rows `scale_mine`", "rows `scale`")))
        .unwrap();
    let e = kernel_docs(&scratch).unwrap_err();
    assert!(e.starts_with("scale_mine (") && e.contains("rows `scale_mine"), "{e}");
    std::fs::remove_dir_all(&scratch).unwrap();
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

/// README.md's two commands share one build: every unit `cargo run
/// --release` compiles (crate, target, features, profile) is one that
/// `cargo test --release` compiles too, so neither rebuilds what the other
/// built. Cargo's unit graph (a nightly option; the pinned toolchain is
/// nightly) says so without building.
#[test]
fn run_and_test_share_their_build() {
    let units = |args: &[&str]| -> std::collections::BTreeSet<String> {
        let out = std::process::Command::new(env!("CARGO"))
            .current_dir(root())
            .args(args)
            .args(["--release", "--unit-graph", "-Z", "unstable-options"])
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let graph: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        graph["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                format!(
                    "{} {} {} {} {}",
                    u["pkg_id"], u["target"]["name"], u["mode"], u["features"], u["profile"]
                )
            })
            .collect()
    };
    // (`cargo run`'s own unit graph is `cargo build --bin kernel-lab`'s;
    // cargo stops on `run --unit-graph`.)
    let run = units(&["build", "--bin", "kernel-lab"]);
    let test = units(&["test", "--no-run"]);
    assert!(run.len() > 50, "{} units", run.len());
    let apart: Vec<&String> = run.difference(&test).collect();
    assert!(apart.is_empty(), "units `cargo run` builds and `cargo test` does not: {apart:#?}");
}
