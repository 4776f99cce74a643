//! `cuda_std`'s API on the emulator: the conformance kernels
//! (`cuda-std/conformance/`), every output against CUDA's semantics, and
//! the emulator's checks on rust-cuda style kernels.

use lab_runtime::Gpu;

#[test]
fn every_cuda_std_area_matches_cuda_semantics_on_the_emulator() {
    let gpu = Gpu::emulator();
    let outcomes = cuda_std_conformance::check::all(&gpu).unwrap();
    assert_eq!(outcomes.len(), 12);
    let failed: Vec<String> =
        outcomes.iter().filter_map(|(area, r)| r.as_ref().err().map(|e| format!("{area}: {e}"))).collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The kernels' launch descriptions: the block and dynamic shared memory
/// come from the launch; the shared statics' bytes from the kernel.
#[test]
fn rust_cuda_kernels_declare_their_shared_statics() {
    use cuda_std_conformance::*;
    assert_eq!(shared_styles::KERNEL.launch.shared_bytes as usize, 2 * STYLES_BLOCK * 4);
    assert_eq!(warp_scan::KERNEL.launch.shared_bytes, 64 * 4);
    assert_eq!(indices::KERNEL.launch.shared_bytes, 0);
    assert!(shuffles::KERNEL.unchecked);
    let p: Vec<(&str, &str)> = parameters::KERNEL.params.iter().map(|p| (p.name, p.ty)).collect();
    assert_eq!(p[0].0, "a");
    assert!(p[0].1.ends_with("DeviceConstPtr<f32>") && p[1].1.ends_with("GlobalSlice<f32>"), "{p:?}");
    assert_eq!(&p[3..], &[("n", "usize"), ("k", "i32"), ("s", "f64")]);
}

/// A flag handed between two warps of a block through a shared atomic
/// word: with a release store and an acquire load the emulator finds the
/// handoff clean (and the reader saw the data); with both relaxed it
/// reports the race on the data word.
#[test]
fn a_shared_atomic_flag_orders_the_block_only_with_release_and_acquire() {
    use cuda_std_conformance::atomics::shared_flag;
    use lab_runtime::Error;
    let gpu = Gpu::emulator();
    let mut out = gpu.upload(&[0u32; 2]).unwrap();
    // SAFETY: two outputs, written by thread 32 of the one block.
    unsafe { shared_flag::launch(&gpu, 1u32, 64u32, 0, &mut out, 1) }.unwrap();
    assert_eq!(
        gpu.download(&out).unwrap(),
        [7, 1],
        "the reader did not see the flag: the test shows nothing"
    );
    // SAFETY: as above.
    match unsafe { shared_flag::launch(&gpu, 1u32, 64u32, 0, &mut out, 0) } {
        Err(Error::Emulator(emu::EmuError::Race(r))) => assert_eq!(r.space, "shared", "{r:?}"),
        other => panic!("expected a shared race, got {other:?}"),
    }
}

/// `GpuFloat` and `FloatExt`: every function over its sweep (bit patterns,
/// specials, its ranges, the neighbourhoods of its zeros and poles), as
/// the emulator computes it (the kernels' bodies on the host), each
/// maximum error within the bound its documentation states. Prints the
/// table (`-- --nocapture`).
#[test]
fn float_functions_are_within_their_documented_ulp_bounds() {
    use cuda_std_conformance::math_check;
    let (r32, r64) = math_check::sweep_host(1 << 15);
    println!("{}", math_check::table(&r32, &r64));
    let bad = math_check::over_bounds(&r32, &r64);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The sweep's kernels themselves (`math_f32`, `math_f64`) on the
/// emulator, on a small sweep: each result the host evaluation's, within
/// the bound (the GPU test runs the same check on 2^18 inputs).
#[test]
fn float_function_kernels_agree_with_the_host_on_the_emulator() {
    let gpu = Gpu::emulator();
    let result = cuda_std_conformance::math_check::sweep_on(&gpu, 64).unwrap();
    assert!(result.is_ok(), "{}", result.unwrap_err());
}
