//! Step 3 of the backward, FlashAttention-3 style (sm_90a): the copy
//! engine feeds shared memory, `wgmma` runs the five products, and the
//! warps wait on nothing but mbarriers.
//!
//! **Roles** ([`crate::dev::roles::specialize`]). A block of 384 threads
//! owns a K/V head and [`BC`] = 128 keys: a producer warpgroup, of which
//! one thread issues every TMA copy and another every TMA reduction of
//! dQ (`feed.rs`), and two consumer warpgroups, each
//! holding the dK and dV of 64 of the keys in registers for the whole
//! launch. The block walks every query tile of [`BR`] = 64 rows of every
//! query head that reads its K/V head (as step 2 does), Q and dO tiles
//! coming through a ring of [`STAGES`] stages counted by a
//! [`PipelineState`].
//!
//! **Per query tile**, each consumer warpgroup, for its 64 keys (keys as
//! the rows of every product, so that the accumulators of one are the A
//! operand of the next as they lie: `dev::wgmma::Accumulators`):
//! 1. `Sᵀ = K Qᵀ` (`m64n64k16`, both operands K-major in shared memory),
//!    and at `d = 128` `dPᵀ = V dOᵀ` right behind it, which the tensor
//!    cores run during the softmax;
//! 2. `Pᵀ = 2^(Sᵀ c - lse log2 e)`, masked, rounded and packed: `dV += Pᵀ
//!    dO` (`m64n{d}k16`, A from registers, dO MN-major), left running
//!    (at `d = 64`, `dPᵀ` behind it);
//! 3. `dSᵀ = Pᵀ ∘ (dPᵀ - D)`, from P as rounded for `dV`, packed: `dK +=
//!    dSᵀ Q` (Q MN-major); and dS, transposed, into the warpgroup's own
//!    K-major tile of shared memory (64 queries by its 64 keys);
//! 4. once both warpgroups' dS tiles are written and fenced for the async
//!    proxy (they meet at an mbarrier): `dQ = dS K` over the block's 128
//!    keys (`m64n64k16`, A the two tiles side by side, K MN-major), a
//!    64-column block a warpgroup, the blocks dealt in turn (at `d = 64`,
//!    one warpgroup a tile, alternating); the sums go to a dQ buffer in
//!    shared memory, laid out as TMA boxes (64 rows x 32 `f32`s, the
//!    128-byte swizzle), whose writer adds them into dQ's `f32` sum in L2
//!    with `cp.reduce.async.bulk.tensor` (`dev::tma::reduce_add_3d`):
//!    whole boxes at the copy engine's rate, not a `red` a word. Two
//!    buffers: the writer adds one tile's while the consumers fill the
//!    next. A warpgroup writes its next dS once both warpgroups' last
//!    dQ products are done (the buffer's "full" phase), and releases the
//!    stage.
//!
//! After the last tile, dK (times `scale`) and dV are rounded and stored.
//!
//! **Deterministic** ([`super::DETERMINISTIC`]): as step 2's, by the writer
//! alone: for key tile `j` it waits until the query tile's counter reads
//! `j`, adds the tile's dQ, waits for the adds to complete (not only to
//! read their buffer), and after a fence sets the counter to `j + 1`.
//! Each dQ element is then summed in one order. The consumers never wait
//! on the counter; they run ahead by the two buffers.
//!
//! **Masks and tails.** Keys past `s_k` read as zeros through K's and V's
//! maps and are masked; queries past `s_q` read the next head's rows (or
//! zeros) through Q's and dO's maps, and get `lse = +inf` (their P is 0,
//! so they add nothing to dK and dV); their rows of dQ fall outside the
//! head's plane of dQ's map and are dropped by the reduction. Causally, a block
//! starts at the first query tile that sees its first key, and masks
//! only tiles that cross the diagonal.
//!
//! **Arithmetic** per query tile and block: five products of `64 x 128 x
//! d`, `10 x 64 x 128 x d` FLOPs, for Q's and dO's `4 x 64 d` bytes (320
//! FLOPs a byte from L2); dQ's `64 d` `f32`s added by `d / 32` box
//! reductions of 8 KiB.
//!
//! **Registers.** Per consumer thread (232 of them, `setmaxnreg`; the
//! producer warpgroup keeps 32): dK and dV `d / 2` each for the whole
//! launch (128 at `d = 128`), Sᵀ (then Pᵀ) and dPᵀ 32 each, live together
//! through the softmax, their packed fragments 16 each, a dQ block 32
//! after them. At `d = 128` that fits only so: dS is computed from P's
//! packed fragments (P's `f32` registers die at the packing), dQ is
//! computed a 64-column block at a time after dS, the rows come from
//! shared memory where used, and what derives from the thread's index is
//! recomputed every tile (`opaque`) rather than held through the loop.
//! Otherwise ptxas serializes the `wgmma`s or spills; `cpu/tests/ptx.rs`
//! holds it at no spill.
//! Shared memory: K and V `2 x 128 d` bytes each, a stage `2 x 2 x 64 d`,
//! the dS tiles `2 x 8` KiB, the dQ buffers `2 x 4 x 64 d`: 208 KiB at
//! `d = 128`.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

