//! Block-scaled FP8 GEMM, DeepSeek-V3's recipe: E4M3 inputs with an `f32`
//! scale per 1 x 128 of A (a row's 128 values of k) and per 128 x 128 of
//! B, `D = act(alpha sum_kb (A_kb B_kb^T) sa_kb sb_kb)`.
//!
//! **Why the scales live in the main loop.** One scale per tensor
//! (`super::wgmma`'s FP8 kernels) cannot follow values whose range moves
//! along a row, which is why a model quantizes per block. And the tensor
//! cores add FP8 products keeping about 14 significant bits of the running
//! sum, an error that grows with k (`Precision::sum_error`). Here each
//! ring stage is one block of k (128 E4M3 bytes, the stage's row): the
//! four `m64n128k32` instructions of a stage start from zero, and their
//! sum is scaled and added into `f32` accumulators of the warpgroup's own
//! ("promotion", as DeepGEMM names it). The tensor cores' error is then
//! that of 128 products, whatever k is.
//!
//! **The cost.** A warpgroup scales a stage's products only once they are
//! done, so it keeps the next stage's in flight meanwhile: a thread holds
//! three sets of accumulators (two stages' and the running sums, 64 each
//! on a 128 x 128 tile, [`Narrow`]: 192 of its 232 registers), and reads
//! three scales a stage: its two rows' of A (rows `r` and `r + 8` of its
//! warp's 16, `d_f32`) and the tile's one of B (a tile's 128 columns are
//! one block of B's rows).
//! Scales are 4 bytes per 128 bytes of A or 16 KB of B: 3% of A's bytes.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use half::{bf16, f16};

use super::epilogue::{BIAS_NONE, Output};
use super::grouped::{self, GroupItem, GroupStore, GroupedItems, Groups};
use super::ring::{Ring, start_ring};
use super::schedule::{GemmArgs, Item, Items};
use super::store::{Direct, Scalars};
use super::tile::{Narrow, Tile, shared_bytes_for};
use super::wgmma::{THREADS, produce};
use crate::dev::epilogue::Epilogue;
use crate::dev::fp8::E4m3;
use crate::dev::grid::wait_for_prerequisites;
use crate::dev::math::fma;
use crate::dev::pipeline::PipelineState;
use crate::dev::roles::{Consumer, specialize};
use crate::dev::schedule::TileScheduler;
use crate::dev::wgmma::{self, Accumulators, d_f32};
use crate::dev::{In, Out};
use crate::kernel;
use core::ops::Range;
use seq_macro::seq;

/// Rows of A and columns of B per scale: one stage of k (128 E4M3).
pub const BLOCK: usize = 128;

/// The scales: A's `m x ceil(k / 128)` row-major, B's `ceil(n / 128) x
/// ceil(k / 128)` row-major for each matrix of B (one, or one an expert:
/// `column_blocks` rows apart), `blocks` the k-blocks, `m` A's rows.
#[derive(Clone, Copy)]
struct Scales {
    a: In<f32>,
    b: In<f32>,
    m: usize,
    blocks: usize,
    column_blocks: usize,
}

impl Scales {
    /// The scales `(a, b)` of a call of `m` rows, `n` columns and
    /// `k_steps` blocks of k.
    #[inline(always)]
    fn new((a, b): (In<f32>, In<f32>), (m, n, k_steps): (u32, u32, u32)) -> Scales {
        let column_blocks = (n as usize).div_ceil(BLOCK);
        Scales { a, b, m: m as usize, blocks: k_steps as usize, column_blocks }
    }

    /// Where a thread's scales lie: those of A's rows `rows` and of matrix
    /// `w`'s block of columns `nb` of B. A row past `m` (zero-filled, its
    /// results never stored) reads row `m - 1`'s, so no load needs a test.
    #[inline(always)]
    fn of(self, rows: [usize; 2], w: usize, nb: usize) -> ScaleRows {
        let a = |row: usize| (row.min(self.m - 1) * self.blocks) as u32;
        let b = ((w * self.column_blocks + nb) * self.blocks) as u32;
        ScaleRows { scales: self, a: [a(rows[0]), a(rows[1])], b }
    }
}

