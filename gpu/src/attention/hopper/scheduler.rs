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

/// The problem, as every role reads it from the launch (32-bit sizes,
/// which the host's checks allow: 64-bit divisions and values would hold
/// registers in code that runs beside O's accumulators).
#[derive(Clone, Copy)]
pub(super) struct Problem {
    pub batch: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub s_q: u32,
    pub s_k: u32,
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
    fn m_blocks(self) -> u32 {
        self.s_q.div_ceil(BR as u32).max(1)
    }

    /// Work tile `i` for key tiles of `bc` keys.
    #[inline(always)]
    pub fn tile(self, i: u32, bc: usize) -> Tile {
        let m_blocks = self.m_blocks();
        let (heads, kv_heads) = (self.heads.max(1), self.kv_heads.max(1));
        let (bh, mut mb) = (i / m_blocks, i % m_blocks);
        if self.causal {
            mb = m_blocks - 1 - mb;
        }
        let (b, h) = (bh / heads, bh % heads);
        let kvh = (b * kv_heads + h / (heads / kv_heads).max(1)) as usize;
        let q0 = mb as usize * BR;
        let (s_q, s_k) = (self.s_q as usize, self.s_k as usize);
        let keys = if self.causal { (q0 + BR + s_k).saturating_sub(s_q).min(s_k) } else { s_k };
        Tile { bh: bh as usize, kvh, q0, key_tiles: keys.div_ceil(bc.max(1)) }
    }

    /// This block's tiles, in the order every role walks them (`b heads
    /// ceil(s_q / BR)` of them fit in 32 bits: the host checks that `b
    /// heads s_q` rows do).
    #[inline(always)]
    pub fn tiles(self, bc: usize) -> impl Iterator<Item = Tile> {
        let count = self.batch * self.heads * self.m_blocks();
        let (first, grid) = (block_idx_x(), grid_dim_x().max(1));
        (0..count.saturating_sub(first).div_ceil(grid)).map(move |k| self.tile(first + k * grid, bc))
    }
}