mod feed;

use super::super::LOG2_E;
use super::super::hopper::SPAN;
use super::BR;
use crate::dev::barrier::fence_init;
use crate::dev::math::{self, ex2_approx, fma};
use crate::dev::pipeline::PipelineState;
use crate::dev::registers::opaque;
use crate::dev::roles::specialize;
use crate::dev::tma::fence_async_shared;
use crate::dev::wgmma::{self, Accumulators, Descriptor, d_f32, shared_address, wait_for};
use crate::dev::{Element, In, Out, sync_threads, thread_idx_x};
use crate::kernel;
pub use feed::shared_bytes;
use feed::{Args, DQ_BUFFERS, Smem, load_rows, produce, write_dq};
use half::{bf16, f16};
use seq_macro::seq;

/// Keys per block: two consumer warpgroups of 64.
pub const BC: usize = 128;
/// Q/dO stages.
pub const STAGES: usize = 2;
/// Threads per block: the producer warpgroup and two consumers.
pub const THREADS: usize = 384;

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
    let mut dq_ring = PipelineState::new(DQ_BUFFERS);
    // (32-bit words: a 64-bit value held through the loop takes two
    // registers.)
    let key0 = a.k0 + 64 * c;
    let c = c as usize;
    // (The tiles walked here, not through `Args::walk`: LLVM leaves a
    // closure this large a call, across which ptxas serializes the
    // `wgmma`s.)
    let mut at = a.first();
    for n in 0..a.tiles() {
        let (_, q0) = at;
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
        // At `d = 128`, dPᵀ = V dOᵀ right behind it: the tensor cores run it
        // while this thread takes the softmax of Sᵀ. At `d = 64` it goes
        // behind dV instead, the products being short beside the softmax.
        let early = d >= 128;
        let dp_early = if early {
            // SAFETY: as above.
            let dp = unsafe { keys_by_queries::<T>(d, c, smem.v(), smem.d_o(s)) };
            wgmma::commit();
            dp
        } else {
            <[f32; 32]>::zeroed()
        };
        let mut p = if early { wait_for::<1, _>(st) } else { wait_for::<0, _>(st) };
        let masked = a.k0 + BC as u32 > a.s_k || (a.causal && a.k0 + (BC as u32) + a.s_q > q0 + a.s_k + 1);
        // Pᵀ, masked, a column (query) at a time: its `lse log2 e` (`+inf`
        // past `s_q`) serves the column's two accumulators and is dead
        // after.
        let srows = smem.rows(s);
        seq!(J in 0..16 {{
            let j: u32 = J;
            let (_, col) = d_f32(t, (j / 2) * 4 + j % 2);
            let query = q0 + col;
            // SAFETY: the stage's rows (landed), column < 64.
            let l2 = unsafe { srows.get(col as usize) };
            seq!(R in 0..2 {{
                let i = (j / 2) * 4 + j % 2 + 2 * R;
                let (row, _) = d_f32(t, i);
                let key = key0 + row;
                let hidden = masked && (key >= a.s_k || (a.causal && key + a.s_q > query + a.s_k));
                let i = i as usize;
                // (`ex2` of every element, then a select: no branch.)
                let e = ex2_approx(fma(p[i], cs, -l2));
                p[i] = if hidden { 0.0 } else { e };
            }});
        }});
        let pf = <[f32; 32] as Accumulators>::pinned_fragments(pack::<T>(&p));
        // dV += Pᵀ dO, left running while dS is computed.
        wgmma::fence();
        // SAFETY: as above.
        dv_acc = unsafe { add_by_rows::<T, O>(dv_acc, &pf, smem.d_o(s)) };
        wgmma::commit();
        let dp = if early {
            wait_for::<1, _>(dp_early)
        } else {
            // SAFETY: as above.
            let dp = unsafe { keys_by_queries::<T>(d, c, smem.v(), smem.d_o(s)) };
            wgmma::commit();
            let dp = wait_for::<0, _>(dp);
            dv_acc = dv_acc.pinned();
            dp
        };
        // dSᵀ = Pᵀ ∘ (dPᵀ - D) (D 0 past `s_q`), from P as rounded for
        // `dV`: its `f32` registers are free by now (a third set of 32
        // beside dK, dV and dPᵀ does not fit).
        let mut dd = [0.0f32; 16];
        seq!(J in 0..16 {{
            let j: u32 = J;
            let (_, col) = d_f32(t, (j / 2) * 4 + j % 2);
            // SAFETY: the stage's rows (landed), column < 64.
            dd[J] = unsafe { srows.get(BR + col as usize) };
        }});
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
        // 16 + (k mod 8) 2`, the 128-byte swizzle; once both warpgroups'
        // dQ products of the last tile are done with the tiles.
        if n > 0 {
            let last = dq_ring.previous();
            // SAFETY: initialized; every consumer thread arrives once a
            // tile, after its product.
            unsafe { smem.dq_full(last.stage()).wait(last.phase()) };
        }
        // SAFETY: the warpgroup's own tile, which the last dQ products
        // finished reading (waited above).
        let tile = unsafe { Smem::array::<u16>(smem.ds(c)) };
        seq!(I in 0..32 {{
            let (key, query) = d_f32(t, I);
            let (r, k) = (query as usize, key as usize);
            let at = r * 64 + 8 * ((k / 8) ^ (r % 8)) + k % 8;
            // SAFETY: inside the tile; this thread's element.
            unsafe { tile.set(at, math::round_bits::<T>(ds[I])) };
        }});
        fence_async_shared();
        // SAFETY: initialized, counting both consumers' 256 threads; a
        // phase a tile.
        unsafe {
            smem.ds_ready().arrive();
            smem.ds_ready().wait(n % 2);
        }
        // dQ = dS K over the block's 128 keys, in 64-column blocks taken
        // by the warpgroups in turn (at `d = 64`, a tile each): A the two
        // dS tiles (8 k16 steps: 32 bytes on, then the second tile), B
        // K's rows in column block `h`, MN-major.
        let h = ((c as u32 + n) % 2) as usize;
        let b = dq_ring.stage();
        if h < d / 64 {
            let da = Descriptor::swizzled(SPAN as u32, shared_address(smem.ds(0)), 16, 1024);
            let k_rows = shared_address(smem.k()) + (h * BC * SPAN) as u32;
            let db = Descriptor::swizzled(SPAN as u32, k_rows, (BC * SPAN) as u32, 1024);
            wgmma::fence();
            let mut dq_acc = <[f32; 32]>::zeroed();
            seq!(KT in 0..8 {{
                let kt: usize = KT;
                let x = da.advanced(((kt / 4) * 2 * BR * 64 + 32 * (kt % 4)) as u32);
                let y = db.advanced((kt * 16 * SPAN) as u32);
                // SAFETY: both dS tiles written and fenced; K landed.
                dq_acc = unsafe { dq_acc.mma_ss::<T, true>(x, y, kt > 0) };
            }});
            wgmma::commit();
            let dq_acc = wait_for::<0, _>(dq_acc);
            dk_acc = dk_acc.pinned();
            dv_acc = dv_acc.pinned();
            // Into buffer `b`, once the writer has read its last tile:
            // element (r, column j of the block) in box `2 h + j / 32` at
            // byte `r 128 + (((j mod 32) / 4) ^ (r mod 8)) 16 + (j mod 4)
            // 4`, a thread's neighbours as one 8-byte store (a warp's 8
            // rows x 32 bytes land in distinct banks, two wavefronts).
            if let Some(phase) = dq_ring.refill_phase() {
                // SAFETY: initialized; the writer arrives once a tile.
                unsafe { smem.dq_empty(b).wait(phase) };
            }
            // SAFETY: buffer `b` of the launch's shared memory, 8-aligned.
            let out = unsafe { Smem::array::<u64>(smem.dq(b)) };
            seq!(I in 0..16 {{
                let (row, col) = d_f32(t, 2 * I);
                let (r, j) = (row as usize, 64 * h + col as usize);
                let at = (j / 32) * 64 * SPAN + r * SPAN + 16 * (((j % 32) / 4) ^ (r % 8)) + 4 * (j % 4);
                let pair = (u64::from(dq_acc[2 * I + 1].to_bits()) << 32) | u64::from(dq_acc[2 * I].to_bits());
                // SAFETY: inside the buffer; this thread's elements.
                unsafe { out.set(at / 8, pair) };
            }});
            fence_async_shared();
        } else {
            // The dK product (which reads the stage's Q) done.
            dk_acc = wait_for::<0, _>(dk_acc);
            dv_acc = dv_acc.pinned();
        }
        // SAFETY: initialized, counting both consumers' 256 threads.
        unsafe { smem.dq_full(b).arrive() };
        if t == 0 {
            // SAFETY: initialized, counting the two warpgroups; their
            // products of the stage are done.
            unsafe { smem.q_empty(s).arrive() };
        }
        dq_ring.advance();
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
    (turns, dk, dv): (Out<u32>, Out<T>, Out<T>),
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
                smem.q_full(s).init(1 + 32);
                smem.q_empty(s).init(2);
            }
            smem.ds_ready().init(256);
            for b in 0..DQ_BUFFERS {
                smem.dq_full(b).init(256);
                smem.dq_empty(b).init(1);
            }
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
        } else if thread_idx_x() == 32 {
            // The second warp's first thread writes dQ.
            let a = Args::new((heads, kv_heads, s_q, s_k), flags);
            // SAFETY: as above; `turns` is the launch's.
            unsafe { write_dq(smem, maps, a, &turns) }
        } else if thread_idx_x() / 32 == 2 {
            // The third warp loads the rows.
            let a = Args::new((heads, kv_heads, s_q, s_k), flags);
            // SAFETY: the warp; as above; lse and D are the launch's.
            unsafe { load_rows(smem, a, (lse, delta), thread_idx_x() % 32) }
        }
    };
    let consumer = #[inline(always)]
    |who: crate::dev::roles::Consumer| {
        let a = Args::new((heads, kv_heads, s_q, s_k), flags);
        // SAFETY: the warpgroup, converged; the buffers are the launch's.
        unsafe { consume::<T, O>(smem, a, (dk, dv), (who.index as u32, who.thread), scale) }
    };
    // SAFETY: every thread, converged; 32 + 2 x 232 = 3 x 168 (checked).
    unsafe { specialize::<THREADS, 32, 232>(producer, consumer) };
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
            backward::<T, $o>(maps, (lse, delta), (turns, dk, dv), (heads, kv_heads, s_q, s_k), scale, flags);
        }
    )*};
}