/// A thread's scales ([`Scales::of`]): the first index of each row's.
#[derive(Clone, Copy)]
struct ScaleRows {
    scales: Scales,
    a: [u32; 2],
    b: u32,
}

impl ScaleRows {
    /// k-block `kb`'s products' scales: each row's times B's.
    ///
    /// # Safety
    /// `kb < blocks`; the scales as [`Scales`] says.
    #[inline(always)]
    unsafe fn at(self, kb: usize) -> [f32; 2] {
        let at = |base: u32| base as usize + kb;
        // SAFETY: the caller's contract, with `Scales::of`'s rows.
        unsafe {
            let sb = self.scales.b.load(at(self.b));
            [self.scales.a.load(at(self.a[0])) * sb, self.scales.a.load(at(self.a[1])) * sb]
        }
    }
}

/// What the promoting consumer needs of a unit of work: its tile's
/// origin, its k-blocks, and which matrix of B (and of B's scales) it
/// multiplies: 0 in a dense call, its expert in a grouped one.
pub(crate) trait ScaledWork: Copy {
    fn origin(&self) -> (usize, usize);
    fn k_blocks(&self) -> Range<usize>;
    fn weight(&self) -> usize;
}

impl ScaledWork for Item {
    #[inline(always)]
    fn origin(&self) -> (usize, usize) {
        Item::origin(self)
    }
    #[inline(always)]
    fn k_blocks(&self) -> Range<usize> {
        self.k_steps()
    }
    #[inline(always)]
    fn weight(&self) -> usize {
        0
    }
}

impl ScaledWork for GroupItem {
    #[inline(always)]
    fn origin(&self) -> (usize, usize) {
        GroupItem::origin(self)
    }
    #[inline(always)]
    fn k_blocks(&self) -> Range<usize> {
        0..self.steps()
    }
    #[inline(always)]
    fn weight(&self) -> usize {
        self.group()
    }
}

/// A consumer warpgroup `(consumer, t)`: each tile's k-blocks from the
/// ring, each stage's products scaled by its row's A scale and the
/// tile's B scale and added into the running sums, then the epilogue.
///
/// Two stages' products alternate between two sets of accumulators, `a`
/// and `b`: the warpgroup issues stage `kb + 1` before it waits for stage
/// `kb` (`wait_group 1`), so the tensor cores multiply while it scales.
/// The loop is unrolled by two so that each set keeps its registers (a
/// copy of accumulators still being written would make ptxas wait for
/// them). A stage's scales are loaded when its products are issued and
/// used a stage later, which hides their latency too.
///
/// # Safety
/// The warpgroup runs it converged; the producer fills the same items
/// (one k-block a stage); the scales as [`Scales`] says; as for the
/// epilogue's [`Epilogue::store`].
#[inline(always)]
unsafe fn multiply<S: TileScheduler<Work: ScaledWork>>(
    ring: Ring<E4m3, Narrow>,
    items: S,
    (consumer, t): (usize, u32),
    scales: Scales,
    mut epilogue: impl Epilogue<S::Work, Results = <Narrow as Tile>::Acc>,
) {
    type Acc = <Narrow as Tile>::Acc;
    let mut state = PipelineState::new(Narrow::STAGES);
    let leader = t.is_multiple_of(128);
    let (r, _) = d_f32(t, 0);
    // Stage `state`'s products issued from zero; the state advanced.
    let issue = #[inline(always)]
    |state: &mut PipelineState| -> Acc {
        let s = state.stage();
        // SAFETY: the stage has landed after the wait.
        let part = unsafe {
            ring.full(s).wait(state.phase());
            ring.multiply(s, consumer, Acc::zeroed())
        };
        state.advance();
        part
    };
    // The products of the stage `back` uses before `state`, waited for,
    // released and added into `sums`. (The stage is recomputed rather
    // than kept: every register counts beside three sets of accumulators.)
    let retire = #[inline(always)]
    |sums: &mut Acc, part: Acc, (state, back): (PipelineState, usize), scale: [f32; 2]| {
        if leader {
            // SAFETY: this warpgroup's one arrival for the stage's round,
            // its products read (the caller waited).
            unsafe { ring.empty(state.at(state.count() - back).stage()).arrive() };
        }
        // Unrolled: the accumulators are registers only while every index
        // is a constant. Accumulator i lies in row r + 8 ((i / 2) % 2)
        // (`d_f32`).
        seq!(I in 0..64 {{
            let i: usize = I;
            sums[i] = fma(part[i], scale[i / 2 % 2], sums[i]);
        }});
    };
    for item in items.work() {
        let (m0, n0) = Narrow::part_at(item.origin(), consumer);
        let rows = scales.of([m0 + r as usize, m0 + r as usize + 8], item.weight(), n0 / BLOCK);
        let blocks = item.k_blocks();
        let mut kb = blocks.start;
        // SAFETY: kb < blocks (the item's k-steps are the launch's), nb <
        // ceil(n / 128).
        let scale = #[inline(always)]
        |kb: usize| unsafe { rows.at(kb) };
        let mut sums = Acc::zeroed();
        if kb < blocks.end {
            let (mut a, mut scale_a) = (issue(&mut state), scale(kb));
            kb += 1;
            loop {
                if kb == blocks.end {
                    retire(&mut sums, wgmma::wait_for::<0, _>(a), (state, 1), scale_a);
                    break;
                }
                let (b, scale_b) = (issue(&mut state), scale(kb));
                kb += 1;
                retire(&mut sums, wgmma::wait_for::<1, _>(a), (state, 2), scale_a);
                if kb == blocks.end {
                    retire(&mut sums, wgmma::wait_for::<0, _>(b), (state, 1), scale_b);
                    break;
                }
                (a, scale_a) = (issue(&mut state), scale(kb));
                kb += 1;
                retire(&mut sums, wgmma::wait_for::<1, _>(b), (state, 2), scale_b);
            }
        }
        // SAFETY: the caller's contract.
        unsafe { epilogue.store(&sums, item) };
    }
}

