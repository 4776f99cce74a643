//! How fast the emulator runs: emulated threads per second, by block size,
//! on one OS thread and on every core, with every check on and with the
//! race and initialization checks off (`Gpu::set_checks`).
//!
//! The body is the shape of one step of a tiled kernel: a global load, a
//! shared store, a barrier, a shared load of another thread's word and a
//! global store; every access goes through the bounds check (and, checks
//! on, the race and initialization checks), and each barrier switches
//! every thread's coroutine out and back.

use std::fmt::Write;
use std::time::Instant;

use gpu::dev::{In, Out, SharedArray, sync_threads, thread::index_1d, thread_idx_x};
use gpu::launch::{Arg, KernelParam};

/// One measurement.
#[derive(Clone, Copy, Debug)]
pub struct Speed {
    pub block: u32,
    pub blocks: u32,
    /// The OS threads the blocks ran on.
    pub workers: usize,
    /// Races and uninitialized reads checked.
    pub checks: bool,
    pub seconds: f64,
}

impl Speed {
    pub fn threads_per_second(&self) -> f64 {
        f64::from(self.block) * f64::from(self.blocks) / self.seconds
    }
}

/// Emulates `threads` threads in blocks of `block` on `workers` OS
/// threads, with the race checks on or off; the best of `runs`.
pub fn measure(block: u32, threads: u32, runs: usize, workers: usize, checks: bool) -> Speed {
    let blocks = threads.div_ceil(block);
    let n = (block * blocks) as usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut output = vec![0.0f32; n];
    let buffers = [
        emu::Buffer { name: "input", addr: input.as_ptr() as usize, bytes: n * 4 },
        emu::Buffer { name: "output", addr: output.as_mut_ptr() as usize, bytes: n * 4 },
    ];
    let spec = emu::LaunchSpec {
        name: "speed",
        block: [block, 1, 1],
        grid: [blocks, 1, 1],
        cluster: [1, 1, 1],
        shared_bytes: block as usize * 4,
        dependent: false,
        buffers: &buffers,
        analyze: false,
        checks,
    };
    let (src, dst) = (input.as_ptr() as usize, output.as_mut_ptr() as usize);
    let body = move || {
        // SAFETY: the launch's buffers hold one element per thread and the
        // shared memory one word per thread; each thread reads its
        // neighbour's word after the barrier.
        unsafe {
            let x = In::<f32>::from_arg(&Arg::Ptr { addr: src as u64, bytes: n * 4 });
            let y = Out::<f32>::from_arg(&Arg::Ptr { addr: dst as u64, bytes: n * 4 });
            let s = SharedArray::<f32>::launch_sized();
            let (i, t) = (index_1d(), thread_idx_x() as usize);
            s.set(t, x.load(i));
            sync_threads();
            y.store(i, s.get((t + 1) % block as usize));
        }
    };
    let mut best = f64::INFINITY;
    emu::set_threads(Some(workers));
    for _ in 0..runs {
        let start = Instant::now();
        emu::launch(&spec, &body).expect("the speed kernel is clean");
        best = best.min(start.elapsed().as_secs_f64());
    }
    emu::set_threads(None);
    let b = block as usize;
    let want = |i: usize| (i / b * b + (i % b + 1) % b) as f32;
    assert!(output.iter().enumerate().all(|(i, v)| *v == want(i)), "the speed kernel's output");
    Speed { block, blocks, workers, checks, seconds: best }
}

/// The block sizes measured.
pub const BLOCKS: [u32; 6] = [32, 64, 128, 256, 512, 1024];

/// Every block size, `threads` threads each, on one OS thread and on
/// every core (once, on a machine of one core), checks on and off.
pub fn sweep(threads: u32, runs: usize) -> Vec<Speed> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut workers = vec![1];
    if cores > 1 {
        workers.push(cores);
    }
    let mut speeds = Vec::new();
    for checks in [true, false] {
        for &b in &BLOCKS {
            for &w in &workers {
                speeds.push(measure(b, threads, runs, w, checks));
            }
        }
    }
    speeds
}

/// The speed table, with the machine it was measured on.
pub fn markdown(speeds: &[Speed], machine: &str) -> String {
    let mut md = String::from("## Emulator speed\n\n");
    let most = speeds.iter().map(|s| s.workers).max().unwrap_or(1);
    let _ = writeln!(
        md,
        "Emulated threads per second on {machine} (the body: a global load, a shared store, a barrier, \
         a shared load, a global store), on one OS thread and on {most}, with every check on and with \
         the race and initialization checks off (`KERNEL_LAB_EMU_CHECKS=off`).\n"
    );
    let _ = writeln!(
        md,
        "| threads per block | blocks | checks on, 1 OS thread | on, {most} | {most} vs 1 | checks off, 1 OS thread | off, {most} | off vs on, 1 |\n|---|---|---|---|---|---|---|---|"
    );
    let rate = |block: u32, workers: usize, checks: bool| {
        speeds
            .iter()
            .find(|s| s.block == block && s.workers == workers && s.checks == checks)
            .map(Speed::threads_per_second)
    };
    let m = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.2} M", x / 1e6));
    let ratio =
        |a: Option<f64>, b: Option<f64>| a.zip(b).map_or("-".into(), |(a, b)| format!("{:.2}×", a / b));
    for one in speeds.iter().filter(|s| s.workers == 1 && s.checks) {
        let b = one.block;
        let (on1, on_n, off1, off_n) =
            (rate(b, 1, true), rate(b, most, true), rate(b, 1, false), rate(b, most, false));
        let _ = writeln!(
            md,
            "| {b} | {} | {} | {} | {} | {} | {} | {} |",
            one.blocks,
            m(on1),
            m(on_n),
            ratio(on_n, on1),
            m(off1),
            m(off_n),
            ratio(off1, on1)
        );
    }
    md
}
