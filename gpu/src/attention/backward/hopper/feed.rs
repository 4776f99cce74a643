//! What the producer warpgroup does, and what every role shares: the
//! block's shared memory ([`Smem`]), its place in the problem ([`Args`]),
//! and the producer's three roles. One thread copies K and V once and Q
//! and dO a tile ([`produce`]); a warp loads each tile's rows
//! ([`load_rows`]); one thread adds each tile's dQ into its `f32` sum
//! ([`write_dq`]).

use super::super::super::LOG2_E;
use super::super::super::hopper::SPAN;
use super::super::super::hopper::pipeline::{copy_boxes, swizzle_base};
use super::super::{BR, CAUSAL, DETERMINISTIC, key_tile, turn};
use super::{BC, STAGES};
use crate::dev::atomic::{Ordering, fence};
use crate::dev::barrier::Mbarrier;
use crate::dev::pipeline::PipelineState;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, bulk_commit, bulk_wait, bulk_wait_read, reduce_add_3d};
use crate::dev::{In, Out, SharedArray, block_idx_y, grid_dim_x};

/// Mbarriers: K/V's, each stage's full and empty, the consumers' dS
/// tiles written, each dQ buffer's full and empty.
const BARRIERS: usize = 1 + 2 * STAGES + 1 + 2 * DQ_BUFFERS;

/// dQ buffers: the writer adds one tile's dQ while the consumers fill the
/// next.
pub(super) const DQ_BUFFERS: usize = 2;

/// Bytes of one dQ buffer (`64 x d` `f32`s, as `d / 32` TMA boxes of 64
/// rows by 128 bytes).
const fn dq_bytes(d: usize) -> usize {
    4 * BR * d
}

/// Shared memory bytes at head dimension `d`: the slack to the 1024-byte
/// boundary the swizzle needs, K and V, the stages, the dS tiles, the dQ
/// buffers, the stages' rows (`lse log2 e` and D), the mbarriers.
pub const fn shared_bytes(d: usize) -> usize {
    1024 + 2 * 2 * BC * d
        + STAGES * 2 * 2 * BR * d
        + 2 * 2 * BR * 64
        + DQ_BUFFERS * dq_bytes(d)
        + STAGES * 2 * 4 * BR
        + 8 * BARRIERS
}

/// The block's shared memory, as every role sees it. Every 16-bit tile is
/// stored as `d / 64` column blocks of `rows x 128` bytes (what a TMA box
/// with the 128-byte swizzle writes, and what the descriptors read); a dQ
/// buffer as `d / 32` boxes of 64 rows of 32 `f32`s, swizzled alike.
#[derive(Clone, Copy)]
pub(super) struct Smem {
    base: *mut u8,
    bars: SharedArray<u64>,
    pub(super) d: usize,
}

