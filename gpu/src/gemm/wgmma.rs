//! The library's tensor-core kernel: the tensor ladder's step 6
//! (`tc_wgmma_persistent_*`: TMA into an mbarrier ring, one
//! producer and two consumer warpgroups with `setmaxnreg`, persistent
//! blocks over a grouped tile order), generalized to the work a library
//! call brings:
//!
//! - **Items, not tiles.** A block walks `batch x splits x tiles` items:
//!   matrix `z` of a strided batch (its A and B through tensor maps `2 z`
//!   and `2 z + 1`), k-split `s` (k-steps `s split_steps..`), and a tile
//!   of C in grouped order.
//! - **Four tiles.** 128 x 256 ([`Wide`]); 128 x 192 ([`Mid`], the
//!   `_n192` kernels) where a last wave of wide tiles would be mostly
//!   empty (3072 x 3072: 288 wide tiles, 2.2 waves of 132 SMs run as 3;
//!   384 mid ones, 2.9 waves); 128 x 128 ([`Narrow`], the
//!   `_n128` kernels) or 64 x 128 ([`Short`], the `_m64` kernels) where
//!   wide tiles are too few for the SMs or partly empty: 128 x 8192 x
//!   8192 has 32 wide tiles for 132 SMs, 64 narrow ones and 128 short
//!   ones; 8192 x 128 x 8192 leaves half of every wide tile past `n`;
//!   16 x 4096 x 4096 fills 16 rows of a 128-row tile, 16 of a short
//!   one's 64. A mid stage is 40 KB for three quarters of a wide one's
//!   multiply-adds (48 KB), a narrow one 32 KB for half, a short one 24
//!   KB for a quarter ([`Tile`]).
//!   Splitting k multiplies the items further, at the price of writing
//!   `splits` partial sums that the last split adds.
//! - **Any shape.** A tile's rows past `m`, columns past `n` and a last
//!   k-step past `k` are the copy engine's zero fill: the maps describe
//!   exactly `m x k` and `k x n` (their row strides multiples of 16 bytes,
//!   which the host arranges), and the stores are guarded.
//! - **The epilogue in the store.** With one split, each consumer turns
//!   its sums into `D = act(alpha acc + beta C + bias)` in the output type
//!   as it stores them (`C` read only when `beta != 0`): no `f32`
//!   workspace, no second pass over `D`. With several, partial sums land
//!   in the `f32` workspace `sums` (split `s` of matrix `z` at `(z splits
//!   + s) m n`, rows `n` apart, 8-byte pairs when `n` is even), and the
//!   last split to finish a tile finishes it, in the same launch: each
//!   thread, after writing its partial sums (128, 64 or 32 by the
//!   tile), draws a ticket for its
//!   place in the tile (an `atom.add` with release, one word per tile and
//!   thread, publishing its writes); the thread that draws the last one
//!   acquires the others' (a fence), adds the splits' sums in split order (the
//!   same bits whoever comes last), applies the epilogue and stores D,
//!   and resets the ticket for the next launch. No block waits for
//!   another, so no order of blocks can deadlock (nor the emulator,
//!   which runs them one after another); the partial sums, written and
//!   read within microseconds, mostly stay in L2.
//!
//! Its arithmetic is step 6's: per stage 48 KB for `2 x 128 x 256 x BK`
//! FLOPs (mid: 40 KB for `2 x 128 x 192 x BK`; narrow: 32 KB for `2 x 128
//! x 128 x BK`; short: 24 KB for `2 x 64 x 128 x BK`).

use half::{bf16, f16};

use super::epilogue::{BIAS_COLS, Output};
use super::store::{CHUNK_BYTES, Epilogue, STAGING_BYTES, store_staged_by, store_through};
use crate::dev::atomic::{Ordering, fence};
use crate::dev::grid::wait_for_prerequisites;
use crate::dev::registers;
use crate::dev::tma::{acquire_map, bulk_wait_read};
use crate::dev::wgmma::Accumulators;
use crate::dev::wgmma::d_f32;
use crate::dev::{In, Out, block_idx_x, grid_dim_x, thread_idx_x};
use crate::kernel;
use crate::tensor::hopper::{
    Bf16, E4m3, E5m2, Element, F16, Mid, Narrow, Short, Tf32, Tile, WS_THREADS, Wide, consume, grouped,
    shared_bytes_for, start_ring, store_at,
};
use seq_macro::seq;

