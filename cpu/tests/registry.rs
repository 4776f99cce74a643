//! The registry against the PTX and the families: every kernel the `gpu`
//! crate declares is in every PTX and every PTX entry is a declared kernel;
//! every kernel belongs to a family (which gives it a host reference) or to
//! a submodule of one (test-only kernels such as the reduction's seed bugs)
//! or to the labelled hazard suite (`gpu::hazards`, whose label is its
//! module);
//! the launch bounds a declaration states are in the PTX, and no others.

use std::collections::BTreeSet;

use gpu::launch::{Kernel, registry};
use kernel_lab::families::FAMILIES;
use kernel_lab::runtime::ptx::{ARCHS, entries};

/// The kernels of the `gpu` crate (this test binary declares none).
fn declared() -> Vec<&'static Kernel> {
    registry::all().into_iter().filter(|k| k.path.starts_with("gpu::")).collect()
}

#[test]
fn every_declared_kernel_is_in_every_ptx_and_nothing_else_is() {
    let names: BTreeSet<&str> = declared().iter().map(|k| k.name).collect();
    assert_eq!(names.len(), declared().len(), "two declarations export one name");
    assert!(names.len() >= 40, "{names:?}");
    for p in ARCHS {
        let in_ptx: BTreeSet<&str> = entries(p.text()).into_iter().collect();
        let built: BTreeSet<&str> =
            declared().iter().filter(|k| k.built_for(p.arch)).map(|k| k.name).collect();
        assert_eq!(in_ptx, built, "{} PTX entries against the declarations built for it", p.arch);
        // The launch-bounds data was turned into directives and removed.
        assert!(!p.text().contains("__launch_bounds__"), "{}", p.arch);
    }
}

#[test]
fn every_kernel_belongs_to_a_family() {
    let modules: Vec<String> = FAMILIES.iter().map(|f| format!("gpu::{}", f.name())).collect();
    for k in declared() {
        let module = k.module();
        // The hazard suite's kernels, and the GEMM library's (run by
        // `kernel_lab::gemm`, not by a family).
        if kernel_lab::sanitize::Verdict::of_module(module).is_some()
            || module.starts_with(kernel_lab::gemm::KERNELS)
        {
            continue;
        }
        assert!(
            modules.iter().any(|m| module == m || module.starts_with(&format!("{m}::"))),
            "{} is declared in {module}, which is no family's module",
            k.name
        );
    }
    for f in FAMILIES {
        assert!(!f.kernels().is_empty(), "family {} has no kernels", f.name());
    }
}

#[test]
fn launch_bounds_in_the_ptx_are_the_declared_ones() {
    for p in ARCHS {
        let mut with_bounds = BTreeSet::new();
        for k in declared().into_iter().filter(|k| k.built_for(p.arch)) {
            let start = p.text().find(&format!(".entry {}(", k.name)).unwrap();
            let header = &p.text()[start..start + p.text()[start..].find("\n{\n").unwrap()];
            let l = k.launch;
            let cluster = if l.cluster.count() > 1 {
                format!("\n.reqnctapercluster {}, {}, {}", l.cluster.x, l.cluster.y, l.cluster.z)
            } else {
                assert!(
                    !header.contains(".reqnctapercluster"),
                    "{} has a cluster it did not declare",
                    k.name
                );
                String::new()
            };
            if l.min_blocks_per_sm > 0 {
                let want = format!(
                    ".maxntid {}, {}, {}\n.minnctapersm {}{cluster}",
                    l.block.x, l.block.y, l.block.z, l.min_blocks_per_sm
                );
                assert!(header.ends_with(&want), "{} ({}): {header}", k.name, p.arch);
                with_bounds.insert(k.name);
            } else {
                assert!(!header.contains(".maxntid"), "{} has bounds it did not declare", k.name);
                assert!(header.ends_with(&cluster), "{} ({}): {header}", k.name, p.arch);
            }
        }
        // The SGEMM ladder's 7 block tile kernels, the BLAS sgemm's block
        // tile kernels, the first tensor step and attention's decode kernels
        // (three head dimensions, two precisions, and in the sm_90a PTX as
        // many for an FP8 cache; two blocks per SM) are the ones that declare
        // them, and in the sm_90a PTX the five
        // warp-specialized tensor kernels (whose `setmaxnreg` counts rest on
        // them), with the GEMM library's 120 (five precisions, three
        // outputs, one split or several, four tiles), its 21 decode
        // kernels (two blocks an SM: seven forms, three outputs), its 9
        // grouped kernels (three precisions, three outputs), its 6
        // block-scaled FP8 kernels (dense and grouped, three outputs), the
        // Hopper attention kernels (three head dimensions, two output
        // precisions, 16-bit and FP8 inputs) and the Hopper attention
        // backward's (two head dimensions, two precisions).
        let blas = kernel_lab::blas::plan::block_tile_kernels();
        assert_eq!(blas.len(), 16);
        assert!(blas.iter().all(|k| with_bounds.contains(k.kernel.name)));
        assert!(with_bounds.contains("tc_mma_bf16"));
        let hopper = (5 + 120 + 21 + 9 + 6 + 12 + 4) * usize::from(p.arch == "sm_90a");
        let decode = 6 + 6 * usize::from(p.arch == "sm_90a");
        assert_eq!(with_bounds.len(), 7 + blas.len() + 1 + decode + hopper, "{with_bounds:?}");
    }
}

