//! The library's tensor-core kernel: Hopper's persistent, warp-specialized
//! `wgmma` GEMM, assembled from named parts:
//!
//! - the **ring** (`ring`): TMA copies of A and B into a ring of stages in
//!   shared memory, an mbarrier pair per stage, its uses counted by a
//!   [`PipelineState`];
//! - the **roles** ([`specialize`]): one producer warpgroup, of which one
//!   thread issues every copy, and two consumer warpgroups that multiply
//!   (`setmaxnreg`: 40 registers and 232);
//! - the **scheduler** (`Items`): `batch x splits x tiles` items, tiles
//!   of C in grouped order, dealt to one block per SM;
//! - the **epilogue** ([`Epilogue`]): `Direct` or `Staged` stores of
//!   `D = act(alpha acc + beta C + bias)`, or with k split, `Tickets`.
//!
//! **Any shape.** A tile's rows past `m`, columns past `n` and a last
//! k-step past `k` are the copy engine's zero fill: the maps describe
//! exactly `m x k` and `k x n` (rows on 16 bytes, which the host arranges),
//! and the stores are guarded. **Four tiles** ([`Tile`]): wide 128 x 256,
//! mid 128 x 192 where a last wave of wide tiles would be mostly empty,
//! narrow 128 x 128 and short 64 x 128 where wide tiles are too few for
//! the SMs or partly empty.
//!
//! **Arithmetic**, per stage: 48 KB for `2 x 128 x 256 x BK` FLOPs (mid:
//! 40 KB for `2 x 128 x 192 x BK`; narrow: 32 KB for `2 x 128 x 128 x BK`;
//! short: 24 KB for `2 x 64 x 128 x BK`).

use half::{bf16, f16};

use super::element::RingElement;
use super::epilogue::{BIAS_COLS, Output};
use super::ring::{Ring, consume, start_ring};
use super::schedule::{GemmArgs, Item, Items};
use super::store::{Direct, STAGING_BYTES, Scalars, Staged};
use super::tickets::Tickets;
use super::tile::{Mid, Narrow, Short, Tile, Wide, shared_bytes_for};
use crate::dev::Tf32;
use crate::dev::epilogue::Epilogue;
use crate::dev::fp8::{E4m3, E5m2};
use crate::dev::grid::wait_for_prerequisites;
use crate::dev::pipeline::PipelineState;
use crate::dev::roles::{Consumer, specialize};
use crate::dev::schedule::TileScheduler;
use crate::dev::tma::acquire_map;
use crate::dev::{In, Out};
use crate::kernel;

/// Threads of a block: the producer warpgroup and two consumers.
pub const THREADS: usize = 384;

// Every tile's ring, mbarriers and staging fit the 227 KB of shared
// memory a block may have (wide and short tiles take all of it).
const _: () = {
    let most = 227 * 1024;
    assert!(shared_bytes_for::<Wide>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Narrow>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Mid>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Short>(STAGING_BYTES) <= most);
};

/// The body of every instance: the ring started, the roles split, the
/// producer filling the scheduler's items, the consumers multiplying them
/// into one of three epilogues.
#[inline(always)]
fn gemm<E: RingElement, T: Output, L: Tile, const SPLIT: bool>(
    maps: In<u64>,
    (d, sums, tickets): (Out<T>, Out<f32>, Out<u32>),
    w: GemmArgs,
    e: Scalars,
) {
    let ring = start_ring::<E, L>(maps, 2);
    // A dependent launch: its blocks may be here while the kernel ahead of
    // it still runs. Shared memory, the mbarriers and the maps (the host
    // wrote them before that kernel) are set; global memory waits.
    wait_for_prerequisites();
    let items = Items::<L>::new(w);
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; "empty" counts the two consumers; the
            // launch passes 2 batch maps.
            unsafe { produce(ring, items) }
        }
    };
    let consumer = #[inline(always)]
    |Consumer { index, thread }| {
        let me = (index, thread);
        // SAFETY: (all three) the warpgroup, converged; the producer fills
        // the same items; the buffers as the launch's contract says. C
        // read (beta != 0) or a column bias go through the registers'
        // store: their loads, hoisted across the unrolled staged store,
        // would spill.
        unsafe {
            if SPLIT {
                multiply(ring, items, index, Tickets::<T, L>::new((d, sums, tickets), w, e, me));
            } else if w.d_maps && e.beta == 0.0 && e.bias_mode != BIAS_COLS {
                multiply(ring, items, index, Staged::<T, L>::new(maps, ring.after(), me, w, e));
            } else {
                multiply(ring, items, index, Direct::<T, L>::new(d, w, e, me));
            }
        }
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 registers fit the
    // block's 3 x 168 (checked when it compiles).
    unsafe { specialize::<THREADS, 40, 232>(producer, consumer) };
}

