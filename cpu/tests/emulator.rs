//! Every kernel on the CPU emulator: random inputs of awkward shapes
//! against the host references, through the same launches as on the GPU;
//! the emulator's own checks (races, bounds, barriers, shuffles, `cp.async`)
//! on kernels declared here, wrong on purpose; and its analysis (bank
//! conflicts, sectors) reproducing the seeds' arithmetic from our kernels.

use emu::{Analysis, EmuError};
use gpu::dev::barrier::{Mbarrier, fence_init};
use gpu::dev::copy::{commit_copies, wait_copies};
use gpu::dev::grid::wait_for_prerequisites;
use gpu::dev::warp::{FULL_MASK, shfl_down_f32, shfl_down_i32, shfl_xor_f32};
use gpu::dev::{DisjointSlice, In, Out, SharedArray, Slice, sync_threads, thread, thread_idx_x};
use gpu::kernel;
use gpu::launch::{Kernel, registry};
use kernel_lab::Error;
use kernel_lab::families::reduce::{self, Element, Reduction};
use kernel_lab::families::sgemm::{self, Problem};
use kernel_lab::families::transpose::{self, reference};
use kernel_lab::families::{Family, Run, lab, scale};
use kernel_lab::measure::{Shape, data::uniform_f32, verify};
use kernel_lab::runtime::{DeviceBuffer, Gpu};
use proptest::prelude::*;

fn family(name: &str) -> Vec<&'static Kernel> {
    registry::module(&format!("gpu::{name}"))
}

fn transpose_on(gpu: &Gpu, kernel: &'static Kernel, nx: usize, ny: usize, seed: u64) -> Result<(), String> {
    let run = || -> kernel_lab::Result<Result<(), String>> {
        let host = uniform_f32(nx * ny, seed);
        let input = gpu.upload(&host)?;
        let mut output = gpu.alloc::<f32>(nx * ny)?;
        gpu.poison(&mut output)?;
        transpose::launch(gpu, transpose::typed(kernel)?, &input, &mut output, nx, ny)?;
        Ok(verify::exact(kernel.name, &gpu.download(&output)?, &reference(&host, nx, ny)))
    };
    run().map_err(|e| e.to_string())?
}

#[test]
fn transpose_kernels_on_awkward_shapes() {
    let gpu = Gpu::emulator();
    for kernel in family("transpose") {
        for (i, &(nx, ny)) in
            [(1, 1), (0, 5), (5, 0), (33, 31), (70, 129), (64, 64), (200, 301)].iter().enumerate()
        {
            transpose_on(&gpu, kernel, nx, ny, i as u64).unwrap();
        }
    }
}

/// The reduction kernels for `T`: every instance for that type.
fn reductions<T: Element>() -> Vec<&'static Kernel> {
    family("reduce").into_iter().filter(|k| k.instance == Some(T::NAME)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn transpose_any_shape(nx in 1usize..150, ny in 1usize..150, which in 0usize..5, seed: u64) {
        let gpu = Gpu::emulator();
        prop_assert_eq!(transpose_on(&gpu, family("transpose")[which], nx, ny, seed), Ok(()));
    }

    #[test]
    fn reduce_any_size(n in 0usize..70_000, which in 0usize..6, seed: u64) {
        let gpu = Gpu::emulator();
        let kernel = reductions::<i32>()[which];
        let host = i32::random(n, seed);
        let mut input = gpu.upload(&host).unwrap();
        let got = Reduction::<i32>::new(&gpu, kernel).unwrap().sum(&gpu, &mut input).unwrap();
        prop_assert_eq!(reduce::verify(kernel, &host, got), Ok(()));
    }
}

