//! Checks on the PTX build.rs embeds, without a GPU: every declared kernel
//! is in every PTX, every PTX assembles with ptxas for sm_80 and sm_90, and
//! the kernels have no stack frame, no spills and no calls, and use the
//! instructions they were written for.

use std::path::PathBuf;
use std::process::Command;

use gpu::launch::{Kernel, registry};
use kernel_lab::runtime::ptx::{self, ARCHS};

#[path = "ptx/record.rs"]
mod record;
use record::Record;

/// Every kernel the `gpu` crate declares, from the registry.
fn declared() -> Vec<&'static Kernel> {
    registry::all().into_iter().filter(|k| k.path.starts_with("gpu::")).collect()
}

/// The kernels declared in `gpu::<family>`.
fn family(name: &str) -> Vec<&'static Kernel> {
    registry::module(&format!("gpu::{name}"))
}

/// A CUDA tool: from `$<NAME>`, from `scripts/setup`'s `.tools/<dir>`,
/// or on `PATH`.
fn tool(name: &str, dir: &str) -> PathBuf {
    if let Ok(path) = std::env::var(name.to_uppercase()) {
        return PathBuf::from(path);
    }
    let local = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join(format!(".tools/{dir}/nvidia/cu13/bin/{name}"));
    if local.exists() {
        return local;
    }
    if Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()) {
        return PathBuf::from(name);
    }
    panic!(
        "{name} not found: run scripts/setup (it installs {name} into .tools/) or set {}",
        name.to_uppercase()
    );
}

/// ptxas, from the nvcc wheel `scripts/setup` installs.
fn ptxas() -> PathBuf {
    tool("ptxas", "cuda")
}

/// ptxas's version, as `--version` prints its last line.
fn ptxas_version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        let out = Command::new(ptxas()).arg("--version").output().expect("running ptxas --version");
        String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").trim().to_string()
    })
}

/// Per-kernel resource usage as `ptxas -v` reports it.
#[derive(Clone, Debug, Default)]
struct Usage {
    registers: u32,
    stack_bytes: u32,
    spill_stores: u32,
    spill_loads: u32,
}

/// Assembles `text` for `arch` and returns each entry's usage.
fn assemble(text: &str, arch: &str) -> Vec<(String, Usage)> {
    assemble_to_cubin(text, arch).0
}

