//! The path of a rust-cuda host that links no kernel crate: the PTX the
//! build script left names the kernels' host library, and without a GPU
//! `lab-cust` runs them there, with the emulator's checks; on a GPU the
//! same PTX and the same launches run there. (This test names no kernel
//! crate, so none is linked into it.)

use cust::prelude::*;

static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

#[test]
fn the_ptx_alone_runs_on_the_gpu_or_through_its_host_library_with_its_checks()
-> Result<(), Box<dyn std::error::Error>> {
    let _ctx = cust::quick_init()?;
    // The driver takes the PTX with the library's line first.
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

    // glam's Mat3 and Vec3 by value (36 and 12 bytes) through the library.
    let cols = [[0.5f32, -1.25, 2.0], [1.5, 0.75, -0.5], [-2.0, 0.25, 1.0]];
    let (m, shift) = (glam::Mat3::from_cols_array_2d(&cols), glam::Vec3::new(0.25, -1.5, 2.75));
    let points: Vec<f32> = (0..3 * 100).map(|i| ((i * 37) % 101) as f32 / 7.0 - 6.0).collect();
    let p_gpu = points.as_slice().as_dbuf()?;
    // SAFETY: as many outputs as points.
    let out_gpu = unsafe { DeviceBuffer::<f32>::uninitialized(points.len())? };
    unsafe {
        launch!(module.affine3<<<1u32, 128u32, 0, stream>>>(
            m, shift, p_gpu.as_device_ptr(), p_gpu.len(), out_gpu.as_device_ptr()
        ))?;
    }
    stream.synchronize()?;
    let mut out = vec![0.0f32; points.len()];
    out_gpu.copy_to(&mut out)?;
    // Three products and two adds per component: within 4 eps of the sum
    // of the terms' magnitudes.
    for (i, p) in points.chunks(3).enumerate() {
        for j in 0..3 {
            let terms = [
                cols[0][j] as f64 * p[0] as f64,
                cols[1][j] as f64 * p[1] as f64,
                cols[2][j] as f64 * p[2] as f64,
                shift[j] as f64,
            ];
            let want: f64 = terms.iter().sum();
            let bound = 4.0 * f32::EPSILON as f64 * terms.iter().map(|t| t.abs()).sum::<f64>();
            assert!(
                (out[3 * i + j] as f64 - want).abs() <= bound,
                "point {i} component {j}: {} against {want}",
                out[3 * i + j]
            );
        }
    }
    if !cust::is_emulator() {
        return Ok(()); // What follows are the emulator's checks.
    }

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
    assert!(error.contains("out of bounds at") && error.contains("elementwise.rs:21"), "{error}");

    // A value of the wrong type is refused before the launch, by name.
    let error = unsafe {
        launch!(module.affine3<<<1u32, 128u32, 0, stream>>>(
            shift, shift, p_gpu.as_device_ptr(), p_gpu.len(), out_gpu.as_device_ptr()
        ))
    }
    .unwrap_err()
    .to_string();
    assert!(error.contains("parameter `m: glam::Mat3` takes a `glam::Mat3` by value"), "{error}");
    Ok(())
}