fn reduce_sizes<T: Element>(gpu: &Gpu, sizes: &[usize]) {
    for kernel in reductions::<T>() {
        let r = Reduction::<T>::new(gpu, kernel).unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            let host = T::random(n, 40 + i as u64);
            let mut input = gpu.upload(&host).unwrap();
            let got = r.sum(gpu, &mut input).unwrap();
            reduce::verify(kernel, &host, got).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn reduce_kernels_on_awkward_sizes() {
    let gpu = Gpu::emulator();
    let sizes = [0, 1, 2, 31, 255, 256, 257, 1025, 4097, 32_769, 65_537];
    reduce_sizes::<i32>(&gpu, &sizes);
    reduce_sizes::<f32>(&gpu, &sizes);
    reduce_sizes::<f64>(&gpu, &sizes);
    assert_eq!(reductions::<i32>().len(), 6);
    assert_eq!(reductions::<f64>().len(), 1);
}

#[test]
fn reduce_fast_bits_do_not_depend_on_the_grid() {
    let gpu = Gpu::emulator();
    let host = f32::random(100_003, 9);
    let mut input = gpu.upload(&host).unwrap();
    let bits: Vec<u64> = [1, 2, 3, 7]
        .iter()
        .map(|&g| {
            Reduction::<f32>::of(&gpu, "reduce_fast")
                .unwrap()
                .with_grid(g)
                .sum(&gpu, &mut input)
                .unwrap()
                .bits()
        })
        .collect();
    assert!(bits.iter().all(|b| *b == bits[0]), "{bits:x?}");
}

/// The seed's bugs, each caught (deterministically, here) where our
/// kernels pass: a wrong sum, or for the early return a read of shared
/// memory nothing wrote (the emulator fills it with NaN-like bits per
/// block, so the sum is wrong).
#[test]
fn reduce_seed_bugs_are_caught() {
    let gpu = Gpu::emulator();
    let n = 256 * 9 + 77;
    let host = i32::random(n, 21);
    let bugs = registry::module("gpu::reduce::seed_bugs");
    assert_eq!(bugs.len(), 4);
    for bug in bugs {
        let r = Reduction::<i32>::new(&gpu, bug).unwrap();
        let mut input = gpu.upload(&host).unwrap();
        let result = r.sum(&gpu, &mut input);
        assert!(
            !matches!(result, Ok(got) if reduce::verify(bug, &host, got).is_ok()),
            "{} gave the right sum",
            bug.name
        );
    }
    let ok = Reduction::<i32>::of(&gpu, "reduce_smem").unwrap();
    let mut input = gpu.upload(&host).unwrap();
    reduce::verify(ok.kernel, &host, ok.sum(&gpu, &mut input).unwrap()).unwrap();
}

#[test]
fn sgemm_kernels_on_awkward_shapes() {
    let gpu = Gpu::emulator();
    for kernel in family("sgemm") {
        let k = sgemm::typed(kernel).unwrap();
        // The last shape has whole interior block tiles for the 128 x 256
        // kernels too (their unchecked main loop).
        let shapes = [(1, 1, 1), (5, 9, 0), (33, 65, 17), (130, 129, 20), (129, 260, 24)];
        for (i, &(m, n, k_)) in shapes.iter().enumerate() {
            let (a, b, c0) =
                (uniform_f32(m * k_, i as u64), uniform_f32(k_ * n, 7 + i as u64), uniform_f32(m * n, 9));
            let rows: Vec<usize> = (0..m).collect();
            let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
            for (alpha, beta) in [(1.5f32, 0.0f32), (0.75, -0.5)] {
                let p = Problem { m, n, k: k_, alpha, beta };
                let mut c = gpu.upload(&c0).unwrap();
                if beta == 0.0 {
                    gpu.poison(&mut c).unwrap();
                }
                sgemm::launch(&gpu, k, &p, &da, &db, &mut c).unwrap();
                let r = sgemm::check(
                    &p,
                    &gpu.download(&c).unwrap(),
                    &rows,
                    &sgemm::reference_rows(&p, &a, &b, &c0, &rows),
                );
                assert!(r.passed(), "{} {m}x{n}x{k_} alpha={alpha} beta={beta}: {r:?}", kernel.name);
            }
        }
    }
}

/// The example family, through the suite's own run.
#[test]
fn scale_is_verified_on_the_emulator() {
    let gpu = Gpu::emulator();
    let family = scale::Scale;
    for n in [1, 255, 257, 10_007] {
        let records = family.run(&Run::verify(&gpu, &Shape::n(n), &family.kernels())).unwrap();
        assert_eq!(records.len(), 1);
        assert!(records[0].verified, "{:?}", records[0].error);
        // Coalesced: every request touches the fewest sectors its bytes need
        // (4 for a whole warp).
        let a = records[0].analysis.unwrap();
        assert_eq!(a.global_efficiency, Some(1.0), "n={n}: {a:?}");
    }
}

/// Runs a transpose kernel at 64 x 64 (whole tiles) with the analysis on.
fn transpose_analysis(name: &str) -> Analysis {
    transpose_analysis_at(name, 64, 64)
}

fn transpose_analysis_at(name: &str, nx: usize, ny: usize) -> Analysis {
    let gpu = Gpu::emulator();
    gpu.set_analysis(true);
    transpose_on(&gpu, registry::find(name).unwrap(), nx, ny, 1).unwrap();
    gpu.take_analysis()
}

/// With `ny` odd, output rows start inside sectors. Kernel 4's 32-word
/// row segments then cover 5 sectors in 7 rows of 8 (4.875 per request);
/// kernel 5 moves each row's window back to a sector boundary, so only the
/// first and last sector of each output row are partial: 2 in the
/// `ceil((s + ny) / 8)` sectors a row spans, 263 words here.
#[test]
fn transpose_fast_stores_whole_sectors_at_odd_shapes() {
    let (nx, ny) = (64, 263);
    let padded = transpose_analysis_at("transpose_padded", nx, ny);
    let fast = transpose_analysis_at("transpose_fast", nx, ny);
    let (p, f) = (padded.global_stores.efficiency(), fast.global_stores.efficiency());
    assert!(p < 0.85, "padded: {p}");
    // Per row: 263 useful words in at most ceil((7 + 263) / 8) = 34 sectors.
    assert!(f >= 263.0 / (34.0 * 8.0), "fast: {f}");
}

/// The seeds' arithmetic, measured from our kernels.
#[test]
fn transpose_bank_conflicts_and_sectors() {
    let shared = transpose_analysis("transpose_shared");
    assert_eq!(shared.shared_loads.per_request(), 32.0, "32 x 32 tile column read: 32-way");
    assert_eq!(shared.shared_stores.per_request(), 1.0, "row writes: conflict-free");
    let padded = transpose_analysis("transpose_padded");
    assert_eq!(padded.shared_loads.per_request(), 1.0, "32 x 33 tile: conflict-free");
    let fast = transpose_analysis("transpose_fast");
    assert_eq!(fast.shared_loads.per_request(), 1.0);
    assert_eq!(fast.shared_stores.per_request(), 1.0);
    let row = transpose_analysis("transpose_naive_row");
    assert_eq!((row.global_loads.per_request(), row.global_stores.per_request()), (4.0, 32.0));
    assert_eq!(row.global_stores.efficiency(), 4.0 / 32.0);
    let col = transpose_analysis("transpose_naive_col");
    assert_eq!((col.global_loads.per_request(), col.global_stores.per_request()), (32.0, 4.0));
    for a in [shared, padded, fast] {
        assert_eq!((a.global_loads.per_request(), a.global_stores.per_request()), (4.0, 4.0));
    }
}

/// Kernel 6's warp tiling removes kernel 5's `Bs` fragment conflicts: in
/// 16-byte phases of 8 lanes, lanes 8 words apart share banks in the
/// contiguous layout.
#[test]
fn sgemm_warp_tiling_removes_fragment_conflicts() {
    let analysis = |name| {
        let gpu = Gpu::emulator();
        let (m, n, k) = (128, 128, 16);
        let (a, b) =
            (gpu.upload(&uniform_f32(m * k, 1)).unwrap(), gpu.upload(&uniform_f32(k * n, 2)).unwrap());
        let mut c = gpu.alloc::<f32>(m * n).unwrap();
        gpu.set_analysis(true);
        let kernel = sgemm::typed(registry::find(name).unwrap()).unwrap();
        sgemm::launch(&gpu, kernel, &Problem { m, n, k, alpha: 1.0, beta: 0.0 }, &a, &b, &mut c).unwrap();
        gpu.take_analysis()
    };
    let contiguous = analysis("sgemm_double_buffer");
    let warp_tiled = analysis("sgemm_warp_tiled");
    assert_eq!(warp_tiled.shared_loads.efficiency(), 1.0, "{warp_tiled:?}");
    assert!(contiguous.shared_loads.efficiency() < 0.7, "{contiguous:?}");
    assert!(warp_tiled.shared_loads.cost < contiguous.shared_loads.cost);
}

// ---- kernels wrong on purpose: each plants one fault the emulator must report

/// Thread `t` writes `smem[t]` and reads `smem[t + 1]` with no barrier
/// between: thread `t + 1` writes that word in the same epoch.
#[kernel(block = 64, shared = 64 * 4)]
pub fn check_race(out: Out<f32>) {
    // SAFETY: 64 words of shared memory, 64 threads; the race is the point.
    unsafe {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.set(t, t as f32);
        let next = smem.get((t + 1) % 64);
        out.store(t, next);
    }
}

/// Reads one word past the launch's shared memory.
#[kernel(block = 64, shared = 64 * 4)]
pub fn check_shared_out_of_bounds(out: Out<f32>) {
    // SAFETY: none: thread 63 reads past the end, which the emulator stops.
    unsafe {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        out.store(t, smem.get(t + 1));
    }
}

/// Reads one element past the input.
#[kernel(block = 64)]
pub fn check_global_out_of_bounds(input: In<f32>, out: Out<f32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: none: thread 63 reads past the end, which the emulator stops.
    unsafe { out.store(t, input.load(t + 1)) };
}

/// Half the block waits at one barrier, half at another (two call sites on
/// purpose).
#[kernel(block = 64)]
#[allow(clippy::if_same_then_else)]
pub fn check_divergent_barrier(out: Out<f32>) {
    let t = thread_idx_x() as usize;
    if t < 32 {
        sync_threads();
    } else {
        sync_threads();
    }
    // SAFETY: 64 outputs, one per thread.
    unsafe { out.store(t, 1.0) };
}

/// Lane 0 waits at a barrier while lanes 1..31 wait for it in a shuffle.
#[kernel(block = 64)]
pub fn check_shuffle_deadlock(out: Out<f32>) {
    let t = thread_idx_x() as usize;
    let v = if t.is_multiple_of(32) {
        sync_threads();
        0.0
    } else {
        // SAFETY: none: lane 0 never comes, which the emulator reports.
        unsafe { shfl_down_f32(FULL_MASK, 1.0, 1) }
    };
    // SAFETY: 64 outputs, one per thread.
    unsafe { out.store(t, v) };
}

/// Threads past the first 16 return before the barrier the first 16 wait
/// at: a divergent barrier (GPUVerify's barrier under `tid < 16`).
#[kernel(block = 64, shared = 64 * 4)]
pub fn check_exited_threads(out: Out<f32>) {
    // SAFETY: 64 words of shared memory.
    let smem = unsafe { SharedArray::<f32>::launch_sized() };
    let t = thread_idx_x() as usize;
    if t >= 16 {
        return;
    }
    // SAFETY: t < 16: in bounds, one writer per word.
    unsafe { smem.set(t, t as f32) };
    sync_threads();
    // SAFETY: in bounds, written before the barrier; one output per thread.
    unsafe { out.store(t, smem.get(15 - t)) };
}

/// Warp sums by `shfl_down` (lane 0 gets the sum of 0..32 = 496), an xor
/// all-reduce, and a half-warp mask: `out[3 t..3 t + 3]` per thread.
#[kernel(block = 64)]
pub fn check_shuffles(out: Out<f32>) {
    let t = thread_idx_x() as usize;
    let lane = (t % 32) as f32;
    let mut down = lane;
    let mut delta = 16;
    while delta > 0 {
        // SAFETY: every lane of both full warps takes every step.
        down += unsafe { shfl_down_f32(FULL_MASK, down, delta) };
        delta /= 2;
    }
    let mut all = lane;
    let mut m = 16;
    while m > 0 {
        // SAFETY: as above.
        all += unsafe { shfl_xor_f32(FULL_MASK, all, m) };
        m /= 2;
    }
    // Lanes 0..16 only: lane 15's partner 16 is outside the mask.
    // SAFETY: exactly the 16 lanes of the mask take this shuffle.
    let half =
        if t % 32 < 16 { (unsafe { shfl_down_i32(0x0000_ffff, (t % 32) as i32, 1) }) as f32 } else { -1.0 };
    // SAFETY: 3 outputs per thread.
    unsafe {
        out.store(3 * t, down);
        out.store(3 * t + 1, all);
        out.store(3 * t + 2, half);
    }
}

/// `cp.async` semantics: thread `t` copies `input[t]` into `smem[t]`;
/// before its wait it still reads the old contents (`out[3 t]`: nothing
/// the block wrote, read through the opt-out on purpose), after it
/// the copy (`out[3 t + 1]`); a zero-filling copy gives 0.0 (`out[3 t + 2]`).
#[kernel(block = 64, shared = 64 * 4)]
pub fn check_async_copies(input: In<f32>, out: Out<f32>) {
    // SAFETY: 64 words, 64 inputs, 3 outputs per thread, each thread its own
    // word; reading before the wait is what this kernel shows.
    unsafe {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.copy_async(0, t, input, t);
        commit_copies();
        out.store(3 * t, smem.get_maybe_uninit(t));
        wait_copies::<0>();
        out.store(3 * t + 1, smem.get(t));
        smem.copy_async_or_zero(0, t, input, t, false);
        commit_copies();
        wait_copies::<0>();
        out.store(3 * t + 2, smem.get(t));
    }
}

/// Exits with a copy in flight.
#[kernel(block = 64, shared = 64 * 4)]
pub fn check_async_never_waited(input: In<f32>) {
    // SAFETY: in bounds; the missing wait is the point.
    unsafe {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.copy_async(0, t, input, t);
    }
    commit_copies();
}

/// Thread 40 reads `x[64]` of a 64-element slice: `get` says `None`, and
/// the kernel's `expect` panics.
#[kernel(block = 64)]
pub fn check_panic(x: Slice<f32>, mut y: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(out) = y.get_mut(i) {
        *out = x.get(i.get() + 24).expect("an element 24 further on");
    }
}

/// Half a warp shuffles down, the other half xor: not the same shuffle.
#[kernel(block = 32)]
pub fn check_mismatched_shuffles(out: Out<f32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: none: the lanes disagree on purpose, which the emulator reports.
    let v =
        unsafe { if t < 16 { shfl_down_f32(FULL_MASK, 1.0, 1) } else { shfl_xor_f32(FULL_MASK, 1.0, 1) } };
    // SAFETY: 32 outputs, one per thread.
    unsafe { out.store(t, v) };
}

/// A dependent launch (it may start while the kernel ahead of it runs)
/// that reads its input before waiting for that kernel.
#[kernel(block = 64, dependent = true)]
pub fn check_dependent_reads_early(input: In<f32>, out: Out<f32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 inputs and outputs; the missing wait is the point.
    let x = unsafe { input.load(t) };
    wait_for_prerequisites();
    // SAFETY: as above.
    unsafe { out.store(t, x) };
}

/// The same, waiting first.
#[kernel(block = 64, dependent = true)]
pub fn check_dependent_waits(input: In<f32>, out: Out<f32>) {
    let t = thread_idx_x() as usize;
    wait_for_prerequisites();
    // SAFETY: 64 inputs and outputs.
    unsafe { out.store(t, 2.0 * input.load(t)) };
}

/// Warp 0 reads the words past its own and writes its own, then arrives
/// on an mbarrier; warp 1 waits for the phase, reads warp 0's words and
/// writes the ones warp 0 read. The arrival (a release) and the wait (an
/// acquire) order both. With `early`, warp 1 also reads before its wait:
/// a race with warp 0's write.
#[kernel(block = 64, shared = 64 * 4 + 8)]
pub fn check_mbarrier_handoff(out: Out<f32>, early: u32) {
    let t = thread_idx_x() as usize;
    // SAFETY: 64 words and an mbarrier of shared memory, 64 threads; the
    // early read is the point.
    unsafe {
        let smem = SharedArray::<f32>::launch_sized();
        let bar = Mbarrier::at(SharedArray::<u64>::launch_sized_at(64 * 4), 0);
        smem.set(t, t as f32);
        if t == 0 {
            bar.init(32);
            fence_init();
        }
        sync_threads();
        if t < 32 {
            let next = smem.get(t + 32);
            smem.set(t, 2.0 * next);
            bar.arrive();
        } else {
            let before = if early != 0 { smem.get(t - 32) } else { 0.0 };
            bar.wait(0);
            let mine = smem.get(t - 32);
            smem.set(t, -mine);
            out.store(t, mine + before);
        }
    }
}

/// `n` zeros on the emulator.
fn zeros(gpu: &Gpu, n: usize) -> DeviceBuffer<f32> {
    gpu.upload(&vec![0.0f32; n]).unwrap()
}

fn emu_error(result: Result<(), Error>) -> EmuError {
    match result {
        Err(Error::Emulator(e)) => e,
        other => panic!("expected an emulator error, got {other:?}"),
    }
}

#[test]
fn the_test_kernels_are_registered_here() {
    let here = registry::module("emulator");
    assert_eq!(here.len(), 14, "{:?}", here.iter().map(|k| k.name).collect::<Vec<_>>());
    assert_eq!(check_race::KERNEL.launch.shared_bytes, 256);
    assert!(check_race::KERNEL.unchecked);
}

#[test]
fn a_planted_race_is_reported_with_kernel_address_and_threads() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 64);
    // SAFETY: the emulator checks every access (the kernel is wrong on purpose).
    let e = emu_error(unsafe { check_race::launch(&gpu, 1, &mut out) });
    let EmuError::Race(ref r) = e else { panic!("expected a race, got {e}") };
    // Thread 0 runs first: it reads word 1 before thread 1 writes it.
    assert_eq!((r.kernel.as_str(), r.space, r.hazard), ("check_race", "shared", "write after read"), "{e}");
    assert_eq!(r.word, "the word at byte 4 of shared memory");
    assert_eq!((r.first.thread, r.first.access), ([0, 0, 0], "read"));
    assert_eq!((r.second.thread, r.second.access), ([1, 0, 0], "write"));
    assert_eq!(r.first.site, format!("cpu/tests/emulator.rs:{}:25", line_of("        let next = smem.get(")));
    assert_eq!(
        r.second.site,
        format!("cpu/tests/emulator.rs:{}:14", line_of("        smem.set(t, t as f32);"))
    );
    let text = e.to_string();
    assert!(
        text.contains(&r.first.site) && text.contains("no sync_threads or sync_warp orders them"),
        "{text}"
    );
}

