//! Step 3 of the backward, FlashAttention-3 style (sm_90a): the copy
//! engine feeds shared memory, `wgmma` runs the five products, and the
//! warps wait on nothing but mbarriers.
//!
//! **Roles** ([`crate::dev::roles::specialize`]). A block of 384 threads
//! owns a K/V head and [`BC`] = 128 keys: a producer warpgroup, of which
//! one thread issues every TMA copy, and two consumer warpgroups, each
//! holding the dK and dV of 64 of the keys in registers for the whole
//! launch. The block walks every query tile of [`BR`] = 64 rows of every
//! query head that reads its K/V head (as step 2 does), Q and dO tiles
//! coming through a ring of [`STAGES`] stages counted by a
//! [`PipelineState`].
//!
//! **Per query tile**, each consumer warpgroup, for its 64 keys (keys as
//! the rows of every product, so that the accumulators of one are the A
//! operand of the next as they lie: `dev::wgmma::Accumulators`):
//! 1. `Sᵀ = K Qᵀ` (`m64n64k16`, both operands K-major in shared memory);
//! 2. `Pᵀ = 2^(Sᵀ c - lse log2 e)`, masked, rounded and packed: `dV += Pᵀ
//!    dO` (`m64n{d}k16`, A from registers, dO MN-major), and behind it
//!    `dPᵀ = V dOᵀ`;
//! 3. `dSᵀ = Pᵀ ∘ (dPᵀ - D)`, from P as rounded for `dV`, packed: `dK +=
//!    dSᵀ Q` (Q MN-major); and dS, transposed, into the warpgroup's own
//!    K-major tile of shared memory (64 queries by its 64 keys);
//! 4. once its writes are fenced for the async proxy and the warpgroup has
//!    met at an mbarrier: `dQ = dS K` over its 64 keys, 64 columns at a
//!    time (`m64n64k16`, A that tile, K MN-major), each sum added into
//!    dQ's `f32` accumulator with `red.global.add.f32` (two warpgroups a
//!    block, each its keys' part); the warpgroup meets again before its
//!    next dS overwrites the tile, and releases the stage.
//!
//! After the last tile, dK (times `scale`) and dV are rounded and stored.
//!
//! **Deterministic** ([`DETERMINISTIC`]): as step 2's, with two parts a
//! block. The first warpgroup of key tile `j` waits (one thread polls, the
//! warpgroup's first meeting holds the rest) until the query tile's
//! counter reads `j`, adds its part, and after its second meeting arrives
//! on an mbarrier; the second warpgroup waits on that, adds its part, and
//! after its second meeting and a fence sets the counter to `j + 1`. Each
//! dQ element is then summed in one order. (The two warpgroups of a block
//! meet through an mbarrier, not the counter: a thread polling global
//! memory for its own block's progress would hold that block in the
//! emulator, whose threads of a block take turns.)
//!
//! **Masks and tails.** Keys past `s_k` read as zeros through K's and V's
//! maps and are masked; queries past `s_q` read the next head's rows (or
//! zeros) through Q's and dO's maps, and get `lse = +inf` (their P is 0,
//! so they add nothing to dK and dV) and no dQ store. Causally, a block
//! starts at the first query tile that sees its first key, and masks
//! only tiles that cross the diagonal.
//!
//! **Arithmetic** per query tile and block: five products of `64 x 128 x
//! d`, `10 x 64 x 128 x d` FLOPs, for Q's and dO's `4 x 64 d` bytes (320
//! FLOPs a byte from L2); dQ's `2 x 64 d` `red`s (each warpgroup adds its
//! keys' part).
//!
//! **Registers.** Per consumer thread (240 of them, `setmaxnreg`): dK and
//! dV `d / 2` each for the whole launch (128 at `d = 128`), Sᵀ (then Pᵀ)
//! and dPᵀ 32 each, their packed fragments 16 each, a dQ block 32. At `d =
//! 128` that fits only so: `dPᵀ` is issued behind `dV`, not beside `Sᵀ`
//! (its registers would be live through the softmax), dS is computed
//! from P's packed fragments (P's `f32` registers die at the packing),
//! dQ is computed 64 columns at a time, each column's `lse` is loaded
//! where it is used, and what derives from the thread's index is
//! recomputed every tile (`opaque`) rather than held through the loop.
//! Otherwise ptxas serializes the `wgmma`s or spills; `cpu/tests/ptx.rs`
//! holds it at no spill.
//! Shared memory: K and V `2 x 128 d` bytes each, a stage `2 x 2 x 64 d`,
//! the dS tiles `2 x 8` KiB: 144 KiB at `d = 128`.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::super::LOG2_E;
use super::super::hopper::SPAN;
use super::super::hopper::pipeline::{copy_tile, swizzle_base};
use super::{BR, CAUSAL, DETERMINISTIC};
use crate::dev::atomic::{Ordering, fence};
use crate::dev::barrier::{Mbarrier, fence_init};
use crate::dev::math::{self, ex2_approx, fma};
use crate::dev::pipeline::PipelineState;
use crate::dev::registers::opaque;
use crate::dev::roles::specialize;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, fence_async_shared};
use crate::dev::wgmma::{self, Accumulators, Descriptor, d_f32, shared_address, wait_for};
use crate::dev::{Element, In, Out, SharedArray, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Keys per block: two consumer warpgroups of 64.
pub const BC: usize = 128;
/// Q/dO stages.
pub const STAGES: usize = 2;
/// Threads per block: the producer warpgroup and two consumers.
pub const THREADS: usize = 384;

/// Mbarriers: K/V's, each stage's full and empty, each consumer's dS, the
/// first consumer's part of dQ done (the deterministic mode).
const BARRIERS: usize = 1 + 2 * STAGES + 2 + 1;

/// Shared memory bytes at head dimension `d`: the slack to the 1024-byte
/// boundary the swizzle needs, K and V, the stages, the dS tiles, the
/// mbarriers.
pub const fn shared_bytes(d: usize) -> usize {
    1024 + 2 * 2 * BC * d + STAGES * 2 * 2 * BR * d + 2 * 2 * BR * 64 + 8 * BARRIERS
}

/// The block's shared memory, as every role sees it. Every tile is
/// stored as `d / 64` column blocks of `rows x 128` bytes (what a TMA box
/// with the 128-byte swizzle writes, and what the descriptors read).
#[derive(Clone, Copy)]
struct Smem {
    base: *mut u8,
    bars: SharedArray<u64>,
    d: usize,
}

impl Smem {
    #[inline(always)]
    fn new(d: usize) -> Smem {
        let base = swizzle_base();
        // SAFETY: the launch passes `shared_bytes(d)`: the mbarriers lie
        // past the slack and the tiles, 8-aligned.
        let bars = unsafe { SharedArray::<u64>::launch_sized_at(shared_bytes(d) - 8 * BARRIERS) };
        Smem { base, bars, d }
    }
    #[inline(always)]
    fn k(self) -> *mut u8 {
        self.base
    }
    #[inline(always)]
    fn v(self) -> *mut u8 {
        self.base.wrapping_add(2 * BC * self.d)
    }
    /// Stage `s`'s Q tile.
    #[inline(always)]
    fn q(self, s: usize) -> *mut u8 {
        self.base.wrapping_add(4 * BC * self.d + s * 4 * BR * self.d)
    }
    /// Stage `s`'s dO tile.
    #[inline(always)]
    fn d_o(self, s: usize) -> *mut u8 {
        self.q(s).wrapping_add(2 * BR * self.d)
    }
    /// Consumer `c`'s dS tile: 64 queries x 64 keys, K-major.
    #[inline(always)]
    fn ds(self, c: usize) -> *mut u8 {
        self.q(STAGES).wrapping_add(c * 2 * BR * 64)
    }
    #[inline(always)]
    fn bar(self, i: usize) -> Mbarrier {
        // SAFETY: i < BARRIERS, inside the launch's mbarriers.
        unsafe { Mbarrier::at(self.bars, i) }
    }
    fn kv_full(self) -> Mbarrier {
        self.bar(0)
    }
    fn q_full(self, s: usize) -> Mbarrier {
        self.bar(1 + s)
    }
    fn q_empty(self, s: usize) -> Mbarrier {
        self.bar(1 + STAGES + s)
    }
    /// Consumer `c`'s meetings: once its dS tile is written, and once the
    /// product that reads it is done.
    fn ds_ready(self, c: usize) -> Mbarrier {
        self.bar(1 + 2 * STAGES + c)
    }
    /// In the deterministic mode, the first consumer's part of a tile's dQ
    /// is added (one arrival a tile).
    fn part_done(self) -> Mbarrier {
        self.bar(3 + 2 * STAGES)
    }
}

/// The block's place and the problem (the same for every role).
#[derive(Clone, Copy)]
struct Args {
    /// The first query head of the block's K/V head, among `b heads`.
    head0: u32,
    /// The group's query heads.
    group: u32,
    /// The block's K/V head among `b kv_heads` (its maps' index).
    kv_head: u32,
    k0: u32,
    s_q: u32,
    s_k: u32,
    causal: bool,
    /// dQ's parts added in a fixed order ([`DETERMINISTIC`]).
    ordered: bool,
    /// The first query tile and the tiles a head.
    first_tile: u32,
    per_head: u32,
}

impl Args {
    /// The launch's block.
    #[inline(always)]
    fn new((heads, kv_heads, s_q, s_k): (u32, u32, u32, u32), flags: u32) -> Args {
        let (heads, kv_heads) = (heads.max(1), kv_heads.max(1));
        let group = (heads / kv_heads).max(1);
        let bkv = block_idx_y();
        let (b, kvh) = (bkv / kv_heads, bkv % kv_heads);
        let k0 = block_idx_x() * BC as u32;
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
            ordered: flags & DETERMINISTIC != 0,
            first_tile,
            per_head: s_q.div_ceil(BR as u32) - first_tile,
        }
    }

    /// The block's first query tile: its row among `b heads s_q` (its
    /// head's first) and its first query.
    #[inline(always)]
    fn first(self) -> (u32, u32) {
        (self.head0 * self.s_q, self.first_tile * BR as u32)
    }

    /// The query tile after `(rows, q0)`: the next of its head, or the
    /// first of the next head (a running walk holds two words, not the
    /// divisions and the place of a tile by its index).
    #[inline(always)]
    fn next(self, (rows, q0): (u32, u32)) -> (u32, u32) {
        if q0 + (BR as u32) < self.s_q {
            (rows, q0 + BR as u32)
        } else {
            (rows + self.s_q, self.first_tile * BR as u32)
        }
    }

    #[inline(always)]
    fn tiles(self) -> u32 {
        self.group * self.per_head
    }
}

