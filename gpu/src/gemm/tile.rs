//! The block tiles of the Hopper GEMM: how big a block's piece of C is,
//! how its two consumer warpgroups share it, and the ring stages it needs.
//!
//! A stage holds 128 bytes of k ([`SPAN`]: 64 bf16, 32 tf32, 128 FP8), one
//! row of the 128-byte swizzle, for A's `BM` rows and B's `BN` columns.

use crate::dev::wgmma::Accumulators;

/// The ladder's block tile ([`Wide`]): 128 x 256 of C. (Stages of 64
/// bytes of k, twice as many, were measured slower: the per-stage waits
/// and copies double; see `docs/notes.md`.)
pub const BM: usize = 128;
pub const BN: usize = 256;
/// Bytes of k per stage: one swizzle span.
pub const SPAN: usize = 128;
/// Stages in a wide tile's ring: 4 x 48 KB.
pub const STAGES: usize = 4;

/// Bytes of a wide stage's A box (128 x 128 bytes).
pub(crate) const A_BYTES: usize = BM * SPAN;
/// Bytes of a wide stage: A's box, then B's 256 x 128 bytes.
pub(crate) const STAGE_BYTES: usize = stage_bytes(BM, BN);

/// Bytes of a stage of a tile `bm x bn`: A's `bm` rows of 128 bytes of
/// k, then B's `bn` columns of them.
pub(crate) const fn stage_bytes(bm: usize, bn: usize) -> usize {
    (bm + bn) * SPAN
}

/// Shared memory a kernel on tiles `T` needs: 1024 bytes of slack to put
/// the stages on the 1024-byte boundary the swizzles need, the stages,
/// 2048 bytes for the mbarriers and the rounding, and `extra` bytes on a
/// 1024-byte boundary after them (`Ring::after`).
pub const fn shared_bytes_for<T: Tile>(extra: usize) -> usize {
    1024 + T::STAGES * stage_bytes(T::BM, T::BN) + 2048 + extra
}

/// The shape of a block tile (`BM` rows by `BN` columns) and how its two
/// consumer warpgroups share it: each owns a `64 x N` part (`N` its
/// accumulators' [`Accumulators::N`], `N / 2` a thread, the `wgmma`
/// shape `m64nNk*`) at [`Tile::part`].
///
/// The ladder's tiles are [`Wide`]; the GEMM library also runs
/// [`Narrow`] and [`Short`] ones, where wide tiles would leave SMs idle or
/// rows and columns empty (128 x 8192 x 8192: 32 wide tiles for 132 SMs;
/// 8192 x 128 x 8192: half of every wide tile past `n`; 16 x 4096 x 4096:
/// 112 of every 128 rows past `m`), and [`Mid`] ones where a last wave
/// of wide tiles would leave most SMs idle (3072 x 3072: 288 wide tiles,
/// 2.2 waves of 132, run as 3; 384 mid tiles, 2.9 waves). Per stage, for
/// `2 BM BN BK` FLOPs:
///
/// | tile | A | B | stage | parts |
/// | --- | --- | --- | --- | --- |
/// | [`Wide`] 128 x 256 | 16 KB | 32 KB | 48 KB | rows 0..64, 64..128 |
/// | [`Mid`] 128 x 192 | 16 KB | 24 KB | 40 KB | rows 0..64, 64..128 |
/// | [`Narrow`] 128 x 128 | 16 KB | 16 KB | 32 KB | rows 0..64, 64..128 |
/// | [`Short`] 64 x 128 | 8 KB | 16 KB | 24 KB | columns 0..64, 64..128 |
///
/// The smaller the tile, the more bytes each multiply-add costs: a narrow
/// stage's 16 KB of A serve half a wide one's products, and a short
/// tile's two warpgroups both read its A. A short tile's smaller stages
/// buy a deeper ring in the same 192 KB (8 stages of 24 KB): more of each
/// row of A and B in flight, which is what the skinny shapes, streaming
/// one operand from memory, wait on. (Narrow tiles keep 4 stages:
/// `docs/notes.md` says why.)
pub trait Tile: Copy + 'static {
    /// Rows of C per block tile.
    const BM: usize;
    /// Columns of C per block tile.
    const BN: usize;
    /// Stages in the ring.
    const STAGES: usize;
    /// A consumer thread's accumulators (their [`Accumulators::N`] is the
    /// part's columns, the instructions' N).
    type Acc: Accumulators;

    /// Where warpgroup `wg`'s part of the tile starts: `(row, column)`
    /// within the tile.
    fn part(wg: usize) -> (usize, usize);

    /// The origin in C of warpgroup `wg`'s part of the tile at `origin`.
    #[inline(always)]
    fn part_at((m0, n0): (usize, usize), wg: usize) -> (usize, usize) {
        let (r, c) = Self::part(wg);
        (m0 + r, n0 + c)
    }
}

/// 128 x 256 tiles, `m64n256` instructions.
#[derive(Clone, Copy)]
pub struct Wide;
/// 128 x 192 tiles, `m64n192` instructions.
#[derive(Clone, Copy)]
pub struct Mid;
/// 128 x 128 tiles, `m64n128` instructions.
#[derive(Clone, Copy)]
pub struct Narrow;
/// 64 x 128 tiles, `m64n64` instructions: both warpgroups multiply the
/// same 64 rows of A, each by its own 64 columns of B.
#[derive(Clone, Copy)]
pub struct Short;

/// [`Tile`] for a tile of [`BM`] rows, each warpgroup 64 of them and
/// all `$bn` columns (`m64n$bn` instructions, `$bn / 2` accumulators a
/// thread), in a ring of [`STAGES`].
macro_rules! row_parts_tile {
    ($tile:ident, $bn:expr) => {
        impl Tile for $tile {
            const BM: usize = BM;
            const BN: usize = $bn;
            const STAGES: usize = STAGES;
            type Acc = [f32; $bn / 2];

            #[inline(always)]
            fn part(wg: usize) -> (usize, usize) {
                (64 * wg, 0)
            }
        }
    };
}

row_parts_tile!(Wide, BN);
row_parts_tile!(Mid, 192);
row_parts_tile!(Narrow, 128);

impl Tile for Short {
    const BM: usize = 64;
    const BN: usize = 128;
    const STAGES: usize = 8;
    type Acc = [f32; 32];

    #[inline(always)]
    fn part(wg: usize) -> (usize, usize) {
        (0, 64 * wg)
    }
}