/// An mbarrier hands words over between warps: the arrival releases the
/// arriving thread's reads and writes, the completed wait acquires them,
/// as PTX's `mbarrier.arrive` and `try_wait` do; a read before the wait
/// still races.
#[test]
fn an_mbarrier_orders_the_arrivals_before_the_wait() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 64);
    // SAFETY: the emulator checks every access.
    unsafe { check_mbarrier_handoff::launch(&gpu, 1, &mut out, 0) }.unwrap();
    let out = gpu.download(&out).unwrap();
    let want: Vec<f32> = (0..64).map(|t| if t < 32 { 0.0 } else { 2.0 * t as f32 }).collect();
    assert_eq!(out, want);
    let mut out = zeros(&gpu, 64);
    // SAFETY: as above (the race is reported, not made).
    let e = emu_error(unsafe { check_mbarrier_handoff::launch(&gpu, 1, &mut out, 1) });
    let EmuError::Race(ref r) = e else { panic!("expected a race, got {e}") };
    let (read, write) = (line_of("early != 0 { smem.get("), line_of("            smem.set(t, 2.0 * next);"));
    let lines =
        [&r.first.site, &r.second.site].map(|s| s.split(':').nth(1).unwrap().parse::<usize>().unwrap());
    assert!(lines.contains(&read) && lines.contains(&write), "{e}");
    assert!(e.to_string().contains("no sync_threads or mbarrier orders them"), "{e}");
}