/// The producer, one thread: K and V once, then each query tile's Q and
/// dO into the ring, each stage once both consumers released it. Maps: 0
/// Q's and 1 dO's (`b heads s_q x d`, boxes of 64 x 64), then each K/V
/// head's K and V (`s_k x d`, boxes of 128 x 64).
///
/// # Safety
/// One thread; the mbarriers initialized; the consumers walk the same
/// tiles.
#[inline(always)]
unsafe fn produce(smem: Smem, maps: In<u64>, a: Args) {
    let d = smem.d;
    let (k_map, v_map) = (2 + 2 * a.kv_head as usize, 3 + 2 * a.kv_head as usize);
    // SAFETY: (all below) the caller's contract: these maps are the
    // launch's, the tiles lie in its shared memory, and no stage is
    // refilled before both consumers released it.
    unsafe {
        for m in [0, 1, k_map, v_map] {
            acquire_map(maps, m);
        }
        smem.kv_full().arrive_expect_tx((2 * 2 * BC * d) as u32);
        copy_tile(smem.k(), (maps, k_map), a.k0 as usize, (BC, d, BC), smem.kv_full());
        copy_tile(smem.v(), (maps, v_map), a.k0 as usize, (BC, d, BC), smem.kv_full());
    }
    let mut ring = PipelineState::new(STAGES);
    let mut at = a.first();
    for _ in 0..a.tiles() {
        let (rows, q0) = at;
        at = a.next(at);
        let s = ring.stage();
        // SAFETY: as above.
        unsafe {
            if let Some(phase) = ring.refill_phase() {
                smem.q_empty(s).wait(phase);
            }
            smem.q_full(s).arrive_expect_tx((2 * 2 * BR * d) as u32);
            copy_tile(smem.q(s), (maps, 0), (rows + q0) as usize, (BR, d, BR), smem.q_full(s));
            copy_tile(smem.d_o(s), (maps, 1), (rows + q0) as usize, (BR, d, BR), smem.q_full(s));
        }
        ring.advance();
    }
}

