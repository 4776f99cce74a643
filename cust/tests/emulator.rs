//! cust's API on the emulator (this machine has no GPU), written as a
//! rust-cuda host program writes it, over the `cuda_std` conformance
//! kernels (linked here: their host builds are what the emulator runs).
//! Every result is checked against a host reference on random data of
//! awkward sizes; the errors a user sees are checked by their words.
//!
//! The emulator reads only a PTX's `.entry` names (the kernels are their
//! host builds), so these tests give `Module::from_ptx` those lines; the
//! example (`examples/rust-cuda`) loads the PTX its build script compiled.

use cust::error::CudaError;
use cust::function::BlockSize;
use cust::memory::{AsyncCopyDestination, DeviceBox, DeviceCopy, LockedBuffer};
use cust::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// The kernels' host builds: named once, so they are linked.
use cuda_std_conformance as _;

/// The entry lines of a PTX module with these kernels.
fn ptx(kernels: &[&str]) -> String {
    let mut text = String::from(".version 8.0\n.target sm_80\n.address_size 64\n");
    for k in kernels {
        text += &format!(".visible .entry {k}(\n)\n{{\n\tret;\n}}\n");
    }
    text
}

/// The emulator's context, or `None` on a machine with a GPU (these
/// tests' PTX is only entry names; the example's tests run real PTX there).
fn init() -> Option<Context> {
    let ctx = cust::quick_init().expect("the emulator opens where kernels are linked");
    cust::is_emulator().then_some(ctx)
}

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect()
}

/// `out[i] = a[i] * s + b[i] + k` for every kind of parameter: `*const
/// f32`, `&[f32]` (pointer and length), `*mut f64`, `usize`, `i32`, `f64`;
/// the block size from the occupancy call, as rust-cuda's vecadd does.
#[test]
fn every_parameter_kind_matches_the_host_at_awkward_sizes() {
    let Some(_ctx) = init() else { return };
    let module = Module::from_ptx(ptx(&["parameters"]), &[]).unwrap();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let function = module.get_function("parameters").unwrap();
    let (_, block) = function.suggested_launch_configuration(0, 0.into()).unwrap();
    for (seed, n) in [1usize, 31, 257, 1000].into_iter().enumerate() {
        let (a, b) = (random_f32(n, seed as u64), random_f32(n, 100 + seed as u64));
        let (k, s) = (-3i32, 0.625f64);
        let a_gpu = DeviceBuffer::from_slice(&a).unwrap();
        let b_gpu = b.as_slice().as_dbuf().unwrap();
        // SAFETY: written by the kernel before it is read (and the poison
        // it holds would show if not).
        let out_gpu = unsafe { DeviceBuffer::<f64>::uninitialized(n).unwrap() };
        let grid = (n as u32).div_ceil(block);
        // SAFETY: every buffer holds `n` elements; the kernel guards `i < n`.
        unsafe {
            launch!(module.parameters<<<grid, block, 0, stream>>>(
                a_gpu.as_device_ptr(),
                b_gpu.as_device_ptr(),
                b_gpu.len(),
                out_gpu.as_device_ptr(),
                n,
                k,
                s
            ))
            .unwrap();
        }
        stream.synchronize().unwrap();
        let mut out = vec![0.0f64; n];
        out_gpu.copy_to(&mut out).unwrap();
        for i in 0..n {
            let want = a[i] as f64 * s + b[i] as f64 + k as f64;
            assert_eq!(out[i].to_bits(), want.to_bits(), "n {n}, element {i}");
        }
    }
}