#[test]
fn out_of_bounds_accesses_name_kernel_block_and_thread() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 64);
    // SAFETY: as above.
    let text = emu_error(unsafe { check_shared_out_of_bounds::launch(&gpu, 1, &mut out) }).to_string();
    assert!(
        text.contains("check_shared_out_of_bounds")
            && text.contains("shared")
            && text.contains("thread [63, 0, 0]"),
        "{text}"
    );
    let input = zeros(&gpu, 64);
    // SAFETY: as above.
    let text =
        emu_error(unsafe { check_global_out_of_bounds::launch(&gpu, 1, &input, &mut out) }).to_string();
    assert!(text.contains("global access out of bounds") && text.contains("thread [63, 0, 0]"), "{text}");
}

#[test]
fn divergent_barriers_and_deadlocks_are_errors_not_hangs() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 64);
    // SAFETY: as above.
    let e = emu_error(unsafe { check_divergent_barrier::launch(&gpu, 1, &mut out) });
    assert!(matches!(e, EmuError::DivergentBarrier { .. }), "{e}");
    // SAFETY: as above.
    let e = emu_error(unsafe { check_shuffle_deadlock::launch(&gpu, 1, &mut out) });
    assert!(matches!(e, EmuError::Deadlock { .. }), "{e}");
    // SAFETY: as above.
    let e = emu_error(unsafe { check_mismatched_shuffles::launch(&gpu, 1, &mut out) }).to_string();
    assert!(e.contains("different warp operations") && e.contains("Down(1)") && e.contains("Xor(1)"), "{e}");
    // Both shuffles' lines, and the lines of a deadlock's shuffle and barrier.
    let line = line_of("{ shfl_down_f32(FULL_MASK, 1.0, 1) } else { shfl_xor");
    assert_eq!(e.matches(&format!("cpu/tests/emulator.rs:{line}:")).count(), 2, "{e}");
    // SAFETY: as above.
    let e = emu_error(unsafe { check_shuffle_deadlock::launch(&gpu, 1, &mut out) }).to_string();
    let (barrier, shuffle) = (
        line_of("        sync_threads();\n        0.0"),
        line_of("{ shfl_down_f32(FULL_MASK, 1.0, 1) }\n    };"),
    );
    assert!(
        e.contains(&format!("emulator.rs:{barrier}:")) && e.contains(&format!("emulator.rs:{shuffle}:")),
        "{e}"
    );
}