/// Assembles each entry of `text` for `arch` from a module of its own
/// ([`ptx::entry_module`], as the runtime loads it), on every core: each
/// entry's usage, in the text's order. Only modules neither `record` nor
/// this checkout's target directory has seen run ptxas, so an edit to one
/// kernel reassembles that kernel (and whatever else its change moved),
/// not the 70 MB around it.
fn assemble_each(text: &str, arch: &str, record: &Record) -> Vec<(String, Usage)> {
    let modules = ptx::kernel_modules(text);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut usage: Vec<(usize, (String, Usage))> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((_, module)) = modules.get(i) else { break mine };
                        mine.extend(record.usage(module, arch, assemble).into_iter().map(|u| (i, u)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    usage.sort_by_key(|(i, _)| *i);
    usage.into_iter().map(|(_, u)| u).collect()
}

/// Assembles `text` for `arch`: each entry's usage, and the cubin. The
/// result is kept under the target directory by the record's key (the
/// text, ptxas's version, the architecture), so a text assembled before
/// is not assembled again.
fn assemble_to_cubin(text: &str, arch: &str) -> (Vec<(String, Usage)>, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ptxas");
    std::fs::create_dir_all(&dir).unwrap();
    let tag = format!("{arch}_{:016x}_{}", record::module_hash(text, arch, ptxas_version()), text.len());
    let (log, cubin) = (dir.join(format!("{tag}.log")), dir.join(format!("{tag}.cubin")));
    if let (Ok(text), true) = (std::fs::read_to_string(&log), cubin.exists()) {
        return (parse_ptxas_log(&text), cubin);
    }
    // Tests run in parallel, in more than one process: each writes files
    // of its own and renames them into place, the log last (a log means
    // its cubin is there).
    let me = format!("{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "");
    let own = |ext: &str| dir.join(format!("{tag}.{me}.{ext}"));
    let (source, new_cubin, new_log) = (own("ptx"), own("cubin"), own("log"));
    std::fs::write(&source, text).unwrap();
    // `--split-compile 0`: ptxas optimizes the entries on every core (a
    // whole PTX in half the time on two; the same code and usage).
    let output = Command::new(ptxas())
        .args(["-v", "--split-compile", "0", &format!("-arch={arch}"), "-o"])
        .arg(&new_cubin)
        .arg(&source)
        .output()
        .expect("running ptxas");
    let _ = std::fs::remove_file(&source);
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "ptxas -arch={arch} rejected the PTX:\n{text}");
    std::fs::rename(&new_cubin, &cubin).unwrap();
    std::fs::write(&new_log, &text).unwrap();
    std::fs::rename(&new_log, &log).unwrap();
    (parse_ptxas_log(&text), cubin)
}

/// nvdisasm, from the wheel `scripts/setup` installs.
fn nvdisasm() -> PathBuf {
    tool("nvdisasm", "nvdisasm")
}

/// The SASS of sm_90a kernel `name` (assembled from its own module): one
/// instruction a line, as nvdisasm prints them, without addresses.
fn sass_90a(name: &str) -> Vec<String> {
    // Every sm_90a kernel's module, cut once.
    static MODULES: std::sync::OnceLock<std::collections::HashMap<&'static str, String>> =
        std::sync::OnceLock::new();
    let modules = MODULES.get_or_init(|| {
        let p = ARCHS.iter().find(|p| p.arch == "sm_90a").unwrap();
        ptx::kernel_modules(p.text()).into_iter().collect()
    });
    let (_, cubin) = assemble_to_cubin(&modules[name], "sm_90a");
    // nvdisasm's listing is kept beside the cubin (named by its text).
    let listing = cubin.with_extension("sass");
    let text = std::fs::read_to_string(&listing).unwrap_or_else(|_| {
        let output = Command::new(nvdisasm()).arg("-c").arg(&cubin).output().expect("running nvdisasm");
        assert!(output.status.success(), "nvdisasm: {}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let own = listing.with_extension(format!("{}.sass", std::process::id()));
        std::fs::write(&own, &text).unwrap();
        std::fs::rename(&own, &listing).unwrap();
        text
    });
    text.lines()
        .filter_map(|l| l.split_once("*/").map(|(_, i)| i.trim().trim_end_matches(';').trim().to_string()))
        .filter(|i| !i.is_empty())
        .collect()
}

fn number_before(line: &str, suffix: &str) -> u32 {
    let end = line.find(suffix).unwrap_or_else(|| panic!("no '{suffix}' in '{line}'"));
    line[..end].split_whitespace().last().unwrap().parse().unwrap()
}

fn parse_ptxas_log(log: &str) -> Vec<(String, Usage)> {
    let mut kernels: Vec<(String, Usage)> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            kernels.push((rest.split('\'').next().unwrap().to_string(), Usage::default()));
        } else if let Some((_, usage)) = kernels.last_mut() {
            if line.contains("bytes stack frame") {
                usage.stack_bytes = number_before(line, "bytes stack frame");
                usage.spill_stores = number_before(line, "bytes spill stores");
                usage.spill_loads = number_before(line, "bytes spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                usage.registers = number_before(line, "registers");
            }
        }
    }
    kernels
}

#[test]
fn every_declared_kernel_is_in_every_ptx() {
    for p in ARCHS {
        let entries = ptx::entries(p.text());
        for kernel in declared() {
            assert_eq!(
                entries.contains(&kernel.name),
                kernel.built_for(p.arch),
                "{} in the {} PTX (has {entries:?}), built for {:?}",
                kernel.name,
                p.arch,
                kernel.arch
            );
        }
    }
}

#[test]
fn ptx_targets_its_arch() {
    for p in ARCHS {
        assert!(p.text().contains(&format!(".target {}", p.arch)), "{} PTX has the wrong .target", p.arch);
    }
}

/// The sm_90a PTX is built in two parts (`cpu/build.rs`), the GEMM
/// library's `wgmma` instances and every other kernel: each kernel is in
/// one of them only.
#[test]
fn no_kernel_is_in_both_parts_of_sm_90a() {
    let all = ARCHS.iter().find(|p| p.arch == "sm_90a").unwrap().entries();
    let unique: std::collections::BTreeSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a kernel in both parts");
    assert!(
        all.iter().any(|k| k.starts_with("gemm_wgmma_")) && all.iter().any(|k| k.starts_with("attention_"))
    );
}

#[test]
fn every_ptx_assembles_for_its_targets_without_spills() {
    let record = Record::open("gpu", ptxas_version());
    for p in ARCHS {
        // Portable PTX on every target it runs on; sm_90a's on sm_90a only.
        let targets: Vec<&str> = if p.specific {
            vec![p.arch]
        } else {
            ["sm_80", "sm_90"].into_iter().filter(|a| a[3..].parse::<i32>().unwrap() >= p.compute).collect()
        };
        for arch in targets {
            let usage = assemble_each(p.text(), arch, &record);
            let names: Vec<&str> = usage.iter().map(|(n, _)| n.as_str()).collect();
            for kernel in declared().into_iter().filter(|k| k.built_for(p.arch)) {
                assert!(names.contains(&kernel.name), "ptxas did not compile {} for {arch}", kernel.name);
            }
            for (name, u) in &usage {
                assert_eq!(
                    (u.stack_bytes, u.spill_stores, u.spill_loads),
                    (0, 0, 0),
                    "{name} ({} PTX on {arch}) has a stack frame or spills: {u:?}",
                    p.arch
                );
                assert!(u.registers > 0 && u.registers <= 255, "{name}: {u:?}");
            }
        }
    }
    record.save();
}

/// The runtime loads each kernel from its own module
/// (`ptx::entry_module`): every kernel of every PTX splits out alone, and
/// its module assembles by itself to the same code as in the whole PTX.
#[test]
fn each_kernel_loads_from_a_module_of_its_own() {
    for p in ARCHS {
        let modules = ptx::kernel_modules(p.text());
        let names: Vec<&str> = modules.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ptx::entries(p.text()), "{} PTX", p.arch);
        for (name, one) in &modules {
            assert_eq!(ptx::entries(one), [*name], "{} PTX", p.arch);
        }
        // Cut alone, the same module.
        for (name, one) in modules.iter().step_by(29) {
            assert_eq!(ptx::entry_module(p.text(), name).as_ref(), Some(one), "{} PTX", p.arch);
        }
    }
    let p = ARCHS.iter().find(|p| p.arch == "sm_90a").unwrap();
    for name in ["tc_wgmma_bf16", "sgemm_wide"] {
        let one = assemble(&ptx::entry_module(p.text(), name).unwrap(), "sm_90a");
        assert_eq!(one.len(), 1, "{name}: {one:?}");
        let (_, u) = &one[0];
        assert_eq!((u.stack_bytes, u.spill_stores, u.spill_loads), (0, 0, 0), "{name} alone: {u:?}");
    }
}

/// The body of `.entry name` in `text`.
fn entry_body<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("no entry {name}"));
    let body = &text[start..];
    let end = body.find("\n}\n").map(|e| e + 3).unwrap_or(body.len());
    &body[..end]
}

