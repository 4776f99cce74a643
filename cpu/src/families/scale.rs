//! The example family on the host: the reference of `gpu/src/scale.rs`,
//! verified bit for bit and timed against the in-run copy. README.md's
//! "Adding a kernel" shows this file (a test keeps the two identical).

use gpu::dev::{DisjointSlice, Slice};
use gpu::launch::{Kernel, Typed};

use super::{About, Family, Run};
use crate::measure::{Rate, Record, Shape, bench, data, trial, verify};
use crate::runtime::{DeviceBuffer, Error, Result};

/// `y = a x` on `n` elements.
pub struct Scale;

/// What every scale kernel takes: `x`, `y`, `a`.
pub type Signature = (Slice<f32>, DisjointSlice<f32>, f32);

/// `kernel` as a scale kernel: an error if it takes other parameters or
/// makes unchecked accesses (the launch below relies on checked ones).
fn typed(kernel: &'static Kernel) -> Result<Typed<Signature>> {
    if kernel.unchecked {
        return Err(Error::InvalidInput(format!("{}: scale runs only kernels with checked accesses", kernel.name)));
    }
    kernel.typed::<Signature>().map_err(Error::InvalidInput)
}

/// The factor every run scales by.
const A: f32 = 0.75;

impl Family for Scale {
    fn about(&self) -> &'static About {
        &About {
            name: "scale",
            size_meaning: "n f32 elements",
            default_sizes: &[1 << 20, 1 << 24, 1 << 28],
            emulator_size: 10_007,
            method: "every element bit-exact against the host's `a * x`; the ceiling is a device-to-device copy",
        }
    }

    fn device_bytes(&self, size: &Shape) -> Result<usize> {
        let n = size.one("scale")?;
        if n > u32::MAX as usize {
            return Err(Error::InvalidInput(format!("scale takes at most {} elements", u32::MAX)));
        }
        Ok(2 * 4 * n)
    }

    fn runs(&self, kernel: &'static Kernel) -> Result<()> {
        typed(kernel).map(drop)
    }

    fn run(&self, run: &Run) -> Result<Vec<Record>> {
        let Run { gpu, size, runs, kernels, progress } = *run;
        let n = size.one("scale")?;
        let x = data::uniform_f32(n, 1);
        let want: Vec<f32> = x.iter().map(|x| A * x).collect();
        let x = gpu.upload(&x)?;
        let mut y = gpu.alloc::<f32>(n)?;
        let (mut records, copy) = bench::copy_record(gpu, runs, "scale", "f32", size, &x, &mut y)?;
        for &kernel in kernels {
            progress(&format!("scale {size}: {}", kernel.name));
            let k = typed(kernel)?;
            let blocks = kernel.launch.blocks(n as u32);
            // SAFETY: `typed` refused kernels with unchecked accesses, and
            // the grid is 1-D, as a `DisjointSlice` parameter asks.
            let launch = |y: &mut DeviceBuffer<f32>| unsafe { k.launch(gpu, blocks, (&x, y, A)) };
            let measured =
                trial::of_output(gpu, runs, &mut y, launch, |y| verify::exact(kernel.name, y, &want))?;
            let rate = Rate::Bandwidth { bytes: 2 * 4 * n, copy };
            records.push(Record::of_trial("scale", kernel.name, "f32", size, &measured, rate));
        }
        Ok(records)
    }
}