/// The scalars of a launch (what [`items`] and the stores need), in the
/// words the launch gives them (read as `usize`), 32 bits but for D's
/// batch stride: like an [`Item`]'s, they live across the consumers'
/// k-loop beside 128 sums.
#[derive(Clone, Copy)]
struct Work {
    m: u32,
    n: u32,
    ldd: u32,
    d_batch: u64,
    batch: u32,
    splits: u32,
    split_steps: u32,
    steps: u32,
    /// D's tensor maps follow A's and B's (the staged store).
    d_maps: bool,
}

impl Work {
    fn m(&self) -> usize {
        self.m as usize
    }
    fn n(&self) -> usize {
        self.n as usize
    }
    fn ldd(&self) -> usize {
        self.ldd as usize
    }
    fn d_batch(&self) -> usize {
        self.d_batch as usize
    }
    fn batch(&self) -> usize {
        self.batch as usize
    }
    fn splits(&self) -> usize {
        self.splits as usize
    }
    fn split_steps(&self) -> usize {
        self.split_steps as usize
    }
    fn steps(&self) -> usize {
        self.steps as usize
    }
}

/// One item: the C tile's origin and index, its matrix of the batch, its
/// k-split, its first k-step and count. In 32-bit words: the consumers
/// keep an item across their k-loop beside 128 sums, and 64-bit fields
/// would take registers that ptxas then spills.
#[derive(Clone, Copy)]
struct Item {
    origin: (u32, u32),
    /// The tile's index in the batch's grid of tiles (`z tiles + tile`).
    tile: u32,
    z: u32,
    s: u32,
    first: u32,
    steps: u32,
}

impl Item {
    fn origin(&self) -> (usize, usize) {
        (self.origin.0 as usize, self.origin.1 as usize)
    }

    fn z(&self) -> usize {
        self.z as usize
    }

    fn steps(&self) -> usize {
        self.steps as usize
    }
}

// Every tile's ring, mbarriers and staging fit the 227 KB of shared
// memory a block may have (wide and short tiles take all of it).
const _: () = {
    let most = 227 * 1024;
    assert!(shared_bytes_for::<Wide>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Narrow>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Mid>(STAGING_BYTES) <= most);
    assert!(shared_bytes_for::<Short>(STAGING_BYTES) <= most);
};

/// This block's items of tiles `L::BM x L::BN`, in the order every
/// warpgroup walks them.
#[inline(always)]
fn items<L: Tile>(w: Work) -> impl Iterator<Item = Item> {
    let grid = (w.m().div_ceil(L::BM), w.n().div_ceil(L::BN));
    // At least one tile: the clamp tells the compiler the divisions below
    // cannot be by zero (no panic path).
    let tiles = (grid.0 * grid.1).max(1);
    (block_idx_x() as usize..w.batch() * w.splits() * tiles).step_by(grid_dim_x() as usize).map(move |i| {
        let (tile, rest) = (i % tiles, i / tiles);
        let splits = w.splits().max(1);
        let (s, z) = (rest % splits, rest / splits);
        let (tm, tn) = grouped(tile, grid);
        let first = s * w.split_steps();
        Item {
            origin: ((tm * L::BM) as u32, (tn * L::BN) as u32),
            tile: (z * tiles + tile) as u32,
            z: z as u32,
            s: s as u32,
            first: first as u32,
            steps: w.split_steps().min(w.steps().saturating_sub(first)) as u32,
        }
    })
}

