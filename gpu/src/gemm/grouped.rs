//! The grouped GEMM of a mixture of experts: `G` products in one launch,
//! `D_g = act(alpha A_g B_g)`, sharing `n` and `k`, each group its own
//! weight `B_g` and its own number of rows (tokens) `m_g`, which the
//! device holds (a router wrote them): no copy back to the host, no
//! launch per expert.
//!
//! **Rows.** A's and D's rows are one matrix of `m` rows, shared out in
//! one of two layouts (`Groups`):
//! - *contiguous*: tokens sorted by expert, group `g` the rows
//!   `offsets[g]..offsets[g + 1]` (`G + 1` offsets);
//! - *masked*: a fixed `capacity` of rows per expert, group `g` the first
//!   `counts[g]` rows of its `g capacity..`.
//!
//! The kernel trusts neither: a count is clamped to the capacity, and
//! every group starts no earlier than the one before ends and ends inside
//! A's `m`, so a bad router writes no byte outside D and no row twice.
//!
//! **Weights.** `B` is a stack of `G` matrices (`k x n` for 16-bit
//! inputs, `n x k` for FP8), read through one 3-D tensor map
//! (`dev::tma::copy_3d`): a box past the end of `B_g`'s k reads zeros,
//! not `B_{g+1}`'s first rows.
//!
//! **Schedule.** The tiles of all the groups are one persistent list,
//! group after group, each group's in grouped order (`GroupedItems`):
//! no launch per group, no wave left mostly empty at each group's end.
//! A block walks the list forward, reading each group's rows once as it
//! passes it. A tile that runs past its group's last row reads the next
//! group's rows of A (the sums of those rows are discarded: the store
//! stops at the group's end).
//!
//! **Arithmetic**, per tile as for the dense kernel's 128 x 256 tiles
//! ([`super::wgmma`]): the same ring, roles and `wgmma` steps. A group of
//! `m_g` rows costs `ceil(m_g / 128)` tile-rows, so rows in multiples of
//! 128 waste none.

use half::{bf16, f16};

use super::element::RingElement;
use super::epilogue::{BIAS_COLS, BIAS_NONE, Output};
use super::ring::{Ring, consume, start_ring};
use super::schedule::GROUP;
use super::store::{Scalars, store_through};
use super::tile::{Tile, Wide, shared_bytes_for};
use super::wgmma::THREADS;
use crate::dev::epilogue::Epilogue;
use crate::dev::fp8::E4m3;
use crate::dev::grid::wait_for_prerequisites;
use crate::dev::pipeline::PipelineState;
use crate::dev::roles::{Consumer, specialize};
use crate::dev::schedule::{TileScheduler, grouped_by};
use crate::dev::tma::copy_3d;
use crate::dev::{In, Out, block_idx_x, grid_dim_x};
use crate::kernel;
use core::marker::PhantomData;

/// How the rows of A and D are shared among the groups.
#[derive(Clone, Copy)]
pub(crate) struct Groups {
    /// `G + 1` offsets (contiguous) or `G` counts (masked).
    rows: In<u32>,
    count: u32,
    /// Rows per group in the masked layout; 0: contiguous.
    capacity: u32,
    /// A's and D's rows.
    m: u32,
}

impl Groups {
    /// `count` groups' rows in `rows`: `count + 1` offsets (`capacity` 0)
    /// or `count` counts of `capacity` rows each, inside A's `m` rows.
    #[inline(always)]
    pub(crate) fn new(rows: In<u32>, count: u32, capacity: u32, m: u32) -> Groups {
        Groups { rows, count, capacity, m }
    }

