//! Warp specialization: a block of warpgroups split into one producer,
//! which issues the copies, and consumers, which multiply (sm_90a).
//!
//! The producer needs few registers and the consumers many (their
//! accumulators), so at the split the producer warpgroup hands registers
//! back ([`registers::release`]) and the consumers take them
//! ([`registers::claim`]). The counts must fit what the block was given:
//! ptxas allocates a kernel that uses `setmaxnreg` the most `.maxntid`
//! allows (65536 registers over the block's threads, down to a multiple
//! of 8: 168 for 384 threads), so `PRODUCER + (W - 1) CONSUMER <= W x
//! that` for `W` warpgroups. [`specialize`] checks it when it compiles.

use crate::registers;
use crate::thread::thread_idx_x;

/// Threads of a warpgroup.
pub const WARPGROUP: usize = 128;

/// A consumer thread: its warpgroup's index among the consumers (0 for
/// the block's second warpgroup) and its index in the warpgroup.
#[derive(Clone, Copy)]
pub struct Consumer {
    pub index: usize,
    pub thread: u32,
}

/// Registers a thread of a `threads`-thread block gets from ptxas when the
/// kernel moves registers between warpgroups (one block an SM).
pub const fn launch_registers(threads: usize) -> u32 {
    let each = 65536 / threads as u32;
    let each = each - each % 8;
    if each > 256 { 256 } else { each }
}

/// Splits a block of `THREADS` into the producer warpgroup, left with
/// `PRODUCER` registers a thread, which runs `producer(leader)` (`leader`:
/// its thread 0, which issues the copies), and consumers with `CONSUMER`
/// registers each, which run `consumer`.
///
/// Each role's code lies in its own branch, up to the block's end: ptxas
/// keeps a register count only for code that one count reaches (where
/// the roles' paths join, it ignores `setmaxnreg`).
///
/// # Safety
/// Every thread of the block calls it, converged, once; the kernel is
/// compiled for sm_90a with one block an SM (`min_blocks = 1`).
#[inline(always)]
pub unsafe fn specialize<const THREADS: usize, const PRODUCER: u32, const CONSUMER: u32>(
    producer: impl FnOnce(bool),
    consumer: impl FnOnce(Consumer),
) {
    const {
        assert!(
            THREADS.is_multiple_of(WARPGROUP) && THREADS >= 2 * WARPGROUP,
            "whole warpgroups, a consumer at least"
        );
        let groups = (THREADS / WARPGROUP) as u32;
        assert!(
            PRODUCER + (groups - 1) * CONSUMER <= groups * launch_registers(THREADS),
            "the warpgroups' registers exceed what the block is given"
        );
    };
    let t = thread_idx_x() as usize;
    if t < WARPGROUP {
        // SAFETY: the warpgroup, converged (the caller's contract); the
        // block was given at least this many registers a thread.
        unsafe { registers::release::<PRODUCER>() };
        producer(t == 0);
    } else {
        // SAFETY: as above; the producer released what this claims (the
        // budget checked above).
        unsafe { registers::claim::<CONSUMER>() };
        consumer(Consumer { index: t / WARPGROUP - 1, thread: (t % WARPGROUP) as u32 });
    }
}
