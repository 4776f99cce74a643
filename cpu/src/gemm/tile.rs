//! [`TileShape`]: the block tiles a library call's kernel covers D with.

use gpu::gemm::tile::{Mid, Narrow, Short, Tile, Wide};

/// The block tiles a call's kernel covers D with
/// ([`gpu::gemm::tile::Tile`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TileShape {
    /// 128 x 256 ([`Wide`]).
    #[default]
    Wide,
    /// 128 x 192 ([`Mid`]).
    Mid,
    /// 128 x 128 ([`Narrow`]).
    Narrow,
    /// 64 x 128 ([`Short`]).
    Short,
}

impl TileShape {
    /// Every shape, in the order the dispatcher prefers them on a tie.
    pub const ALL: [TileShape; 4] = [TileShape::Wide, TileShape::Mid, TileShape::Narrow, TileShape::Short];

    /// Rows and columns of D per tile.
    pub fn dims(self) -> (usize, usize) {
        match self {
            TileShape::Wide => (Wide::BM, Wide::BN),
            TileShape::Mid => (Mid::BM, Mid::BN),
            TileShape::Narrow => (Narrow::BM, Narrow::BN),
            TileShape::Short => (Short::BM, Short::BN),
        }
    }

    /// Tiles covering one `m x n` matrix.
    pub fn count(self, (m, n): (usize, usize)) -> usize {
        let (bm, bn) = self.dims();
        m.div_ceil(bm) * n.div_ceil(bn)
    }

    /// `rows x columns`, as `gemm --tile` takes it.
    pub fn name(self) -> String {
        let (bm, bn) = self.dims();
        format!("{bm}x{bn}")
    }

    /// The shape `gemm --tile` names: `rows x columns`, or the columns
    /// alone for the 128-row tiles (`256`, `192`, `128`).
    pub fn parse(s: &str) -> Option<TileShape> {
        TileShape::ALL.into_iter().find(|t| {
            let (bm, bn) = t.dims();
            s == t.name() || (bm == 128 && s == bn.to_string())
        })
    }
}