/// The CUDA programming guide: a barrier in conditional code must be
/// reached by every thread of the block or by none. Threads that return
/// first skip it; the report names the barrier and who skipped it.
#[test]
fn threads_that_exit_before_a_barrier_make_it_divergent() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 64);
    // SAFETY: 64 outputs for 64 threads.
    let e = emu_error(unsafe { check_exited_threads::launch(&gpu, 1, &mut out) });
    let text = e.to_string();
    assert!(matches!(e, EmuError::DivergentBarrier { .. }), "{text}");
    assert!(text.contains("threads 0..=15 waited") && text.contains("threads 16..=63 skipped"), "{text}");
    assert!(
        text.contains(&format!(
            "cpu/tests/emulator.rs:{}",
            line_of("    sync_threads();\n    // SAFETY: in bounds, written")
        )),
        "{text}"
    );
}

/// The line of this file where `needle` starts.
fn line_of(needle: &str) -> usize {
    let source = include_str!("emulator.rs");
    source[..source.find(needle).expect("the needle is in this file")].matches('\n').count() + 1
}

#[test]
fn shuffles_follow_cuda_semantics() {
    let gpu = Gpu::emulator();
    let mut out = zeros(&gpu, 3 * 64);
    // SAFETY: 3 outputs per thread.
    unsafe { check_shuffles::launch(&gpu, 1, &mut out) }.unwrap();
    let out = gpu.download(&out).unwrap();
    // shfl_down: lanes whose source is past lane 31 keep their own value.
    let mut down: Vec<f32> = (0..32).map(|l| l as f32).collect();
    for delta in [16, 8, 4, 2, 1] {
        down = (0..32).map(|l| down[l] + if l + delta < 32 { down[l + delta] } else { down[l] }).collect();
    }
    for t in 0..64 {
        let lane = t % 32;
        assert_eq!(out[3 * t], down[lane], "down, thread {t}");
        assert_eq!(out[3 * t + 1], 496.0, "xor all-reduce, thread {t}");
        let half = if lane < 15 {
            (lane + 1) as f32
        } else if lane == 15 {
            15.0
        } else {
            -1.0
        };
        assert_eq!(out[3 * t + 2], half, "half-warp mask, thread {t}");
    }
    assert_eq!(down[0], 496.0);
}

