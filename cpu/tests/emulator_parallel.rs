//! The emulator on every core: a launch's blocks run on a pool of OS
//! threads, and what it reports does not depend on how many, nor on which
//! block ran first. Kernels wrong on purpose, run on 1 to 4 threads.

use emu::EmuError;
use gpu::dev::atomic::Ordering;
use gpu::dev::{In, Out, block_idx_x, grid_dim_x, thread_idx_x};
use gpu::kernel;
use gpu::launch::registry;
use kernel_lab::Error;
use kernel_lab::runtime::Gpu;

fn emu_error(result: Result<(), Error>) -> EmuError {
    match result {
        Err(Error::Emulator(e)) => e,
        other => panic!("expected an emulator error, got {other:?}"),
    }
}

/// Each block writes its own 64 words; thread 0 of each block also reads
/// word 5 of the next block's, which nothing orders (and keeps it past the
/// blocks' words): a race across blocks in global memory, whichever block
/// runs first.
#[kernel(block = 64)]
pub fn check_race_across_blocks(out: Out<u32>) {
    let (b, t, n) = (block_idx_x() as usize, thread_idx_x() as usize, grid_dim_x() as usize);
    // SAFETY: 64 words a block and one more each; the race is the point.
    unsafe {
        out.store(b * 64 + t, t as u32);
        if t == 0 {
            out.store(n * 64 + b, out.load((b + 1) % n * 64 + 5));
        }
    }
}

/// Thread 0 of each block counts its block (an atomic), then block 7
/// reads far past its input: the count says how many blocks ran.
#[kernel(block = 32)]
pub fn check_fault_after_counting(input: In<u32>, count: Out<u32>) {
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: none for block 7, whose read the emulator stops.
    unsafe {
        count.atomic_add(0, 1, Ordering::Relaxed);
        if block_idx_x() == 7 {
            count.store(1, input.load(1 << 20));
        }
    }
}

/// Blocks run on every core, and the report is the same on every run and
/// on any number of OS threads: a race between blocks is found whichever
/// runs first, and reported as one block after another would meet it.
#[test]
fn a_race_across_blocks_is_reported_alike_on_any_number_of_threads() {
    let gpu = Gpu::emulator();
    let run = |threads| {
        emu::set_threads(Some(threads));
        let mut out = gpu.upload(&vec![0u32; 65 * 64]).unwrap();
        // SAFETY: 64 words a block and one more each (the race is the
        // point).
        let e = emu_error(unsafe { check_race_across_blocks::launch(&gpu, 64, &mut out) });
        emu::set_threads(None);
        e.to_string()
    };
    let one = run(1);
    assert!(one.contains("race") && one.contains("of `out`"), "{one}");
    assert!(one.contains("block [0, 0, 0]") && one.contains("block [1, 0, 0]"), "{one}");
    for _ in 0..4 {
        assert_eq!(run(2), one);
        assert_eq!(run(3), one);
    }
}

/// A parallel run that finds a fault is not the report: the buffers are
/// put back as they were and the grid runs again block after block, so
/// that what the blocks wrote is what that order writes.
#[test]
fn a_fault_found_in_parallel_is_reported_from_the_inputs_as_they_were() {
    let gpu = Gpu::emulator();
    let input = gpu.upload(&[1u32]).unwrap();
    for threads in [1, 2, 4] {
        emu::set_threads(Some(threads));
        let mut count = gpu.upload(&[0u32, 0]).unwrap();
        // SAFETY: block 7 reads out of bounds, which the emulator stops.
        let e = emu_error(unsafe { check_fault_after_counting::launch(&gpu, 64, &input, &mut count) });
        emu::set_threads(None);
        let EmuError::OutOfBounds { block, .. } = e else { panic!("{e}") };
        assert_eq!(block, [7, 0, 0], "{threads} threads");
        assert_eq!(gpu.download(&count).unwrap(), [8, 0], "blocks 0 to 7 counted, on {threads} threads");
    }
}

#[test]
fn the_test_kernels_are_registered_here() {
    assert_eq!(registry::module("emulator_parallel").len(), 3);
}

/// Thread 0 of block `b` waits until the flag of block `b + ahead`
/// (wrapping) is set, then sets its own: with `ahead` = 1 every block but
/// the last waits on a later one; with `ahead` = `n - 1` each waits on the
/// one before it (block 0 on nothing: it sets its flag first).
#[kernel(block = 32)]
pub fn check_wait_on_a_flag(flags: Out<u32>, ahead: u32) {
    if thread_idx_x() != 0 {
        return;
    }
    let (b, n) = (block_idx_x(), grid_dim_x());
    let other = ((b + ahead) % n) as usize;
    // SAFETY: one flag a block; the waits are the point.
    unsafe {
        // The block that waits on nobody: the last for `ahead` = 1, else
        // the first.
        let starts = if ahead == 1 { b == n - 1 } else { b == 0 };
        if !starts {
            while flags.atomic_load(other, Ordering::Acquire) == 0 {}
        }
        flags.atomic_store(b as usize, 1, Ordering::Release);
    }
}

/// A block that polls a word only a later block writes cannot finish on
/// the emulator, which runs blocks in grid order: the launch says which
/// block waits, on which word, at which line, rather than hanging, on any
/// number of OS threads. Waits on earlier blocks (a chain of turns)
/// complete, on any number.
#[test]
fn a_wait_on_a_later_block_is_reported_and_a_wait_on_an_earlier_one_completes() {
    let gpu = Gpu::emulator();
    // The line of the poll, from this file's own text.
    let line = 1 + include_str!("emulator_parallel.rs")
        .lines()
        .position(|l| l.contains("while flags.atomic_load(other"))
        .unwrap();
    for threads in [1, 2, 4] {
        emu::set_threads(Some(threads));
        let mut flags = gpu.upload(&[0u32; 6]).unwrap();
        // SAFETY: six flags, one a block.
        let result = unsafe { check_wait_on_a_flag::launch(&gpu, 6, &mut flags, 1) };
        match emu_error(result) {
            EmuError::Deadlock { block, detail, .. } => {
                assert_eq!(block, [0, 0, 0], "{threads} threads: {detail}");
                assert!(detail.contains("polls byte 4 of `flags` (holding 0x0)"), "{detail}");
                assert!(detail.contains(&format!("emulator_parallel.rs:{line}:")), "{detail}");
            }
            other => panic!("{threads} threads: expected a deadlock, got {other}"),
        }
        let mut flags = gpu.upload(&[0u32; 6]).unwrap();
        // SAFETY: as above.
        unsafe { check_wait_on_a_flag::launch(&gpu, 6, &mut flags, 5) }.unwrap();
        assert_eq!(gpu.download(&flags).unwrap(), [1; 6], "{threads} threads");
    }
    emu::set_threads(None);
}
