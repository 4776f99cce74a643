//! How fast the emulator runs: emulated threads per second, by block size,
//! on one OS thread and on every core.
//!
//! The body is the shape of one step of a tiled kernel: a global load, a
//! shared store, a barrier, a shared load of another thread's word and a
//! global store; every access goes through the bounds, race and
//! initialization checks, and each barrier switches every thread's
//! coroutine out and back.

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
    pub seconds: f64,
}

impl Speed {
    pub fn threads_per_second(&self) -> f64 {
        f64::from(self.block) * f64::from(self.blocks) / self.seconds
    }
}

/// Emulates `threads` threads in blocks of `block` on `workers` OS
/// threads; the best of `runs`.
pub fn measure(block: u32, threads: u32, runs: usize, workers: usize) -> Speed {
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
    Speed { block, blocks, workers, seconds: best }
}

/// The block sizes measured.
pub const BLOCKS: [u32; 6] = [32, 64, 128, 256, 512, 1024];

/// Every block size, `threads` threads each, on one OS thread and on
/// every core (once, on a machine of one core).
pub fn sweep(threads: u32, runs: usize) -> Vec<Speed> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut workers = vec![1];
    if cores > 1 {
        workers.push(cores);
    }
    BLOCKS.iter().flat_map(|&b| workers.iter().map(move |&w| measure(b, threads, runs, w))).collect()
}

/// The speed table, with the machine it was measured on.
pub fn markdown(speeds: &[Speed], machine: &str) -> String {
    let mut md = String::from("## Emulator speed\n\n");
    let most = speeds.iter().map(|s| s.workers).max().unwrap_or(1);
    let _ = writeln!(
        md,
        "Emulated threads per second on {machine}, every check on (the body: a global load, a shared \
         store, a barrier, a shared load, a global store), on one OS thread and on {most}.\n"
    );
    let _ = writeln!(
        md,
        "| threads per block | blocks | 1 OS thread | {most} OS threads | {most} vs 1 |\n|---|---|---|---|---|"
    );
    for one in speeds.iter().filter(|s| s.workers == 1) {
        let all = speeds.iter().find(|s| s.block == one.block && s.workers == most).unwrap_or(one);
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} M | {:.2} M | {:.2}× |",
            one.block,
            one.blocks,
            one.threads_per_second() / 1e6,
            all.threads_per_second() / 1e6,
            all.threads_per_second() / one.threads_per_second()
        );
    }
    md
}
