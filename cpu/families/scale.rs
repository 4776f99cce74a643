//! The example family on the host: the reference of `gpu/src/scale.rs`,
//! verified bit for bit and timed against the in-run copy. README.md's
//! "Adding a kernel" shows this file (a test keeps the two identical).

use gpu::launch::Kernel;
use gpu::scale::scale;

use super::Family;
use crate::measure::{Rate, Record, Runs, Shape, Stage, bench, data, trial, verify};
use crate::runtime::{Error, Gpu, Result};

/// `y = a x` on `n` elements.
pub struct Scale;

/// The factor every run scales by.
const A: f32 = 0.75;

impl Family for Scale {
    fn name(&self) -> &'static str {
        "scale"
    }

    fn size_meaning(&self) -> &'static str {
        "n f32 elements"
    }

    fn default_sizes(&self) -> Vec<Shape> {
        [1 << 20, 1 << 24, 1 << 28].map(Shape::n).into()
    }

    fn emulator_size(&self) -> Shape {
        Shape::n(10_007)
    }

    fn method(&self) -> &'static str {
        "every element bit-exact against the host's `a * x`; the ceiling is a device-to-device copy"
    }

    fn check(&self, size: &Shape) -> Result<usize> {
        let n = size.one("scale")?;
        if n > u32::MAX as usize {
            return Err(Error::InvalidInput(format!("scale takes at most {} elements", u32::MAX)));
        }
        Ok(2 * 4 * n)
    }

    fn run(
        &self,
        gpu: &Gpu,
        size: &Shape,
        _: &[&'static Kernel],
        runs: Option<Runs>,
        _: &dyn Fn(&str),
    ) -> Result<Vec<Record>> {
        let n = size.one("scale")?;
        let x = data::uniform_f32(n, 1);
        let want: Vec<f32> = x.iter().map(|x| A * x).collect();
        let x = gpu.upload(&x)?;
        let mut y = gpu.alloc::<f32>(n)?;
        let (mut records, copy) = bench::copy_record(gpu, runs, "scale", "f32", size, &x, &mut y)?;
        let grid = scale::KERNEL.launch.grid(n as u32, 1);
        let measured = trial(
            gpu,
            runs,
            &mut y,
            |y, stage| match stage {
                Stage::Prepare => gpu.poison(y),
                Stage::Restore => Ok(()),
                Stage::Run => scale::launch(gpu, grid, &x, y, A),
            },
            |y| verify::exact("scale", &gpu.download(y).map_err(|e| e.to_string())?, &want),
        )?;
        let rate = Rate::Bandwidth { bytes: 2 * 4 * n, copy };
        records.push(Record::of_trial("scale", "scale", "f32", size, &measured, rate));
        Ok(records)
    }
}
