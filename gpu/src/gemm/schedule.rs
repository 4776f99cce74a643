//! The library kernel's tile scheduler: a block walks `batch x splits x
//! tiles` items, matrix `z` of a strided batch, k-split `s` (k-steps `s
//! split_steps..`), and a tile of C in grouped order.
//!
//! Sizes are 32-bit words (but D's batch stride): the consumers keep an
//! item across their k-loop beside 128 sums, and 64-bit fields would take
//! registers that ptxas then spills.

use super::tile::Tile;
use crate::dev::schedule::{TileScheduler, grouped_by};
use crate::dev::{block_idx_x, grid_dim_x};
use core::marker::PhantomData;
use core::ops::Range;

/// Tile-rows per group of the grouped tile order: the tiles in flight at
/// once (one per SM) share 16 stripes of A and about 8 of B.
pub const GROUP: usize = 16;

/// The scalars of a launch that the schedule and the stores need.
#[derive(Clone, Copy)]
pub(crate) struct GemmArgs {
    pub m: u32,
    pub n: u32,
    pub ldd: u32,
    pub d_batch: u64,
    pub batch: u32,
    pub splits: u32,
    pub split_steps: u32,
    pub steps: u32,
    /// D's tensor maps follow A's and B's (the staged store).
    pub d_maps: bool,
}

impl GemmArgs {
    pub fn m(&self) -> usize {
        self.m as usize
    }
    pub fn n(&self) -> usize {
        self.n as usize
    }
    pub fn ldd(&self) -> usize {
        self.ldd as usize
    }
    pub fn d_batch(&self) -> usize {
        self.d_batch as usize
    }
    pub fn batch(&self) -> usize {
        self.batch as usize
    }
    pub fn splits(&self) -> usize {
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
/// k-split, its first k-step and count.
#[derive(Clone, Copy)]
pub(crate) struct Item {
    pub origin: (u32, u32),
    /// The tile's index in the batch's grid of tiles (`z tiles + tile`).
    pub tile: u32,
    pub z: u32,
    pub s: u32,
    pub first: u32,
    pub steps: u32,
}

impl Item {
    pub fn origin(&self) -> (usize, usize) {
        (self.origin.0 as usize, self.origin.1 as usize)
    }

    pub fn z(&self) -> usize {
        self.z as usize
    }

    pub fn steps(&self) -> usize {
        self.steps as usize
    }

    /// The item's k-steps.
    pub fn k_steps(&self) -> Range<usize> {
        self.first as usize..(self.first + self.steps) as usize
    }
}

/// The items of a launch on tiles `L`, dealt to its blocks in turn.
#[derive(Clone, Copy)]
pub(crate) struct Items<L> {
    pub w: GemmArgs,
    tile: PhantomData<L>,
}

impl<L: Tile> Items<L> {
    pub fn new(w: GemmArgs) -> Items<L> {
        Items { w, tile: PhantomData }
    }
}

impl<L: Tile> TileScheduler for Items<L> {
    type Work = Item;

    #[inline(always)]
    fn work(self) -> impl Iterator<Item = Item> {
        let w = self.w;
        let grid = (w.m().div_ceil(L::BM), w.n().div_ceil(L::BN));
        // At least one tile: the clamp tells the compiler the divisions
        // below cannot be by zero (no panic path).
        let tiles = (grid.0 * grid.1).max(1);
        (block_idx_x() as usize..w.batch() * w.splits() * tiles).step_by(grid_dim_x() as usize).map(
            move |i| {
                let (tile, rest) = (i % tiles, i / tiles);
                let splits = w.splits().max(1);
                let (s, z) = (rest % splits, rest / splits);
                let (tm, tn) = grouped_by(GROUP, tile, grid);
                let first = s * w.split_steps();
                Item {
                    origin: ((tm * L::BM) as u32, (tn * L::BN) as u32),
                    tile: (z * tiles + tile) as u32,
                    z: z as u32,
                    s: s as u32,
                    first: first as u32,
                    steps: w.split_steps().min(w.steps().saturating_sub(first)) as u32,
                }
            },
        )
    }
}