/// A warp-wide inclusive scan through the function form of `launch!`,
/// with page-locked host buffers, asynchronous copies and events.
#[test]
fn warp_scan_with_locked_buffers_async_copies_and_events() {
    let Some(_ctx) = init() else { return };
    let module = Module::from_ptx(ptx(&["warp_scan"]), &[]).unwrap();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let scan = module.get_function("warp_scan").unwrap();
    // The kernel's shared array holds two warps: blocks of 64.
    let (blocks, block) = (7u32, 64u32);
    let n = (blocks * block) as usize;
    let mut rng = SmallRng::seed_from_u64(7);
    let x: Vec<u32> = (0..n).map(|_| rng.random_range(0..1000)).collect();
    let host_x = LockedBuffer::from_slice(&x).unwrap();
    let mut host_out = LockedBuffer::new(&0u32, n).unwrap();
    let mut x_gpu = DeviceBuffer::<u32>::zeroed(n).unwrap();
    let out_gpu = DeviceBuffer::<u32>::zeroed(n).unwrap();
    let (start, end) = (Event::new(EventFlags::DEFAULT).unwrap(), Event::new(EventFlags::DEFAULT).unwrap());
    // SAFETY: nothing touches the buffers before the stream is synchronized.
    unsafe {
        x_gpu.async_copy_from(&host_x, &stream).unwrap();
        start.record(&stream).unwrap();
        launch!(scan<<<blocks, block, 0, stream>>>(x_gpu.as_device_ptr(), x_gpu.len(), out_gpu.as_device_ptr()))
            .unwrap();
        end.record(&stream).unwrap();
        out_gpu.async_copy_to(&mut host_out, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    end.synchronize().unwrap();
    assert!(end.elapsed_time_f32(&start).unwrap() >= 0.0);
    for (w, (xs, outs)) in x.chunks(32).zip(host_out.chunks(32)).enumerate() {
        let mut sum = 0;
        for (lane, (&v, &got)) in xs.iter().zip(outs).enumerate() {
            sum += v;
            assert_eq!(got, sum, "warp {w}, lane {lane}");
        }
    }
}

/// A histogram through shared-memory atomics, over a length that leaves
/// the last block part empty; the bins start as `DeviceBuffer::zeroed`.
#[test]
fn shared_histogram_counts_every_value() {
    let Some(_ctx) = init() else { return };
    let module = Module::from_ptx(ptx(&["shared_histogram"]), &[]).unwrap();
    let stream = Stream::new(StreamFlags::DEFAULT, None).unwrap();
    for (seed, n) in [1usize, 100, 1001].into_iter().enumerate() {
        let mut rng = SmallRng::seed_from_u64(seed as u64);
        let x: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let x_gpu = x.as_dbuf().unwrap();
        let bins_gpu = DeviceBuffer::<u32>::zeroed(16).unwrap();
        // SAFETY: 16 bins, as the kernel counts into.
        unsafe {
            launch!(module.shared_histogram<<<(n as u32).div_ceil(128), 128, 0, stream>>>(
                x_gpu.as_device_ptr(),
                x_gpu.len(),
                bins_gpu.as_device_ptr()
            ))
            .unwrap();
        }
        stream.synchronize().unwrap();
        let mut want = [0u32; 16];
        x.iter().for_each(|v| want[*v as usize % 16] += 1);
        assert_eq!(bins_gpu.as_host_vec().unwrap(), want, "n {n}");
    }
}

#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
struct Particle {
    position: [f32; 3],
    id: u32,
    tag: Option<u8>,
}

/// `#[derive(DeviceCopy)]`, `DeviceBox`, device-to-device copies, slices
/// of buffers, `DeviceSlice` copies and memsets.
#[test]
fn boxes_buffers_and_slices_round_trip() {
    let Some(_ctx) = init() else { return };
    let p = Particle { position: [1.0, -2.5, 3.25], id: 7, tag: Some(3) };
    let mut a = DeviceBox::new(&p).unwrap();
    assert_eq!(a.as_host_value().unwrap(), p);
    let b = DeviceBox::new(&Particle { position: [0.0; 3], id: 0, tag: None }).unwrap();
    a.copy_from(&b).unwrap();
    let mut back = p;
    a.copy_to(&mut back).unwrap();
    assert_eq!(back, b.as_host_value().unwrap());

    let n = 1003;
    let data: Vec<i64> = (0..n as i64).map(|i| i * i - 500).collect();
    let src = DeviceBuffer::from_slice(&data).unwrap();
    let mut dst = DeviceBuffer::<i64>::zeroed(n).unwrap();
    dst[10..20].copy_from(&src[500..510]).unwrap();
    let host = dst.as_host_vec().unwrap();
    assert_eq!(&host[10..20], &data[500..510]);
    assert!(host[..10].iter().chain(&host[20..]).all(|&v| v == 0));
    let (left, right) = dst.split_at_mut(100);
    left.copy_from(&src[..100]).unwrap();
    right.set_8(0xff).unwrap();
    let host = dst.as_host_vec().unwrap();
    assert_eq!(&host[..100], &data[..100]);
    assert!(host[100..].iter().all(|&v| v == -1));
    assert_eq!(dst.len(), n);
}

/// What a user sees when something is wrong: each one error, never a panic.
#[test]
fn mistakes_are_clear_errors() {
    let Some(_ctx) = init() else { return };
    let module = Module::from_ptx(ptx(&["parameters"]), &[]).unwrap();
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let n = 40usize;
    let a = DeviceBuffer::from_slice(&vec![1.0f32; n]).unwrap();
    let out = DeviceBuffer::<f64>::zeroed(n).unwrap();
    let text = |r: Result<(), CudaError>| match r {
        Err(e @ (CudaError::InvalidLaunch(_) | CudaError::Emulator(_))) => e.to_string(),
        other => panic!("expected a launch error, got {other:?}"),
    };

    // A slice passed as its pointer alone: one argument short.
    // SAFETY (each launch): rejected before it runs, or run on the emulator,
    // which stops at the first access outside the buffers.
    let m = text(unsafe {
        launch!(module.parameters<<<1, 64, 0, stream>>>(
            a.as_device_ptr(), a.as_device_ptr(), out.as_device_ptr(), n, 2i32, 1.0f64
        ))
    });
    assert!(
        m.contains("6 arguments for parameters taking 7")
            && m.contains("b: &[f32] (a pointer, then a length)"),
        "{m}"
    );

    // `n as u32` where the kernel takes a usize.
    let m = text(unsafe {
        launch!(module.parameters<<<1, 64, 0, stream>>>(
            a.as_device_ptr(), a.as_device_ptr(), a.len(), out.as_device_ptr(), n as u32, 2i32, 1.0f64
        ))
    });
    assert!(m.contains("parameter `n: usize` takes a `usize`, got a `u32`"), "{m}");

    // A buffer of the wrong element type.
    let ints = DeviceBuffer::from_slice(&vec![1i32; n]).unwrap();
    let m = text(unsafe {
        launch!(module.parameters<<<1, 64, 0, stream>>>(
            ints.as_device_ptr(), a.as_device_ptr(), a.len(), out.as_device_ptr(), n, 2i32, 1.0f64
        ))
    });
    assert!(m.contains("parameter `a: *const f32` takes a pointer to `f32`, got a pointer to `i32`"), "{m}");

    // A length beyond the buffers: the emulator stops the kernel at the
    // first access outside them, naming it.
    let m = text(unsafe {
        launch!(module.parameters<<<1, 64, 0, stream>>>(
            a.as_device_ptr(), a.as_device_ptr(), a.len(), out.as_device_ptr(), n + 1, 2i32, 1.0f64
        ))
    });
    assert!(m.starts_with("emulator: ") && m.contains("parameters"), "{m}");

    assert_eq!(module.get_function("nope").unwrap_err(), CudaError::NotFound);
    let mut short = vec![0.0f64; n - 1];
    assert_eq!(out.copy_to(&mut short).unwrap_err(), CudaError::InvalidValue);

    // PTX of a kernel crate this program does not link.
    let e = Module::from_ptx(ptx(&["not_linked_here"]), &[]).unwrap_err();
    assert!(matches!(e, CudaError::NoGpu(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("not_linked_here") && m.contains("use kernels as _;") && !m.contains('\n'), "{m}");
}

/// `Module::from_file`, `uninitialized` memory's poison, the device's
/// description, and `DeviceCopy` on the types rust-cuda programs pass.
#[test]
fn files_poison_and_the_device() {
    let Some(_ctx) = init() else { return };
    let path = std::env::temp_dir().join(format!("lab-cust-{}.ptx", std::process::id()));
    std::fs::write(&path, ptx(&["warp_scan", "parameters"])).unwrap();
    let module = Module::from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(module.get_function("parameters").is_ok() && module.get_function("warp_scan").is_ok());
    assert_eq!(Module::from_file("/nonexistent.ptx").unwrap_err(), CudaError::FileNotFound);

    // SAFETY: read only to see the poison.
    let buffer = unsafe { DeviceBuffer::<u32>::uninitialized(5).unwrap() };
    assert!(buffer.as_host_vec().unwrap().iter().all(|&w| w == 0x7fc0_dead));

    let device = Device::get_device(0).unwrap();
    assert_eq!(device.name().unwrap(), "CPU emulator");
    assert_eq!(Device::num_devices().unwrap(), 1);
    assert!(Device::get_device(1).is_err());
    let f = module.get_function("warp_scan").unwrap();
    assert_eq!(f.suggested_launch_configuration(0, BlockSize::x(100)).unwrap(), (21, 96));
    assert_eq!(f.max_active_blocks_per_multiprocessor(256.into(), 0).unwrap(), 8);

    fn device_copy<T: DeviceCopy>() {}
    device_copy::<(f32, u64, [i8; 3])>();
    device_copy::<DevicePointer<f32>>();
}