    /// Group `g`'s first row and its number of rows: starting no earlier
    /// than `floor` (the group before's end), ending inside A's `m`, so
    /// that no two groups share a row of D whatever `rows` holds.
    ///
    /// # Safety
    /// `g < count`; `rows` holds `count + 1` offsets (contiguous) or
    /// `count` counts (masked).
    #[inline(always)]
    unsafe fn group(self, g: u32, floor: u32) -> (u32, u32) {
        let i = g as usize;
        // SAFETY: the caller's contract.
        let (start, end) = unsafe {
            if self.capacity == 0 {
                (self.rows.load(i), self.rows.load(i + 1))
            } else {
                let start = g.saturating_mul(self.capacity);
                (start, start.saturating_add(self.rows.load(i).min(self.capacity)))
            }
        };
        let start = start.max(floor).min(self.m);
        let end = end.min(self.m).max(start);
        (start, end - start)
    }
}

/// One tile of a group: its origin in D (A's row, B's column), its group
/// (B's plane), the group's end (the first row past it) and its k-steps
/// (all of k).
#[derive(Clone, Copy)]
pub(crate) struct GroupItem {
    origin: (u32, u32),
    group: u32,
    end: u32,
    steps: u32,
}

impl GroupItem {
    pub(crate) fn origin(&self) -> (usize, usize) {
        (self.origin.0 as usize, self.origin.1 as usize)
    }

    pub(crate) fn steps(&self) -> usize {
        self.steps as usize
    }

    /// Its group: the plane of B (and of B's scales) it multiplies.
    pub(crate) fn group(&self) -> usize {
        self.group as usize
    }
}

/// Every group's tiles on tiles `L`, one list dealt to the launch's blocks
/// in turn: block `b` takes tiles `b, b + grid, ...` of it.
#[derive(Clone, Copy)]
pub(crate) struct GroupedItems<L> {
    groups: Groups,
    n: u32,
    k_steps: u32,
    tile: PhantomData<L>,
}

/// A block's walk along the list: the next tile's index, and the group
/// it has reached (its first tile's index, its tiles, its rows).
pub(crate) struct Walk<L> {
    items: GroupedItems<L>,
    next: u32,
    group: u32,
    first: u32,
    tiles: u32,
    rows: (u32, u32),
}

impl<L> GroupedItems<L> {
    /// The tiles of `groups`, `n` columns and `k_steps` k-steps each.
    #[inline(always)]
    pub(crate) fn new(groups: Groups, n: u32, k_steps: u32) -> GroupedItems<L> {
        GroupedItems { groups, n, k_steps, tile: PhantomData }
    }
}

impl<L: Tile> TileScheduler for GroupedItems<L> {
    type Work = GroupItem;

    #[inline(always)]
    fn work(self) -> impl Iterator<Item = GroupItem> {
        // No group reached yet: the first `next` loads group 0.
        Walk { items: self, next: block_idx_x(), group: u32::MAX, first: 0, tiles: 0, rows: (0, 0) }
    }
}

impl<L: Tile> Iterator for Walk<L> {
    type Item = GroupItem;

    #[inline(always)]
    fn next(&mut self) -> Option<GroupItem> {
        let (groups, columns) = (self.items.groups, self.items.n.div_ceil(L::BN as u32));
        while self.next - self.first >= self.tiles {
            self.group = self.group.wrapping_add(1);
            if self.group >= groups.count {
                return None;
            }
            self.first += self.tiles;
            // SAFETY: group < count.
            self.rows = unsafe { groups.group(self.group, self.rows.0 + self.rows.1) };
            self.tiles = self.rows.1.div_ceil(L::BM as u32) * columns;
        }
        let grid = (self.rows.1.div_ceil(L::BM as u32) as usize, columns as usize);
        let (tm, tn) = grouped_by(GROUP, (self.next - self.first) as usize, grid);
        self.next += grid_dim_x();
        let (start, rows) = self.rows;
        Some(GroupItem {
            origin: (start + (tm * L::BM) as u32, (tn * L::BN) as u32),
            group: self.group,
            end: start + rows,
            steps: self.items.k_steps,
        })
    }
}

/// The store of a group's tile: the registers' store of the dense kernel
/// ([`store_through`]), stopping at the group's last row.
pub(crate) struct GroupStore<T, L> {
    d: Out<T>,
    n: usize,
    ldd: usize,
    /// The scalars; `bias` every group's bias, `n` values each, when the
    /// mode is a column bias.
    e: Scalars,
    /// The consumer warpgroup and the thread's index in it.
    me: (usize, u32),
    tile: PhantomData<L>,
}

