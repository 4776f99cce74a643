//! Step 3, fused attention in the style of FlashAttention-3 (sm_90a): the
//! copy engine feeds shared memory, the tensor cores read it with
//! `wgmma`, and the warps that do neither wait on nothing but mbarriers.
//!
//! **Roles** ([`crate::dev::roles::specialize`]). A block of 384 threads:
//! a producer warpgroup, of which one thread issues every TMA copy
//! (`pipeline`), and two consumer warpgroups, each owning 64 of the tile's
//! [`BR`] = 128 queries (`consumer`). The producer keeps 56 registers a
//! thread and the consumers take 224 (`56 + 2 x 224 = 3 x 168`); at `d =
//! 256` both are tight (the consumers hold O, S and P, 176 registers, and
//! the softmax's temporaries). Each ring's uses are counted by a
//! [`crate::dev::pipeline::PipelineState`]; the work tiles come from a
//! [`crate::dev::schedule::TileScheduler`] (`scheduler`), and each
//! consumer hands its finished tiles to an
//! [`crate::dev::epilogue::Epilogue`] (`epilogue`).
//!
//! **Data path.** Q's tile is copied once per work tile, K and V tile by
//! tile into a ring of `stages(d)` stages, each tile as one TMA box per 64
//! columns (128 x 64 for Q, `bc` x 64 for K and V) with the 128-byte
//! swizzle (K and V through one tensor map per K/V head, so a head's last
//! tile reads zeros past `s_k`, never the next head's rows).
//! `S = Q Kᵀ` is `wgmma` `m64n{bc}k16` with both operands in shared
//! memory (K-major: a row of K is a column of Kᵀ); `O += P V` is `wgmma`
//! `m64n{d}k16` with A = P from registers (the accumulators of `S`, after
//! the softmax, rounded and packed in pairs, are the A fragments as they
//! lie: `dev::wgmma::Accumulators`) and B = V MN-major. S and P never
//! leave registers.
//!
//! **Overlap.** Within a warpgroup, the softmax of key tile `j` runs while
//! the tensor cores compute `P_{j-1} V_{j-1}` (ptxas moves waits: the one
//! for `P V` is pinned below the softmax by a shared store, `consumer`);
//! and the two warpgroups' products and softmaxes interleave on the SM.
//! The arithmetic below says why that matters: the exponentials are as
//! slow as the products at `d = 64`. With [`PING_PONG`], an mbarrier turn
//! also orders the two warpgroups' products (FlashAttention-3's
//! ping-pong); off unless asked for.
//!
//! **Schedule.** Persistent: one block per SM walks the tiles statically
//! (`scheduler`); the ring runs on across tiles, so the next tile's K/V
//! (and its Q, once both consumers are done with the last one's) load
//! while the consumers finish and store the last tile. Without a mask, a
//! last round that would leave blocks idle is split by keys over all of
//! them ([`SPLIT`]), the chunks' states merged by a kernel of their own
//! (`merge`).
//!
//! **Masks and tails** as [`super::flash`]'s; rows past `s_q` are
//! computed on whatever Q's map reads there and never stored.
//!
//! **Arithmetic** (bf16 or f16, per key tile of `bc` keys and the block's
//! 128 queries): `4 x 128 bc d` FLOPs for `2 x 2 bc d` bytes of K and V
//! from L2, 128 FLOPs per byte (step 2: 64); DRAM sees Q, K, V and O about
//! once. Shared memory: `Q Kᵀ` reads Q and K (`2 d (64 + bc)` bytes per
//! warpgroup for `2 x 64 bc d` FLOPs, 43 FLOPs a byte at `bc` = 128), `P V`
//! only V (64 FLOPs a byte), above the 32 a Hopper SM's tensor cores
//! (about 4096 FLOPs a clock) need from its 128 bytes a clock. What bounds
//! it is the tensor cores and, beside them, the exponentials: `128 bc`
//! `MUFU.EX2` per tile at 16 a clock take `8 bc` clocks against the
//! products' `128 bc d / 1024`: a ratio of `64 / d` (1 at `d = 64`, 1/2 at
//! 128, 1/4 at 256), which only the overlap hides.
//!
//! **FP8** (`attention_hopper_e4m3_*`, step 3c): the same kernel on E4M3
//! Q, K and V. Each byte is one element, so a tile's copies and shared
//! memory are half as large (four stages at every `d`), and the tensor
//! cores take the products at twice the rate (about 8192 FLOPs a clock).
//! The exponentials do not speed up: their ratio to the products doubles
//! to `128 / d`, 1 at `d = 128`, so the FP8 kernel at 128 is as bound by
//! `MUFU.EX2` as the 16-bit one at 64. P is rounded to E4M3 (3 mantissa
//! bits, `2^-4` relative) before `P V`; `transpose` says how V meets it.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