#[test]
fn transpose_kernels_call_nothing_and_use_shared_memory_as_shared() {
    for p in ARCHS {
        for kernel in family("transpose") {
            let body = entry_body(p.text(), kernel.name);
            // A call would be a bounds-check panic path (or a missed inline).
            assert!(!body.contains("call"), "{} ({}) calls a function:\n{body}", kernel.name, p.arch);
            if kernel.launch.shared_bytes > 0 {
                assert!(
                    body.contains("st.shared") && body.contains("ld.shared"),
                    "{}: no ld/st.shared",
                    kernel.name
                );
                assert!(body.contains("bar.sync"), "{}: no barrier", kernel.name);
            } else {
                assert!(!body.contains(".shared"), "{}: unexpected shared memory", kernel.name);
            }
        }
    }
}

#[test]
fn ptxas_log_parser_reads_usage() {
    let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
               ptxas info    : Function properties for k\n    \
               8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
               ptxas info    : Used 40 registers, used 1 barriers\n";
    let usage = parse_ptxas_log(log);
    assert_eq!(usage.len(), 1);
    let u = &usage[0].1;
    assert_eq!((u.registers, u.stack_bytes, u.spill_stores, u.spill_loads), (40, 8, 4, 4));
}

#[test]
fn ptx_choice_follows_compute_capability() {
    assert_eq!(lab_runtime::ptx::for_device(ptx::ARCHS, 7, 5).map(|p| p.arch), None);
    assert_eq!(lab_runtime::ptx::for_device(ptx::ARCHS, 8, 0).unwrap().arch, "sm_80");
    assert_eq!(lab_runtime::ptx::for_device(ptx::ARCHS, 8, 9).unwrap().arch, "sm_80");
    assert_eq!(lab_runtime::ptx::for_device(ptx::ARCHS, 9, 0).unwrap().arch, "sm_90a");
    assert_eq!(lab_runtime::ptx::for_device(ptx::ARCHS, 10, 0).unwrap().arch, "sm_90");
}

