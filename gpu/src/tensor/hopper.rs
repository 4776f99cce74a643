//! Hopper's own tensor-core path (sm_90a), steps 4 to 7 of the ladder:
//! `wgmma` reading its operands from shared memory that TMA fills,
//! synchronized by mbarriers. Each step is assembled from the GEMM engine
//! (`crate::gemm`: tiles, element types, the ring) and adds one idea.
//!
//! The bf16 and f16 kernels compute what the `mma.sync` steps do (`C = A
//! B`, row-major 16-bit A and B, `f32` C, any `m`); the tf32 one takes `f32` A
//! and B with B given transposed (`bt`, `n x k` row-major: `C = A bt^T`),
//! because `wgmma` reads tf32 B only K-major. Both read through tensor maps
//! the host encodes for A and B (`maps`: A's, then B's, 16 words each;
//! the kernels take no other handle on A and B). A map's
//! row stride must be a multiple of 16 bytes: for bf16 and f16 `k` and `n`
//! multiples of 8, for tf32 `k` a multiple of 4.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use crate::dev::Tf32;
use crate::dev::barrier::Mbarrier;
use crate::dev::cluster::{cluster_rank, cluster_sync};
use crate::dev::pipeline::PipelineState;
use crate::dev::roles::{Consumer, specialize};
use crate::dev::schedule::{GroupedTiles, TileScheduler, grouped_by};
use crate::dev::tma::{copy_2d, copy_2d_multicast};
use crate::dev::wgmma;
use crate::dev::{In, Out, block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use crate::gemm::element::B_BOX_BYTES;
pub use crate::gemm::element::{B_BOX_COLS, RingElement};
use crate::gemm::ring::{Ring, consume, consume_with, start_ring};
pub use crate::gemm::schedule::GROUP;
use crate::gemm::store::store_at;
use crate::gemm::tile::{A_BYTES, STAGE_BYTES};
pub use crate::gemm::tile::{BM, BN, STAGES, Tile, Wide};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Threads of step 4: two warpgroups, each 64 rows of the block tile.
pub const THREADS: usize = 256;

/// Shared memory of steps 4 to 7: 1024 bytes of slack to put the stages
/// on the 1024-byte boundary the swizzles need, the stages, two mbarriers
/// per stage ("full" and "empty").
pub const fn shared_bytes() -> usize {
    1024 + STAGES * STAGE_BYTES + 16 * STAGES
}

/// The block's start: the ring of this launch, its mbarriers initialized
/// by thread 0 (`consumers` arrivals on each "empty"); and the k-steps of
/// a tile.
#[inline(always)]
fn start<E: RingElement>(maps: In<u64>, consumers: u32, k: u32) -> (Ring<E>, usize) {
    (start_ring::<E, Wide>(maps, consumers), (k as usize).div_ceil(E::BK))
}

/// The producer of steps 5 and 6: one thread fills the ring with every
/// k-step of each tile in `tiles` (their origins), in turn, by `fill(stage,
/// k-step, origin)`, each stage once its consumers released its last round.
///
/// # Safety
/// One thread; the ring initialized with "empty" counting the consumers,
/// which release every stage they consume; `fill` is safe to call for a
/// stage that nothing reads or writes until its "full" phase completes.
#[inline(always)]
unsafe fn produce_with<E: RingElement>(
    ring: Ring<E>,
    tiles: impl Iterator<Item = (usize, usize)>,
    steps: usize,
    fill: impl Fn(usize, usize, (usize, usize)),
) {
    let mut state = PipelineState::new(STAGES);
    for origin in tiles {
        for step in 0..steps {
            // SAFETY: the caller's contract; the stage is free once
            // acquired.
            fill(unsafe { ring.acquire(state) }, step, origin);
            state.advance();
        }
    }
}

/// [`produce_with`] filling from maps 0 and 1 (A's and B's).
///
/// # Safety
/// As for [`produce_with`].
#[inline(always)]
unsafe fn produce<E: RingElement>(ring: Ring<E>, tiles: impl Iterator<Item = (usize, usize)>, steps: usize) {
    // SAFETY: the caller's contract; `fill`'s, for the stage it was handed.
    unsafe { produce_with(ring, tiles, steps, |s, step, origin| ring.fill(s, step, origin)) }
}

/// Warpgroup `wg`'s sums (rows `64 wg..+64` of the block tile at
/// `origin`) into C, `m x n`, inside C only ([`store_at`]).
///
/// # Safety
/// `c` holds `m n` elements; with `PAIRS`, `n` is even; no other thread
/// writes these.
#[inline(always)]
unsafe fn store<const PAIRS: bool>(
    c: &Out<f32>,
    acc: &[f32; 128],
    origin: (usize, usize),
    wg: usize,
    t: u32,
    (m, n): (usize, usize),
) {
    // SAFETY: the caller's contract, C's rows `n` apart from its start.
    unsafe { store_at::<PAIRS, _>(c, acc, Wide::part_at(origin, wg), t, (m, n), (0, n)) }
}

/// 4. `wgmma` fed by TMA and mbarriers.
///
/// Each stage is filled by one thread with five TMA copies (A's 128 x 64
/// box and B's four 64 x 64 boxes, 48 KB) that count their bytes on the
/// stage's mbarrier, so no other thread spends an instruction on loads:
/// the copy engine writes the swizzles, which are the layouts the `wgmma`
/// descriptors read. Each warpgroup multiplies its 64 x 256 piece of C
/// with four `wgmma.m64n256k16` per stage, each 64 x 256 x 16 =
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
/// Launch: `maps` as the module says; the grid covers C with 128 x 256
/// tiles, 256 threads; `k` and `n` multiples of 8.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_bf16`.
#[kernel(block = THREADS, shared = shared_bytes(), tile = [BN, BM], arch = "sm_90a")]
pub fn tc_wgmma_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x() as usize;
    let (ring, steps) = start::<bf16>(maps, 1, k);
    if t == 0 {
        for s in 0..STAGES.min(steps) {
            // SAFETY: thread 0; nothing touches the stage before its wait.
            unsafe { ring.fill(s, s, ring.origin) };
        }
    }
    let wg = t / 128;
    let mut acc = wgmma::zeros();
    let mut state = PipelineState::new(STAGES);
    for step in 0..steps {
        let s = state.stage();
        // SAFETY: initialized above; then the warpgroup, converged, on a
        // landed stage.
        acc = unsafe {
            ring.full(s).wait(state.phase());
            ring.multiply(s, wg, acc)
        };
        state.advance();
        acc = wgmma::wait::<0>(acc);
        // Every warpgroup is done with stage s.
        sync_threads();
        if t == 0 && step + STAGES < steps {
            // SAFETY: as above.
            unsafe { ring.fill(s, step + STAGES, ring.origin) };
        }
    }
    // SAFETY: c holds m n elements; each thread its own.
    unsafe { store::<true>(&c, &acc, ring.origin, wg, (t % 128) as u32, (m as usize, n as usize)) };
}

