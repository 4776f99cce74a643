//! The dispatcher: which block tile and how many k-splits a shape gets.
//!
//! A GEMM of `m x n x k` on `sms` SMs is `ceil(m / BM) ceil(n / BN)` block
//! tiles. At 4096^2 with 128 x 128 tiles that is 1024 blocks, 3.9 waves of
//! 264 (2 resident per SM on 132 SMs): every SM busy. At 1024^2 it is 64
//! blocks: half the SMs idle, the other half at one block each; at
//! 256 x 256 x 16384 it is 4 blocks for 2 GFLOP. Two levers fix that:
//!
//! - **Smaller tiles** (128 x 64, 64 x 128, 64 x 64): more blocks, at the
//!   cost of more global/L2 traffic per FMA (`4 (BM + BN) / (BM BN)` bytes:
//!   1/16 at 128 x 128, 1/8 at 64 x 64) and fewer warps per block.
//! - **Split-K**: `S` blocks per tile, each over `k / S` of k, writing raw
//!   sums to a workspace that `gemm_split_reduce` adds in a fixed order:
//!   `S` times the blocks, at the cost of `(2 S + 1) m n` words of extra
//!   traffic (`S` slices written, read back, C written; C read too when
//!   `beta != 0`) and a second launch.
//!
//! [`choose`] estimates each (tile, `S`) with a small model of the machine
//! and takes the cheapest:
//!
//! - Blocks go round-robin to SMs, `resident` at a time (the kernel's
//!   declared `min_blocks`); a round of `b` blocks of `w` warps each runs
//!   at `min(1, b w / 12)^0.56` of the SM's FFMA rate (about 12 warps hide
//!   the pipeline and shared-memory latencies of these 8 x 8 thread tiles;
//!   fewer hide less), times the tile's own efficiency `1 / (1 + 0.08 (64
//!   / BM + 64 / BN - 1))` (1 for 128 x 128, 0.93 for 64 x 64: twice the
//!   global traffic per FMA). The busiest SM's time is the kernel's: this
//!   is where wave quantization shows (1025 blocks on 1024 slots cost two
//!   rounds).
//! - The reduction's `4 (2 S + 2) m n` bytes move at ~1350 bytes per SM
//!   cycle on 132 SMs (2.1 TB/s at the H100's ~1.57 GHz under FFMA load,
//!   mostly L2; scaled by the SM count), plus ~8500 cycles (5 µs) for the
//!   second launch and its ramp.
//!
//! The constants were fitted to H100 timings of every tile with `S` in 1,
//! 2, 4, ..., 64 at 12 shapes (least squares on log time, then checked
//! that the choice is the fastest measured plan, or within 7% of it, at
//! each; `docs/notes.md` has the table). `S` runs over the powers of two up
//! to 64 with at least 64 k-values per split; chunks are multiples of 8 (the
//! kernels' k-step), so the last one may be shorter. Only the square tiles
//! are candidates: 128 x 64 and 64 x 128 never beat the better square by
//! more than 4% there, and were 45% slower at 2000 x 3000 x 1500; they stay
//! available to `sgemm --tile`.

use super::gemm::RowMajor;
use crate::dispatch::{Dispatch, cheapest, waves};
use std::sync::OnceLock;

use gpu::launch::{Kernel, registry};

/// The kernels' k-step.
const BK: usize = 8;

/// The most k-splits the dispatcher considers.
pub const MAX_SPLITS: usize = 64;

/// What the dispatcher decided for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub bm: usize,
    pub bn: usize,
    /// k-splits: 1 without split-K.
    pub splits: usize,
    /// k-values per split (a multiple of 8 when `splits > 1`).
    pub k_chunk: usize,
}

impl Plan {
    /// The plan for `tile` with `splits` splits of `k` (made consistent:
    /// chunks rounded up to the k-step, splits then as many as needed).
    pub fn new((bm, bn): (usize, usize), splits: usize, k: usize) -> Plan {
        let splits = splits.clamp(1, k.max(1));
        if splits == 1 {
            return Plan { bm, bn, splits: 1, k_chunk: k };
        }
        let k_chunk = k.div_ceil(splits).next_multiple_of(BK);
        Plan { bm, bn, splits: k.div_ceil(k_chunk), k_chunk }
    }

    /// `128x128`, `128x64 split 4`.
    pub fn label(&self) -> String {
        if self.splits == 1 {
            format!("{}x{}", self.bm, self.bn)
        } else {
            format!("{}x{} split {}", self.bm, self.bn, self.splits)
        }
    }
}

/// One block tile the `gpu::gemm::ffma` kernels offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockTile {
    pub bm: usize,
    pub bn: usize,
    pub threads: usize,
    /// Blocks per SM the kernel is compiled to allow.
    pub resident: usize,
}

/// A block tile kernel of the registry (`gemm_<BM>x<BN>_<ops>`): its tile
/// and the ops it takes as stored row-major (`true`: T).
#[derive(Clone, Copy, Debug)]
pub struct BlockTileKernel {
    pub tile: (usize, usize),
    pub a_t: bool,
    pub b_t: bool,
    pub kernel: &'static Kernel,
}

/// Every block tile kernel, read from the registry once (a call's host
/// work is on the timed path of small problems).
pub fn block_tile_kernels() -> &'static [BlockTileKernel] {
    static KERNELS: OnceLock<Vec<BlockTileKernel>> = OnceLock::new();
    KERNELS.get_or_init(|| registry::module("gpu::gemm::ffma").into_iter().filter_map(parse).collect())
}