#[test]
fn reduction_kernels_call_nothing_and_fast_uses_16_byte_loads() {
    for p in ARCHS {
        for kernel in family("reduce") {
            {
                let body = entry_body(p.text(), kernel.name);
                assert!(!body.contains("call"), "{} ({}) calls a function", kernel.name, p.arch);
                if kernel.function == "reduce_fast" {
                    assert!(
                        body.contains("ld.global.v4.b32") || body.contains("ld.global.v2.b64"),
                        "{}: no 16-byte loads",
                        kernel.name
                    );
                    assert!(body.contains("atom.global.add.u32"), "{}: no ticket atomic", kernel.name);
                    assert!(body.contains("shfl.sync.down"), "{}: no warp shuffles", kernel.name);
                }
                if kernel.function == "reduce_shuffle" {
                    assert!(body.contains("shfl.sync.down"), "{}: no warp shuffles", kernel.name);
                    assert_eq!(body.matches("bar.sync").count(), 1, "{}: one barrier expected", kernel.name);
                }
            }
        }
    }
}

#[test]
fn sgemm_block_tiles_use_16_byte_shared_loads_and_never_generic_ones() {
    for p in ARCHS {
        for kernel in family("sgemm") {
            let body = entry_body(p.text(), kernel.name);
            assert!(!body.contains("call"), "{} ({}) calls a function", kernel.name, p.arch);
            // A generic ld/st (no state space) means a pointer lost its
            // address space: shared data through the slow generic path.
            for line in body.lines().map(str::trim) {
                let op = line.split_whitespace().next().unwrap_or("");
                if op.starts_with("ld.") || op.starts_with("st.") {
                    assert!(
                        [".global", ".shared", ".param", ".local"].iter().any(|s| op.contains(s)),
                        "{} ({}): generic access `{line}`",
                        kernel.name,
                        p.arch
                    );
                }
            }
            // Kernels 4 to 7c: 16-byte loads everywhere they were meant.
            let Some(wide) = (match kernel.name {
                "sgemm_vec4" | "sgemm_double_buffer" | "sgemm_warp_tiled" | "sgemm_tuned" => Some(false),
                "sgemm_wide" | "sgemm_wide_async" => Some(true),
                _ => None,
            }) else {
                continue;
            };
            // Thread tile 8 x 8 or 8 x 16: 2 A and 2 or 4 B fragment loads
            // per k-step, 8 k-steps unrolled, in each of the two copies of
            // the main loop (interior and edge tiles).
            let (fragments, tile) = if wide { (6, 128) } else { (4, 64) };
            assert_eq!(
                body.matches("ld.shared.v4").count(),
                2 * 8 * fragments,
                "{}: fragment loads",
                kernel.name
            );
            // 8 k-steps x the thread tile in each main loop, plus beta C +
            // alpha acc per element in each of the vector and element-wise
            // store paths: everything unrolled.
            assert_eq!(body.matches("fma.rn.f32").count(), 2 * 8 * tile + 2 * tile, "{}: FMAs", kernel.name);
            // 16-byte global loads: the old C values (one per 4 elements of
            // the tile, for beta != 0), and the tiles' A and B loads (1 + 1
            // or 1 + 2 per k-step) at 4 sites: before and in each of the two
            // main loops. (When LLVM merged the interior loop's 16-byte
            // loads into 4-byte ones, kernels 4 to 7 had 20, and kernel 6
            // ran at 74% of cuBLAS on an H200; with them, 92% on an H100.)
            let tile_loads = if kernel.name == "sgemm_wide_async" {
                assert!(body.contains("cp.async.cg.shared.global"), "{}: no 16-byte cp.async", kernel.name);
                assert!(body.contains("cp.async.wait_group"), "{}: no wait", kernel.name);
                0
            } else if wide {
                4 * 3
            } else {
                4 * 2
            };
            assert_eq!(
                body.matches("ld.global.v4").count(),
                tile / 4 + tile_loads,
                "{}: 16-byte global loads",
                kernel.name
            );
        }
    }
}