head_dims! {
    /// 3. The fused backward on Hopper, FlashAttention-3 style, `d = 64`
    /// (the module documentation has the roles, the products and the
    /// arithmetic).
    ///
    /// Launch: `maps` holds `3 + 2 b kv_heads` tensor maps with the
    /// 128-byte swizzle: Q's and dO's (`b heads s_q x 64`, boxes of 64 x
    /// 64), dQ's `f32` sum (Q's shape, zeroed; `b heads` planes of `s_q x
    /// 64`, boxes of 64 x 32), then each K/V head's K and V (`s_k x 64`,
    /// boxes of 128 x 64); lse and D `[b, heads, s_q]`; `turns` (with
    /// [`super::DETERMINISTIC`]) `b heads ceil(s_q / 64)` zeros; dK, dV
    /// `[b, kv_heads, s_k, 64]`; the grid is `ceil(s_k / 128)` x `b
    /// kv_heads` blocks of 384 threads; `kv_heads` divides `heads`;
    /// `scale > 0`; `flags` [`super::CAUSAL`] and [`super::DETERMINISTIC`]. Then
    /// `attention_backward_dq` makes dQ.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_hopper_d64`.
    attention_backward_hopper_d64(64, [f32; 32]);
    /// 3. The fused backward on Hopper at `d = 128`: as
    /// [`attention_backward_hopper_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_hopper_d128`.
    attention_backward_hopper_d128(128, [f32; 64]);
}