/// The memory lab on the emulator: every variant verified, and the
/// analysis the lab's doc comments derive.
#[test]
fn memory_lab_analysis_matches_the_arithmetic() {
    let gpu = Gpu::emulator();
    let lab = lab::Lab;
    let records = lab.run(&Run::verify(&gpu, &Shape::n(8192), &lab.kernels())).unwrap();
    for r in &records {
        assert!(r.verified, "{}: {:?}", r.kernel, r.error);
    }
    let a = |name: &str| records.iter().find(|r| r.kernel == name).unwrap().analysis.unwrap();
    let close = |x: Option<f64>, want: f64| (x.unwrap() - want).abs() < 0.05;
    // Banks.
    assert!(close(a("lab_bank_column_32").shared_load_ways, 32.0));
    for k in [
        "lab_bank_column_33",
        "lab_bank_column_31",
        "lab_bank_row",
        "lab_bank_broadcast",
        "lab_bank_f64_row",
        "lab_bank_f64_column_33",
    ] {
        assert!(close(a(k).shared_load_ways, 1.0), "{k}: {:?}", a(k));
    }
    assert!(close(a("lab_bank_f64_column").shared_load_ways, 16.0));
    // Strides: min(32, 4 * stride) sectors per request.
    for (stride, sectors) in [(1, 4.0), (2, 8.0), (4, 16.0), (8, 32.0), (32, 32.0)] {
        assert!(
            close(a(&format!("lab_copy_stride*{stride}")).global_load_sectors, sectors),
            "stride {stride}"
        );
    }
    // Alignment: one more sector unless the offset is a multiple of 8.
    for (offset, sectors) in [(0, 4.0), (1, 5.0), (7, 5.0), (8, 4.0), (9, 5.0), (32, 4.0)] {
        assert!(
            close(a(&format!("lab_copy_offset+{offset}")).global_load_sectors, sectors),
            "offset {offset}"
        );
    }
    // Layout: SoA and staged loads are coalesced; 16-byte AoS moves 16
    // sectors per request; 12-byte AoS 12 or 13 per load.
    assert!(close(a("lab_len2_soa").global_load_sectors, 4.0));
    assert!(close(a("lab_len2_aos16").global_load_sectors, 16.0));
    let aos12 = a("lab_len2_aos12").global_load_sectors.unwrap();
    assert!((12.0..=13.0).contains(&aos12), "{aos12}");
    assert!(close(a("lab_len2_aos12_staged").global_load_sectors, 4.0));
    assert!(close(a("lab_len2_aos12_staged").shared_load_ways, 1.0));
}