/// Kernels with checked parameters (`Slice`, `DisjointSlice`) read and
/// write through `ld.global`/`st.global` like the unchecked ones: the
/// address and length arrive as two parameters, so LLVM knows the pointer
/// is global. Their bounds checks return `None`, never a panic: no calls.
#[test]
fn checked_kernels_use_global_accesses_and_call_nothing() {
    let checked: Vec<&Kernel> =
        declared().into_iter().filter(|k| k.params.iter().any(|p| p.ty.contains("Slice"))).collect();
    assert!(checked.len() >= 6, "{checked:?}");
    for p in ARCHS {
        for kernel in &checked {
            let body = entry_body(p.text(), kernel.name);
            assert!(!body.contains("call"), "{} ({}) calls a function", kernel.name, p.arch);
            assert!(
                body.contains("ld.global") && body.contains("st.global"),
                "{}: no global accesses",
                kernel.name
            );
            for line in body.lines().map(str::trim) {
                let op = line.split_whitespace().next().unwrap_or("");
                if op.starts_with("ld.") || op.starts_with("st.") {
                    assert!(
                        [".global", ".shared", ".param"].iter().any(|s| op.contains(s)),
                        "{} ({}): generic access `{line}`",
                        kernel.name,
                        p.arch
                    );
                }
            }
        }
        // `Slice::get4` is one 16-byte load.
        assert!(entry_body(p.text(), "lab_len2_aos16").contains("ld.global.v4"), "{}", p.arch);
    }
}

/// The `cuda_std` conformance kernels, built by the same builder a user's
/// `build.rs` runs: every architecture it emits (`sm_90a` included)
/// assembles, no kernel spills, and shared memory is addressed as shared.
#[test]
fn cuda_std_kernels_assemble_for_every_arch_without_spills() {
    let archs: &[lab_runtime::Ptx] = lab_runtime::include_ptx!("cuda_std_conformance");
    assert_eq!(archs.iter().map(|p| p.arch).collect::<Vec<_>>(), ["sm_80", "sm_90", "sm_90a"]);
    let record = Record::open("cuda_std", ptxas_version());
    for p in archs {
        assert!(p.text().contains(&format!(".target {}", p.arch)), "{} PTX has the wrong .target", p.arch);
        let usage = assemble_each(p.text(), p.arch, &record);
        let names: Vec<&str> = usage.iter().map(|(n, _)| n.as_str()).collect();
        for kernel in registry::module("cuda_std_conformance") {
            assert!(names.contains(&kernel.name), "ptxas did not compile {} for {}", kernel.name, p.arch);
        }
        for (name, u) in &usage {
            assert_eq!(
                (u.stack_bytes, u.spill_stores, u.spill_loads),
                (0, 0, 0),
                "{name} on {}: {u:?}",
                p.arch
            );
        }
        // A released read-modify-write: the fence before its relaxed
        // `atom` (rustc's NVPTX backend drops the ordering itself).
        let lines: Vec<&str> = entry_body(p.text(), "shared_histogram").lines().map(str::trim).collect();
        let add = lines.iter().position(|l| l.starts_with("atom.global.add")).expect("the global add");
        let before: Vec<&&str> =
            lines[..add].iter().rev().filter(|l| !l.is_empty() && !l.starts_with("//")).take(3).collect();
        assert!(
            before.iter().any(|l| l.starts_with("fence.acq_rel") || l.starts_with("fence.sc")),
            "{}: {before:?}",
            p.arch
        );
        let body = entry_body(p.text(), "shared_styles");
        assert!(
            body.contains("st.shared") && body.contains("ld.shared") && body.contains("%dynamic_smem_size")
        );
        assert!(entry_body(p.text(), "shuffles").contains("shfl.sync.idx.b32"));
        assert!(entry_body(p.text(), "votes").contains("vote.sync.ballot.b32"));
        assert!(entry_body(p.text(), "warp_scan").contains("bar.warp.sync"));
    }
    record.save();
}

