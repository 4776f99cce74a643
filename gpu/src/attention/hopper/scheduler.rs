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
//! longer one in one round takes a shorter one in the next
//! ([`causal_deal_loads`] counts each block's key tiles).
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
//!
//! **The last round, split.** Without a mask, `T` tiles on `G` blocks run
//! in `ceil(T / G)` rounds of one tile's time, and a last round of `T mod
//! G` tiles leaves the other blocks idle: `2048` tiles on 132 blocks are
//! 15.5 rounds run as 16, 3% of the time. So the host may split the last
//! round ([`Tail`]): its `L = T mod G` tiles' key tiles, `L kt` units in
//! tile order, are cut into `G` runs of `floor(L kt / G)` or one more,
//! one a block, after the block's whole tiles. A run lies in at most two
//! tiles (it is shorter than a tile); its part of each is a chunk, whose
//! rows' state (O, the row's reference and sum) goes to a workspace, and
//! a kernel of its own merges each tile's chunks and stores the rows
//! (`merge`: FlashAttention's split-KV, for the last round only). The
//! blocks then finish within a run of each other: 15.5 rounds' time at
//! that shape, plus the merge. With fewer tiles than blocks (a few long
//! rows, as in decoding) every tile is such a tail, and every block
//! works.

use super::BR;
use crate::dev::schedule::TileScheduler;
use crate::dev::{SharedArray, block_idx_x, grid_dim_x};

/// Words of a block's plan in shared memory ([`AttentionArgs::plan`]).
pub const PLAN: usize = 9;

/// The problem, as every role reads it from the launch (32-bit sizes,
/// which the host's checks allow: 64-bit divisions and values would hold
/// registers in code that runs beside O's accumulators).
#[derive(Clone, Copy)]
pub(super) struct AttentionArgs {
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
    /// The last round is split ([`Tail`]; not causal): the launch passes
    /// the chunks' workspace (`part_floats` words a block).
    pub split: bool,
}

/// One work tile: where its queries and its K/V head lie, and how many
/// key tiles of `bc` keys it multiplies.
#[derive(Clone, Copy)]
pub(super) struct WorkTile {
    /// `batch heads + head`: Q's, O's and lse's head.
    pub bh: usize,
    /// `batch kv_heads + kv head`: the K and V maps' index.
    pub kvh: usize,
    /// The first query of the tile, in its head.
    pub q0: usize,
    /// The first key tile to walk: 0, but in a chunk of a split tile.
    pub j0: u32,
    /// The key tile to stop before: all of `s_k`, or causally up to the
    /// last query's limit (tiles wholly past it are skipped, never
    /// loaded), or a chunk's end. (Key tiles in 32 bits, as `s_k` is: the
    /// producer's loop holds them in a register each.)
    pub key_tiles: u32,
}

/// The split of the last round (see the module): `whole` tiles dealt
/// whole (a multiple of the grid), then `tiles` tiles of `kt` key tiles
/// each as `units = tiles kt` units, block `b` taking units `b units / G`
/// up to `(b + 1) units / G`.
#[derive(Clone, Copy)]
pub struct Tail {
    pub whole: u32,
    pub tiles: u32,
    pub kt: u32,
    pub units: u32,
    pub grid: u32,
}

impl Tail {
    /// The split for a problem of `tiles` tiles of `kt` key tiles on
    /// `grid` blocks, where it pays: the last round's tiles, if any, have
    /// at least two units for every block, and a block's run plus the two
    /// chunks' fixed costs (a product alone at each end, the partial
    /// state written and merged: about a key tile each) is shorter than a
    /// tile. `None` where it does not pay.
    pub fn of(tiles: u32, kt: u32, grid: u32) -> Option<Tail> {
        let grid = grid.max(1);
        let last = tiles % grid;
        let units = last.checked_mul(kt)?;
        // (b units fits 32 bits for every block b, as the runs' bounds need.)
        let fits = u64::from(units) * u64::from(grid) < 1 << 32;
        let pays = units >= 2 * grid && units.div_ceil(grid) + 2 <= kt;
        (fits && pays).then_some(Tail { whole: tiles - last, tiles: last, kt, units, grid })
    }

    /// [`Tail::of`] for a problem of `bh` heads (over the batch) of `s_q`
    /// queries in tiles of [`BR`], each over `s_k` keys in key tiles of
    /// `bc`: what the host, the product kernel and the merge kernel all
    /// compute alike.
    #[inline(always)]
    pub fn of_problem(bh: u32, (s_q, s_k): (u32, u32), bc: u32, grid: u32) -> Option<Tail> {
        Tail::of(bh.max(1) * s_q.div_ceil(BR as u32).max(1), s_k.div_ceil(bc.max(1)), grid)
    }