/// `acc = A Bᵀ` for the warpgroup's 64 keys and the tile's 64 queries:
/// A the warpgroup's rows of the 128-row tile at `a` (K or V), B the
/// 64-row tile at `b` (Q or dO), both K-major; uncommitted.
///
/// # Safety
/// Converged warpgroup; both tiles landed.
#[inline(always)]
unsafe fn keys_by_queries<T: Element>(d: usize, c: usize, a: *mut u8, b: *mut u8) -> [f32; 32] {
    let da = Descriptor::swizzled(SPAN as u32, shared_address(a) + (c * 64 * SPAN) as u32, 16, 1024);
    let db = Descriptor::swizzled(SPAN as u32, shared_address(b), 16, 1024);
    let mut acc = <[f32; 32]>::zeroed();
    seq!(KK in 0..8 {{
        let kk: usize = KK;
        if kk < d / 16 {
            let x = da.advanced(((kk / 4) * BC * SPAN + 32 * (kk % 4)) as u32);
            let y = db.advanced(((kk / 4) * BR * SPAN + 32 * (kk % 4)) as u32);
            // SAFETY: the caller's contract.
            acc = unsafe { acc.mma_ss::<T, false>(x, y, kk > 0) };
        }
    }});
    acc
}

/// `acc += X B` with X (64 rows by 64 k) the packed fragments `x` and B
/// the 64-row tile at `b` MN-major (`k` its rows, `N = d` its columns);
/// uncommitted.
///
/// # Safety
/// Converged warpgroup; the tile landed.
#[inline(always)]
unsafe fn add_by_rows<T: Element, O: Accumulators>(mut acc: O, x: &[u32; 16], b: *mut u8) -> O {
    let db = Descriptor::swizzled(SPAN as u32, shared_address(b), (BR * SPAN) as u32, 1024);
    seq!(KT in 0..4 {{
        let y = db.advanced((KT * 16 * SPAN) as u32);
        let a = [x[4 * KT], x[4 * KT + 1], x[4 * KT + 2], x[4 * KT + 3]];
        // SAFETY: the caller's contract.
        acc = unsafe { acc.mma_rs::<T, true>(a, y, true) };
    }});
    acc
}