#[test]
fn async_copies_land_at_the_wait_and_must_be_waited_for() {
    let gpu = Gpu::emulator();
    let input: Vec<f32> = (0..64).map(|t| t as f32 + 0.5).collect();
    let da = gpu.upload(&input).unwrap();
    let mut out = gpu.upload(&vec![1.0f32; 3 * 64]).unwrap();
    // SAFETY: 64 inputs, 3 outputs per thread.
    unsafe { check_async_copies::launch(&gpu, 1, &da, &mut out) }.unwrap();
    let out = gpu.download(&out).unwrap();
    for t in 0..64 {
        assert!(out[3 * t].is_nan(), "thread {t} saw its copy before waiting: {}", out[3 * t]);
        assert_eq!(out[3 * t + 1], input[t], "thread {t}: copy after the wait");
        assert_eq!(out[3 * t + 2], 0.0, "thread {t}: zero-filling copy");
    }
    // SAFETY: 64 inputs.
    let text = emu_error(unsafe { check_async_never_waited::launch(&gpu, 1, &da) }).to_string();
    let site = format!(
        "cpu/tests/emulator.rs:{}:",
        line_of("        smem.copy_async(0, t, input, t);\n    }\n    commit_copies();")
    );
    assert!(text.contains("cp.async") && text.contains("never waited") && text.contains(&site), "{text}");
}