mod consumer;
mod epilogue;
mod merge;
pub(in crate::attention) mod pipeline;
mod scheduler;
mod transpose;

use super::LOG2_E;
use crate::dev::Element;
use crate::dev::fp8::E4m3;
use crate::dev::roles::specialize;
use crate::dev::wgmma::Accumulators;
use crate::dev::{In, Out, sync_threads, thread_idx_x};
use crate::kernel;
use consumer::Consumer;
use epilogue::TileStore;
use half::{bf16, f16};
pub use merge::{attention_merge, merge_threads};
pub use pipeline::span_of;
use pipeline::{Smem, produce, shared_bytes_for};
use scheduler::AttentionArgs;
pub use scheduler::{Tail, block_tiles, causal_deal_loads, dealt, rounds};
pub use transpose::{TRANSPOSE_COLUMNS, TRANSPOSE_KEYS, TRANSPOSE_THREADS, fp8_v_transpose, transposed_keys};

/// Queries per work tile: two consumer warpgroups of 64.
pub const BR: usize = 128;
/// Threads per block: the producer warpgroup and two consumers.
pub const THREADS: usize = 384;
/// Bytes of a tile row per column block (the swizzle's span).
pub(in crate::attention) const SPAN: usize = 128;

/// Bit of the kernels' `flags`: causal masking.
pub const CAUSAL: u32 = 1;
/// Bit of the kernels' `flags`: the two consumer warpgroups take turns to
/// issue their products (FlashAttention-3's ping-pong, `consumer`; `d =
/// 64` and 128: at 256 the consumers have no register to spare). Off,
/// the tensor cores take the products in the order the warpgroups issue
/// them, which is faster (`docs/notes.md`).
pub const PING_PONG: u32 = 2;
/// Bit of the kernels' `flags`: the last round is split (not causal;
/// [`Tail`], `scheduler` says why and how): the chunks' states go to the
/// launch's workspace ([`part_floats`] a block), and
/// [`attention_merge()`] finishes their rows.
pub const SPLIT: u32 = 4;
/// Bit of the kernels' `flags`: each K/V head's own score scale and V
/// descale in place of `scale` and `v_scale`, for FP8 inputs quantized
/// per head rather than per tensor: `descales` holds `b kv_heads` score
/// scales (the softmax scale with the head's Q and K descales folded in),
/// then as many V descales, by `b kv_heads + kv_head`; a query head takes
/// its K/V head's. Not with [`SPLIT`] (the merge takes one scale).
pub const HEAD_DESCALES: u32 = 8;
/// The kernels' `flags` above this shift: heads per group of the causal
/// deal (0: every head at once; `scheduler` says why and how).
pub const GROUP_SHIFT: u32 = 16;

/// `f32` words of a split's workspace per block at head dimension `d`:
/// two chunks, each two warpgroups' state (per thread O's `d / 2`, then
/// two rows' reference and sum), thread-minor so that a warp's stores
/// and the merge's loads are whole 128-byte lines.
pub const fn part_floats(d: usize) -> usize {
    2 * 2 * (d / 2 + 4) * 128
}