impl Smem {
    #[inline(always)]
    pub(super) fn new(d: usize) -> Smem {
        let base = swizzle_base();
        // SAFETY: the launch passes `shared_bytes(d)`: the mbarriers lie
        // past the slack and the tiles, 8-aligned.
        let bars = unsafe { SharedArray::<u64>::launch_sized_at(shared_bytes(d) - 8 * BARRIERS) };
        Smem { base, bars, d }
    }
    #[inline(always)]
    pub(super) fn k(self) -> *mut u8 {
        self.base
    }
    #[inline(always)]
    pub(super) fn v(self) -> *mut u8 {
        self.base.wrapping_add(2 * BC * self.d)
    }
    /// Stage `s`'s Q tile.
    #[inline(always)]
    pub(super) fn q(self, s: usize) -> *mut u8 {
        self.base.wrapping_add(4 * BC * self.d + s * 4 * BR * self.d)
    }
    /// Stage `s`'s dO tile.
    #[inline(always)]
    pub(super) fn d_o(self, s: usize) -> *mut u8 {
        self.q(s).wrapping_add(2 * BR * self.d)
    }
    /// Consumer `c`'s dS tile: 64 queries x its 64 keys, K-major; the two
    /// side by side are the block's dS, 64 queries x 128 keys.
    #[inline(always)]
    pub(super) fn ds(self, c: usize) -> *mut u8 {
        self.q(STAGES).wrapping_add(c * 2 * BR * 64)
    }
    /// dQ buffer `b`.
    #[inline(always)]
    pub(super) fn dq(self, b: usize) -> *mut u8 {
        self.ds(2).wrapping_add(b * dq_bytes(self.d))
    }
    /// Stage `s`'s rows: the tile's 64 `lse log2 e`, then its 64 D.
    #[inline(always)]
    pub(super) fn rows(self, s: usize) -> SharedArray<f32> {
        // SAFETY: inside the launch's shared memory (`shared_bytes`),
        // 4-aligned.
        unsafe { Self::array(self.dq(DQ_BUFFERS).wrapping_add(s * 2 * 4 * BR)) }
    }
    /// The region at `p` (one of the above) as an array of `T`.
    ///
    /// # Safety
    /// `p` lies in the launch's shared memory, aligned for `T`.
    #[inline(always)]
    pub(super) unsafe fn array<T: Copy>(p: *mut u8) -> SharedArray<T> {
        // SAFETY: the caller's contract.
        unsafe { SharedArray::<T>::launch_sized_at(p as usize - launch_sized_base() as usize) }
    }
    #[inline(always)]
    pub(super) fn bar(self, i: usize) -> Mbarrier {
        // SAFETY: i < BARRIERS, inside the launch's mbarriers.
        unsafe { Mbarrier::at(self.bars, i) }
    }
    pub(super) fn kv_full(self) -> Mbarrier {
        self.bar(0)
    }
    /// Stage `s` holds its tiles and rows (the copy thread's arrival with
    /// the bytes, and the row loader's 32 lanes).
    pub(super) fn q_full(self, s: usize) -> Mbarrier {
        self.bar(1 + s)
    }
    pub(super) fn q_empty(self, s: usize) -> Mbarrier {
        self.bar(1 + STAGES + s)
    }
    /// Waits until both consumers released the stage `ring` refills (at
    /// once in the first round).
    ///
    /// # Safety
    /// Initialized; each consumer releases each stage once a use.
    #[inline(always)]
    pub(super) unsafe fn released(self, ring: PipelineState) {
        if let Some(phase) = ring.refill_phase() {
            // SAFETY: the caller's contract.
            unsafe { self.q_empty(ring.stage()).wait(phase) };
        }
    }
    /// Both consumers' dS tiles of a tile are written (256 arrivals, a
    /// phase a tile).
    pub(super) fn ds_ready(self) -> Mbarrier {
        self.bar(1 + 2 * STAGES)
    }
    /// dQ buffer `b` holds a tile's dQ, and both consumers' dQ products
    /// of that tile are done with the dS tiles (256 arrivals).
    pub(super) fn dq_full(self, b: usize) -> Mbarrier {
        self.bar(2 + 2 * STAGES + b)
    }
    /// The writer's adds have read dQ buffer `b` (one arrival).
    pub(super) fn dq_empty(self, b: usize) -> Mbarrier {
        self.bar(2 + 2 * STAGES + DQ_BUFFERS + b)
    }
}

/// The block's place and the problem (the same for every role).
#[derive(Clone, Copy)]
pub(super) struct Args {
    /// The first query head of the block's K/V head, among `b heads`.
    pub(super) head0: u32,
    /// The group's query heads.
    pub(super) group: u32,
    /// The block's K/V head among `b kv_heads` (its maps' index).
    pub(super) kv_head: u32,
    pub(super) k0: u32,
    pub(super) s_q: u32,
    pub(super) s_k: u32,
    pub(super) causal: bool,
    /// dQ's parts added in a fixed order ([`DETERMINISTIC`]).
    pub(super) ordered: bool,
    /// The first query tile and the tiles a head.
    pub(super) first_tile: u32,
    pub(super) per_head: u32,
}