/// Accumulators rounded and packed in pairs: the A fragments of a product
/// whose k runs over their 64 columns.
#[inline(always)]
fn pack<T: Element>(x: &[f32; 32]) -> [u32; 16] {
    let mut f = [0u32; 16];
    seq!(K in 0..16 {
        f[K] = math::pack::<T>(x[2 * K], x[2 * K + 1]);
    });
    f
}

/// A value per query of thread `t`'s accumulator columns (16 of them:
/// column `8 (j / 2) + 2 (lane mod 4) + j mod 2` for `j`), `load(query)`
/// below `s_q` and `past` beyond.
#[inline(always)]
fn per_query(t: u32, q0: u32, s_q: u32, load: impl Fn(usize) -> f32, past: f32) -> [f32; 16] {
    let mut v = [0.0f32; 16];
    seq!(J in 0..16 {{
        let j: u32 = J;
        let (_, col) = d_f32(t, (j / 2) * 4 + j % 2);
        let query = q0 + col;
        v[J] = if query < s_q { load(query as usize) } else { past };
    }});
    v
}

/// A consumer warpgroup's walk.
///
/// # Safety
/// The warpgroup, converged; initialized; the producer fills the same
/// tiles; the buffers hold the problem's rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn consume<T: Element, O: Accumulators>(
    smem: Smem,
    a: Args,
    (lse, delta): (In<f32>, In<f32>),
    (dq, turns): (&Out<f32>, &Out<u32>),
    (dk, dv): (Out<T>, Out<T>),
    (c, t): (u32, u32),
    scale: f32,
) {
    let d = O::N;
    let cs = scale * LOG2_E;
    let (mut dk_acc, mut dv_acc) = (O::zeroed(), O::zeroed());
    // SAFETY: the producer's arrival and K's and V's bytes.
    unsafe { smem.kv_full().wait(0) };
    let mut ring = PipelineState::new(STAGES);
    // (32-bit words: a 64-bit value held through the loop takes two
    // registers.)
    let key0 = a.k0 + 64 * c;
    let c = c as usize;
    let mut at = a.first();
    for n in 0..a.tiles() {
        let (rows, q0) = at;
        at = a.next(at);
        let s = ring.stage();
        // The thread through a value that changes every tile: what derives
        // from it (each accumulator's row and column, the dS tile's
        // swizzled places, the masks' keys) is computed where it is used,
        // not hoisted out of the loop to hold registers beside dK and dV.
        let t = opaque(t + n) - n;
        // SAFETY: (the products) the stage's and K's, V's bytes landed;
        // the warpgroup, converged.
        unsafe { smem.q_full(s).wait(ring.phase()) };
        wgmma::fence();
        // SAFETY: as above.
        let st = unsafe { keys_by_queries::<T>(d, c, smem.k(), smem.q(s)) };
        wgmma::commit();
        let mut p = wait_for::<0, _>(st);
        let masked = a.k0 + BC as u32 > a.s_k || (a.causal && a.k0 + (BC as u32) + a.s_q > q0 + a.s_k + 1);
        // Pᵀ, masked, a column (query) at a time: its `lse log2 e` (`+inf`
        // past `s_q`: such a query's P is 0) serves the column's two
        // accumulators and is dead after.
        seq!(J in 0..16 {{
            let j: u32 = J;
            let (_, col) = d_f32(t, (j / 2) * 4 + j % 2);
            let query = q0 + col;
            let l2 = if query < a.s_q {
                // SAFETY: a row of the problem's.
                unsafe { lse.load((rows + query) as usize) * LOG2_E }
            } else {
                f32::INFINITY
            };
            seq!(R in 0..2 {{
                let i = (j / 2) * 4 + j % 2 + 2 * R;
                let (row, _) = d_f32(t, i);
                let key = key0 + row;
                let hidden = masked && (key >= a.s_k || (a.causal && key + a.s_q > query + a.s_k));
                let i = i as usize;
                p[i] = if hidden { 0.0 } else { ex2_approx(fma(p[i], cs, -l2)) };
            }});
        }});
        let pf = <[f32; 32] as Accumulators>::pinned_fragments(pack::<T>(&p));
        // dV += Pᵀ dO, then dPᵀ = V dOᵀ behind it (not beside Sᵀ: its 32
        // registers would be live through the softmax, beside dK's and
        // dV's).
        wgmma::fence();
        // SAFETY: as above.
        dv_acc = unsafe { add_by_rows::<T, O>(dv_acc, &pf, smem.d_o(s)) };
        wgmma::commit();
        // SAFETY: as above.
        let dp = unsafe { keys_by_queries::<T>(d, c, smem.v(), smem.d_o(s)) };
        wgmma::commit();
        let dp = wait_for::<0, _>(dp);
        dv_acc = dv_acc.pinned();
        // dSᵀ = Pᵀ ∘ (dPᵀ - D) (D 0 past `s_q`), from P as rounded for
        // `dV`: its `f32` registers are free by now (a third set of 32
        // beside dK, dV and dPᵀ does not fit).
        let dd = per_query(
            t,
            q0,
            a.s_q,
            |query| {
                // SAFETY: a row of the problem's.
                unsafe { delta.load(rows as usize + query) }
            },
            0.0,
        );
        let mut ds = dp;
        seq!(K in 0..16 {{
            let k: usize = K;
            let (lo, hi) = math::unpack::<T>(pf[K]);
            ds[2 * K] = lo * (dp[2 * K] - dd[(k / 2) * 2]);
            ds[2 * K + 1] = hi * (dp[2 * K + 1] - dd[(k / 2) * 2 + 1]);
        }});
        let dsf = <[f32; 32] as Accumulators>::pinned_fragments(pack::<T>(&ds));
        wgmma::fence();
        // SAFETY: as above.
        dk_acc = unsafe { add_by_rows::<T, O>(dk_acc, &dsf, smem.q(s)) };
        wgmma::commit();
        // dS (queries by this warpgroup's keys) into its K-major tile:
        // element (query r, key k) at byte `r 128 + ((k / 8) ^ (r mod 8))
        // 16 + (k mod 8) 2`, the 128-byte swizzle.
        // SAFETY: the warpgroup's own tile, which its last `dQ` product
        // finished reading (the meeting at the end of the last tile).
        let tile = unsafe {
            SharedArray::<u16>::launch_sized_at(smem.ds(c) as usize - launch_sized_base() as usize)
        };
        seq!(I in 0..32 {{
            let (key, query) = d_f32(t, I);
            let (r, k) = (query as usize, key as usize);
            let at = r * 64 + 8 * ((k / 8) ^ (r % 8)) + k % 8;
            // SAFETY: inside the tile; this thread's element.
            unsafe { tile.set(at, math::round_bits::<T>(ds[I])) };
        }});
        fence_async_shared();
        // In the ordered mode, key tile `j`'s first warpgroup adds its part
        // when the query tile's counter reads `j`, the second once the
        // first's part is in (`part_done`).
        // (The counter's place is computed where it is used: held across
        // the dQ product, it took registers dK and dV need.)
        let turn = || ((rows / a.s_q.max(1)) * a.s_q.div_ceil(BR as u32) + q0 / BR as u32) as usize;
        let mine = a.k0 / BC as u32;
        if a.ordered && t == 0 {
            if c == 0 {
                // SAFETY: a counter of the launch's; acquires the parts
                // added before.
                while unsafe { turns.atomic_load(turn(), Ordering::Acquire) } != mine {}
            } else {
                // SAFETY: initialized, one arrival a tile.
                unsafe { smem.part_done().wait(n % 2) };
            }
        }
        // SAFETY: initialized, counting the warpgroup's 128 threads; two
        // phases a tile (this one even).
        unsafe {
            smem.ds_ready(c).arrive();
            smem.ds_ready(c).wait(0);
        }
        // dQ = dS K over this warpgroup's keys, 64 columns at a time: A the
        // dS tile (4 k16 steps, 32 bytes on), B K's rows of the warpgroup
        // in column block `h`, MN-major.
        let da = Descriptor::swizzled(SPAN as u32, shared_address(smem.ds(c)), 16, 1024);
        let k_rows = shared_address(smem.k()) + (c * 64 * SPAN) as u32;
        seq!(H in 0..2 {
            if H < d / 64 {
                let db = Descriptor::swizzled(SPAN as u32, k_rows + (H * BC * SPAN) as u32, (BC * SPAN) as u32, 1024);
                wgmma::fence();
                let mut dq_acc = <[f32; 32]>::zeroed();
                seq!(KT in 0..4 {{
                    let kt: usize = KT;
                    let (x, y) = (da.advanced((32 * kt) as u32), db.advanced((kt * 16 * SPAN) as u32));
                    // SAFETY: the dS tile written and fenced; K landed.
                    dq_acc = unsafe { dq_acc.mma_ss::<T, true>(x, y, kt > 0) };
                }});
                wgmma::commit();
                let dq_acc = wait_for::<0, _>(dq_acc);
                dk_acc = dk_acc.pinned();
                seq!(I in 0..32 {{
                    let (row, col) = d_f32(t, I);
                    let query = q0 + row;
                    if query < a.s_q {
                        let at = (rows + query) as usize * d + 64 * H + col as usize;
                        // SAFETY: inside dQ's accumulator (a row of the problem's).
                        unsafe { dq.reduce_add(at, dq_acc[I]) };
                    }
                }});
            }
        });
        // The warpgroup meets again (the tile's odd phase) before any of
        // it writes the next tile's dS: the product's reads of the tile
        // are its issuing thread's, ordered before the others' writes only
        // through this meeting.
        // SAFETY: as above.
        unsafe {
            smem.ds_ready(c).arrive();
            smem.ds_ready(c).wait(1);
        }
        if a.ordered && t == 0 {
            if c == 0 {
                // SAFETY: initialized, one arrival a tile: the warpgroup's
                // adds, ordered before it by the meeting.
                unsafe { smem.part_done().arrive() };
            } else {
                // The warpgroup's adds (and, through `part_done`, the
                // first's), ordered by the meeting before this thread's
                // fence, are visible before the counter moves.
                fence();
                // SAFETY: as above.
                unsafe { turns.atomic_store(turn(), mine + 1, Ordering::Release) };
            }
        }
        if t == 0 {
            // SAFETY: initialized, counting the two warpgroups; their
            // products of the stage are done.
            unsafe { smem.q_empty(s).arrive() };
        }
        ring.advance();
    }
    // dK (times `scale`) and dV of the warpgroup's keys below `s_k`.
    let (dk, dv) = (dk.recast::<u32>(), dv.recast::<u32>());
    seq!(I in 0..64 {{
        let i: u32 = I;
        if (i as usize) < d / 4 {
            let (row, col) = d_f32(t, 2 * i);
            let key = (key0 + row) as usize;
            if key < a.s_k as usize {
                let at = (((a.kv_head * a.s_k) as usize + key) * d + col as usize) / 2;
                let (k_pair, v_pair) = (
                    math::pack::<T>(dk_acc[2 * I] * scale, dk_acc[2 * I + 1] * scale),
                    math::pack::<T>(dv_acc[2 * I], dv_acc[2 * I + 1]),
                );
                // SAFETY: inside the K/V head's rows; 4 bytes on 4; this
                // thread's pair.
                unsafe {
                    dk.store(at, k_pair);
                    dv.store(at, v_pair);
                }
            }
        }
    }});
}

