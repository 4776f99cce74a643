//! The dispatcher's plan for a library call ([`Plan`]): which tiles and
//! how many k-splits, from a cost model of the call on the device (see
//! [`super::TensorGemm::plan`]), as a kind of the shared dispatcher model
//! ([`crate::dispatch`]).

use super::tile::TileShape;
use crate::dispatch::{Dispatch, cheapest, waves};

/// How a call runs: what [`super::TensorGemm::plan`] decides, and what a user may
/// force instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// k-splits: the product in `splits` parts whose sums the epilogue adds.
    pub splits: usize,
    /// The tiles of D.
    pub tile: TileShape,
}

/// What a plan depends on: the device (its name and SM count), the
/// precision, and the problem as the kernels see it (row-major `m x n x
/// k`, the batch, whether B's rows lie on whole sectors).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanKey {
    pub device: String,
    pub multiprocessors: i32,
    pub precision: &'static str,
    pub mnk: (usize, usize, usize),
    pub batch: usize,
    /// B's rows, as the kernel reads them, start on 32 bytes.
    pub b_sectors: bool,
}

/// What the dispatcher's model sees of a call.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Tiles of D, over the batch.
    tiles: usize,
    /// The tiles.
    tile: TileShape,
    /// k-steps of 128 bytes of k.
    steps: usize,
    sms: usize,
    /// Bytes of A, B and D (as `f32`) the call must move at least.
    bytes: f64,
    /// Elements of D, over the batch.
    outputs: f64,
}

impl Shape {
    /// `batch` problems `m x n x k` with `bk` elements of `bytes` bytes
    /// per k-step, on `sms` SMs, in tiles `tile`.
    fn of(
        batch: usize,
        (m, n, k): (usize, usize, usize),
        bk: usize,
        bytes: usize,
        sms: usize,
        tile: TileShape,
    ) -> Shape {
        Shape {
            tiles: tile.count((m, n)) * batch.max(1),
            tile,
            steps: k.div_ceil(bk),
            sms,
            bytes: (batch * ((m + n) * k * bytes + m * n * 4)) as f64,
            outputs: (batch * m * n) as f64,
        }
    }
}

/// The model's constants, an H100 SXM's (`docs/notes.md`): one k-step of
/// a tile; a wave's fixed time (ring fill, store); the device's and one
/// SM's streaming rates; the split fix-up's fixed time (the tickets, the
/// last split's reads) and the rate at which its partial sums go to L2
/// and back.
const STEP_US: f64 = 0.65;
const ITEM_US: f64 = 5.0;
const DRAM_BYTES_PER_US: f64 = 3.0e6;
const SM_BYTES_PER_US: f64 = 5.0e4;
const FIXUP_US: f64 = 3.0;
const FIXUP_BYTES_PER_US: f64 = 1.85e6;
/// A narrow tile's k-step against a wide one's: half the multiply-adds,
/// at a lower rate (its 16 KB of A serve half as many products).
const NARROW_STEP: f64 = 0.6;
/// A mid tile's k-step against a wide one's: three quarters of the
/// multiply-adds, at a slightly lower rate (its 16 KB of A serve three
/// quarters of the products).
const MID_STEP: f64 = 0.78;
/// A short tile's k-step against a wide one's: a quarter of the
/// multiply-adds, both warpgroups reading the same 8 KB of A.
const SHORT_STEP: f64 = 0.4;

/// The modelled time of `s` splits (see [`super::TensorGemm::plan`]), and the
/// tensor cores' part of it.
fn modelled_us(x: Shape, s: usize) -> (f64, f64) {
    let items = x.tiles * s;
    let waves = waves(items, x.sms) as f64;
    let step = match x.tile {
        TileShape::Wide => STEP_US,
        TileShape::Mid => MID_STEP * STEP_US,
        TileShape::Narrow => NARROW_STEP * STEP_US,
        TileShape::Short => SHORT_STEP * STEP_US,
    };
    let tensor = waves * (ITEM_US + x.steps.div_ceil(s) as f64 * step);
    let rate = DRAM_BYTES_PER_US.min(items.min(x.sms) as f64 * SM_BYTES_PER_US);
    let memory = x.bytes / rate;
    let fixup = if s > 1 { FIXUP_US + 8.0 * s as f64 * x.outputs / FIXUP_BYTES_PER_US } else { 0.0 };
    (tensor.max(memory) + fixup, tensor)
}