/// The body of every instance (see the module).
#[inline(always)]
fn gemm<E: Element, T: Output, L: Tile, const SPLIT: bool>(
    maps: In<u64>,
    (d, sums, tickets): (Out<T>, Out<f32>, Out<u32>),
    w: Work,
    k_steps: u32,
    e: Epilogue,
) {
    let t = thread_idx_x() as usize;
    let ring = start_ring::<E, L>(maps, 2);
    // A dependent launch: its blocks may be here while the pack ahead of
    // it (or whatever kernel the stream ran last) still runs. Shared
    // memory, the mbarriers and the maps (the host wrote them before that
    // kernel) are set; global memory waits for it to finish.
    wait_for_prerequisites();
    // The k-steps come from the launch as they are: a parameter, which
    // ptxas reads again where it needs it, where a count computed here
    // would hold a register across every loop (and was spilled).
    let w = Work { steps: k_steps, ..w };
    if t < 128 {
        // SAFETY: the warpgroup, converged; 40 + 2 x 232 = 3 x 168.
        unsafe { registers::release::<40>() };
        if t == 0 {
            // `start` made maps 0 and 1 visible; the batch's others too.
            for map in 2..2 * w.batch() {
                // SAFETY: the launch passes 2 batch maps.
                unsafe { acquire_map(maps, map) };
            }
            let mut it = 0;
            for item in items::<L>(w) {
                for step in item.first as usize..(item.first + item.steps) as usize {
                    let (s, round) = (it % L::STAGES, it / L::STAGES);
                    // SAFETY: one thread; the stage is free once both
                    // consumers released its previous round; maps 2 z and
                    // 2 z + 1 are the item's A and B.
                    unsafe {
                        if round > 0 {
                            ring.empty(s).wait(((round - 1) % 2) as u32);
                        }
                        ring.fill_from(s, step, item.origin(), (2 * item.z(), 2 * item.z() + 1));
                    }
                    it += 1;
                }
            }
        }
        return;
    }
    // SAFETY: as above; the producer releases what this claims.
    unsafe { registers::claim::<232>() };
    let consumer = t / 128 - 1;
    let t = (t % 128) as u32;
    let mut it = 0;
    // C read (beta != 0) or a column bias go through the registers'
    // store (their loads, hoisted by the compiler across the unrolled
    // store, would spill); else, with D's maps, the staged store.
    if !SPLIT && w.d_maps && e.beta == 0.0 && e.bias_mode != BIAS_COLS {
        let lane0 = t.is_multiple_of(32);
        let map = 2 * w.batch();
        if lane0 {
            for z in 0..w.batch() {
                // SAFETY: the launch passes the batch's D maps after A's and B's.
                unsafe { acquire_map(maps, map + z) };
            }
        }
        let offset = ring.after() + (4 * consumer + t as usize / 32) * 2 * CHUNK_BYTES;
        let mut count = 0;
        for item in items::<L>(w) {
            // SAFETY: as below; map `map + z` is matrix z's D, acquired
            // above by lane 0; the staging follows the ring
            // (`shared_bytes_for::<L>(STAGING_BYTES)`).
            unsafe {
                let acc = consume(ring, consumer, item.steps(), &mut it);
                let (to, part) = ((maps, map + item.z(), offset), L::part_at(item.origin(), consumer));
                store_staged_by::<T, _>(to, &mut count, &acc, part, t, (w.m(), w.n()), e);
            }
        }
        if lane0 {
            bulk_wait_read::<0>();
        }
        return;
    }
    if !SPLIT {
        for item in items::<L>(w) {
            // SAFETY: the warpgroup, converged; the producer fills these
            // k-steps in this order; `d` holds every matrix of the batch
            // at `ldd`, `d_batch` apart, and the bias its values (the
            // launch's contract).
            unsafe {
                let acc = consume(ring, consumer, item.steps(), &mut it);
                store_through::<T, _, 0, 64>(
                    &d,
                    &acc,
                    L::part_at(item.origin(), consumer),
                    t,
                    (w.m(), w.n()),
                    (item.z() * w.d_batch(), w.ldd()),
                    e,
                );
            }
        }
        return;
    }
    let split = w.m() * w.n();
    // The same words, read (the last split of a tile reads them all).
    let sums_in = In::from_out(sums.recast::<f32>());
    for item in items::<L>(w) {
        let base = |s: usize| (item.z() * w.splits() + s) * split;
        let part = L::part_at(item.origin(), consumer);
        // SAFETY: as above; `sums` holds `batch splits m n` values, rows
        // `n` apart; pairs only when `n` (so every base) is even; the
        // tickets `tiles 256` words, zero at the launch.
        unsafe {
            let acc = consume(ring, consumer, item.steps(), &mut it);
            if w.n().is_multiple_of(2) {
                store_at::<true, _>(&sums, &acc, part, t, (w.m(), w.n()), (base(item.s as usize), w.n()));
            } else {
                store_at::<false, _>(&sums, &acc, part, t, (w.m(), w.n()), (base(item.s as usize), w.n()));
            }
            // The thread's ticket for its place in the tile, drawn with
            // release (its partial sums published): the last of the splits
            // to draw it acquires everyone's with a fence (the others go on
            // to their next item without one).
            let ticket = item.tile as usize * 256 + 128 * consumer + t as usize;
            if tickets.atomic_add(ticket, 1, Ordering::Release) as usize + 1 == w.splits() {
                fence();
                tickets.atomic_store(ticket, 0, Ordering::Relaxed);
                // At most 32 of the thread's sums at a time (a quarter of
                // a wide tile's; a short tile's 32 in the first part, the
                // rest return at once): 32 running totals and their loads
                // in flight fit beside the loop's state, where a wide
                // tile's whole 128 and theirs would not (ptxas spilled,
                // and still did with halves).
                finish_part::<T, L::Acc, 0, 16>(&d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 16, 32>(&d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 32, 48>(&d, sums_in, item, part, w, t, e);
                finish_part::<T, L::Acc, 48, 64>(&d, sums_in, item, part, w, t, e);
            }
        }
    }
}

/// The last split's fix-up of the thread's places `LO..HI` of its
/// warpgroup's part (at `part` in D) of `item`'s tile: every split's
/// partial sums added in split order (the same bits whoever finishes),
/// then the epilogue and the store to D.
///
/// # Safety
/// As for [`add_partial`] for each split's sums, and [`store_through`].
#[inline(always)]
unsafe fn finish_part<T: Output, A: Accumulators, const LO: usize, const HI: usize>(
    d: &Out<T>,
    sums: In<f32>,
    item: Item,
    part: (usize, usize),
    w: Work,
    t: u32,
    e: Epilogue,
) {
    if LO >= A::N / 4 {
        // Past a narrow or short tile's pairs.
        return;
    }
    let mut total = A::zeroed();
    for s in 0..w.splits() {
        let at = (part, t, (w.m(), w.n()), (item.z() * w.splits() + s) * w.m() * w.n());
        // SAFETY: the caller's contract.
        unsafe {
            if w.n().is_multiple_of(2) {
                add_partial::<A, true, LO, HI>(&mut total, sums, at);
            } else {
                add_partial::<A, false, LO, HI>(&mut total, sums, at);
            }
        }
    }
    let at = (item.z() * w.d_batch(), w.ldd());
    // SAFETY: the caller's contract.
    unsafe { store_through::<T, A, LO, HI>(d, &total, part, t, (w.m(), w.n()), at, e) };
}

/// Adds the partial sums at `base` (an `m x n` matrix, rows `n` apart, as
/// [`store_at`] wrote them) of the thread's places `LO..HI` (pairs, of
/// 64) in the warpgroup's part of a tile, at `(m0, n0)` in D, to `acc`: each pair one
/// 8-byte load when `PAIRS` (`n` even).
///
/// # Safety
/// `sums` holds the matrix at `base`; with `PAIRS`, `n` and `base` are
/// even; what this reads was written before (this thread, or published to
/// it through its ticket).
#[inline(always)]
unsafe fn add_partial<A: Accumulators, const PAIRS: bool, const LO: usize, const HI: usize>(
    acc: &mut A,
    sums: In<f32>,
    ((m0, n0), t, (m, n), base): ((usize, usize), u32, (usize, usize), usize),
) {
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + r as usize, n0 + col as usize);
    seq!(J in 0..64 {{
        let j: usize = J;
        let (row, col) = (row + 8 * (j % 2), col + 8 * (j / 2));
        if j < A::N / 4 && (LO..HI).contains(&j) && row < m && col < n {
            let at = base + row * n + col;
            // SAFETY: inside the matrix (with PAIRS, n even: col + 1 < n
            // too, and `at` even).
            let v = unsafe {
                if PAIRS {
                    sums.load8::<2>(at)
                } else if col + 1 < n {
                    [sums.load(at), sums.load(at + 1)]
                } else {
                    [sums.load(at), 0.0]
                }
            };
            acc[2 * j] += v[0];
            acc[2 * j + 1] += v[1];
        }
    }});
}

macro_rules! instances {
    ($($(#[$doc:meta])* $name:ident / $split:ident, $mid:ident / $mid_split:ident, $narrow:ident / $narrow_split:ident, $short:ident / $short_split:ident($element:ty);)*) => {
    $(
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
            block = WS_THREADS,
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
            let work = Work { m, n, ldd, d_batch, batch, splits, split_steps, steps: 0, d_maps: d_maps != 0 };
            let epilogue = Epilogue { alpha, beta, bias, bias_mode, act };
            gemm::<$element, T, $tile, $split_mode>(maps, (d, sums, tickets), work, k_steps, epilogue);
        }
    };
}

instances! {
    /// bf16 A (`m x k`, K-major) and B (`k x n`, N-major).
    gemm_wgmma_bf16 / gemm_wgmma_bf16_split, gemm_wgmma_bf16_n192 / gemm_wgmma_bf16_n192_split,
        gemm_wgmma_bf16_n128 / gemm_wgmma_bf16_n128_split,
        gemm_wgmma_bf16_m64 / gemm_wgmma_bf16_m64_split(Bf16);
    /// IEEE binary16 A and B, laid out as for bf16.
    gemm_wgmma_f16 / gemm_wgmma_f16_split, gemm_wgmma_f16_n192 / gemm_wgmma_f16_n192_split,
        gemm_wgmma_f16_n128 / gemm_wgmma_f16_n128_split,
        gemm_wgmma_f16_m64 / gemm_wgmma_f16_m64_split(F16);
    /// `f32` A (`m x k`) and B transposed (`n x k`), both K-major, read as
    /// tf32 (each input's low 13 mantissa bits dropped).
    gemm_wgmma_tf32 / gemm_wgmma_tf32_split, gemm_wgmma_tf32_n192 / gemm_wgmma_tf32_n192_split,
        gemm_wgmma_tf32_n128 / gemm_wgmma_tf32_n128_split,
        gemm_wgmma_tf32_m64 / gemm_wgmma_tf32_m64_split(Tf32);
    /// FP8 E4M3 A (`m x k`) and B transposed (`n x k`), both K-major (the
    /// host folds the per-tensor scales into `alpha`).
    gemm_wgmma_e4m3 / gemm_wgmma_e4m3_split, gemm_wgmma_e4m3_n192 / gemm_wgmma_e4m3_n192_split,
        gemm_wgmma_e4m3_n128 / gemm_wgmma_e4m3_n128_split,
        gemm_wgmma_e4m3_m64 / gemm_wgmma_e4m3_m64_split(E4m3);
    /// FP8 E5M2 A and B, laid out as for E4M3.
    gemm_wgmma_e5m2 / gemm_wgmma_e5m2_split, gemm_wgmma_e5m2_n192 / gemm_wgmma_e5m2_n192_split,
        gemm_wgmma_e5m2_n128 / gemm_wgmma_e5m2_n128_split,
        gemm_wgmma_e5m2_m64 / gemm_wgmma_e5m2_m64_split(E5m2);
}
