//! The shared memory of a block and the producer: Q's tile and a ring of
//! K/V stages, filled by the copy engine (TMA), with the mbarriers that
//! say when a buffer has landed and when its readers are done with it.
//!
//! **Layout** (from the first 1024-byte boundary, which the 128-byte
//! swizzle needs): Q's [`BR`] x `d` tile, then `stages` stages of a K
//! tile and a V tile of `bc` x `d` (FP8: Vᵀ, `d` x `bc`). Every tile is
//! stored as column blocks of [`span_of`] its row's bytes (128, or 64 for
//! a shorter row), each block `rows x span` bytes, rows consecutive: what
//! a TMA box of the tile's rows x `span` bytes with the `span`-byte
//! swizzle writes (one box a block: 16 KB for 128 rows of 128 bytes), and
//! what the `wgmma` descriptors read (K-major: 8-row atoms `8 span` bytes
//! apart, the next 32 bytes of k 32 bytes on; MN-major V: the next 8 keys
//! 1024 bytes on, the next 64 columns one block on).
//!
//! **Mbarriers**: `q_full` (the producer's arrival and Q's bytes),
//! `q_empty` (one arrival per consumer warpgroup once its last `Q Kᵀ` of
//! the tile completed), per stage `k_full` and `v_full` (K's and V's bytes
//! apart, so `Q Kᵀ` starts before V lands), `k_empty` (one arrival per
//! consumer warpgroup once its `Q Kᵀ` of the stage completed) and
//! `v_empty` (the same for `P V`), and the two consumers' turns
//! (`consumer` module). After them, a word per consumer warp that no one
//! reads ([`Smem::pin`]). A [`PipelineState`] counts each ring's uses and
//! names their phases (Q's is a ring of one). Last, the block's plan
//! (`scheduler`).
//!
//! **Order.** The consumers need K of tile `j` with V of tile `j - 1`
//! (`Q K_jᵀ` and `P_{j-1} V_{j-1}` are issued together), and release K a
//! product earlier than V. So the producer copies K one tile ahead of V
//! (`K_0, K_1, V_0, K_2, V_1, ...`), and K's stage is refilled as soon as
//! its `Q Kᵀ` is done, while `P V` of that tile may still run.

use super::scheduler::{AttentionArgs, Deal, PLAN, WorkTile};
use super::{BR, SPAN};
use crate::dev::Element;
use crate::dev::barrier::{Mbarrier, fence_init};
use crate::dev::pipeline::PipelineState;
use crate::dev::schedule::TileScheduler;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, copy_2d};
use crate::dev::wgmma::shared_address;
use crate::dev::{In, SharedArray};

/// Mbarriers: Q's two, the two turns, four per stage (at most 4 stages).
const BARRIERS: usize = 4 + 4 * 4;
/// Pins: a word per consumer warp ([`Smem::pin`]).
const PINS: usize = 8;

/// Shared memory bytes for head dimension `d`, key tiles of `bc`,
/// `stages` stages and elements of `e` bytes: the slack to the 1024-byte
/// boundary, Q, the stages, the mbarriers, the pins, the block's plan.
pub const fn shared_bytes_for(d: usize, bc: usize, stages: usize, e: usize) -> usize {
    1024 + e * BR * d + stages * 2 * e * bc * d + 8 * BARRIERS + 4 * PINS + 4 * PLAN
}

/// The most K/V stages the mbarriers provide for.
pub const MAX_STAGES: usize = 4;

/// The swizzle span of a tile whose rows are `row_bytes` long: 128 bytes,
/// or a shorter row's own 64 (an FP8 row of 64, a Vᵀ row of 64 keys).
pub const fn span_of(row_bytes: usize) -> usize {
    if row_bytes >= SPAN { SPAN } else { row_bytes }
}

/// Whether V's tiles are Vᵀ (`d` x keys): FP8 `wgmma` reads B K-major
/// only, and the keys are `P V`'s k.
pub(in crate::attention) const fn v_transposed<I: Element>() -> bool {
    I::BYTES == 1
}

/// The block's shared memory, as every role sees it.
#[derive(Clone, Copy)]
pub(super) struct Smem {
    /// Q's tile, on a 1024-byte boundary; the stages follow.
    base: *mut u8,
    bars: SharedArray<u64>,
    pins: SharedArray<f32>,
    plan: SharedArray<u32>,
    d: usize,
    bc: usize,
    stages: usize,
    /// Bytes of an input element (2, or 1 for FP8).
    e: usize,
}