/// The body of every instance: the dense kernel's ring, roles and
/// producer on 128 x 128 tiles, the consumers promoting each stage.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn blockscaled<T: Output>(
    maps: In<u64>,
    d: Out<T>,
    (sa, sb): (In<f32>, In<f32>),
    (m, n, k_steps, ldd): (u32, u32, u32, u32),
    (alpha, act): (f32, u32),
) {
    let ring = start_ring::<E4m3, Narrow>(maps, 2);
    wait_for_prerequisites();
    let w = GemmArgs {
        m,
        n,
        ldd,
        d_batch: 0,
        batch: 1,
        splits: 1,
        split_steps: k_steps,
        steps: k_steps,
        d_maps: false,
    };
    let items = Items::<Narrow>::new(w);
    let scales = Scales::new((sa, sb), (m, n, k_steps));
    // No bias: the store never reads `bias` (mode BIAS_NONE).
    let e = Scalars { alpha, beta: 0.0, bias: sa, bias_mode: BIAS_NONE, act };
    // SAFETY: one thread; "empty" counts the two consumers; maps 0 and 1
    // are A's and B's.
    let fill = || unsafe { produce(ring, items) };
    promote(ring, items, scales, fill, |me| Direct::<T, Narrow>::new(d, w, e, me));
}

/// The roles of both forms: the producer thread runs `fill` (the items'
/// k-blocks into the ring), each consumer warpgroup [`multiply`] into its
/// `store(me)`.
#[inline(always)]
fn promote<S: TileScheduler<Work: ScaledWork>, St: Epilogue<S::Work, Results = <Narrow as Tile>::Acc>>(
    ring: Ring<E4m3, Narrow>,
    items: S,
    scales: Scales,
    fill: impl FnOnce(),
    store: impl FnOnce((usize, u32)) -> St,
) {
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            fill()
        }
    };
    let consumer = #[inline(always)]
    |Consumer { index, thread }| {
        // SAFETY: the warpgroup, converged; `fill` fills the same items;
        // D and the scales as the launch's contract says.
        unsafe { multiply(ring, items, (index, thread), scales, store((index, thread))) };
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 registers fit the
    // block's 3 x 168 (checked when it compiles).
    unsafe { specialize::<THREADS, 40, 232>(producer, consumer) };
}