impl Args {
    /// The launch's block.
    #[inline(always)]
    pub(super) fn new((heads, kv_heads, s_q, s_k): (u32, u32, u32, u32), flags: u32) -> Args {
        let (heads, kv_heads) = (heads.max(1), kv_heads.max(1));
        let group = (heads / kv_heads).max(1);
        let bkv = block_idx_y();
        let (b, kvh) = (bkv / kv_heads, bkv % kv_heads);
        let ordered = flags & DETERMINISTIC != 0;
        let k0 = key_tile(ordered) * BC as u32;
        let causal = flags & CAUSAL != 0;
        // The first query that sees the block's first key, and its tile.
        let first_tile = if causal { (k0 + s_q).saturating_sub(s_k) } else { 0 } / BR as u32;
        Args {
            head0: b * heads + kvh * group,
            group,
            kv_head: bkv,
            k0,
            s_q,
            s_k,
            causal,
            ordered,
            first_tile,
            per_head: s_q.div_ceil(BR as u32) - first_tile,
        }
    }

    /// The block's first query tile: its row among `b heads s_q` (its
    /// head's first) and its first query.
    #[inline(always)]
    pub(super) fn first(self) -> (u32, u32) {
        (self.head0 * self.s_q, self.first_tile * BR as u32)
    }

    /// The query tile after `(rows, q0)`: the next of its head, or the
    /// first of the next head (a running walk holds two words, not the
    /// divisions and the place of a tile by its index).
    #[inline(always)]
    pub(super) fn next(self, (rows, q0): (u32, u32)) -> (u32, u32) {
        if q0 + (BR as u32) < self.s_q {
            (rows, q0 + BR as u32)
        } else {
            (rows + self.s_q, self.first_tile * BR as u32)
        }
    }

    #[inline(always)]
    pub(super) fn tiles(self) -> u32 {
        self.group * self.per_head
    }

    /// The block's query tiles in order, each as `(rows, q0)` with its use
    /// of a ring of `stages`: what each role of the producer walks.
    #[inline(always)]
    pub(super) fn walk(self, stages: usize, mut each: impl FnMut((u32, u32), PipelineState)) {
        let mut ring = PipelineState::new(stages);
        let mut at = self.first();
        for _ in 0..self.tiles() {
            let tile = at;
            at = self.next(at);
            each(tile, ring);
            ring.advance();
        }
    }

    /// The turn counter of the query tile `(rows, q0)` (the ordered mode).
    #[inline(always)]
    pub(super) fn counter(self, rows: u32, q0: u32) -> usize {
        ((rows / self.s_q.max(1)) * self.s_q.div_ceil(BR as u32) + q0 / BR as u32) as usize
    }

    /// The value of the turn counter of the query tile at `q0` at which
    /// this block adds into it (the ordered mode: [`turn`]).
    #[inline(always)]
    pub(super) fn my_turn(self, q0: u32) -> u32 {
        // (The grid's x is the key tiles.)
        turn(self.k0 / BC as u32, q0, (self.s_q, self.s_k), self.causal, (BC as u32, grid_dim_x()))
    }
}

/// The producer, one thread: K and V once, then each query tile's Q and
/// dO into the ring, each stage once both consumers released it. Maps: 0
/// Q's and 1 dO's (`b heads s_q x d`, boxes of 64 x 64), 2 dQ's sum
/// ([`write_dq`]), then each K/V head's K and V (`s_k x d`, boxes of 128
/// x 64).
///
/// # Safety
/// One thread; the mbarriers initialized; the consumers walk the same
/// tiles.
#[inline(always)]
pub(super) unsafe fn produce(smem: Smem, maps: In<u64>, a: Args) {
    let d = smem.d;
    let (k_map, v_map) = (3 + 2 * a.kv_head as usize, 4 + 2 * a.kv_head as usize);
    // SAFETY: (all below) the caller's contract: these maps are the
    // launch's, the tiles lie in its shared memory, and no stage is
    // refilled before both consumers released it.
    unsafe {
        for m in [0, 1, k_map, v_map] {
            acquire_map(maps, m);
        }
        smem.kv_full().arrive_expect_tx((2 * 2 * BC * d) as u32);
        copy_boxes(smem.k(), (maps, k_map), (0, a.k0 as usize), (BC, d, BC), 2, smem.kv_full());
        copy_boxes(smem.v(), (maps, v_map), (0, a.k0 as usize), (BC, d, BC), 2, smem.kv_full());
    }
    a.walk(STAGES, |(rows, q0), ring| {
        let s = ring.stage();
        // SAFETY: as above.
        unsafe {
            smem.released(ring);
            smem.q_full(s).arrive_expect_tx((2 * 2 * BR * d) as u32);
            copy_boxes(smem.q(s), (maps, 0), (0, (rows + q0) as usize), (BR, d, BR), 2, smem.q_full(s));
            copy_boxes(smem.d_o(s), (maps, 1), (0, (rows + q0) as usize), (BR, d, BR), 2, smem.q_full(s));
        }
    });
}

