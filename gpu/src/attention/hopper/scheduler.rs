//! The persistent static tile scheduler: one block per SM walks its share
//! of the work tiles, a tile being one (batch, head) pair's [`BR`]
//! queries. The producer and both consumer warpgroups walk the same
//! sequence, so every role agrees on which tile each stage and phase
//! belongs to without talking about it.
//!
//! Without a mask every tile costs the same: block `b` takes tiles `b, b +
//! G, ...` (`G = gridDim.x`) in an order where the query tiles of one head
//! are consecutive, and the heads of one K/V head too (`h = kvh group +
//! ..`), so blocks running at once read the same K and V from L2.
//!
//! Causal tiles differ: query tile `mb` sees about `mb + 1` key tiles.
//! Dealt out `b, b + G, ...` in that order, block `b` gets query tiles `b,
//! b + G, ...` modulo the tiles per head: at 16 heads of 16384 queries
//! (128 tiles each) and `G = 132` block `b` gets `b, b + 4, b + 8, ...`,
//! and the block that starts at 64 has three times the work of the one
//! that starts at 0 (the longest block 1.56 times the mean). So causal
//! tiles are taken longest first (the last query tile of every head, then
//! the one before, ...) and dealt in rounds of `G` that turn back at each
//! end (block `b` takes place `b` of even rounds and `G - 1 - b` of odd
//! ones): a round's tiles cost nearly the same, and a block that took a
//! longer one in one round takes a shorter one in the next. The longest
//! block is then within 1% of the mean at these shapes (a model that
//! counts key tiles: `docs/notes.md`).
//!
//! **Groups of heads, for L2.** Dealt across every head, a round's tiles
//! walk the K and V of every head at once: at 4 x 16 x 4096 (d = 128)
//! the first round is the last two query tiles of all 64 heads (and four
//! more), two blocks a head, and 128 MB of K/V against a 50 MB L2. A K/V
//! tile then leaves L2 before the next round reads it again, and comes
//! from DRAM in each of the 16 rounds where once would do. So causal tiles
//! are dealt group by group: `group` heads at a time (a multiple of the
//! heads that share a K/V head), each group's tiles longest first in
//! rounds of `G` that turn back as above, every block taking its share of
//! one group before the next. The blocks then walk one group's K/V at a
//! time (8 heads, 16 MB, at that shape). A group must have enough tiles
//! for two rounds, or its rounds cannot pair long tiles with short ones:
//! the host picks the smallest group whose deal stays as even as dealing
//! every head at once ([`causal_deal_loads`] is the model it checks).

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
    /// The consumers take turns to issue their products ([`super::PING_PONG`]).
    pub ping_pong: bool,
    /// Causal tiles are dealt `group` heads at a time (0: every head at
    /// once); it divides `batch heads` and is a multiple of `heads /
    /// kv_heads` (the launch's contract).
    pub group: u32,
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

    /// Heads dealt at once: the causal [`Problem::group`], or every head.
    #[inline(always)]
    fn heads_at_once(self) -> u32 {
        let all = (self.batch * self.heads).max(1);
        if self.causal && self.group > 0 && self.group < all { self.group } else { all }
    }

    /// Work tile `i` for key tiles of `bc` keys: head-major, or, causal,
    /// longest first within its group of heads (query tile `mb` of every
    /// head of the group, from the last).
    #[inline(always)]
    pub fn tile(self, i: u32, bc: usize) -> Tile {
        let m_blocks = self.m_blocks();
        let (heads, kv_heads) = (self.heads.max(1), self.kv_heads.max(1));
        let (bh, mb) = if self.causal {
            // (`max(1)`: nonzero, said so, so no divide-by-zero branch.)
            let group = self.heads_at_once().max(1);
            let per = (group * m_blocks).max(1);
            let (g, r) = (i / per, i % per);
            let (major, minor) = (r / group, r % group);
            (g * group + minor, m_blocks - 1 - major)
        } else {
            (i / m_blocks, i % m_blocks)
        };
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
        block_tiles(block_idx_x(), grid_dim_x().max(1), self.groups(), self.causal)
            .map(move |i| self.tile(i, bc))
    }

    /// Tiles per group of the deal, and groups.
    #[inline(always)]
    fn groups(self) -> (u32, u32) {
        let group = self.heads_at_once().max(1);
        (group * self.m_blocks(), (self.batch * self.heads).max(1) / group)
    }
}

/// The tile indices block `block` of `grid` takes, in order, of `groups`
/// groups of `per_group` tiles: its rounds of each group in turn (see
/// [`dealt`]), the next group's after the last one's. One counter and a
/// division a tile (a nested walk would keep more values live across the
/// consumers' loop).
#[inline(always)]
pub fn block_tiles(
    block: u32,
    grid: u32,
    (per_group, groups): (u32, u32),
    turn: bool,
) -> impl Iterator<Item = u32> {
    let each = rounds(block, grid, per_group, turn);
    (0..groups * each).map(move |n| {
        let (g, round) = (n / each.max(1), n % each.max(1));
        g * per_group + dealt(block, grid, round, turn)
    })
}

/// The model the host picks the causal deal's group with: each block's
/// work, counted in key tiles plus one a tile (its fixed cost), when
/// `grid` blocks walk a causal problem `(batch, heads, kv_heads, s_q,
/// s_k)` dealt `group` heads at a time, with key tiles of `bc`.
pub fn causal_deal_loads(
    grid: u32,
    (batch, heads, kv_heads, s_q, s_k): (u32, u32, u32, u32, u32),
    group: u32,
    bc: usize,
) -> impl Iterator<Item = u64> {
    let p = Problem { batch, heads, kv_heads, s_q, s_k, causal: true, ping_pong: false, group };
    (0..grid).map(move |block| {
        block_tiles(block, grid, p.groups(), true).map(|i| p.tile(i, bc).key_tiles as u64 + 1).sum()
    })
}

/// The rounds in which block `block` of `grid` takes a tile of `count`:
/// every whole round, and the last, partial one if its place there is
/// inside it (a count, where a filter on the tile index would keep one
/// more value live across the consumers' loop).
#[inline(always)]
pub fn rounds(block: u32, grid: u32, count: u32, turn: bool) -> u32 {
    let whole = count / grid;
    let last = dealt(block, grid, whole, turn) - whole * grid;
    whole + u32::from(last < count % grid)
}

/// The tile block `block` of `grid` takes in round `round`: place `block`
/// of the round, or with `turn` place `grid - 1 - block` of odd rounds (the
/// deal turns back at each end). Over all rounds, each tile index goes to
/// exactly one block.
#[inline(always)]
pub fn dealt(block: u32, grid: u32, round: u32, turn: bool) -> u32 {
    let place = if turn && round % 2 == 1 { grid - 1 - block } else { block };
    round * grid + place
}