/// The fewest k-steps a split may have on `tile`: four turns of a
/// 4-stage ring, one of a short tile's 8 stages. Shorter items spend more
/// on their ring's fill and the fix-up than the model's constants say
/// (bf16 16 x 4096 x 4096 on short tiles: 34 TFLOP/s at 4 splits of 16
/// k-steps, 28 at 8 of 8), but e4m3's k-steps are half as many for the
/// same k, and there 8 k-steps a split paid (16 x 4096 x 4096: 38 TFLOP/s
/// at one split of 32, 45 at four of 8).
fn least_split_steps(tile: TileShape) -> usize {
    match tile {
        TileShape::Short => 8,
        TileShape::Wide | TileShape::Mid | TileShape::Narrow => 16,
    }
}

/// The plan [`super::TensorGemm::plan`] takes for `batch` problems `m x n x k`
/// (`bk` elements of `bytes` per k-step, `sms` SMs): the tiles and split
/// of least modelled time, at most 16 splits, each of at least
/// [`least_split_steps`]. Between plans that the memory
/// bounds alike, the one with less tensor-core time wins (the two overlap
/// less than fully: 64 x 14336 x 4096 streams B at 2.4 TB/s on short and
/// on narrow tiles, and runs 10% faster on short ones); wide tiles win
/// exact ties, then mid, then narrow ones. Mid tiles (128 x 192) are
/// weighed everywhere: the waves decide, as the model counts them (a
/// call whose last wave of wide tiles would be mostly empty, with enough
/// k-steps per tile that the fixed time of the extra tiles does not eat
/// the gain: 3072 x 3072 x 8192).
///
/// Short tiles are weighed only where they pay in ways the model's
/// constants do not see:
/// - where they leave fewer rows of their last row of tiles empty than
///   128-row tiles do (`m mod 128` in `1..=64`: 16 x 4096 x 4096, 64 x
///   14336 x 4096);
/// - where narrow tiles leave SMs idle and the call streams an operand
///   from memory over a long k (its bytes at the DRAM rate take longer
///   than its k-steps spread over every SM, and there are at least 64
///   k-steps), which a short tile's deeper ring streams faster (128 x 8192
///   x 8192: 338 TFLOP/s short against 277 narrow);
/// - where narrow tiles leave at least half the SMs idle, short ones fill
///   at most one wave, k is under 128 k-steps and B's rows lie on whole
///   32-byte sectors: twice the SMs at work (bf16 1024^3 236 TFLOP/s
///   short against 211 narrow, e4m3 308 against 281, 512^3 and 960^3
///   alike; e4m3 1024 x 1024 x 8192, 64 k-steps, 783-787 short against
///   709-715 narrow at two splits). Two waves of short tiles lose (1280 x
///   1024 x 1024: 179 against 263), and so does a long k, where a narrow
///   tile's reuse of B counts again (bf16 1024 x 1024 x 8192, 128
///   k-steps: 344-363 short against 412-423 narrow at two splits). B is
///   two thirds of a short stage's bytes, and its rows half a sector off
///   cost the copy engine more than the SMs gain: bf16 1024 x 1000 x 1024
///   (B's rows 2000 bytes) 181 short against 199 narrow, where tf32's
///   4000-byte rows gain (158 against 142; `results/experiments/2026-11-27-gemm-small-tiles/small-tiles-h100.log`,
///   `results/experiments/2026-11-27-gemm-long-k-short/long-k-short-h100.log`).
///
/// Elsewhere a narrow tile's better reuse of B won every probe.
pub(crate) fn best_plan(
    batch: usize,
    mnk: (usize, usize, usize),
    (bk, bytes, b_sectors): (usize, usize, bool),
    sms: usize,
) -> Plan {
    let fallback = Plan { splits: 1, tile: TileShape::Wide };
    cheapest(&Tensor { batch, mnk, bk, bytes, b_sectors, sms }).unwrap_or(fallback)
}

/// The tensor-core kernels as a [`Dispatch`] kind: `batch` problems `mnk`,
/// `bk` elements of `bytes` bytes per k-step, B's rows on whole sectors
/// or not, on `sms` SMs (see [`best_plan`]).
struct Tensor {
    batch: usize,
    mnk: (usize, usize, usize),
    bk: usize,
    bytes: usize,
    b_sectors: bool,
    sms: usize,
}

impl Tensor {
    fn shape(&self, tile: TileShape) -> Shape {
        Shape::of(self.batch, self.mnk, self.bk, self.bytes, self.sms, tile)
    }

    /// Whether short tiles are weighed for this call (where [`best_plan`]
    /// says; the other tiles always are).
    fn short_weighed(&self) -> bool {
        let (batch, (m, n, _), sms) = (self.batch, self.mnk, self.sms);
        let rows = |tile: TileShape| m.div_ceil(tile.dims().0) * tile.dims().0;
        let short_fills = rows(TileShape::Short) < rows(TileShape::Narrow);
        let wide = self.shape(TileShape::Wide);
        let streams =
            wide.bytes / DRAM_BYTES_PER_US > (wide.tiles * wide.steps) as f64 * STEP_US / sms as f64;
        let narrow_tiles = batch * TileShape::Narrow.count((m, n));
        let short_streams = narrow_tiles < sms && streams && wide.steps >= 64;
        let short_spreads = self.b_sectors
            && wide.steps < 128
            && 2 * narrow_tiles <= sms
            && batch * TileShape::Short.count((m, n)) <= sms;
        short_fills || short_streams || short_spreads
    }
}

