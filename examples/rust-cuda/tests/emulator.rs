//! The example's kernels on the emulator (what CI runs without a GPU):
//! awkward sizes, every check of the emulator on, and the errors a user
//! sees for a launch that does not match its kernel.

use lab_runtime::{Error, Gpu, launch};
use rust_cuda_example::{Gemm, block_sum, gemm, vecadd};

#[test]
fn vecadd_is_exact_at_awkward_lengths() {
    let gpu = Gpu::emulator();
    for (i, n) in [1, 255, 257, 1000].into_iter().enumerate() {
        let c = vecadd(&gpu, n, i as u64).unwrap();
        assert!(c.passed, "{c:?}");
    }
}

#[test]
fn both_gemms_are_within_the_bound_at_awkward_shapes() {
    let gpu = Gpu::emulator();
    for which in [Gemm::Naive, Gemm::Tiled] {
        for (i, shape) in [(1, 1, 1), (17, 33, 5), (40, 31, 47), (16, 16, 16)].into_iter().enumerate() {
            for (alpha, beta) in [(1.0, 0.0), (0.75, -1.25)] {
                let c = gemm(&gpu, which, shape, alpha, beta, i as u64).unwrap();
                assert!(c.passed, "{which:?} {shape:?} alpha {alpha} beta {beta}: {c:?}");
            }
        }
    }
}

#[test]
fn block_sums_are_within_the_bound() {
    let gpu = Gpu::emulator();
    for (i, n) in [1, 256, 300, 5000].into_iter().enumerate() {
        let c = block_sum(&gpu, n, i as u64).unwrap();
        assert!(c.passed, "{c:?}");
    }
}

/// `launch!` checks the arguments against the kernel's declaration before
/// anything runs: one clear error each.
#[test]
fn mismatched_launches_are_clear_errors() {
    let gpu = Gpu::emulator();
    let a = gpu.upload(&[1.0f32; 8]).unwrap();
    let mut c = gpu.alloc::<f32>(8).unwrap();
    let mut ints = gpu.alloc::<i32>(8).unwrap();
    let message = |r: lab_runtime::Result<()>| match r {
        Err(Error::InvalidInput(m)) => m,
        other => panic!("expected an argument error, got {other:?}"),
    };
    // SAFETY (each): rejected before launching.
    let m = message(unsafe { launch!(kernels.vecadd<<<1u32, 8u32, 0, gpu>>>(&a, &mut c)) });
    assert!(m.contains("2 arguments for 3 parameters"), "{m}");
    let m = message(unsafe { launch!(kernels.vecadd<<<1u32, 8u32, 0, gpu>>>(&a, &a, &c)) });
    assert!(m.contains("parameter `c") && m.contains("`&mut buffer` (the kernel writes it)"), "{m}");
    let m = message(unsafe { launch!(kernels.vecadd<<<1u32, 8u32, 0, gpu>>>(&a, &a, &mut ints)) });
    assert!(m.contains("a buffer of `f32`") && m.contains("got `&mut` a buffer of `i32`"), "{m}");
    let m = message(unsafe { launch!(kernels.vecadd<<<1u32, 8u32, 0, gpu>>>(&a, 3.0f32, &mut c)) });
    assert!(m.contains("parameter `b") && m.contains("takes a buffer, got a `f32`"), "{m}");
    // A kernel named at run time (a misspelt `launch!` is a compile error).
    let args = [(&a).into(), (&a).into(), (&mut c).into()];
    let m = message(unsafe { lab_runtime::launch_by_name(&gpu, "kernels", "vecad", 1u32, 8u32, 0, &args) });
    assert!(m.contains("no kernel `vecad` in `kernels`") && m.contains("vecadd"), "{m}");
}