/// The producer: every item's k-steps into the ring, matrix `z`'s A and B
/// through maps `2 z` and `2 z + 1`.
///
/// # Safety
/// One thread; the ring started with "empty" counting both consumers; the
/// launch passes `2 batch` maps.
#[inline(always)]
pub(crate) unsafe fn produce<E: RingElement, L: Tile>(ring: Ring<E, L>, items: Items<L>) {
    // `start_ring` made maps 0 and 1 visible; the batch's others too.
    for map in 2..2 * items.w.batch() {
        // SAFETY: the caller's contract.
        unsafe { acquire_map(ring.maps, map) };
    }
    let mut state = PipelineState::new(L::STAGES);
    for item in items.work() {
        for step in item.k_steps() {
            // SAFETY: the caller's contract; the stage is free once
            // acquired.
            unsafe {
                let s = ring.acquire(state);
                ring.fill_from(s, step, item.origin(), (2 * item.z(), 2 * item.z() + 1));
            }
            state.advance();
        }
    }
}

/// A consumer warpgroup `(index, thread)`: each item's sums from the ring,
/// into the epilogue.
///
/// # Safety
/// The warpgroup runs it converged; the producer fills the same items; as
/// for the epilogue's [`Epilogue::store`].
#[inline(always)]
unsafe fn multiply<E: RingElement, L: Tile>(
    ring: Ring<E, L>,
    items: Items<L>,
    consumer: usize,
    mut epilogue: impl Epilogue<Item, Results = L::Acc>,
) {
    let mut state = PipelineState::new(L::STAGES);
    for item in items.work() {
        // SAFETY: the caller's contract.
        unsafe {
            let acc = consume(ring, consumer, item.steps(), &mut state);
            epilogue.store(&acc, item);
        }
    }
    epilogue.finish();
}