/// Step 3's body, dK, dV and dQ with `O::N = d` columns.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward<T: Element, O: Accumulators>(
    maps: In<u64>,
    (lse, delta): (In<f32>, In<f32>),
    (dq, turns, dk, dv): (Out<f32>, Out<u32>, Out<T>, Out<T>),
    (heads, kv_heads, s_q, s_k): (u32, u32, u32, u32),
    scale: f32,
    flags: u32,
) {
    let d = O::N;
    let smem = Smem::new(d);
    if thread_idx_x() == 0 {
        // SAFETY: thread 0, before the block's barrier.
        unsafe {
            smem.kv_full().init(1);
            for s in 0..STAGES {
                smem.q_full(s).init(1);
                smem.q_empty(s).init(2);
            }
            smem.ds_ready(0).init(128);
            smem.ds_ready(1).init(128);
            smem.part_done().init(1);
            fence_init();
        }
    }
    sync_threads();
    // (Each role computes the block's place after the split: values
    // computed before it would be held, or spilled, across it.)
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            let a = Args::new((heads, kv_heads, s_q, s_k), flags);
            // SAFETY: one thread; initialized; the consumers walk the same
            // tiles.
            unsafe { produce(smem, maps, a) }
        }
    };
    let consumer = #[inline(always)]
    |who: crate::dev::roles::Consumer| {
        let a = Args::new((heads, kv_heads, s_q, s_k), flags);
        // SAFETY: the warpgroup, converged; the buffers are the launch's.
        unsafe {
            consume::<T, O>(
                smem,
                a,
                (lse, delta),
                (&dq, &turns),
                (dk, dv),
                (who.index as u32, who.thread),
                scale,
            )
        }
    };
    // SAFETY: every thread, converged; 24 + 2 x 240 = 3 x 168 (checked).
    unsafe { specialize::<THREADS, 24, 240>(producer, consumer) };
}