    /// The first unit of block `b`'s run (`b <= grid`: the run's end is
    /// the next block's start).
    #[inline(always)]
    pub fn start(self, b: u32) -> u32 {
        // (`max(1)`s: nonzero, as `of` makes them, so no divide-by-zero
        // branch; the same below.)
        b * self.units / self.grid.max(1)
    }

    /// The block whose run holds unit `x`: the last whose run starts at or
    /// before it (`start(b) <= x` exactly when `b units < (x + 1) grid`).
    #[inline(always)]
    pub fn owner(self, x: u32) -> u32 {
        ((x + 1) * self.grid - 1) / self.units.max(1)
    }

    /// Chunks of block `b`: its run's part of each tile it touches (two
    /// where it crosses a tile's end; every run has at least two units).
    #[inline(always)]
    pub fn chunks(self, b: u32) -> u32 {
        let (lo, hi, kt) = (self.start(b), self.start(b + 1), self.kt.max(1));
        1 + u32::from(hi > (lo / kt + 1) * kt)
    }

    /// Chunk `n` of block `b`: its tile (in the last round) and key tiles
    /// `j0..j1` of it.
    #[inline(always)]
    pub fn chunk(self, b: u32, n: u32) -> (u32, u32, u32) {
        let (lo, hi, kt) = (self.start(b), self.start(b + 1), self.kt.max(1));
        let tile = lo / kt + n;
        let first = tile * kt;
        (tile, lo.max(first) - first, hi.min(first + kt) - first)
    }

    /// The blocks whose runs hold part of tile `tile`, first and last: one
    /// chunk each, so `last - first + 1` chunks.
    #[inline(always)]
    pub fn blocks_of(self, tile: u32) -> (u32, u32) {
        (self.owner(tile * self.kt), self.owner((tile + 1) * self.kt - 1))
    }

    /// Block `b`'s chunk of tile `tile`'s place in the workspace: two a
    /// block, its first tile's then its second's.
    #[inline(always)]
    pub fn slot(self, b: u32, tile: u32) -> u32 {
        2 * b + (tile - self.start(b) / self.kt.max(1))
    }
}

/// A block's walk of the work tiles ([`AttentionArgs::tiles`]), as every role
/// reads it from the block's plan: the whole tiles of the deal (head-major,
/// or causal longest first by groups of heads), then its chunks of a split
/// last round.
#[derive(Clone, Copy)]
pub(super) struct Deal {
    p: AttentionArgs,
    plan: SharedArray<u32>,
    bc: usize,
}

impl Deal {
    /// The walk of `p` with key tiles of `bc`, by the block's `plan`.
    ///
    /// # Safety
    /// `plan` is the block's, written ([`AttentionArgs::plan`]) before the
    /// block's barrier.
    #[inline(always)]
    pub unsafe fn new(p: AttentionArgs, plan: SharedArray<u32>, bc: usize) -> Deal {
        Deal { p, plan, bc }
    }
}

impl TileScheduler for Deal {
    type Work = WorkTile;

    #[inline(always)]
    fn work(self) -> impl Iterator<Item = WorkTile> {
        // SAFETY: the plan is written (`Deal::new`'s contract).
        unsafe { self.p.tiles(self.plan, self.bc) }
    }
}

impl AttentionArgs {
    /// Query tiles per head.
    #[inline(always)]
    fn m_blocks(self) -> u32 {
        self.s_q.div_ceil(BR as u32).max(1)
    }

    /// Heads dealt at once: the causal [`AttentionArgs::group`], or every head.
    #[inline(always)]
    fn heads_at_once(self) -> u32 {
        let all = (self.batch * self.heads).max(1);
        if self.causal && self.group > 0 && self.group < all { self.group } else { all }
    }

    /// Work tile `i` for key tiles of `bc` keys: head-major, or, causal,
    /// longest first within its group of heads (query tile `mb` of every
    /// head of the group, from the last).
    #[inline(always)]
    pub fn tile(self, i: u32, bc: usize) -> WorkTile {
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
        WorkTile { bh: bh as usize, kvh, q0, j0: 0, key_tiles: keys.div_ceil(bc.max(1)) as u32 }
    }

    /// The last round's split on `grid` blocks, where the launch asked for
    /// it (and [`Tail::of`] finds it pays, as the host checked).
    #[inline(always)]
    pub fn tail(self, grid: u32, bc: usize) -> Option<Tail> {
        let bh = self.batch * self.heads;
        if self.split && !self.causal {
            Tail::of_problem(bh, (self.s_q, self.s_k), bc as u32, grid)
        } else {
            None
        }
    }