/// Threads of [`tc_wgmma_ws_bf16()`]: a producer warpgroup and two consumers.
pub const WS_THREADS: usize = 384;

/// 5. Warp specialization: a producer warpgroup and two consumers.
///
/// Step 4's warpgroups both load and multiply, so once per stage they all
/// stop: each waits for its `wgmma`s to finish (`wait_group 0`) and for
/// the block's barrier before the stage can be refilled, and the tensor
/// cores idle meanwhile. Here the roles are split. One thread of the
/// producer warpgroup only fills stages: before reusing stage `s` it waits
/// on the stage's "empty" mbarrier. The two consumer warpgroups only
/// multiply: each waits on the stage's "full" mbarrier, issues its four
/// `wgmma`s, then waits for the *previous* stage's group (`wait_group 1`,
/// so one group is always queued behind the running one) and releases
/// that stage with one arrival on its "empty" mbarrier (count 2, one per
/// consumer). No `sync_threads` after the start: the mbarriers order
/// everything, and the tensor cores always have the next group queued.
///
/// Phases: at round `r = i / STAGES` of stage `s`, consumers wait on
/// "full" with parity `r mod 2`, the producer (from the second round on)
/// on "empty" with parity `(r - 1) mod 2`.
///
/// Launch: as [`tc_wgmma_bf16()`], with 384 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_ws_bf16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, arch = "sm_90a")]
pub fn tc_wgmma_ws_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let (ring, steps) = start::<bf16>(maps, 2, k);
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; "empty" counts the two consumers.
            unsafe { produce(ring, core::iter::once(ring.origin), steps) }
        }
    };
    let consumer = #[inline(always)]
    |Consumer { index, thread }| {
        // SAFETY: the warpgroup, converged; the producer fills these
        // steps; c holds m n elements, each thread its own.
        unsafe {
            let acc = consume(ring, index, steps, &mut PipelineState::new(STAGES));
            store::<true>(&c, &acc, ring.origin, index, thread, (m as usize, n as usize));
        }
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 = 3 x 168 (checked).
    unsafe { specialize::<WS_THREADS, 40, 232>(producer, consumer) };
}

