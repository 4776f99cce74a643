//! Hopper's own tensor-core path (sm_90a): `wgmma` reading its operands
//! from shared memory that TMA fills, synchronized by mbarriers.
//!
//! Every kernel here computes what the `mma.sync` steps do (`C = A B`,
//! row-major bf16 A and B, `f32` C, any `m`), through tensor maps the host
//! encodes for A and B (`maps`: A's, then B's, 16 words each; `a` and `b`
//! are passed as well, the buffers the maps point into). A map's row
//! stride must be a multiple of 16 bytes: `k` and `n` multiples of 8.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use crate::dev::barrier::{Mbarrier, fence_init};
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, copy_2d};
use crate::dev::wgmma::{self, Descriptor, d_f32, shared_address};
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use seq_macro::seq;

/// Block tile: 128 x 256 of C, 64 of k per stage (one 128-byte swizzle
/// row of bf16).
pub const BM: usize = 128;
pub const BN: usize = 256;
pub const BK: usize = 64;
/// Columns of B per TMA box: one 128-byte row.
pub const B_BOX_COLS: usize = 64;
/// Two warpgroups, each 64 rows of the block tile.
pub const THREADS: usize = 256;
/// Stages in the ring.
pub const STAGES: usize = 4;

/// Bytes of a stage: A's 128 x 64 box, then B's four 64 x 64 boxes.
const A_BYTES: usize = 2 * BM * BK;
const B_BOX_BYTES: usize = 2 * BK * B_BOX_COLS;
const STAGE_BYTES: usize = A_BYTES + 2 * BK * BN;

/// Shared memory: 1024 bytes of slack to put the stages on the 1024-byte
/// boundary the 128-byte swizzle needs, the stages, one mbarrier per stage.
pub const fn shared_bytes() -> usize {
    1024 + STAGES * STAGE_BYTES + 8 * STAGES
}

/// 4. `wgmma` fed by TMA and mbarriers.
///
/// Each stage is filled by one thread with five TMA copies (A's 128 x 64
/// box and B's four 64 x 64 boxes, 48 KB) that count their bytes on the
/// stage's mbarrier, so no other thread spends an instruction on loads:
/// the copy engine writes the 128-byte swizzle, which is the layout the
/// `wgmma` descriptors read. Each warpgroup multiplies its 64 x 256 piece
/// of C with four `wgmma.m64n256k16` per stage, each 64 x 256 x 16 =
/// 262,144 multiply-adds in one instruction for 128 threads (a k16 of
/// `mma.sync` m16n8k16 tiles would take 128 instructions per warpgroup),
/// with 128 `f32` accumulators per thread.
///
/// The ring: `STAGES - 1` stages are in flight while one is multiplied.
/// At its `i`-th use stage `s` is waited for with parity `(i / STAGES) mod
/// 2`; after the multiplies have completed (`wgmma.wait_group 0`) and a
/// barrier, thread 0 refills it with the k-step `STAGES` ahead. That wait
/// and barrier stall the tensor cores once per stage, which is what step 5
/// (producer and consumer warpgroups) removes.
///
/// Descriptors (`dev::wgmma`): A is K-major, 8-row groups 1024 bytes apart
/// (SBO), the k16 steps 32 bytes apart in the row; B is MN-major, k-row
/// groups of 8 1024 bytes apart (SBO) and its 64-column boxes `B_BOX_BYTES`
/// apart (LBO), k16 steps 2048 bytes apart.
///
/// Launch: `maps` as the module says; the grid covers C with 128 x 256
/// tiles, 256 threads; `k` and `n` multiples of 8.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_bf16`.
#[kernel(block = THREADS, shared = shared_bytes(), tile = [BN, BM])]
pub fn tc_wgmma_bf16(maps: In<u64>, a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    // The copy engine reads A and B through the maps.
    let _ = (a, b);
    let t = thread_idx_x() as usize;
    let (m0, n0) = (block_idx_y() as usize * BM, block_idx_x() as usize * BN);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let raw = launch_sized_base();
    let stages = raw.wrapping_add((1024 - shared_address(raw) as usize % 1024) % 1024);
    // SAFETY: STAGES mbarriers after the stages and the slack, 8-aligned.
    let bars = unsafe { SharedArray::<u64>::launch_sized_at(1024 + STAGES * STAGE_BYTES) };
    // SAFETY: s < STAGES.
    let full = |s: usize| unsafe { Mbarrier::at(bars, s) };
    let stage = |s: usize| stages.wrapping_add(s * STAGE_BYTES);

    if t == 0 {
        for s in 0..STAGES {
            // SAFETY: one thread, before any use; the fence and barrier
            // below publish it.
            unsafe { full(s).init(1) };
        }
        fence_init();
        // SAFETY: the launch passes two maps.
        unsafe { (acquire_map(maps, 0), acquire_map(maps, 1)) };
    }
    sync_threads();

    let steps = k.div_ceil(BK);
    // Thread 0: the k-step `step` into stage `s`, its bytes on `full(s)`.
    let fill = |s: usize, step: usize| {
        let (at, k0) = (stage(s), (step * BK) as i32);
        // SAFETY: the stage is 1024-aligned with room for the five boxes;
        // the maps are the launch's; the phase expects one arrival, with
        // the boxes' bytes (out-of-bounds elements are zeros, and count).
        unsafe {
            full(s).arrive_expect_tx(STAGE_BYTES as u32);
            copy_2d(at, maps, 0, (k0, m0 as i32), full(s));
            seq!(J in 0..4 {
                copy_2d(at.wrapping_add(A_BYTES + J * B_BOX_BYTES), maps, 1,
                    ((n0 + J * B_BOX_COLS) as i32, k0), full(s));
            });
        }
    };
    if t == 0 {
        for s in 0..STAGES.min(steps) {
            fill(s, s);
        }
    }

    let wg = t / 128;
    let mut acc = wgmma::zeros();
    for step in 0..steps {
        let s = step % STAGES;
        // SAFETY: initialized above.
        unsafe { full(s).wait(((step / STAGES) % 2) as u32) };
        let (a_at, b_at) = (shared_address(stage(s)) + (wg * 64 * 128) as u32, shared_address(stage(s)) + A_BYTES as u32);
        wgmma::fence();
        seq!(KK in 0..4 {{
            let da = Descriptor::swizzled_128(a_at + 32 * KK, 16, 1024);
            let db = Descriptor::swizzled_128(b_at + 2048 * KK, B_BOX_BYTES as u32, 1024);
            // SAFETY: the warpgroup runs this converged; the stage's bytes
            // have landed (the wait above).
            acc = unsafe { wgmma::mma_m64n256k16_bf16(acc, da, db, true) };
        }});
        wgmma::commit();
        acc = wgmma::wait::<0>(acc);
        // Every warpgroup is done with stage s.
        sync_threads();
        if t == 0 && step + STAGES < steps {
            fill(s, step + STAGES);
        }
    }

    let (row0, wt) = (m0 + 64 * wg, (t % 128) as u32);
    seq!(I in 0..128 {{
        let (r, col) = d_f32(wt, I);
        let (row, col) = (row0 + r as usize, n0 + col as usize);
        if row < m && col < n {
            // SAFETY: inside C; this thread's element alone.
            unsafe { c.store(row * n + col, acc[I]) };
        }
    }});
}