impl Smem {
    /// This launch's layout for head dimension `d`, key tiles of `bc`,
    /// `stages` stages, elements of `e` bytes.
    #[inline(always)]
    pub fn new(d: usize, bc: usize, stages: usize, e: usize) -> Smem {
        let base = swizzle_base();
        let bars_at = shared_bytes_for(d, bc, stages, e) - 8 * BARRIERS - 4 * PINS - 4 * PLAN;
        // SAFETY: the launch passes `shared_bytes_for(d, bc, stages, e)`: the
        // mbarriers lie past the slack, Q and the stages, 8-aligned.
        let bars = unsafe { SharedArray::<u64>::launch_sized_at(bars_at) };
        // SAFETY: the pins follow the mbarriers, 4-aligned.
        let pins = unsafe { SharedArray::<f32>::launch_sized_at(bars_at + 8 * BARRIERS) };
        // SAFETY: the plan follows the pins, 4-aligned.
        let plan = unsafe { SharedArray::<u32>::launch_sized_at(bars_at + 8 * BARRIERS + 4 * PINS) };
        Smem { base, bars, pins, plan, d, bc, stages, e }
    }

    /// Bytes of one K (or V) tile.
    #[inline(always)]
    fn kv_bytes(self) -> usize {
        self.e * self.bc * self.d
    }

    /// Q's tile.
    #[inline(always)]
    pub fn q(self) -> *mut u8 {
        self.base
    }

    /// Stage `s`'s K tile.
    #[inline(always)]
    pub fn k(self, s: usize) -> *mut u8 {
        self.base.wrapping_add(self.e * BR * self.d + 2 * s * self.kv_bytes())
    }

    /// Stage `s`'s V tile.
    #[inline(always)]
    pub fn v(self, s: usize) -> *mut u8 {
        self.k(s).wrapping_add(self.kv_bytes())
    }

    /// Consumer warp `w`'s pin (0..8): the word that keeps its `P V` wait
    /// below the softmax ([`crate::dev::wgmma::wait_for_after`]).
    #[inline(always)]
    pub fn pin(self, w: usize) -> SharedArray<f32> {
        // SAFETY: w < PINS, inside the launch's pins.
        unsafe { self.pins.offset(w) }
    }

    /// The block's plan ([`AttentionArgs::plan`]).
    #[inline(always)]
    pub fn plan(self) -> SharedArray<u32> {
        self.plan
    }

    #[inline(always)]
    fn bar(self, i: usize) -> Mbarrier {
        // SAFETY: i < BARRIERS, inside the launch's mbarriers.
        unsafe { Mbarrier::at(self.bars, i) }
    }

    pub fn q_full(self) -> Mbarrier {
        self.bar(0)
    }
    pub fn q_empty(self) -> Mbarrier {
        self.bar(1)
    }
    /// Consumer `c`'s turn to issue its products (`consumer` module).
    pub fn turn(self, c: usize) -> Mbarrier {
        self.bar(2 + c)
    }
    pub fn k_full(self, s: usize) -> Mbarrier {
        self.bar(4 + s)
    }
    pub fn v_full(self, s: usize) -> Mbarrier {
        self.bar(4 + self.stages + s)
    }
    pub fn k_empty(self, s: usize) -> Mbarrier {
        self.bar(4 + 2 * self.stages + s)
    }
    pub fn v_empty(self, s: usize) -> Mbarrier {
        self.bar(4 + 3 * self.stages + s)
    }

    /// The K/V ring at its first use: every role counts the block's key
    /// tiles on it.
    #[inline(always)]
    pub fn ring(self) -> PipelineState {
        PipelineState::new(self.stages)
    }

    /// One thread, before the block's barrier: every mbarrier initialized
    /// (the "empty" ones counting the two consumer
    /// warpgroups, the turns their four warps) and Q's map acquired.
    ///
    /// # Safety
    /// Thread 0 alone; a `sync_threads` follows before any use; `maps`
    /// holds Q's map first.
    #[inline(always)]
    pub unsafe fn init(self, maps: In<u64>) {
        // SAFETY: one thread, before any use (the caller's contract).
        unsafe {
            self.q_full().init(1);
            self.q_empty().init(2);
            self.turn(0).init(4);
            self.turn(1).init(4);
            for s in 0..self.stages {
                self.k_full(s).init(1);
                self.v_full(s).init(1);
                self.k_empty(s).init(2);
                self.v_empty(s).init(2);
            }
            fence_init();
            acquire_map(maps, 0);
        }
    }
}

/// The launch's shared memory from its first 1024-byte boundary, which the
/// 128-byte swizzle needs (the launch passes 1024 bytes of slack for it).
#[inline(always)]
pub(in crate::attention) fn swizzle_base() -> *mut u8 {
    let raw = launch_sized_base();
    raw.wrapping_add((1024 - shared_address(raw) as usize % 1024) % 1024)
}

