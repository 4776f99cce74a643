//! Tile schedulers: which work a persistent block takes, in which order.
//!
//! A persistent kernel launches one block per SM (or fewer), and each
//! block walks its share of the work. Its producer and its consumers walk
//! the same sequence, so every role agrees on which work each stage of the
//! ring belongs to without talking: a scheduler is a pure function of the
//! launch (and of what one thread wrote to shared memory before the
//! block's barrier).
//!
//! [`GroupedTiles`] is the plain one: the tiles of a grid in grouped order
//! ([`grouped_by`]), block `b` taking `b, b + G, ...` of them.

use crate::thread::{block_idx_x, grid_dim_x};

/// A persistent block's work, in the order every role of the block takes it.
pub trait TileScheduler: Copy {
    /// One unit of work: a tile, or a part of one.
    type Work: Copy;

    /// This block's work, in order.
    fn work(self) -> impl Iterator<Item = Self::Work>;
}

/// Tile `i` of a `tiles_m x tiles_n` grid, in grouped order: down a group
/// of `group` tile-rows, then to the next column, group after group. The
/// tiles in flight at once (one per SM) then share a few stripes of A and
/// of B rather than one stripe of A and all of B.
///
/// (`i` < `tiles_m tiles_n`, so neither divisor is 0; the clamps say so
/// to the compiler, which otherwise keeps a panic path for each.)
#[inline(always)]
pub fn grouped_by(group: usize, i: usize, (tiles_m, tiles_n): (usize, usize)) -> (usize, usize) {
    let per_group = (group * tiles_n).max(1);
    let first = i / per_group * group;
    let rows = tiles_m.saturating_sub(first).clamp(1, group.max(1));
    let j = i % per_group;
    (first + j % rows, j / rows)
}

/// The tiles of a `grid` of tiles `tile` (rows, columns), in grouped order
/// by `group` tile-rows, dealt to the launch's blocks in turn: each unit of
/// work is a tile's origin `(row, column)`.
#[derive(Clone, Copy)]
pub struct GroupedTiles {
    pub grid: (usize, usize),
    pub tile: (usize, usize),
    pub group: usize,
}

impl TileScheduler for GroupedTiles {
    type Work = (usize, usize);

    #[inline(always)]
    fn work(self) -> impl Iterator<Item = (usize, usize)> {
        let GroupedTiles { grid, tile, group } = self;
        (block_idx_x() as usize..grid.0 * grid.1).step_by(grid_dim_x() as usize).map(move |i| {
            let (tm, tn) = grouped_by(group, i, grid);
            (tm * tile.0, tn * tile.1)
        })
    }
}