/// 6. Persistent blocks and a grouped tile order.
///
/// ncu on step 5 at 8192^3 shows the memory system, not the tensor cores,
/// at its limit: L2 busy nearly all the time and half its reads missing to
/// DRAM. One block per tile, launched in row order, puts 132 tiles in
/// flight that span 4 tile-rows of A and all 32 tile-columns of B: each
/// wave streams the whole of B. Here one block per SM loops over the
/// tiles (`persistent`), taking them in grouped order ([`GroupedTiles`]): 16
/// tile-rows by 8 tile-columns per wave, half the stripes. And the ring
/// runs on across tiles: the producer fills the next tile's stages while
/// the consumers store the last one's sums, so no tile starts with an
/// empty pipeline.
///
/// Each role counts the k-steps it has seen over all its tiles (a
/// [`PipelineState`]), as in step 5. A consumer
/// releases a stage once the next group is queued, and the last stage of a
/// tile after its final `wait_group 0`.
///
/// Launch: as [`tc_wgmma_ws_bf16()`], one block per SM (fewer if there are
/// fewer tiles).
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_bf16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<bf16>(maps, c, (m, n, k));
}

/// 6, f16: step 6 on IEEE binary16 inputs (`wgmma`'s f16 form; the
/// layouts, copies and ring of the bf16 kernel).
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], with maps of f16 A and B.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_f16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_f16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<f16>(maps, c, (m, n, k));
}

