//! The persistent static tile scheduler: one block per SM walks the work
//! tiles `blockIdx.x, blockIdx.x + gridDim.x, ...`, a tile being one
//! (batch, head) pair's [`BR`] queries. The producer and both consumer
//! warpgroups walk the same sequence, so every role agrees on which tile
//! each stage and phase belongs to without talking about it.
//!
//! Order: the query tiles of one head are consecutive, and the heads of
//! one K/V head too (`h = kvh group + ..`), so blocks running at once read
//! the same K and V from L2. Causal tiles see `q0 + BR` keys or so, so
//! the later query tiles of a head are the longer ones: a head's tiles are
//! walked last first, which puts the long tiles early in each block's
//! list and the short ones at the end, where they fill the tail.

use super::BR;
use crate::dev::{block_idx_x, grid_dim_x};

/// The problem, as every role reads it from the launch.
#[derive(Clone, Copy)]
pub(super) struct Problem {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub s_q: usize,
    pub s_k: usize,
    pub causal: bool,
}

/// One work tile: where its queries and its K/V head lie, and how many
/// key tiles of `bc` keys it multiplies.
#[derive(Clone, Copy)]
pub(super) struct Tile {
    /// `batch heads + head`: Q's, O's and lse's head.
    pub bh: usize,
    /// `batch kv_heads + kv head`: the K and V maps' index.
    pub kvh: usize,
    /// The first query of the tile, in its head.
    pub q0: usize,
    /// Key tiles to walk: all of `s_k`, or causally up to the last query's
    /// limit (tiles wholly past it are skipped, never loaded).
    pub key_tiles: usize,
}

impl Problem {
    /// Query tiles per head.
    #[inline(always)]
    fn m_blocks(self) -> usize {
        self.s_q.div_ceil(BR).max(1)
    }

    /// Work tile `i` for key tiles of `bc` keys.
    #[inline(always)]
    pub fn tile(self, i: usize, bc: usize) -> Tile {
        let m_blocks = self.m_blocks();
        let (bh, mut mb) = (i / m_blocks, i % m_blocks);
        if self.causal {
            mb = m_blocks - 1 - mb;
        }
        let (heads, kv_heads) = (self.heads.max(1), self.kv_heads.max(1));
        let (b, h) = (bh / heads, bh % heads);
        let kvh = b * kv_heads + h / (heads / kv_heads).max(1);
        let q0 = mb * BR;
        let keys = if self.causal { (q0 + BR + self.s_k).saturating_sub(self.s_q).min(self.s_k) } else { self.s_k };
        Tile { bh, kvh, q0, key_tiles: keys.div_ceil(bc.max(1)) }
    }

    /// This block's tiles, in the order every role walks them.
    #[inline(always)]
    pub fn tiles(self, bc: usize) -> impl Iterator<Item = Tile> {
        let count = self.batch * self.heads * self.m_blocks();
        (block_idx_x() as usize..count).step_by(grid_dim_x() as usize).map(move |i| self.tile(i, bc))
    }
}