/// Keys per tile for head dimension `d`: 128, or 64 at `d = 256` (its O
/// accumulator alone is 128 registers a thread). Registers per consumer
/// thread: O `d / 2` (32, 64, 128 at `d` = 64, 128, 256), S `bc / 2` (64,
/// 64, 32), P `bc / 4` (32, 32, 16). Shared memory: [`shared_bytes`].
pub const fn bc(d: usize) -> usize {
    if d > 128 { 64 } else { 128 }
}

/// K/V stages for head dimension `d` and elements of `e` bytes: as many
/// as shared memory holds, at most `pipeline::MAX_STAGES` (16-bit: 4
/// at `d = 64`, 3 at 128, 2 at 256; FP8: 4).
pub const fn stages(d: usize, e: usize) -> usize {
    let mut n = pipeline::MAX_STAGES;
    while n > 1 && shared_bytes_for(d, bc(d), n, e) > SHARED_LIMIT {
        n -= 1;
    }
    n
}

/// Shared memory bytes for head dimension `d` and elements of `e` bytes:
/// Q `128 d e` bytes, a stage `2 bc d e` (16-bit, d = 64: 16 KB and 4 x
/// 32 KB; 128: 32 KB and 3 x 64 KB, 230,560 bytes with the slack and the
/// mbarriers; 256: 64 KB and 2 x 64 KB; FP8 half of each, 4 stages),
/// within the 227 KB (232,448 bytes) a block may have.
pub const fn shared_bytes(d: usize, e: usize) -> usize {
    shared_bytes_for(d, bc(d), stages(d, e), e)
}

/// The most shared memory a block may have (sm_90: 227 KB).
const SHARED_LIMIT: usize = 227 * 1024;
const _: () = assert!(
    stages(64, 2) == 4 && stages(128, 2) == 3 && stages(256, 2) == 2 && shared_bytes(256, 2) <= SHARED_LIMIT
);

/// What scales a tile's scores and its O: the launch's `scale` (as `c`,
/// log2 e folded in, the softmax's base-2 units) and `v_scale`, or with
/// [`HEAD_DESCALES`] the tile's K/V head's own from `descales`: `batch
/// kv_heads` score scales (the softmax scale with the head's Q and K
/// descales folded in, one rounding, as `scale` is per tensor), then as
/// many V descales, by `b kv_heads + kv_head`. A query head takes its K/V
/// head's, as FlashAttention-3's descales do: one load of two words a
/// tile.
#[derive(Clone, Copy)]
struct Scaling {
    c: f32,
    v: f32,
    descales: In<f32>,
    per_head: bool,
}

impl Scaling {
    /// `(c, v)` for a tile of K/V head `kvh` (`b kv_heads + kv_head`, the
    /// work tile's) of `p`.
    #[inline(always)]
    fn of(self, kvh: usize, p: AttentionArgs) -> (f32, f32) {
        if !self.per_head {
            return (self.c, self.v);
        }
        let heads = (p.batch * p.kv_heads) as usize;
        // SAFETY: kvh < batch kv_heads, and `descales` holds two such runs
        // (the launch's contract with the flag).
        unsafe { (self.descales.load(kvh) * LOG2_E, self.descales.load(heads + kvh)) }
    }
}