/// Each GEMM library kernel multiplies in its precision on its tile's
/// instruction shape and nothing else: `m64nNk*` with N 256 (128 x 256
/// tiles), 192 (`_n192`, 128 x 192), 128 (`_n128`, 128 x 128) or 64 (`_m64`, 64 x 128: each
/// warpgroup half the columns), four `wgmma`s a stage (one 128-byte k
/// span), bf16 and f16 k16, tf32 k8, FP8 k32; and it calls nothing.
#[test]
fn library_kernels_multiply_on_their_tiles_shape() {
    let kernels = registry::tree("gpu::gemm::wgmma");
    // Five precisions, four tiles, split or not, three outputs.
    assert_eq!(kernels.len(), 120, "{}", kernels.len());
    let text = ARCHS.iter().find(|p| p.arch == "sm_90a").expect("an sm_90a PTX").text();
    for kernel in kernels {
        let name = kernel.name;
        let body = entry_body(text, name);
        let precision = name.trim_start_matches("gemm_wgmma_").split('_').next().unwrap();
        let n = if name.contains("_m64") {
            64
        } else if name.contains("_n128") {
            128
        } else if name.contains("_n192") {
            192
        } else {
            256
        };
        let k = match precision {
            "bf16" | "f16" => 16,
            "tf32" => 8,
            _ => 32,
        };
        let form = format!("wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{precision}.{precision}");
        let wgmmas = body.matches("wgmma.mma_async.sync.aligned.").count();
        assert!(wgmmas >= 4 && wgmmas.is_multiple_of(4), "{name}: {wgmmas} wgmma");
        assert_eq!(body.matches(&form).count(), wgmmas, "{name}: not all {form}");
        assert!(!body.contains("call"), "{name} calls a function");
    }
}

/// The decode kernels multiply with the `mma.sync` of their element (two
/// per 16 bytes of a weight row in every precision), call nothing, and
/// read the weight 16 bytes at a time in the copy of their loop that
/// can.
#[test]
fn decode_kernels_use_their_mma_and_16_byte_loads() {
    let kernels = registry::tree("gpu::gemm::decode");
    assert_eq!(kernels.len(), 21, "seven kernels, three output types");
    let p = ARCHS.iter().find(|p| p.arch == "sm_90a").unwrap();
    for kernel in kernels {
        let body = entry_body(p.text(), kernel.name);
        let element = kernel.name.split('_').nth(3).unwrap();
        let form = match element {
            "bf16" | "f16" => format!("mma.sync.aligned.m16n8k16.row.col.f32.{element}.{element}.f32"),
            "tf32" => "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32".to_string(),
            fp8 => format!("mma.sync.aligned.m16n8k32.row.col.f32.{fp8}.{fp8}.f32"),
        };
        let mmas = body.matches("mma.sync.aligned.").count();
        assert!(mmas > 0 && body.matches(&form).count() == mmas, "{}: not all {form}", kernel.name);
        assert!(
            body.contains("ld.global.v4.b32") || body.contains("ld.global.nc.v4.b32"),
            "{}: no 16-byte load",
            kernel.name
        );
        assert!(!body.contains("call"), "{} calls a function", kernel.name);
        assert!(!body.contains(".local"), "{} uses local memory", kernel.name);
    }
}

/// A kernel launched to overlap the one ahead of it (`dependent = true`:
/// the library's product kernels, its packs, its decode, grouped and
/// block-scaled kernels) runs
/// `griddepcontrol.wait`
/// before its first global access or tensor copy; the packs, which run
/// ahead of the products, also let them start
/// (`griddepcontrol.launch_dependents`), in the PTX of sm_90 and later,
/// and in sm_80's have neither instruction (ptxas would refuse it there).
#[test]
fn dependent_launches_wait_before_global_memory() {
    let dependent: Vec<&Kernel> = declared().into_iter().filter(|k| k.launch.dependent).collect();
    let library: Vec<&Kernel> = [
        "gpu::gemm::wgmma",
        "gpu::gemm::pack",
        "gpu::gemm::decode",
        "gpu::gemm::grouped",
        "gpu::gemm::blockscaled",
    ]
    .iter()
    .flat_map(|m| registry::tree(m))
    .collect();
    assert!(library.len() > 100, "{} library kernels", library.len());
    let names = |ks: &[&Kernel]| ks.iter().map(|k| k.name).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(names(&dependent), names(&library), "the dependent launches are the library's kernels");
    let p = ARCHS.iter().find(|p| p.arch == "sm_90a").unwrap();
    for kernel in dependent {
        let body = entry_body(p.text(), kernel.name);
        let wait = body.find("griddepcontrol.wait;").unwrap_or_else(|| panic!("{}: no wait", kernel.name));
        for access in ["ld.global", "st.global", "atom.global", "red.global", "cp.async.bulk"] {
            if let Some(at) = body.find(access) {
                assert!(wait < at, "{}: {access} before griddepcontrol.wait", kernel.name);
            }
        }
    }
    for p in ARCHS {
        let packs = registry::module("gpu::gemm::pack");
        assert_eq!(packs.len(), 10, "two packs, five element types");
        for kernel in packs {
            let body = entry_body(p.text(), kernel.name);
            for instruction in ["griddepcontrol.launch_dependents;", "griddepcontrol.wait;"] {
                assert_eq!(
                    body.contains(instruction),
                    p.arch != "sm_80",
                    "{} in the {} PTX: {instruction}",
                    kernel.name,
                    p.arch
                );
            }
        }
        assert_eq!(p.arch == "sm_80", !p.text().contains("griddepcontrol"), "{}", p.arch);
    }
}