    /// The block's walk, worked out once by one thread before the block's
    /// barrier into `plan` ([`PLAN`] words): the deal's tiles per group and
    /// groups, then the block's chunks of the last round where that is
    /// split (their count, then each one's tile in the last round, first
    /// key tile and end). The roles read it as they go: a chunk's divisions
    /// where they run would spill the producer's 56 registers.
    ///
    /// # Safety
    /// One thread; `plan` is the block's, and a barrier follows before
    /// anyone reads it.
    #[inline(always)]
    pub unsafe fn plan(self, plan: SharedArray<u32>, bc: usize) {
        let (block, grid) = (block_idx_x(), grid_dim_x().max(1));
        // SAFETY: (all stores) inside the plan; one thread (the caller's
        // contract).
        let set = |i: usize, w: u32| unsafe { plan.set(i, w) };
        match self.tail(grid, bc) {
            Some(t) => {
                let chunks = t.chunks(block);
                [t.whole, 1, chunks].into_iter().enumerate().for_each(|(i, w)| set(i, w));
                for n in 0..chunks {
                    let (i, j0, j1) = t.chunk(block, n);
                    let at = 3 + 3 * n as usize;
                    set(at, i);
                    set(at + 1, j0);
                    set(at + 2, j1);
                }
            }
            None => {
                let (per_group, groups) = self.groups();
                [per_group, groups, 0].into_iter().enumerate().for_each(|(i, w)| set(i, w));
            }
        }
    }

    /// This block's tiles, in the order every role walks them (`b heads
    /// ceil(s_q / BR)` of them fit in 32 bits: the host checks that `b
    /// heads s_q` rows do): its whole tiles, then its chunks of the last
    /// round's where that is split, as its `plan` says.
    ///
    /// # Safety
    /// `plan` is the block's, written ([`AttentionArgs::plan`]).
    #[inline(always)]
    pub unsafe fn tiles(self, plan: SharedArray<u32>, bc: usize) -> impl Iterator<Item = WorkTile> {
        let (block, grid) = (block_idx_x(), grid_dim_x().max(1));
        // SAFETY: (all loads) inside the plan, written (the caller's contract).
        let (per_group, groups, chunks) = unsafe { (plan.get(0), plan.get(1), plan.get(2)) };
        let each = rounds(block, grid, per_group, self.causal);
        let whole = groups * each;
        (0..whole + chunks).map(move |n| {
            if n < whole {
                self.tile(nth_tile(block, grid, (per_group, each), n, self.causal), bc)
            } else {
                let at = 3 + 3 * (n - whole) as usize;
                // SAFETY: as above; the chunk's words.
                let (i, j0, j1) = unsafe { (plan.get(at), plan.get(at + 1), plan.get(at + 2)) };
                WorkTile { j0, key_tiles: j1, ..self.tile(per_group + i, bc) }
            }
        })
    }

    /// Whether the block's `n`-th tile of [`AttentionArgs::tiles`] is a chunk of
    /// a split one, and if so that tile's index in the last round (read
    /// again from the plan, where carrying it in the tile would hold a
    /// register through the tile's loop).
    ///
    /// # Safety
    /// As for [`AttentionArgs::tiles`].
    #[inline(always)]
    pub unsafe fn chunk_of(self, plan: SharedArray<u32>, n: u32) -> Option<u32> {
        // SAFETY: (all loads) inside the plan, written (the caller's contract).
        let (per_group, chunks) = unsafe { (plan.get(0), plan.get(2)) };
        if chunks == 0 {
            return None;
        }
        // A split deals whole tiles in one group of full rounds.
        let whole = per_group / grid_dim_x().max(1);
        // SAFETY: as above.
        (n >= whole).then(|| unsafe { plan.get(3 + 3 * (n - whole) as usize) })
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
    (0..groups * each).map(move |n| nth_tile(block, grid, (per_group, each), n, turn))
}

/// The `n`-th tile index of [`block_tiles`], whose block takes `each`
/// tiles of every group of `per_group`.
#[inline(always)]
fn nth_tile(block: u32, grid: u32, (per_group, each): (u32, u32), n: u32, turn: bool) -> u32 {
    let (g, round) = (n / each.max(1), n % each.max(1));
    g * per_group + dealt(block, grid, round, turn)
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
    let p = AttentionArgs {
        batch,
        heads,
        kv_heads,
        s_q,
        s_k,
        causal: true,
        ping_pong: false,
        group,
        split: false,
    };
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
