//! A program that links no kernel crate, on a machine without a GPU: the
//! first call is one clear error saying what to add, never a panic.

use cust::error::CudaError;

#[test]
fn without_a_gpu_or_a_kernel_crate_quick_init_says_what_to_add() {
    let gpu = cust::device::Device::num_devices().is_ok();
    assert!(!gpu, "nothing is initialized yet");
    match cust::quick_init() {
        // A machine with a GPU opens it: nothing to check here.
        Ok(_) if !cust::is_emulator() => {}
        Ok(_) => panic!("the emulator opened with no kernels to run"),
        Err(e) => {
            assert!(matches!(e, CudaError::NoGpu(_)), "{e:?}");
            let m = e.to_string();
            assert!(m.starts_with("no GPU found ("), "{m}");
            assert!(m.contains("no kernel crate is linked for the CPU emulator"), "{m}");
            assert!(m.contains("`use kernels as _;`") && !m.contains('\n'), "{m}");
            // Nothing else works either, with the same kind of answer.
            assert_eq!(
                cust::memory::DeviceBuffer::from_slice(&[1.0f32]).unwrap_err(),
                CudaError::NotInitialized
            );
        }
    }
}