impl<T, L> GroupStore<T, L> {
    /// Consumer `me.0`'s store into `d` (`n` columns at `ldd`), thread
    /// `me.1`: `act(alpha sum + bias_g)`, `biases` (`groups x n`) read
    /// only if `biased` (else any of the launch's pointers).
    #[inline(always)]
    pub(crate) fn new(
        d: Out<T>,
        (n, ldd): (u32, u32),
        (alpha, act): (f32, u32),
        (biases, biased): (In<f32>, bool),
        me: (usize, u32),
    ) -> Self {
        let bias_mode = if biased { BIAS_COLS } else { BIAS_NONE };
        let e = Scalars { alpha, beta: 0.0, bias: biases, bias_mode, act };
        GroupStore { d, n: n as usize, ldd: ldd as usize, e, me, tile: PhantomData }
    }
}

impl<T: Output, L: Tile> Epilogue<GroupItem> for GroupStore<T, L> {
    type Results = L::Acc;

    #[inline(always)]
    unsafe fn store(&mut self, acc: &L::Acc, item: GroupItem) {
        let (consumer, t) = self.me;
        let part = L::part_at(item.origin(), consumer);
        let rows = (item.end as usize, self.n);
        // The group's bias: its row of `biases`.
        let e = Scalars { bias: self.e.bias.wrapping_offset(item.group() * self.n), ..self.e };
        // SAFETY: the caller's contract: `d` holds A's `m` rows at `ldd`,
        // the group's rows end inside them, and a bias has `n` values a
        // group.
        unsafe { store_through::<T, _, 0, 64>(&self.d, acc, part, t, rows, (0, self.ldd), e) };
    }

    fn finish(self) {}
}

/// The body of every instance: the dense kernel's ring and roles, the
/// producer filling each group's tiles from A's map and B's plane, the
/// consumers storing each tile inside its group.
#[inline(always)]
fn grouped<E: RingElement, T: Output, L: Tile>(
    maps: In<u64>,
    d: Out<T>,
    groups: Groups,
    (n, k_steps, ldd): (u32, u32, u32),
    (alpha, act): (f32, u32),
    bias: (In<f32>, bool),
) {
    let ring = start_ring::<E, L>(maps, 2);
    // A dependent launch: the rows (a router's output) and A may still be
    // being written by the kernel ahead.
    wait_for_prerequisites();
    let items = GroupedItems::<L>::new(groups, n, k_steps);
    let producer = #[inline(always)]
    |leader: bool| {
        if leader {
            // SAFETY: one thread; the launch's maps are A's and B's stack.
            unsafe { produce(ring, items) }
        }
    };
    let consumer = #[inline(always)]
    |Consumer { index, thread }| {
        let store = GroupStore::<T, L>::new(d, (n, ldd), (alpha, act), bias, (index, thread));
        // SAFETY: the warpgroup, converged; the producer fills the same
        // items, `k_steps` each; D as the launch's contract says.
        unsafe { multiply(ring, items, index, store) };
    };
    // SAFETY: every thread, converged; 40 + 2 x 232 registers fit the
    // block's 3 x 168 (checked when it compiles).
    unsafe { specialize::<THREADS, 40, 232>(producer, consumer) };
}

/// A consumer warpgroup: each tile's sums from the ring (all of k), into
/// the group's store: the dense kernel's loop, over this schedule's items.
///
/// # Safety
/// The warpgroup runs it converged; the producer fills the same items.
#[inline(always)]
unsafe fn multiply<E: RingElement, L: Tile, T: Output>(
    ring: Ring<E, L>,
    items: GroupedItems<L>,
    consumer: usize,
    mut store: GroupStore<T, L>,
) {
    let mut state = PipelineState::new(L::STAGES);
    for item in items.work() {
        // SAFETY: the caller's contract; D as the launch's.
        unsafe {
            let acc = consume(ring, consumer, item.steps(), &mut state);
            store.store(&acc, item);
        }
    }
}