#[test]
fn registry_order_is_declaration_order() {
    let transpose: Vec<&str> = registry::module("gpu::transpose").iter().map(|k| k.name).collect();
    assert_eq!(
        transpose,
        [
            "transpose_naive_row",
            "transpose_naive_col",
            "transpose_shared",
            "transpose_padded",
            "transpose_fast"
        ]
    );
    let fast: Vec<&str> = registry::module("gpu::reduce")
        .iter()
        .filter(|k| k.function == "reduce_fast")
        .map(|k| k.name)
        .collect();
    assert_eq!(fast, ["reduce_fast_i32", "reduce_fast_f32", "reduce_fast_f64"]);
}

#[test]
fn declarations_describe_their_launch() {
    let k = registry::find("transpose_fast").unwrap();
    assert_eq!((k.launch.block.x, k.launch.block.y, k.launch.block.z), (32, 8, 1));
    assert_eq!(k.launch.shared_bytes, (64 + 7) * 65 * 4);
    assert_eq!(k.launch.tile, [64, 64]);
    assert_eq!(k.signature_name, "(In<f32>, Out<f32>, u32, u32)");
    assert!(k.unchecked);
    let k = registry::find("reduce_smem_f32").unwrap();
    assert_eq!((k.function, k.instance, k.launch.shared_bytes), ("reduce_smem", Some("f32"), 256 * 4));
    let k = registry::find("reduce_fast_f64").unwrap();
    assert_eq!(k.launch.shared_bytes, 8 * 8 + 16, "8 warps' partials of 8 bytes, then the flag");
    assert_eq!(k.launch.tile[0], 256 * 4 * 8 * 2);
    let k = registry::find("scale").unwrap();
    assert!(!k.unchecked, "scale needs no unsafe");
    assert_eq!(k.params.iter().map(|p| p.name).collect::<Vec<_>>(), ["x", "y", "a"]);
    assert!(k.doc.starts_with("`y[i] = a x[i]`"), "{}", k.doc);
}

#[test]
fn families_have_distinct_names_and_valid_default_sizes() {
    let names: BTreeSet<&str> = FAMILIES.iter().map(|f| f.name()).collect();
    assert_eq!(names.len(), FAMILIES.len());
    for f in FAMILIES {
        let sizes = f.default_sizes();
        assert!(!sizes.is_empty(), "{}", f.name());
        for s in sizes.iter().chain([&f.emulator_size()]) {
            f.device_bytes(s).unwrap_or_else(|e| panic!("{} {s}: {e}", f.name()));
        }
    }
}