/// Step 3's body: inputs `I`, O in `T` with `O::N = d` columns, S with
/// `S::N = bc(d)`; the scores and O scaled as `scaling` says.
#[inline(always)]
fn hopper<I: Element, T: Element, O: Accumulators, S: Accumulators>(
    maps: In<u64>,
    out: (Out<T>, Out<f32>),
    states: Out<f32>,
    p: AttentionArgs,
    scaling: Scaling,
) {
    let d = O::N;
    let smem = Smem::new(d, S::N, stages(d, I::BYTES), I::BYTES);
    let t = thread_idx_x() as usize;
    if t == 0 {
        // SAFETY: thread 0; the barrier follows; map 0 is Q's.
        unsafe {
            smem.init(maps);
            p.plan(smem.plan(), S::N);
        }
    }
    sync_threads();
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; initialized; the consumers walk the same
            // tiles (the launch's maps, as the kernel's contract says).
            unsafe { produce::<I>(smem, maps, p) }
        }
    };
    let consumer = #[inline(always)]
    |_| consume::<I, T, O, S>(smem, out, states, p, scaling);
    // SAFETY: every thread, converged; 56 + 2 x 224 = 3 x 168 (checked).
    unsafe { specialize::<THREADS, 56, 224>(producer, consumer) };
}

/// A consumer warpgroup of [`hopper`].
#[inline(always)]
fn consume<I: Element, T: Element, O: Accumulators, S: Accumulators>(
    smem: Smem,
    out: (Out<T>, Out<f32>),
    states: Out<f32>,
    p: AttentionArgs,
    scaling: Scaling,
) {
    // SAFETY: every lane of the consumers' warps is here.
    let (c, t) = unsafe { consumer::who() };
    // The turns, not at d = 256: its consumers have no register for them.
    let ping_pong = p.ping_pong && O::N <= 128;
    let epilogue = TileStore::<T, O, S>::new(out, states, p, smem, (c, t));
    // SAFETY: the warpgroup, converged; initialized; `o` and `lse` hold
    // the problem's rows, and with a split the workspace its size (the
    // launch's contract).
    unsafe { Consumer { c, t, smem, ping_pong }.run::<I, O, S>(p, epilogue, scaling) };
}

/// One kernel per head dimension `$d` and input element `$in` of `$e`
/// bytes (O's accumulators `$o`, S's `$s`); O is `T`.
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal, $in:ty, $e:literal, $o:ty, $s:ty);)*) => {$(
        $(#[$doc])*
        #[kernel(
            block = THREADS,
            shared = shared_bytes($d, $e),
            tile = [BR, 1],
            min_blocks = 1,
            persistent = true,
            arch = "sm_90a",
            types = [bf16, f16]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Element>(
            maps: In<u64>,
            o: Out<T>,
            lse: Out<f32>,
            states: Out<f32>,
            batch: u32,
            heads: u32,
            kv_heads: u32,
            s_q: u32,
            s_k: u32,
            scale: f32,
            v_scale: f32,
            descales: In<f32>,
            flags: u32,
        ) {
            let p = AttentionArgs {
                batch,
                heads,
                kv_heads,
                s_q,
                s_k,
                causal: flags & CAUSAL != 0,
                ping_pong: flags & PING_PONG != 0,
                group: flags >> GROUP_SHIFT,
                split: flags & SPLIT != 0,
            };
            let per_head = flags & HEAD_DESCALES != 0;
            let scaling = Scaling { c: scale * LOG2_E, v: v_scale, descales, per_head };
            hopper::<$in, T, $o, $s>(maps, (o, lse), states, p, scaling);
        }
    )*};
}