impl Dispatch for Tensor {
    type Plan = Plan;
    /// The modelled time, then the tensor cores' part of it.
    type Cost = (f64, f64);

    /// The weighed tiles (wide, mid, narrow, short), each at 1 to 16
    /// splits of at least [`least_split_steps`].
    fn candidates(&self) -> impl Iterator<Item = Plan> {
        let short = self.short_weighed();
        TileShape::ALL.into_iter().filter(move |&t| t != TileShape::Short || short).flat_map(move |tile| {
            let most = (self.shape(tile).steps / least_split_steps(tile)).clamp(1, 16);
            (1..=most).map(move |splits| Plan { splits, tile })
        })
    }

    fn cost(&self, plan: &Plan) -> (f64, f64) {
        modelled_us(self.shape(plan.tile), plan.splits)
    }
}

#[cfg(test)]
mod tests {
    use super::{Plan, TileShape, best_plan};

    /// The plans the model picks on an H100 (132 SMs), against the
    /// fastest measured there (`remote-gemm.sh tile-probe`, 2026-11-26,
    /// `results/experiments/2026-11-26-gemm-tile-probe-short/tile-probe-short-h100.log`: bf16 TFLOP/s at 1, 2 and 4
    /// splits on 128 x 256, 128 x 128 and 64 x 128 tiles; `docs/notes.md`):
    ///
    /// | shape | wide | narrow | short | picked |
    /// | --- | --- | --- | --- | --- |
    /// | 128 x 8192 x 8192 | 213, 258, 226 | 279, 282, 242 | 287, 244, 217 | short, 1 (below) |
    /// | 8192 x 128 x 8192 | 210, 227, 203 | 249, 265, 231 | 250, 220, 202 | short, 1 (below) |
    /// | 16 x 4096 x 4096 | 13, 17, 21 | 18, 21, 22 | 20, 30, 33 | short, 3 (32) |
    /// | 64 x 14336 x 4096 | 157, 131, 110 | 149, 125, 104 | 163, 134, 116 | short, 1 |
    /// | 1024 x 1024 x 8192 | 214, 309, 359 | 325, 430, 368 | 345, 310, 273 | narrow, 2 |
    /// | 1000 x 1000 x 1000 | 115, 86, 64 | 148, 86, 83 | 134, 97, 70 | narrow, 1 |
    ///
    /// and wide tiles, one split, once they fill the SMs (2048^3: 628
    /// against 531 narrow and 346 short). Short tiles' rings then went from
    /// 4 stages to 8 (the same shared memory): 128 x 8192 x 8192 at one
    /// split 287 -> 338, 8192 x 128 x 8192 250 -> 315
    /// (`results/experiments/2026-11-26-gemm-tile-probe-short8/tile-probe-short8-h100.log`). With that ring, short
    /// tiles at one split beat narrow ones on the small squares too, in
    /// every precision, where B's rows lie on whole sectors (2026-11-27,
    /// three rounds, `results/experiments/2026-11-27-gemm-small-tiles/small-tiles-h100.log`: 1024^3 bf16 236
    /// against 211, f16 238 against 208, tf32 167 against 145, e4m3 308
    /// against 281; 512^3 alike); bf16 1000^3 (B's rows 2000 bytes) keeps
    /// narrow tiles (166 against 141). e4m3 1000^3 (both operands packed)
    /// took short tiles on a tie (medians 117 and 117), and tf32 1000^3,
    /// which the rule also gives short tiles, ran 124 against 132: the
    /// rule's one measured miss.
    ///
    /// e4m3 (k-steps of 128 elements: half as many), with splits of 8
    /// k-steps allowed on short tiles (`results/experiments/2026-11-26-gemm-tile-probe-splits8/tile-probe-splits8-h100.log`,
    /// TFLOP/s at 1, 2, 3, 4 and 8 splits):
    ///
    /// | shape | narrow | short | picked |
    /// | --- | --- | --- | --- |
    /// | 16 x 4096 x 4096 | 33, 34, 33, 34, 26 | 38, 43, 45, 45, 35 | short, 4 |
    /// | 32 x 4096 x 4096 | 66, 67, 66, 66, 50 | 76, 87, 87, 88, 70 | short, 4 |
    /// | 1024 x 1024 x 1024 | 208 (244 in a second run), 144, 96, 103, 45 | 233, 133, 109, 95, 49 | short, 1 (below) |
    ///
    /// 128 x 192 tiles against 128 x 256, one split, bf16 and e4m3
    /// (`results/experiments/2026-11-26-gemm-mid-probe/mid-probe-h100.log`, percent of cuBLAS / cuBLASLt in
    /// the same process):
    ///
    /// | shape | wide tiles | waves | mid tiles | waves | bf16 wide, mid | e4m3 wide, mid | picked |
    /// | --- | --- | --- | --- | --- | --- | --- | --- |
    /// | 3072 x 3072 x 8192 | 288 | 2.18 | 384 | 2.91 | 76, 95 | 73, 95 | mid |
    /// | 2048 x 3072 x 8192 | 192 | 1.45 | 256 | 1.94 | 75, 96 | 84, 110 | mid |
    /// | 5000 x 3000 x 2000 | 480 | 3.64 | 640 | 4.85 | 85, 82 | 80, 72 | wide |
    /// | 4352 x 3072 x 2048 | 408 | 3.09 | 544 | 4.12 | 82, 82 | 83, 85 | wide |
    /// | 4096 x 4096 x 4096 | 512 | 3.88 | 704 | 5.33 | 98, 84 | 98, 79 | wide |
    /// | 4096 x 14336 x 4096 | 1792 | 13.6 | 2400 | 18.2 | 99, 90 | 104, 90 | wide |
    ///
    /// (`MID_STEP` 0.78 fits the times: 4096^3 1.17x wide's, 3072 x 3072 x
    /// 8192 0.80x.)
    #[test]
    fn the_model_picks_the_measured_fastest_plan() {
        // B N-major in place: rows of n bf16 elements, on 32 bytes when n
        // is a multiple of 16.
        let bf16 = |m, n: usize, k| best_plan(1, (m, n, k), (64, 2, n.is_multiple_of(16)), 132);
        let plan = |splits, tile| Plan { splits, tile };
        let (wide, mid, narrow, short) =
            (TileShape::Wide, TileShape::Mid, TileShape::Narrow, TileShape::Short);
        assert_eq!(bf16(128, 8192, 8192), plan(1, short));
        assert_eq!(bf16(8192, 128, 8192), plan(1, short));
        assert_eq!(bf16(16, 4096, 4096), plan(3, short));
        assert_eq!(bf16(64, 14336, 4096), plan(1, short));
        assert_eq!(bf16(1024, 1024, 8192), plan(2, narrow));
        assert_eq!(bf16(1000, 1000, 1000), plan(1, narrow));
        assert_eq!(bf16(1024, 1000, 1024), plan(1, narrow));
        assert_eq!(bf16(1024, 1024, 1024), plan(1, short));
        assert_eq!(bf16(1000, 1024, 1000), plan(1, short));
        assert_eq!(bf16(512, 512, 512), plan(1, short));
        assert_eq!(bf16(1280, 1024, 1024), plan(1, narrow));
        assert_eq!(bf16(2048, 2048, 2048), plan(1, wide));
        assert_eq!(bf16(4096, 4096, 4096), plan(1, wide));
        assert_eq!(bf16(5000, 3000, 2000), plan(1, wide));
        assert_eq!(bf16(3072, 3072, 8192), plan(1, mid));
        assert_eq!(bf16(2048, 3072, 8192), plan(1, mid));
        assert_eq!(bf16(4096, 14336, 4096), plan(1, wide));
        // B K-major, packed unless its rows (k bytes) lie on 16: on 32
        // either way in these shapes.
        let e4m3 = |m, n, k| best_plan(1, (m, n, k), (128, 1, true), 132);
        assert_eq!(e4m3(16, 4096, 4096), plan(4, short));
        assert_eq!(e4m3(32, 4096, 4096), plan(4, short));
        assert_eq!(e4m3(128, 8192, 8192), plan(1, short));
        assert_eq!(e4m3(8192, 128, 8192), plan(1, short));
        assert_eq!(e4m3(64, 14336, 4096), plan(1, short));
        assert_eq!(e4m3(1000, 1000, 1000), plan(1, short));
        assert_eq!(e4m3(1024, 1024, 1024), plan(1, short));
        assert_eq!(e4m3(1024, 1024, 8192), plan(1, short));
        assert_eq!(e4m3(4096, 4096, 4096), plan(1, wide));
        assert_eq!(e4m3(5000, 3000, 2000), plan(1, wide));
        assert_eq!(e4m3(3072, 3072, 8192), plan(1, mid));
        assert_eq!(e4m3(2048, 3072, 8192), plan(1, mid));
    }
}
