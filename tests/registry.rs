//! The suite's registry against the PTX and the gpu crate: every registered
//! kernel is in every PTX, and every kernel the gpu crate exports is
//! registered in a family (which is what gives it a host reference),
//! except the reduction's test-only seed bugs.

use std::collections::BTreeSet;

use kernel_lab::ptx::{ARCHS, entries};
use kernel_lab::suite::FAMILIES;

fn registered() -> BTreeSet<&'static str> {
    FAMILIES.iter().flat_map(|f| (f.kernels)()).map(|k| k.name).collect()
}

#[test]
fn every_registered_kernel_is_in_every_ptx() {
    for p in ARCHS {
        let in_ptx: BTreeSet<&str> = entries(p.text).into_iter().collect();
        for name in registered() {
            assert!(in_ptx.contains(name), "{name} is registered but missing from the {} PTX", p.arch);
        }
    }
}

#[test]
fn every_exported_kernel_is_registered_or_test_only() {
    let test_only: BTreeSet<&str> = gpu::reduce::seed_bugs::ALL
        .iter()
        .flat_map(|v| [v.i32, v.f32, v.f64])
        .flatten()
        .map(|k| k.name)
        .collect();
    let registered = registered();
    let mut exported = Vec::new();
    gpu::for_each_kernel(|k| exported.push(k.name));
    for name in &exported {
        assert!(
            registered.contains(name) || test_only.contains(name),
            "{name} is exported by gpu/ but no suite family runs it (no host reference)"
        );
    }
    // And the PTX has nothing beyond what gpu/ describes.
    for p in ARCHS {
        for entry in entries(p.text) {
            assert!(exported.contains(&entry), "{entry} is in the PTX but has no Kernel constant");
        }
    }
}

#[test]
fn families_have_distinct_names_and_sizes() {
    let names: BTreeSet<&str> = FAMILIES.iter().map(|f| f.name).collect();
    assert_eq!(names.len(), FAMILIES.len());
    for f in FAMILIES {
        assert!(!f.default_sizes.is_empty() && f.default_sizes.iter().all(|&s| s > 0), "{}", f.name);
        kernel_lab::suite::check_sizes(f, f.default_sizes).unwrap();
    }
}
