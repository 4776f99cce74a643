//! Timing with CUDA events: warm-up launches first, then one event pair
//! around each timed launch, and the median of those.

use super::{Rate, Record, Shape};
use crate::runtime::error::CudaContext as _;
use crate::runtime::{DeviceBuffer, Gpu, Result};

/// How many launches to run untimed and timed.
#[derive(Clone, Copy, Debug)]
pub struct Runs {
    pub warmup: usize,
    pub timed: usize,
}

impl Default for Runs {
    fn default() -> Self {
        Runs { warmup: 5, timed: 50 }
    }
}

/// The spread of a kernel's timed launches, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

impl Timing {
    /// Effective bandwidth in GB/s (10^9 bytes per second) for `bytes` moved per run.
    pub fn gb_per_s(&self, bytes: usize) -> f64 {
        bytes as f64 / (self.median_ms * 1e-3) / 1e9
    }
}

/// Median of the sorted copy of `samples` (mean of the middle two when even).
pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// What a kernel's run asks its closure to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Before the verification run only: poison the outputs.
    Prepare,
    /// Before every timed run, untimed: restore an input the kernel
    /// overwrites (most kernels do nothing).
    Restore,
    /// Queue the work to verify or time.
    Run,
}

/// Runs `launch` `runs.warmup` times, then `runs.timed` times with an event
/// pair around each, and returns the spread of the timed ones.
pub fn time(gpu: &Gpu, runs: Runs, mut launch: impl FnMut() -> Result<()>) -> Result<Timing> {
    time_staged(gpu, runs, |stage| if stage == Stage::Run { launch() } else { Ok(()) })
}

/// The least time a warm-up (when there is one) keeps the GPU busy: an
/// idle GPU clocks down, and without this the first shapes of a sweep,
/// calls of tens of microseconds, ran 30-60% slower than the same calls
/// later in the process, ours and cuBLAS's alike (`docs/notes.md`).
pub const WARM_UP: std::time::Duration = std::time::Duration::from_millis(20);

/// [`time`] with an untimed [`Stage::Restore`] before every run (warm-up
/// runs included): only the [`Stage::Run`] work lies between the events.
/// The warm-up is `runs.warmup` runs and, unless that is 0, at least
/// [`WARM_UP`] of them.
pub fn time_staged(gpu: &Gpu, runs: Runs, step: impl FnMut(Stage) -> Result<()>) -> Result<Timing> {
    measure(gpu, runs, false, step)
}

/// The least span of one timed batch of [`time_batched`].
pub const BATCH_SPAN: std::time::Duration = std::time::Duration::from_micros(200);

/// [`time`] for calls of a few microseconds, where an event pair around
/// each launch measures the host as much as the GPU: when the host's work
/// per call (a library's own, then the launch) takes longer than the
/// GPU's, the queue drains, the start event completes at once, and the
/// pair spans the host's work up to the launch. Here each event pair
/// spans a batch of back-to-back calls, as many as take about
/// [`BATCH_SPAN`] (from the warm-up's rate; one for calls longer than
/// that, which is [`time`]), and each sample is the batch's time per
/// call: the rate a loop of such calls runs at, whichever side bounds it.
pub fn time_batched(gpu: &Gpu, runs: Runs, mut launch: impl FnMut() -> Result<()>) -> Result<Timing> {
    measure(gpu, runs, true, |stage| if stage == Stage::Run { launch() } else { Ok(()) })
}

/// [`time_staged`], or with `batched` [`time_batched`] (whose callers
/// restore nothing: a batch's runs follow each other with no
/// [`Stage::Restore`] between them).
fn measure(
    gpu: &Gpu,
    runs: Runs,
    batched: bool,
    mut step: impl FnMut(Stage) -> Result<()>,
) -> Result<Timing> {
    let start = std::time::Instant::now();
    let mut done = 0;
    while done < runs.warmup || (runs.warmup > 0 && start.elapsed() < WARM_UP) {
        step(Stage::Restore)?;
        step(Stage::Run)?;
        done += 1;
        if done % 16 == 0 {
            // The host's clock follows the GPU's work, not its queue.
            gpu.sync()?;
        }
    }
    gpu.sync()?;
    let batch = if batched && done > 0 {
        let per_call = start.elapsed().as_secs_f64() / done as f64;
        ((BATCH_SPAN.as_secs_f64() / per_call).ceil() as usize).clamp(1, 256)
    } else {
        1
    };
    let timed = runs.timed.max(1);
    let mut events = Vec::with_capacity(timed);
    for _ in 0..timed {
        let (cuda, start, end) = gpu.timing_events()?;
        step(Stage::Restore)?;
        start.record(&cuda.stream).during("cuEventRecord")?;
        for _ in 0..batch {
            step(Stage::Run)?;
        }
        end.record(&cuda.stream).during("cuEventRecord")?;
        events.push((start, end));
    }
    gpu.sync()?;
    let samples = events
        .iter()
        .map(|(start, end)| {
            start.elapsed_ms(end).map(|ms| f64::from(ms) / batch as f64).during("cuEventElapsedTime")
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Timing {
        median_ms: median(&samples),
        min_ms: samples.iter().copied().fold(f64::INFINITY, f64::min),
        max_ms: samples.iter().copied().fold(0.0, f64::max),
        runs: timed * batch,
    })
}

/// The ceiling for memory-bound kernels: a device-to-device copy
/// (`cuMemcpyDtoDAsync`) of all of `src` into `dst`, timed like a kernel.
/// Pass the family's own random input so the copy moves real data. Returns
/// the timing and the bandwidth counting bytes read plus bytes written.
pub fn copy_ceiling<T: cudarc::driver::DeviceRepr + Copy>(
    gpu: &Gpu,
    src: &DeviceBuffer<T>,
    dst: &mut DeviceBuffer<T>,
    runs: Runs,
) -> Result<(Timing, f64)> {
    let timing = time(gpu, runs, || gpu.copy(src, dst))?;
    let moved = 2 * src.len() * size_of::<T>();
    Ok((timing, timing.gb_per_s(moved)))
}

/// [`copy_ceiling`] as the first record of a memory-bound family's run, and
/// its GB/s to compare the kernels with: none on the emulator or when no
/// timing is asked for.
pub fn copy_record<T: cudarc::driver::DeviceRepr + Copy>(
    gpu: &Gpu,
    runs: Option<Runs>,
    family: &str,
    element: &str,
    size: &Shape,
    src: &DeviceBuffer<T>,
    dst: &mut DeviceBuffer<T>,
) -> Result<(Vec<Record>, Option<f64>)> {
    let Some(runs) = runs.filter(|_| !gpu.is_emulator()) else { return Ok((Vec::new(), None)) };
    let (timing, gbps) = copy_ceiling(gpu, src, dst, runs)?;
    let bytes = 2 * src.len() * size_of::<T>();
    let record = Record::new(family, "copy", element, size)
        .timed(Some(timing), Rate::Bandwidth { bytes, copy: Some(gbps) });
    Ok((vec![record], Some(gbps)))
}