/// The producer: every tile's `k_steps` k-steps into the ring, A through
/// map 0 and B through plane `group` of map 1.
///
/// # Safety
/// One thread; the ring started with "empty" counting both consumers;
/// map 0 is A's, map 1 B's stack (3-D).
#[inline(always)]
pub(crate) unsafe fn produce<E: RingElement, L: Tile>(ring: Ring<E, L>, items: GroupedItems<L>) {
    let mut state = PipelineState::new(L::STAGES);
    let maps = ring.maps;
    for item in items.work() {
        let z = item.group as i32;
        for step in 0..item.steps() {
            // SAFETY: the caller's contract; the stage is free once
            // acquired, and B's boxes land in it counting on its "full".
            unsafe {
                let s = ring.acquire(state);
                let full = ring.full(s);
                let copy_b = |to: *mut u8, (x, y): (i32, i32)| copy_3d(to, maps, 1, (x, y, z), full);
                ring.fill_by(s, step, item.origin(), 0, copy_b);
            }
            state.advance();
        }
    }
}

/// One kernel: [`grouped`] for an element and a tile.
macro_rules! grouped_instance {
    ($(#[$doc:meta])* $name:ident($element:ty, $tile:ident)) => {
        $(#[$doc])*
        ///
        /// Launch: 384 threads, one block per SM or fewer (`persistent`);
        /// `maps` holds A's map (`m x k`, rows on 16 bytes, boxes of the
        /// tile's rows by one 128-byte row of k) and B's 3-D map (`groups`
        /// matrices, boxes as the dense kernel's); `rows` `groups + 1`
        /// offsets (`capacity = 0`: contiguous) or `groups` counts (masked,
        /// `capacity` rows a group); `d` `m` rows of `n` at `ldd`;
        /// `k_steps = ceil(k / BK)`; `bias` `groups x n` (one row an
        /// expert, added to each of its rows of D before `act`), read
        /// only if `biased` is 1.
        #[kernel(
            block = THREADS,
            shared = shared_bytes_for::<$tile>(0),
            tile = [<$tile as Tile>::BN, <$tile as Tile>::BM],
            min_blocks = 1,
            persistent = true,
            dependent = true,
            arch = "sm_90a",
            types = [bf16, f16, f32]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Output>(
            maps: In<u64>,
            d: Out<T>,
            rows: In<u32>,
            groups: u32,
            capacity: u32,
            m: u32,
            n: u32,
            k_steps: u32,
            ldd: u32,
            alpha: f32,
            act: u32,
            bias: In<f32>,
            biased: u32,
        ) {
            let groups = Groups::new(rows, groups, capacity, m);
            let bias = (bias, biased != 0);
            grouped::<$element, T, $tile>(maps, d, groups, (n, k_steps, ldd), (alpha, act), bias);
        }
    };
}

grouped_instance!(
    /// Grouped bf16: A `m x k` (K-major), B `groups` matrices `k x n`
    /// (N-major).
    gemm_grouped_bf16(bf16, Wide)
);
grouped_instance!(
    /// Grouped IEEE binary16, laid out as for bf16.
    gemm_grouped_f16(f16, Wide)
);
grouped_instance!(
    /// Grouped FP8 E4M3: A `m x k`, B `groups` matrices `n x k`, both
    /// K-major (the host folds the per-tensor scales into `alpha`).
    gemm_grouped_e4m3(E4m3, Wide)
);

/// Every grouped kernel's instance for one output type: what an output
/// type of the host's grouped call implements. (Host only: the kernels'
/// modules of launch items are.)
#[cfg(not(target_arch = "nvptx64"))]
pub trait Instances:
    gemm_grouped_bf16::Instance + gemm_grouped_f16::Instance + gemm_grouped_e4m3::Instance
{
}

#[cfg(not(target_arch = "nvptx64"))]
impl<T: gemm_grouped_bf16::Instance + gemm_grouped_f16::Instance + gemm_grouped_e4m3::Instance> Instances
    for T
{
}