/// Block-scaled FP8 E4M3: A `m x k` and B `n x k`, both K-major, with
/// `scale_a` (`m x ceil(k / 128)`) and `scale_b` (`ceil(n / 128) x ceil(k /
/// 128)`), row-major, `f32`.
///
/// Launch: 384 threads, one block per SM or fewer (`persistent`); `maps`
/// holds A's map (boxes of 128 rows by 128 bytes) and B's (boxes of 128
/// rows by 128 bytes); `d` `m x n` at `ldd`; `k_steps = ceil(k / 128)`.
#[kernel(
    block = THREADS,
    shared = shared_bytes_for::<Narrow>(0),
    tile = [<Narrow as Tile>::BN, <Narrow as Tile>::BM],
    min_blocks = 1,
    persistent = true,
    dependent = true,
    arch = "sm_90a",
    types = [bf16, f16, f32]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_blockscaled_e4m3<T: Output>(
    maps: In<u64>,
    d: Out<T>,
    scale_a: In<f32>,
    scale_b: In<f32>,
    m: u32,
    n: u32,
    k_steps: u32,
    ldd: u32,
    alpha: f32,
    act: u32,
) {
    blockscaled::<T>(maps, d, (scale_a, scale_b), (m, n, k_steps, ldd), (alpha, act));
}

/// The grouped form ([`super::grouped`]): every expert's tiles in one
/// persistent list, its rows of A as the device's `rows` say, its weight
/// one plane of B's stack and its scales B's scales' plane `g`
/// (`groups x ceil(n / 128) x ceil(k / 128)`); A's scales per row as in a
/// dense call.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn grouped_blockscaled<T: Output>(
    maps: In<u64>,
    d: Out<T>,
    (sa, sb): (In<f32>, In<f32>),
    groups: Groups,
    (m, n, k_steps): (u32, u32, u32),
    (alpha, act): (f32, u32),
    bias: (In<f32>, bool),
) {
    let ring = start_ring::<E4m3, Narrow>(maps, 2);
    wait_for_prerequisites();
    let items = GroupedItems::<Narrow>::new(groups, n, k_steps);
    let scales = Scales::new((sa, sb), (m, n, k_steps));
    // SAFETY: one thread; "empty" counts the two consumers; map 0 is A's,
    // map 1 B's stack.
    let fill = || unsafe { grouped::produce(ring, items) };
    promote(ring, items, scales, fill, |me| GroupStore::<T, Narrow>::new(d, (n, n), (alpha, act), bias, me));
}

/// Grouped block-scaled FP8 E4M3 (a mixture of experts' layer, DeepSeek-V3's
/// recipe): A `m x k` with `scale_a` (`m x ceil(k / 128)`), B `groups`
/// matrices `n x k` with `scale_b` (`groups x ceil(n / 128) x ceil(k /
/// 128)`), row-major; the rows of A and D shared out by `rows` as in
/// [`super::grouped`].
///
/// Launch: 384 threads, one block per SM or fewer (`persistent`); `maps`
/// holds A's map (boxes of 128 rows by 128 bytes) and B's 3-D map (boxes
/// of 128 rows by 128 bytes of one matrix); `d` `m x n`; `k_steps =
/// ceil(k / 128)`; `bias` `groups x n` (one row an expert), read only if
/// `biased` is 1.
#[kernel(
    block = THREADS,
    shared = shared_bytes_for::<Narrow>(0),
    tile = [<Narrow as Tile>::BN, <Narrow as Tile>::BM],
    min_blocks = 1,
    persistent = true,
    dependent = true,
    arch = "sm_90a",
    types = [bf16, f16, f32]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_grouped_blockscaled_e4m3<T: Output>(
    maps: In<u64>,
    d: Out<T>,
    scale_a: In<f32>,
    scale_b: In<f32>,
    rows: In<u32>,
    groups: u32,
    capacity: u32,
    m: u32,
    n: u32,
    k_steps: u32,
    alpha: f32,
    act: u32,
    bias: In<f32>,
    biased: u32,
) {
    let groups = Groups::new(rows, groups, capacity, m);
    let bias = (bias, biased != 0);
    grouped_blockscaled::<T>(maps, d, (scale_a, scale_b), groups, (m, n, k_steps), (alpha, act), bias);
}