/// rustc's NVPTX backend lowers a read-modify-write to `atom` without
/// memory-order semantics (relaxed), whatever its ordering; the device
/// layer puts PTX's release and acquire fences around the ordered ones.
/// Each GEMM split kernel's ticket (`Release`: its partial sums
/// published) has a `fence.acq_rel.gpu` right before its `atom`, and the
/// last split's `fence.sc.gpu` (`atomic::fence`, the others' acquired)
/// follows within a few lines; the one-pass reduction's (`AcqRel`) has
/// `fence.acq_rel.gpu` on both sides.
#[test]
fn ordered_atomics_have_their_fences() {
    let text = ARCHS.iter().find(|p| p.arch == "sm_90a").expect("an sm_90a PTX").text();
    let split = registry::tree("gpu::gemm::wgmma").into_iter().filter(|k| k.name.contains("_split"));
    let names: Vec<&str> = split.map(|k| k.name).chain(["reduce_fast_f32"]).collect();
    assert!(names.len() > 30, "{names:?}");
    for name in names {
        let lines: Vec<&str> = entry_body(text, name)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .collect();
        let atoms: Vec<usize> =
            (0..lines.len()).filter(|&i| lines[i].starts_with("atom.global.add")).collect();
        assert_eq!(atoms.len(), 1, "{name}: one ticket");
        let at = atoms[0];
        assert_eq!(lines[at - 1], "fence.acq_rel.gpu;", "{name}: no release before the ticket");
        let acquire = |l: &&str| ["fence.acq_rel.gpu;", "fence.sc.gpu;"].contains(l);
        assert!(lines[at + 1..].iter().take(12).any(acquire), "{name}: no acquire after the ticket");
    }
}

/// Each tensor-core kernel emits the instructions its step teaches, and
/// calls nothing: `mma.sync` m16n8k16 (32 per k32 of a warp's 64 x 32
/// tile; m16n8k8 for tf32, 64) in steps 1-3 in their type, `ldmatrix` in
/// 2-3, `cp.async` in 3; in the sm_90a
/// PTX, steps 4-7 issue four `wgmma`s per stage in their own type (bf16
/// or f16 k16, or tf32 k8), wait on mbarriers, and copy with TMA; 5-7 move
/// registers with `setmaxnreg`; 7, in clusters, multicasts B, releases
/// stages in both blocks and meets at cluster barriers, and no other
/// kernel does.
#[test]
fn tensor_kernels_use_the_instructions_they_teach() {
    let kernels = registry::tree("gpu::tensor");
    // Steps 1-7 in bf16, 3 and 6 in f16, 1 and 6 in tf32.
    assert_eq!(kernels.len(), 11, "{kernels:?}");
    for p in ARCHS {
        for kernel in kernels.iter().filter(|k| k.built_for(p.arch)) {
            let (name, body) = (kernel.name, entry_body(p.text(), kernel.name));
            let has = |what: &str| body.contains(what);
            assert!(!has("call"), "{name} ({}) calls a function", p.arch);
            if name.starts_with("tc_wgmma") {
                let form = match name.rsplit('_').next() {
                    Some("tf32") => "m64n256k8.f32.tf32.tf32",
                    Some("f16") => "m64n256k16.f32.f16.f16",
                    _ => "m64n256k16.f32.bf16.bf16",
                };
                let wgmmas = body.matches("wgmma.mma_async.sync.aligned.").count();
                assert!(wgmmas >= 4 && wgmmas % 4 == 0, "{name}: {wgmmas} wgmma");
                assert_eq!(
                    body.matches(&format!("wgmma.mma_async.sync.aligned.{form}")).count(),
                    wgmmas,
                    "{name}"
                );
                for what in [
                    "cp.async.bulk.tensor.2d",
                    "mbarrier.try_wait.parity",
                    "wgmma.wait_group",
                    "fence.proxy.tensormap",
                ] {
                    assert!(has(what), "{name}: no {what}");
                }
                assert_eq!(has("setmaxnreg"), kernel.launch.block.x == 384, "{name}: setmaxnreg");
                let clustered = kernel.launch.cluster.count() > 1;
                for what in [
                    ".multicast::cluster",
                    "mapa.shared::cluster",
                    "mbarrier.arrive.shared::cluster",
                    "barrier.cluster.arrive",
                    "%cluster_ctarank",
                ] {
                    assert_eq!(has(what), clustered, "{name}: {what}");
                }
            } else {
                // tf32: 4 k8 per k-step of 32, 64 per warp; 16-bit: 2 k16, 32.
                let (shape, ty, per_step) = match name {
                    "tc_mma_tf32" => ("m16n8k8", "tf32", 64),
                    _ if name.ends_with("_f16_async") => ("m16n8k16", "f16", 32),
                    _ => ("m16n8k16", "bf16", 32),
                };
                let mmas = body.matches("mma.sync.aligned.").count();
                let typed =
                    body.matches(&format!("mma.sync.aligned.{shape}.row.col.f32.{ty}.{ty}.f32")).count();
                assert!(
                    mmas > 0 && mmas % per_step == 0 && typed == mmas,
                    "{name}: {mmas} mma.sync, {typed} {ty}"
                );
                let by_registers = name == "tc_mma_bf16" || name == "tc_mma_tf32";
                assert_eq!(has("ldmatrix.sync.aligned"), !by_registers, "{name}: ldmatrix");
                assert_eq!(has("cp.async.cg.shared.global"), name.ends_with("_async"), "{name}: cp.async");
            }
        }
    }
}