/// Every precision's kernels ([`precision_instances`]), each line's in the
/// sm_90a PTX part it names (`gpu/src/lib.rs`), and the host's trait that
/// an output type implements with all of them.
macro_rules! instances {
    ($($(#[$doc:meta])* $part:literal: $name:ident / $split:ident, $mid:ident / $mid_split:ident, $narrow:ident / $narrow_split:ident, $short:ident / $short_split:ident($element:ty);)*) => {
    $(
        #[cfg(any(not(ptx_parts), ptx_part = $part))]
        precision_instances!($(#[$doc])* $name / $split, $mid / $mid_split, $narrow / $narrow_split, $short / $short_split($element));
    )*
        /// Every library kernel's instance for one output type (the
        /// kernels above, all of them): what an output type of the host's
        /// library call implements, written out once, here. (Host only:
        /// the kernels' modules of launch items are.)
        #[cfg(not(target_arch = "nvptx64"))]
        pub trait Instances:
            $($name::Instance + $split::Instance + $mid::Instance + $mid_split::Instance + $narrow::Instance + $narrow_split::Instance
            + $short::Instance + $short_split::Instance +)* Sized
        {
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl<T: $($name::Instance + $split::Instance + $mid::Instance + $mid_split::Instance + $narrow::Instance + $narrow_split::Instance
            + $short::Instance + $short_split::Instance +)* Sized> Instances for T
        {
        }
    };
}

/// One precision's eight kernels: [`gemm`] on each tile, without and with
/// k split.
macro_rules! precision_instances {
    ($(#[$doc:meta])* $name:ident / $split:ident, $mid:ident / $mid_split:ident, $narrow:ident / $narrow_split:ident, $short:ident / $short_split:ident($element:ty)) => {
        instance!($(#[$doc])* $name($element, false, Wide));
        instance!(
            $(#[$doc])*
            ///
            /// With k split (`splits > 1`): the partial sums, the tickets
            /// and the last split's fix-up are a kernel of their own, so
            /// that the one-split kernel keeps its k-loop's addresses on
            /// the uniform datapath (with the fix-up beside it, ptxas moved
            /// them to per-thread registers, which was slower on large
            /// squares: `docs/notes.md`).
            $split($element, true, Wide)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 128 x 192 tiles ([`Mid`]: `m64n192` instructions, 96
            /// accumulators a thread), where wide tiles leave a last wave
            /// mostly empty.
            $mid($element, false, Mid)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 128 x 192 tiles, with k split.
            $mid_split($element, true, Mid)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 128 x 128 tiles ([`Narrow`]: `m64n128` instructions, 64
            /// accumulators a thread), for the shapes where 128 x 256
            /// tiles are too few or half empty.
            $narrow($element, false, Narrow)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 128 x 128 tiles, with k split (the two variants above).
            $narrow_split($element, true, Narrow)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 64 x 128 tiles ([`Short`]: `m64n64` instructions, 32
            /// accumulators a thread, the two warpgroups side by side),
            /// for calls of few rows (16 x 4096 x 4096 fills 16 of a
            /// 128-row tile's rows) or of too few tiles otherwise.
            $short($element, false, Short)
        );
        instance!(
            $(#[$doc])*
            ///
            /// On 64 x 128 tiles, with k split.
            $short_split($element, true, Short)
        );
    };
}

/// One kernel: [`gemm`] for an element, a split mode and a tile.
macro_rules! instance {
    ($(#[$doc:meta])* $name:ident($element:ty, $split_mode:literal, $tile:ident)) => {
        $(#[$doc])*
        ///
        /// Launch: 384 threads, one block per SM or fewer
        /// (`persistent`); `maps` holds `2 batch` tensor maps (A's then
        /// B's for each matrix of the batch, rows on 16 bytes, boxes as the
        /// element's and the tile's; the copy engine reads A and B through
        /// them alone); `d`
        /// holds `batch` matrices `m x n` at `ldd`, `d_batch` apart (read
        /// when `beta != 0`), `sums` (with `splits > 1`) `batch splits m
        /// n` values and `tickets` `256 batch tiles` zeros (zeros again
        /// after the launch); the bias `m` or `n` values by `bias_mode`;
        /// `k_steps = ceil(k / BK)` k-steps of the element's `BK`,
        /// `split_steps` per split, enough splits to cover them.
        #[kernel(
            block = THREADS,
            shared = shared_bytes_for::<$tile>(STAGING_BYTES),
            tile = [<$tile as Tile>::BN, <$tile as Tile>::BM],
            min_blocks = 1,
            persistent = true,
            dependent = true,
            arch = "sm_90a",
            types = [f32, bf16, f16]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Output>(
            maps: In<u64>,
            d: Out<T>,
            sums: Out<f32>,
            tickets: Out<u32>,
            bias: In<f32>,
            m: u32,
            n: u32,
            k_steps: u32,
            ldd: u32,
            d_batch: u64,
            batch: u32,
            splits: u32,
            split_steps: u32,
            alpha: f32,
            beta: f32,
            bias_mode: u32,
            act: u32,
            d_maps: u32,
        ) {
            // The k-steps as the launch gives them: a parameter, which
            // ptxas reads again where it needs it, where a count computed
            // in the kernel would hold a register across every loop.
            let work = GemmArgs { m, n, ldd, d_batch, batch, splits, split_steps, steps: k_steps, d_maps: d_maps != 0 };
            let scalars = Scalars { alpha, beta, bias, bias_mode, act };
            gemm::<$element, T, $tile, $split_mode>(maps, (d, sums, tickets), work, scalars);
        }
    };
}

instances! {
    /// bf16 A (`m x k`, K-major) and B (`k x n`, N-major).
    "dense": gemm_wgmma_bf16 / gemm_wgmma_bf16_split, gemm_wgmma_bf16_n192 / gemm_wgmma_bf16_n192_split,
        gemm_wgmma_bf16_n128 / gemm_wgmma_bf16_n128_split,
        gemm_wgmma_bf16_m64 / gemm_wgmma_bf16_m64_split(bf16);
    /// IEEE binary16 A and B, laid out as for bf16.
    "dense": gemm_wgmma_f16 / gemm_wgmma_f16_split, gemm_wgmma_f16_n192 / gemm_wgmma_f16_n192_split,
        gemm_wgmma_f16_n128 / gemm_wgmma_f16_n128_split,
        gemm_wgmma_f16_m64 / gemm_wgmma_f16_m64_split(f16);
    /// `f32` A (`m x k`) and B transposed (`n x k`), both K-major, read as
    /// tf32 (each input's low 13 mantissa bits dropped).
    "dense": gemm_wgmma_tf32 / gemm_wgmma_tf32_split, gemm_wgmma_tf32_n192 / gemm_wgmma_tf32_n192_split,
        gemm_wgmma_tf32_n128 / gemm_wgmma_tf32_n128_split,
        gemm_wgmma_tf32_m64 / gemm_wgmma_tf32_m64_split(Tf32);
    /// FP8 E4M3 A (`m x k`) and B transposed (`n x k`), both K-major (the
    /// host folds the per-tensor scales into `alpha`).
    "fp8": gemm_wgmma_e4m3 / gemm_wgmma_e4m3_split, gemm_wgmma_e4m3_n192 / gemm_wgmma_e4m3_n192_split,
        gemm_wgmma_e4m3_n128 / gemm_wgmma_e4m3_n128_split,
        gemm_wgmma_e4m3_m64 / gemm_wgmma_e4m3_m64_split(E4m3);
    /// FP8 E5M2 A and B, laid out as for E4M3.
    "fp8": gemm_wgmma_e5m2 / gemm_wgmma_e5m2_split, gemm_wgmma_e5m2_n192 / gemm_wgmma_e5m2_n192_split,
        gemm_wgmma_e5m2_n128 / gemm_wgmma_e5m2_n128_split,
        gemm_wgmma_e5m2_m64 / gemm_wgmma_e5m2_m64_split(E5m2);
}
