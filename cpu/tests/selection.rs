//! What runs is what was asked: a kernel added to a family runs under its
//! own name and is verified or failed on its own result, and a kernel the
//! family cannot run is refused, never replaced by another.
//!
//! The kernels added here are declared as README.md's "Adding a kernel"
//! declares one, in this test crate; the emulator runs them through the
//! family's own run, as it would run a kernel of `gpu/src/scale.rs`.

use gpu::dev::{DisjointSlice, Slice, thread};
use gpu::kernel;
use gpu::launch::{Kernel, registry};
use kernel_lab::families::{Family, Run, scale::Scale};
use kernel_lab::measure::Shape;
use kernel_lab::runtime::Gpu;

/// A deliberately wrong scale: `a + x` where the family wants `a x`.
#[kernel(block = 256)]
pub fn scale_wrong(x: Slice<f32>, mut y: DisjointSlice<f32>, a: f32) {
    let i = thread::index();
    if let (Some(y), Some(x)) = (y.get_mut(i), x.get(i.get())) {
        *y = a + x;
    }
}

/// A second correct scale, written differently (`x a`).
#[kernel(block = 128)]
pub fn scale_again(x: Slice<f32>, mut y: DisjointSlice<f32>, a: f32) {
    let i = thread::index();
    if let (Some(y), Some(x)) = (y.get_mut(i), x.get(i.get())) {
        *y = x * a;
    }
}

/// Takes other parameters than a scale kernel.
#[kernel(block = 32)]
pub fn scale_other(x: Slice<f32>, mut y: DisjointSlice<f32>) {
    let i = thread::index();
    if let (Some(y), Some(x)) = (y.get_mut(i), x.get(i.get())) {
        *y = x;
    }
}

fn kernel(name: &str) -> &'static Kernel {
    registry::all().into_iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} is registered"))
}

#[test]
fn each_chosen_kernel_runs_under_its_name_and_on_its_own_result() {
    let emulator = Gpu::emulator();
    let size = Shape::n(1001);
    let chosen = [kernel("scale_wrong"), kernel("scale"), kernel("scale_again")];
    let records = Scale.run(&Run::verify(&emulator, &size, &chosen)).unwrap();
    let verdicts: Vec<(&str, bool)> =
        records.iter().filter(|r| r.kernel != r.ceiling).map(|r| (r.kernel.as_str(), r.verified)).collect();
    assert_eq!(verdicts, [("scale_wrong", false), ("scale", true), ("scale_again", true)], "{records:?}");
    assert!(records.iter().all(|r| r.size == 1001), "{records:?}");
    // Only the wrong one.
    let records = Scale.run(&Run::verify(&emulator, &size, &chosen[..1])).unwrap();
    assert!(
        records.iter().filter(|r| r.kernel != r.ceiling).all(|r| r.kernel == "scale_wrong" && !r.verified)
    );
}

#[test]
fn a_kernel_the_family_cannot_run_is_refused() {
    let other = kernel("scale_other");
    let error = Scale.runs(other).expect_err("scale_other takes other parameters").to_string();
    assert!(error.contains("scale_other"), "{error}");
    let emulator = Gpu::emulator();
    let size = Shape::n(64);
    assert!(Scale.run(&Run::verify(&emulator, &size, &[other])).is_err());
    assert!(Scale.runs(kernel("scale_wrong")).is_ok());
}