/// Attention's softmax overlaps what it was written to overlap, in the
/// SASS (ptxas places `wgmma.wait_group` where it likes; see
/// `gpu::dev::wgmma::wait_for_after`): in the Hopper step at d = 64 and
/// 128, between a key tile's wait for `Q Kᵀ` (`WARPGROUP.DEPBAR.LE gsb0,
/// 0x1`) and its wait for `P V` (`0x0`) lie the tile's exponentials, at
/// least `bc / 2 = 64` `MUFU.EX2` a thread; and no attention kernel rounds
/// P, O or a gradient one element at a time (`F2F`, at the exponentials'
/// rate), only in pairs (`F2FP`).
#[test]
fn attention_softmax_runs_beside_the_products_in_the_sass() {
    let kernels: Vec<&Kernel> = registry::tree("gpu::attention")
        .into_iter()
        .filter(|k| k.built_for("sm_90a") && !k.name.starts_with("attention_softmax"))
        .collect();
    // Assembled and listed on every core first (each kept on disk).
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for chunk in kernels.chunks(kernels.len().div_ceil(workers).max(1)) {
            s.spawn(move || chunk.iter().for_each(|k| drop(sass_90a(k.name))));
        }
    });
    for kernel in kernels {
        let sass = sass_90a(kernel.name);
        let single = sass.iter().filter(|i| i.starts_with("F2F.BF16") || i.starts_with("F2F.F16")).count();
        assert_eq!(single, 0, "{}: one-element conversions", kernel.name);
        // (The backward's D kernel rounds nothing: D is `f32`; nor does the
        // FP8 step's Vᵀ pass, which moves bytes.)
        let rounds = !kernel.name.starts_with("attention_backward_dot") && kernel.name != "fp8_v_transpose";
        assert!(
            !rounds || sass.iter().any(|i| i.starts_with("F2FP.")),
            "{}: no paired conversion",
            kernel.name
        );
        if !(kernel.name.starts_with("attention_hopper_d64")
            || kernel.name.starts_with("attention_hopper_d128"))
        {
            continue;
        }
        let mut overlapped = 0;
        for (at, _) in sass.iter().enumerate().filter(|(_, i)| i.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1")) {
            let next = at + 1 + sass[at + 1..].iter().position(|i| i.contains("WARPGROUP.DEPBAR")).unwrap();
            assert!(
                sass[next].contains("gsb0, 0x0"),
                "{}: {} after a wait for Q Kᵀ",
                kernel.name,
                sass[next]
            );
            let exps = sass[at..next].iter().filter(|i| i.starts_with("MUFU.EX2")).count();
            assert!(exps >= 64, "{}: {exps} exponentials between the waits for Q Kᵀ and P V", kernel.name);
            overlapped += 1;
        }
        assert_eq!(overlapped, 1, "{}: one key step with both products", kernel.name);
    }
}