head_dims! {
    /// 3. Fused attention, FlashAttention-3 style, `d = 64` (the module
    /// documentation has the roles, the pipeline, the overlap and the
    /// arithmetic).
    ///
    /// Launch: persistent, one block of 384 threads per SM (fewer if there
    /// are fewer tiles); `maps` holds `1 + 2 b kv_heads` tensor maps with
    /// the 128-byte swizzle: Q's (`b heads s_q x 64`, boxes of [`BR`] x
    /// 64), then each K/V head's K and V (`s_k x 64`, boxes of [`bc`]`(d)`
    /// x 64), through which alone the
    /// kernel reads Q, K and V; O `[b, heads, s_q, 64]`, lse `[b, heads, s_q]`;
    /// `kv_heads` divides `heads`; every size at least 1; `scale > 0`;
    /// `v_scale` multiplies O (1 but for FP8's descale); with
    /// [`HEAD_DESCALES`], `descales` holds `2 b kv_heads` values that take
    /// their place head by head, else it is not read;
    /// `flags` of [`CAUSAL`], [`PING_PONG`] and [`SPLIT`], and above
    /// [`GROUP_SHIFT`] the causal deal's heads per group: 0, or a divisor
    /// of `b heads` that is a multiple of `heads / kv_heads`. With
    /// [`SPLIT`] (not causal), `states` holds `grid` [`part_floats`]`(64)`
    /// words, for [`attention_merge()`] to finish; without, it is not
    /// touched.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_d64`.
    attention_hopper_d64(64, T, 2, [f32; 32], [f32; 64]);
    /// 3. Fused attention on Hopper at `d = 128`: as
    /// [`attention_hopper_d64()`].
    ///
    /// Launch: as [`attention_hopper_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_d128`.
    attention_hopper_d128(128, T, 2, [f32; 64], [f32; 64]);
    /// 3. Fused attention on Hopper at `d = 256`: as
    /// [`attention_hopper_d64()`], with key tiles of 64 (O is 128 registers
    /// a thread) and two stages.
    ///
    /// Launch: as [`attention_hopper_d64()`], rows of 256.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_d256`.
    attention_hopper_d256(256, T, 2, [f32; 128], [f32; 32]);
    /// 3c. FP8 attention on Hopper at `d = 64`: Q, K and V in E4M3, O in
    /// `T`. The same kernel as [`attention_hopper_d64()`] on half the
    /// bytes: `Q Kᵀ` is `wgmma` `k32` on E4M3 (64-byte rows: the 64-byte
    /// swizzle), P is rounded to E4M3 (`cvt.rn.satfinite.e4m3x2.f32`)
    /// and packed four a register as `P V`'s A fragments, and V comes
    /// transposed: FP8 `wgmma` reads B K-major only, and `P V`'s k is
    /// the keys. Vᵀ's keys are permuted within each 16 as packed P's
    /// bytes are ([`crate::dev::wgmma::fp8_column`]: [`fp8_v_transpose()`]
    /// writes it so), so P's registers need no shuffle. Descales: Q's and
    /// K's join `scale`, V's is `v_scale`. Four stages.
    ///
    /// Launch: as [`attention_hopper_d64()`], Q and K E4M3 (maps with the
    /// 64-byte swizzle, boxes 64 wide), and each K/V head's second map
    /// Vᵀ's: `64 x s_kt` of [`fp8_v_transpose()`]'s output (`s_kt` its key
    /// pitch), boxes of 64 x [`bc`]`(64)` with the 128-byte swizzle.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_e4m3_d64`.
    attention_hopper_e4m3_d64(64, E4m3, 1, [f32; 32], [f32; 64]);
    /// 3c. FP8 attention on Hopper at `d = 128`: as
    /// [`attention_hopper_e4m3_d64()`], rows of 128 bytes (the 128-byte
    /// swizzle).
    ///
    /// Launch: as [`attention_hopper_e4m3_d64()`], rows of 128, Vᵀ's boxes
    /// 128 x 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_e4m3_d128`.
    attention_hopper_e4m3_d128(128, E4m3, 1, [f32; 64], [f32; 64]);
    /// 3c. FP8 attention on Hopper at `d = 256`: as
    /// [`attention_hopper_e4m3_d64()`], key tiles of 64 (Vᵀ's rows of 64
    /// keys: the 64-byte swizzle).
    ///
    /// Launch: as [`attention_hopper_e4m3_d64()`], rows of 256, Vᵀ's boxes
    /// 256 x 64.
    /// Measured: `BENCHMARKS.md`, rows `attention_hopper_e4m3_d256`.
    attention_hopper_e4m3_d256(256, E4m3, 1, [f32; 128], [f32; 32]);
}