#[test]
fn a_dependent_launch_must_wait_before_global_memory() {
    assert!(check_dependent_waits::KERNEL.launch.dependent && !check_race::KERNEL.launch.dependent);
    let gpu = Gpu::emulator();
    let input: Vec<f32> = (0..64).map(|t| t as f32 - 20.25).collect();
    let x = gpu.upload(&input).unwrap();
    let mut out = zeros(&gpu, 64);
    // SAFETY: 64 inputs and outputs.
    unsafe { check_dependent_waits::launch(&gpu, 1, &x, &mut out) }.unwrap();
    let out = gpu.download(&out).unwrap();
    assert!(out.iter().zip(&input).all(|(o, x)| *o == 2.0 * x), "{out:?}");
    let mut out = zeros(&gpu, 64);
    // SAFETY: as above (the early read is reported, not made).
    let e = emu_error(unsafe { check_dependent_reads_early::launch(&gpu, 1, &x, &mut out) });
    let EmuError::Async { ref kernel, thread, ref detail, ref site, .. } = e else { panic!("{e}") };
    assert_eq!((kernel.as_str(), thread), ("check_dependent_reads_early", [0, 0, 0]), "{e}");
    assert!(detail.contains("before `griddepcontrol.wait`"), "{detail}");
    let line = line_of("input.load(t) };\n    wait_for_prerequisites();");
    assert!(site.starts_with(&format!("cpu/tests/emulator.rs:{line}:")), "{site}");
}

/// A panic in a kernel is an error naming the kernel, block, thread and
/// the line that panicked.
#[test]
fn a_panic_names_its_thread_and_line() {
    let gpu = Gpu::emulator();
    let x = zeros(&gpu, 64);
    let mut y = zeros(&gpu, 64);
    let e = emu_error(check_panic::launch(&gpu, 1, &x, &mut y));
    let EmuError::Panic { ref kernel, thread, ref message, .. } = e else { panic!("{e}") };
    assert_eq!((kernel.as_str(), thread), ("check_panic", [40, 0, 0]));
    let site = format!("cpu/tests/emulator.rs:{}:", line_of("        *out = x.get(i.get() + 24).expect("));
    assert!(message.contains("an element 24 further on") && message.contains(&site), "{message}");
}

/// A safe kernel's launcher is a safe function; the buffers it takes follow
/// the parameters (`&` for `Slice`, `&mut` for `DisjointSlice`).
#[test]
fn the_example_kernel_launches_without_unsafe() {
    let gpu = Gpu::emulator();
    let x = gpu.upload(&[1.0f32, -2.0, 3.5]).unwrap();
    let mut y = gpu.alloc::<f32>(3).unwrap();
    gpu::scale::scale::launch(&gpu, 1, &x, &mut y, 2.0).unwrap();
    assert_eq!(gpu.download(&y).unwrap(), vec![2.0, -4.0, 7.0]);
    assert!(!gpu::scale::scale::KERNEL.unchecked);
    // A longer y: the threads past x's end write nothing.
    let mut y = gpu.upload(&[9.0f32; 300]).unwrap();
    gpu::scale::scale::launch(&gpu, 2, &x, &mut y, 2.0).unwrap();
    let y = gpu.download(&y).unwrap();
    assert_eq!(&y[..4], &[2.0, -4.0, 7.0, 9.0]);
    assert!(y[3..].iter().all(|v| *v == 9.0));
}
