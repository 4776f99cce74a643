//! How a decode call is split, and why.
//!
//! **Rows.** A block takes `block_rows(d, wk)` rows of one K/V head's
//! group (its query heads' `s_q` queries each): the most warps per row
//! group `wk` whose rows still hold the group's `group s_q`, so that the
//! fewest rows are padding (`wk` at most a stage's 16-key chunks: 2 at `d
//! = 256`). A group larger than a block's most rows takes several row
//! tiles, which read the same keys (from L2: they run side by side).
//!
//! **Keys.** Decode reads every key once, so its time is the bytes over
//! the bandwidth the running blocks draw; a block on every slot (SMs
//! times blocks an SM) draws it all. With `B = b kv_heads row_tiles`
//! blocks before splitting, each sequence's keys split `s` ways in chunks
//! of `c = ceil(max_len / s)` keys (rounded up to a stage) run in
//! `ceil(B s / slots)` waves of `c` keys each. Every block also pays a
//! fixed cost, about [`BLOCK_KEYS`] keys' time (its start and its first
//! stage's latency), and with `s > 1` writes and the merge reads its rows'
//! state: `8 (d + 2)` bytes a row, the time of `2 group s_q` keys at `4 d`
//! bytes a key (twice that many of an FP8 cache's `2 d`). The plan takes the `s` of least modelled time, the fewest
//! splits on a tie.

use gpu::attention::decode::block_rows;
use gpu::attention::flash::{bc, mt};

use super::Decode;
use crate::runtime::{Error, Result};

/// A block's fixed cost in keys' time: its launch and its first stage's
/// latency (about a microsecond, in which an SM's share of a Hopper GPU's
/// bandwidth reads about 45 keys at `d = 128`), rounded up.
pub const BLOCK_KEYS: usize = 64;

/// The most splits a plan takes.
pub const MAX_SPLITS: usize = 256;

/// How a call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Warps per row group (1, 2 or 4).
    pub wk: u32,
    /// Blocks per K/V head's group.
    pub row_tiles: u32,
    /// Chunks per sequence, and keys per chunk.
    pub splits: u32,
    pub split_keys: u32,
    /// Blocks that run at once.
    pub slots: u32,
}

impl Plan {
    /// Checks that the plan is one the kernels run `p` by: 1, 2 or 4 warps
    /// a row group, no more than a stage's 16-key chunks; the row tiles the
    /// kernel derives from them; splits of whole stages covering the
    /// longest sequence (the workspace and the grid are sized from them).
    pub fn check(&self, p: &Decode) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidInput(format!("decode {p}: {self:?}: {m}")));
        let (wk, stage) = (self.wk as usize, bc(p.d));
        if ![1, 2, 4].contains(&wk) || wk > stage / 16 {
            return bad("warps a row group are 1, 2 or 4, at most a stage's 16-key chunks");
        }
        if self.row_tiles as usize != (p.group() * p.s_q).div_ceil(block_rows(p.d, wk)) {
            return bad("row tiles other than the group's rows need");
        }
        let covered = self.splits as usize * self.split_keys as usize;
        if self.splits == 0 || !(self.split_keys as usize).is_multiple_of(stage) || covered < p.max_len() {
            return bad("splits of whole stages that cover the longest sequence");
        }
        Ok(())
    }

    /// Blocks of the launch.
    pub fn blocks(&self, p: &Decode) -> usize {
        (self.splits * self.row_tiles) as usize * p.batch * p.kv_heads
    }

    /// The plan in words, for `--explain`.
    pub fn explain(&self, p: &Decode) -> String {
        let rows = block_rows(p.d, self.wk as usize);
        let blocks = self.blocks(p);
        format!(
            "{} rows a K/V head ({} heads x {} queries) in {} block(s) of {rows} rows ({} warp(s) a row group); \
             keys split {} way(s) of {}: {blocks} blocks on {} slots, {} wave(s){}",
            p.group() * p.s_q,
            p.group(),
            p.s_q,
            self.row_tiles,
            self.wk,
            self.splits,
            self.split_keys,
            self.slots,
            blocks.div_ceil(self.slots as usize),
            if self.splits > 1 { ", then the merge" } else { "" }
        )
    }
}

/// The plan of `p` on `slots` blocks at once (the module says how).
pub fn plan(p: &Decode, slots: u32) -> Plan {
    let (d, rows) = (p.d, p.group() * p.s_q);
    let stage = bc(d);
    // The most warps per row group whose block still holds the rows.
    let most = (stage / 16).min(4);
    let wk = [4, 2, 1].into_iter().find(|&w| w <= most && block_rows(d, w) >= rows).unwrap_or(1);
    let row_tiles = rows.div_ceil(block_rows(d, wk)).max(1);
    debug_assert!(mt(d) * 16 * (4 / wk) == block_rows(d, wk));
    let base = p.batch * p.kv_heads * row_tiles;
    let slots = slots.max(1) as usize;
    let len = p.max_len().max(1);
    let time = |s: usize| {
        let chunk = len.div_ceil(s).div_ceil(stage) * stage;
        // A row's state is `4 (d + 2)` bytes, written and read: `8 rows (d +
        // 2) / (2 e d)` keys' time at `e` bytes an element.
        let merge = if s > 1 { 4 * rows / p.cache_bytes() } else { 0 };
        (base * s).div_ceil(slots) * (chunk + BLOCK_KEYS + merge)
    };
    let most_splits = len.div_ceil(stage).clamp(1, MAX_SPLITS);
    let splits = (1..=most_splits).min_by_key(|&s| (time(s), s)).unwrap_or(1);
    let split_keys = len.div_ceil(splits).div_ceil(stage) * stage;
    Plan {
        wk: wk as u32,
        row_tiles: row_tiles as u32,
        splits: len.div_ceil(split_keys) as u32,
        split_keys: split_keys as u32,
        slots: slots as u32,
    }
}
