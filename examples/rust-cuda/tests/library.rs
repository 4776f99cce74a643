//! The path of a rust-cuda host that links no kernel crate: the PTX the
//! build script left names the kernels' host library, and without a GPU
//! `lab-cust` runs them there, with the emulator's checks. (This test
//! names no kernel crate, so none is linked into it.)

use cust::prelude::*;

static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

#[test]
fn without_a_gpu_the_ptx_leads_to_its_host_library_and_its_checks() -> Result<(), Box<dyn std::error::Error>>
{
    let _ctx = cust::quick_init()?;
    if !cust::is_emulator() {
        return Ok(()); // The GPU runs the PTX itself.
    }
    assert!(PTX.starts_with("// lab-emulator-library: "), "{}", &PTX[..80]);
    let module = Module::from_ptx(PTX, &[])?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None)?;

    // 1000 elements over four blocks of 256: the last block partly idle.
    let n = 1000;
    let a: Vec<f32> = (0..n).map(|i| (i as f32).sqrt() - 7.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 0.5)).collect();
    let (a_gpu, b_gpu) = (a.as_slice().as_dbuf()?, b.as_slice().as_dbuf()?);
    // SAFETY: the kernel writes every element before it is read.
    let c_gpu = unsafe { DeviceBuffer::<f32>::uninitialized(n)? };
    // SAFETY: `b` and `c` hold `a.len()` elements.
    unsafe {
        launch!(module.vecadd<<<4u32, 256u32, 0, stream>>>(
            a_gpu.as_device_ptr(), a_gpu.len(), b_gpu.as_device_ptr(), b_gpu.len(), c_gpu.as_device_ptr()
        ))?;
    }
    stream.synchronize()?;
    let mut c = vec![0.0f32; n];
    c_gpu.copy_to(&mut c)?;
    // One rounding, the same on both sides: exact.
    assert!(c.iter().zip(a.iter().zip(&b)).all(|(c, (a, b))| *c == a + b));

    // An output one element short: the library's emulator names the store
    // past its end, and the launch fails with that report.
    // SAFETY: as above, but for the one element the emulator refuses.
    let short = unsafe { DeviceBuffer::<f32>::uninitialized(n - 1)? };
    let error = unsafe {
        launch!(module.vecadd<<<4u32, 256u32, 0, stream>>>(
            a_gpu.as_device_ptr(), a_gpu.len(), b_gpu.as_device_ptr(), b_gpu.len(), short.as_device_ptr()
        ))
    }
    .unwrap_err()
    .to_string();
    assert!(error.contains("vecadd: block [3, 0, 0] thread [231, 0, 0]"), "{error}");
    assert!(error.contains("out of bounds at") && error.contains("elementwise.rs:20"), "{error}");
    Ok(())
}