/// 6, tf32: step 6 on `f32` inputs read as tf32, `C = A bt^T` with `bt`
/// the `n x k` transpose of B.
///
/// `wgmma`'s tf32 form is `m64n256k8`: a k8 of 4-byte elements is the same
/// 32 bytes of a shared row as a bf16 k16, so a stage holds 32 of k in the
/// same 48 KB (A 128 x 32, B 256 x 32) and four instructions consume it,
/// at half the multiply-adds: the tensor cores' tf32 rate is half their
/// bf16 rate, and the bytes per multiply-add double. Neither operand may
/// be MN-major, so B comes K-major, one 256 x 32 box per stage from `bt`.
/// Each input loses its low 13 mantissa bits (truncated, 10 kept): the
/// host's error bound allows `2^-10` relative per input.
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], with maps of `f32` A (`m x
/// k`) and `bt` (`n x k`); `k` a multiple of 4 (16-byte rows), any `m` and `n`.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_tf32`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_tf32(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<Tf32>(maps, c, (m, n, k));
}

/// Step 6's body for either element type (see
/// [`tc_wgmma_persistent_bf16`]).
#[inline(always)]
fn persistent<E: RingElement>(maps: In<u64>, c: Out<f32>, (m, n, k): (u32, u32, u32)) {
    let (m, n) = (m as usize, n as usize);
    let (ring, steps) = start::<E>(maps, 2, k);
    let tiles = GroupedTiles { grid: (m.div_ceil(BM), n.div_ceil(BN)), tile: (BM, BN), group: GROUP };
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; "empty" counts the two consumers.
            unsafe { produce(ring, tiles.work(), steps) }
        }
    };
    // An odd n (tf32 only: 16-bit TMA needs multiples of 8) stores element
    // by element; the even store has no branch.
    // SAFETY: the warpgroup, converged; the producer fills these tiles; c
    // holds m n elements, n even with pairs.
    let consumer = #[inline(always)]
    |Consumer { index, thread }| unsafe {
        if E::BYTES == 2 || n.is_multiple_of(2) {
            consume_tiles::<E, true>(ring, tiles, (index, thread), steps, &c, (m, n));
        } else {
            consume_tiles::<E, false>(ring, tiles, (index, thread), steps, &c, (m, n));
        }
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 = 3 x 168 (checked).
    unsafe { specialize::<WS_THREADS, 40, 232>(producer, consumer) };
}

/// A consumer warpgroup of step 6: each of its tiles' sums ([`consume`]),
/// stored ([`store`]).
///
/// # Safety
/// The warpgroup runs it converged; the producer fills `tiles` as here;
/// `c` holds `m n` elements, `n` even with `PAIRS`.
#[inline(always)]
unsafe fn consume_tiles<E: RingElement, const PAIRS: bool>(
    ring: Ring<E>,
    tiles: GroupedTiles,
    (consumer, t): (usize, u32),
    steps: usize,
    c: &Out<f32>,
    (m, n): (usize, usize),
) {
    let mut state = PipelineState::new(STAGES);
    for origin in tiles.work() {
        // SAFETY: the caller's contract.
        unsafe {
            let acc = consume(ring, consumer, steps, &mut state);
            store::<PAIRS>(c, &acc, origin, consumer, t, (m, n));
        }
    }
}

/// Blocks per cluster of [`tc_wgmma_cluster_bf16()`]: two, one above the
/// other in C, sharing their B.
pub const CLUSTER: usize = 2;

impl Ring<bf16> {
    /// Step 7's fill of stage `s`, in the block of rank `rank` of its
    /// cluster: its own A box as in [`Ring::fill`], and its share of B,
    /// boxes `2 rank` and `2 rank + 1` of the four, multicast to every
    /// block of the cluster (whose tiles all start at column `n0`). "full"
    /// expects the whole stage's bytes: its A, its B boxes, and those the
    /// other blocks multicast, which count on it as they land.
    ///
    /// # Safety
    /// One thread of each block; nothing reads or writes the stage in any
    /// block of the cluster until its "full" phase is observed complete,
    /// the stage free in every block (each one's consumers released it).
    #[inline(always)]
    unsafe fn fill_multicast(self, s: usize, step: usize, (m0, n0): (usize, usize), rank: usize) {
        let (at, k0) = (self.stage(s), (step * bf16::BK) as i32);
        let everyone = ((1 << CLUSTER) - 1) as u16;
        // SAFETY: as for `fill`; the B boxes land at the same offsets in
        // every block, each counting them on its own "full".
        unsafe {
            self.full(s).arrive_expect_tx(STAGE_BYTES as u32);
            copy_2d(at, self.maps, 0, (k0, m0 as i32), self.full(s));
            seq!(H in 0..2 {{
                let j = 2 * rank + H;
                let box_at = at.wrapping_add(A_BYTES + j * B_BOX_BYTES);
                copy_2d_multicast(box_at, self.maps, 1, ((n0 + j * B_BOX_COLS) as i32, k0), self.full(s), everyone);
            }});
        }
    }
}

/// 7. Thread-block clusters and TMA multicast.
///
/// In step 6 two blocks on tiles one above the other read the same B
/// stripe from L2, each for itself: per stage 16 KB of A and 32 KB of B a
/// block, and L2 serves every byte once per block. Here the two are one
/// cluster of 2 (`cluster = [2, 1, 1]`): each block's producer copies its
/// own A box and *half* of B, and multicasts that half into both blocks'
/// shared memory (`copy_2d_multicast`, mask `0b11`). A stage still holds
/// all 48 KB in each block, but the pair asks L2 for 2 x 16 + 32 = 64 KB
/// instead of 96: a third less traffic per multiply-add.
///
/// The price is coupling. A producer now writes into its peer's stage, so
/// it must wait until the *peer's* consumers are done with it too: each
/// consumer warpgroup releases a stage on the "empty" mbarrier of both
/// blocks (`arrive_in(rank)`: `mapa` and a remote arrive), and "empty"
/// counts 2 x 2 arrivals. "full" expects 48 KB in each block, which the
/// two producers' copies complete between them. The mbarriers must be
/// initialized in both blocks before either uses the other's (a cluster
/// barrier after the initialization), and no block may exit while its
/// peer can still arrive on its mbarriers (a cluster barrier at the end).
///
/// The persistent schedule of step 6 runs over cluster tiles of 256 x
/// 256 (the pair's tiles), in grouped order with the same stripes per
/// group; the block of rank `r` takes rows `128 r..+128` of each.
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], in whole clusters of 2.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_cluster_bf16`.
#[kernel(
    block = WS_THREADS,
    shared = shared_bytes(),
    tile = [BN, BM],
    min_blocks = 1,
    persistent = true,
    cluster = [CLUSTER, 1, 1],
    arch = "sm_90a"
)]
pub fn tc_wgmma_cluster_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let (m, n) = (m as usize, n as usize);
    let rank = cluster_rank() as usize;
    let ring = Ring::<bf16>::new(maps);
    if thread_idx_x() == 0 {
        // SAFETY: thread 0; the cluster barrier follows. "empty" counts
        // both consumers of every block of the cluster.
        unsafe { ring.init(2 * CLUSTER as u32) };
    }
    // Both blocks' mbarriers initialized and visible cluster-wide before
    // either arrives on or copies into the other's.
    cluster_sync();
    let steps = (k as usize).div_ceil(bf16::BK);
    let grid = (m.div_ceil(CLUSTER * BM), n.div_ceil(BN));
    let clusters = grid_dim_x() as usize / CLUSTER;
    // This cluster's tiles, and this block's part of each (rows 128 rank..).
    let tiles = (block_idx_x() as usize / CLUSTER..grid.0 * grid.1).step_by(clusters.max(1)).map(|tile| {
        let (tm, tn) = grouped_by(GROUP / CLUSTER, tile, grid);
        ((CLUSTER * tm + rank) * BM, tn * BN)
    });
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; "empty" counts every consumer of the
            // cluster, so a stage is free in both blocks when it is here.
            unsafe {
                produce_with(ring, tiles.clone(), steps, |s, step, origin| {
                    ring.fill_multicast(s, step, origin, rank)
                })
            }
        }
    };
    let consumer = #[inline(always)]
    |Consumer { index, thread }| {
        {
            let mut state = PipelineState::new(STAGES);
            // SAFETY: the warpgroup, converged; the producers fill these
            // tiles; each stage is released in both blocks, whose "empty"
            // expect it (initialized before the cluster barrier, and
            // neither block exits before the one below).
            let release = |empty: Mbarrier| unsafe {
                for r in 0..CLUSTER as u32 {
                    empty.arrive_in(r);
                }
            };
            for origin in tiles.clone() {
                // SAFETY: as above; c holds m n elements, n even (TMA's
                // 16-byte rows), each thread its own.
                unsafe {
                    let acc = consume_with(ring, index, steps, &mut state, release);
                    store::<true>(&c, &acc, origin, index, thread, (m, n));
                }
            }
        }
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 = 3 x 168 (checked).
    unsafe { specialize::<WS_THREADS, 40, 232>(producer, consumer) };
    // The peer may still arrive on this block's "empty" mbarriers.
    cluster_sync();
}