/// The kernel for `tile` and the ops, if there is one.
pub fn kernel_for(tile: (usize, usize), a_t: bool, b_t: bool) -> Option<&'static Kernel> {
    block_tile_kernels().iter().find(|k| (k.tile, k.a_t, k.b_t) == (tile, a_t, b_t)).map(|k| k.kernel)
}

fn parse(kernel: &'static Kernel) -> Option<BlockTileKernel> {
    let rest = kernel.name.strip_prefix("gemm_")?;
    let (tile, ops) = rest.split_once('_')?;
    let (bm, bn) = tile.split_once('x')?;
    let op = |c: u8| match c {
        b'n' => Some(false),
        b't' => Some(true),
        _ => None,
    };
    let &[a, b] = ops.as_bytes() else { return None };
    Some(BlockTileKernel { tile: (bm.parse().ok()?, bn.parse().ok()?), a_t: op(a)?, b_t: op(b)?, kernel })
}

/// Every block tile the kernels offer, largest first.
pub fn tiles() -> &'static [BlockTile] {
    static TILES: OnceLock<Vec<BlockTile>> = OnceLock::new();
    TILES.get_or_init(offered_tiles)
}

fn offered_tiles() -> Vec<BlockTile> {
    let mut tiles: Vec<BlockTile> = block_tile_kernels()
        .iter()
        .map(|k| {
            let (bm, bn) = k.tile;
            let launch = k.kernel.launch;
            let threads = (launch.block.x * launch.block.y * launch.block.z) as usize;
            let resident = launch.min_blocks_per_sm.max(1) as usize;
            BlockTile { bm, bn, threads, resident }
        })
        .collect();
    tiles.sort_by_key(|t| (std::cmp::Reverse(t.bm * t.bn), std::cmp::Reverse(t.bm)));
    tiles.dedup();
    tiles
}

/// The model's cost of `plan` for `r` on `sms` SMs, in SM cycles (see the
/// module documentation).
pub fn estimate(r: &RowMajor, tile: &BlockTile, plan: &Plan, sms: usize) -> f64 {
    const FFMA_PER_CYCLE: f64 = 128.0;
    const SATURATING_WARPS: f64 = 12.0;
    const OCCUPANCY_EXPONENT: f64 = 0.56;
    const BYTES_PER_CYCLE_132: f64 = 1350.0;
    const SMALL_TILE_COST: f64 = 0.08;
    const LAUNCH_CYCLES: f64 = 8500.0;
    let sms = sms.max(1);
    let blocks = r.m.div_ceil(tile.bm) * r.n.div_ceil(tile.bn) * plan.splits;
    let per_block = (tile.bm * tile.bn) as f64 * plan.k_chunk.min(r.k) as f64;
    let efficiency = 1.0 / (1.0 + (64.0 / tile.bm as f64 + 64.0 / tile.bn as f64 - 1.0) * SMALL_TILE_COST);
    let warps = tile.threads.div_ceil(32);
    // The busiest SM: ceil(blocks / sms) blocks, in rounds of `resident`
    // (full rounds, then what is left).
    let rate = |round: usize| {
        let occupancy = ((round * warps) as f64 / SATURATING_WARPS).min(1.0).powf(OCCUPANCY_EXPONENT);
        FFMA_PER_CYCLE * efficiency * occupancy
    };
    let on_busiest = waves(blocks, sms);
    let (full, rest) = (on_busiest / tile.resident, on_busiest % tile.resident);
    let mut cycles = full as f64 * tile.resident as f64 * per_block / rate(tile.resident);
    if rest > 0 {
        cycles += rest as f64 * per_block / rate(rest);
    }
    if plan.splits > 1 {
        let bytes = 4.0 * (2 * plan.splits + 2) as f64 * (r.m * r.n) as f64;
        cycles += bytes / (BYTES_PER_CYCLE_132 * sms as f64 / 132.0) + LAUNCH_CYCLES;
    }
    cycles
}

/// The FFMA kernels as a [`Dispatch`] kind: a call `r` on `sms` SMs.
pub struct Sgemm<'a> {
    pub r: &'a RowMajor,
    pub sms: usize,
}

impl Dispatch for Sgemm<'_> {
    /// A plan and the block tile it runs on.
    type Plan = (BlockTile, Plan);
    type Cost = f64;

    /// The square tiles, largest first, each at 1, 2, 4, ... splits (at
    /// least 64 k-values a split, at most [`MAX_SPLITS`]).
    fn candidates(&self) -> impl Iterator<Item = (BlockTile, Plan)> {
        let k = self.r.k;
        let max_splits = (k / 64).clamp(1, MAX_SPLITS);
        tiles().iter().filter(|t| t.bm == t.bn).flat_map(move |tile| {
            (0..=MAX_SPLITS.ilog2())
                .map(|e| 1 << e)
                .take_while(move |&s| s <= max_splits)
                .map(move |splits| (splits, Plan::new((tile.bm, tile.bn), splits, k)))
                .filter(|(splits, plan)| plan.splits == *splits)
                .map(|(_, plan)| (*tile, plan))
        })
    }

    fn cost(&self, (tile, plan): &(BlockTile, Plan)) -> f64 {
        estimate(self.r, tile, plan, self.sms)
    }

    /// Strictly cheaper by 0.1%: ties keep the larger tile and fewer splits.
    fn beats(cost: f64, best: f64) -> bool {
        cost < best * 0.999
    }
}

/// The cheapest plan for `r` on `sms` SMs by [`estimate`].
pub fn choose(r: &RowMajor, sms: usize) -> Plan {
    cheapest(&Sgemm { r, sms }).map_or(Plan::new((128, 128), 1, r.k), |(_, plan)| plan)
}