/// One kernel per head dimension `$d` (dK's, dV's and dQ's accumulators
/// `$o`).
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal, $o:ty);)*) => {$(
        $(#[$doc])*
        #[kernel(
            block = THREADS,
            shared = shared_bytes($d),
            tile = [BC, 1],
            min_blocks = 1,
            arch = "sm_90a",
            types = [bf16, f16]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Element>(
            maps: In<u64>,
            lse: In<f32>,
            delta: In<f32>,
            dq: Out<f32>,
            turns: Out<u32>,
            dk: Out<T>,
            dv: Out<T>,
            heads: u32,
            kv_heads: u32,
            s_q: u32,
            s_k: u32,
            scale: f32,
            flags: u32,
        ) {
            backward::<T, $o>(maps, (lse, delta), (dq, turns, dk, dv), (heads, kv_heads, s_q, s_k), scale, flags);
        }
    )*};
}

head_dims! {
    /// 3. The fused backward on Hopper, FlashAttention-3 style, `d = 64`
    /// (the module documentation has the roles, the products and the
    /// arithmetic).
    ///
    /// Launch: `maps` holds `2 + 2 b kv_heads` tensor maps with the
    /// 128-byte swizzle: Q's and dO's (`b heads s_q x 64`, boxes of 64 x
    /// 64), then each K/V head's K and V (`s_k x 64`, boxes of 128 x 64);
    /// lse and D `[b, heads, s_q]`; dq dQ's `f32` accumulator, Q's shape,
    /// zeroed; `turns` (with [`DETERMINISTIC`]) `b heads ceil(s_q / 64)`
    /// zeros; dK, dV `[b, kv_heads, s_k, 64]`; the grid is `ceil(s_k /
    /// 128)` x `b kv_heads` blocks of 384 threads; `kv_heads` divides
    /// `heads`; `scale > 0`; `flags` [`CAUSAL`] and [`DETERMINISTIC`]. Then
    /// `attention_backward_dq` makes dQ.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_hopper_d64`.
    attention_backward_hopper_d64(64, [f32; 32]);
    /// 3. The fused backward on Hopper at `d = 128`: as
    /// [`attention_backward_hopper_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_hopper_d128`.
    attention_backward_hopper_d128(128, [f32; 64]);
}