/// The row loader, a warp: each query tile's `lse log2 e` and D (`+inf`
/// and 0 past `s_q`: such a query's P is 0) into its stage beside Q and
/// dO, a lane two rows, each lane arriving on the stage's "full" barrier
/// once its stores are done. The consumers then read them from shared
/// memory, rather than waiting on global loads between their products.
///
/// # Safety
/// The warp; the mbarriers initialized; the consumers walk the same
/// tiles; `lse` and `delta` hold the problem's rows.
#[inline(always)]
pub(super) unsafe fn load_rows(smem: Smem, a: Args, (lse, delta): (In<f32>, In<f32>), lane: u32) {
    a.walk(STAGES, |(rows, q0), ring| {
        // SAFETY: (all below) initialized; the stage released by both
        // consumers; rows of the problem's; inside the stage's rows.
        unsafe {
            smem.released(ring);
            let out = smem.rows(ring.stage());
            let row = |r: u32| {
                let query = q0 + r;
                let (l, dd) = if query < a.s_q {
                    let row = (rows + query) as usize;
                    (lse.load(row) * LOG2_E, delta.load(row))
                } else {
                    (f32::INFINITY, 0.0)
                };
                out.set(r as usize, l);
                out.set(BR + r as usize, dd);
            };
            row(lane);
            row(lane + 32);
            smem.q_full(ring.stage()).arrive();
        }
    });
}

/// The dQ writer, one thread: each tile's dQ, once both consumers filled
/// a buffer, added into dQ's `f32` sum by TMA reductions (map 2: `b heads`
/// planes of `s_q x d`, boxes of 64 rows x 32 columns; rows past `s_q`
/// fall outside the plane and are dropped), and the buffer released once
/// read. In the ordered mode ([`DETERMINISTIC`]), the block adds when
/// the query tile's counter reads its turn ([`turn`]), waits for its adds
/// to complete, and moves the counter on.
///
/// # Safety
/// One thread; the mbarriers initialized; the consumers walk the same
/// tiles; `turns` holds a counter a query tile.
#[inline(always)]
pub(super) unsafe fn write_dq(smem: Smem, maps: In<u64>, a: Args, turns: &Out<u32>) {
    let d = smem.d;
    // SAFETY: the launch's map.
    unsafe { acquire_map(maps, 2) };
    a.walk(DQ_BUFFERS, |(rows, q0), ring| {
        let b = ring.stage();
        let counter = a.counter(rows, q0);
        // SAFETY: (all below) initialized; the buffer filled and fenced by
        // every consumer thread before its arrival; `counter` one of the
        // launch's.
        unsafe {
            smem.dq_full(b).wait(ring.phase());
            if a.ordered {
                while turns.atomic_load(counter, Ordering::Acquire) != a.my_turn(q0) {}
            }
            let head = (rows / a.s_q) as i32;
            for x in 0..d / 32 {
                reduce_add_3d(
                    smem.dq(b).wrapping_add(x * 64 * SPAN),
                    maps,
                    2,
                    ((32 * x) as i32, q0 as i32, head),
                );
            }
            bulk_commit();
            if a.ordered {
                // The adds performed, then published.
                bulk_wait::<0>();
                fence();
                turns.atomic_store(counter, a.my_turn(q0) + 1, Ordering::Release);
            } else {
                bulk_wait_read::<0>();
            }
            smem.dq_empty(b).arrive();
        }
    });
}