/// `rows x cols` elements of `e` bytes of the matrix of map `map`, from
/// `(col0, row0)`, into the tile at `at` (column blocks as the layout
/// says), counting on `bar`: `rows / box_rows` boxes of `box_rows` x
/// `span / e` (the map's, `span` = [`span_of`]`(cols e)`) per column block.
///
/// # Safety
/// As for [`copy_2d`]; the tile has `rows x cols` elements at `at`; the
/// map's boxes are as above, and `box_rows` (a multiple of 8) divides
/// `rows`.
#[inline(always)]
pub(in crate::attention) unsafe fn copy_boxes(
    at: *mut u8,
    (maps, map): (In<u64>, usize),
    (col0, row0): (usize, usize),
    (rows, cols, box_rows): (usize, usize, usize),
    e: usize,
    bar: Mbarrier,
) {
    let span = span_of(cols * e);
    let per_box = span / e;
    for cb in 0..cols / per_box {
        for rb in 0..rows / box_rows {
            let dst = at.wrapping_add(cb * rows * span + rb * box_rows * span);
            let at = ((col0 + cb * per_box) as i32, (row0 + rb * box_rows) as i32);
            // SAFETY: the caller's contract; each box on a 1024-byte
            // boundary (rows of `span` bytes, 8-row multiples of 1024 or
            // of 512 with 64-byte rows: the 64-byte swizzle's atom), inside
            // the tile.
            unsafe { copy_2d(dst, maps, map, at, bar) };
        }
    }
}

/// The producer, one thread: for each of the block's tiles (or chunks of
/// one), Q (once the consumers released the last tile's), then each key
/// tile's K and V into the ring, K one tile ahead of V (see the module),
/// each buffer once both consumers released its last round. Map 0 is Q's (`b heads
/// s_q x d`), maps `1 + 2 i` and `2 + 2 i` K/V head `i`'s K and V (`s_k x
/// d` each: rows past `s_k` read as zeros; with FP8, V's map is Vᵀ's, `d
/// x s_k`, columns past `s_k` reading as zeros).
///
/// # Safety
/// One thread; the mbarriers initialized ([`Smem::init`]); `maps` holds
/// `1 + 2 b kv_heads` maps with the swizzle of their rows ([`span_of`]),
/// Q's boxes [`BR`] rows, K's `bc`, Vᵀ's `d`, each a span wide; the
/// consumers walk the same tiles.
#[inline(always)]
pub(super) unsafe fn produce<I: Element>(smem: Smem, maps: In<u64>, p: AttentionArgs) {
    let (d, bc, e) = (smem.d, smem.bc, I::BYTES);
    let bytes = (e * bc * d) as u32;
    // The block's key tiles so far (K's and V's stage and round).
    let mut kv = smem.ring();
    // SAFETY: the plan written before the block's barrier.
    let deal = unsafe { Deal::new(p, smem.plan(), bc) };
    for (n, tile) in deal.work().enumerate() {
        let WorkTile { bh, kvh, q0, j0, key_tiles, .. } = tile;
        let (k_map, v_map) = (1 + 2 * kvh, 2 + 2 * kvh);
        // SAFETY: (all below) the caller's contract: the launch passes
        // these maps, Q's tile and the stages lie in its shared memory,
        // and nothing reads a buffer before its "full" phase completes,
        // nor does this refill one before its readers released it.
        let v_tile = |kv: PipelineState, j: usize| unsafe {
            let s = kv.stage();
            if let Some(phase) = kv.refill_phase() {
                smem.v_empty(s).wait(phase);
            }
            smem.v_full(s).arrive_expect_tx(bytes);
            if v_transposed::<I>() {
                copy_boxes(smem.v(s), (maps, v_map), (j * bc, 0), (d, bc, d), e, smem.v_full(s));
            } else {
                copy_boxes(smem.v(s), (maps, v_map), (0, j * bc), (bc, d, bc), e, smem.v_full(s));
            }
        };
        // SAFETY: as above.
        unsafe {
            acquire_map(maps, k_map);
            acquire_map(maps, v_map);
            if let Some(phase) = PipelineState::new(1).at(n).refill_phase() {
                smem.q_empty().wait(phase);
            }
            smem.q_full().arrive_expect_tx((e * BR * d) as u32);
            copy_boxes(smem.q(), (maps, 0), (0, bh * p.s_q as usize + q0), (BR, d, BR), e, smem.q_full());
        }
        for j in j0..key_tiles {
            let j = j as usize;
            let s = kv.stage();
            // SAFETY: as above.
            unsafe {
                if let Some(phase) = kv.refill_phase() {
                    smem.k_empty(s).wait(phase);
                }
                smem.k_full(s).arrive_expect_tx(bytes);
                copy_boxes(smem.k(s), (maps, k_map), (0, j * bc), (bc, d, bc), e, smem.k_full(s));
            }
            if j > j0 as usize {
                v_tile(kv.previous(), j - 1);
            }
            kv.advance();
        }
        if key_tiles > j0 {
            v_tile(kv.previous(), key_tiles as usize - 1);
        }
    }
}
