//! The tensor-memory accelerator on the emulator: the emulator's own
//! encoding of a 2-D or 3-D tensor map, and the box copy it describes.
//!
//! On a GPU a tensor map is 128 opaque bytes from `cuTensorMapEncodeTiled`.
//! The emulator's map is 128 bytes too, with the fields the copy needs in
//! plain words, so that the same kernel reads either from global memory.

/// A tiled tensor map: `planes` row-major matrices of `rows x cols`
/// elements of `element_bytes` at `global`, rows `row_bytes` apart and
/// planes `plane_bytes` apart (one plane: a 2-D map), copied in boxes of
/// `box_rows x box_cols` of one plane, laid out in shared memory row after
/// row (`box_cols * element_bytes` bytes each), swizzled over `swizzle`
/// bytes (0: not at all; 32, 64 or 128: [`swizzle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Map {
    pub global: usize,
    pub element_bytes: usize,
    pub cols: usize,
    pub rows: usize,
    pub row_bytes: usize,
    pub box_cols: usize,
    pub box_rows: usize,
    pub swizzle: usize,
    pub planes: usize,
    pub plane_bytes: usize,
}

/// Marks the emulator's encoding (word 0).
const MAGIC: u64 = 0x656d_7574_6d61_7032;

impl Map {
    /// The 16 words of the map.
    pub fn encode(&self) -> [u64; 16] {
        let mut w = [0u64; 16];
        let fields = [
            self.global,
            self.element_bytes,
            self.cols,
            self.rows,
            self.row_bytes,
            self.box_cols,
            self.box_rows,
            self.swizzle,
            self.planes,
            self.plane_bytes,
        ];
        w[0] = MAGIC;
        for (slot, f) in w[1..].iter_mut().zip(fields) {
            *slot = f as u64;
        }
        w
    }

    /// The map `words` encode, if they are the emulator's encoding.
    pub fn decode(words: &[u64; 16]) -> Option<Map> {
        (words[0] == MAGIC).then(|| {
            let f = |i: usize| words[i] as usize;
            Map {
                global: f(1),
                element_bytes: f(2),
                cols: f(3),
                rows: f(4),
                row_bytes: f(5),
                box_cols: f(6),
                box_rows: f(7),
                swizzle: f(8),
                planes: f(9),
                plane_bytes: f(10),
            }
        })
    }

    /// Bytes of one box in shared memory.
    pub fn box_bytes(&self) -> usize {
        self.box_rows * self.box_cols * self.element_bytes
    }

    /// The rows of the box at column `x`, row `y` of plane `z` that lie in
    /// the tensor with some of their columns: each as its row in the box,
    /// the global address of its first element inside the tensor, and the
    /// box columns `first..last` inside it.
    fn rows_inside(
        &self,
        (x, y, z): (i64, i64, i64),
    ) -> impl Iterator<Item = (usize, usize, (usize, usize))> + '_ {
        let first = (-x).clamp(0, self.box_cols as i64) as usize;
        let last = (self.cols as i64 - x).clamp(0, self.box_cols as i64) as usize;
        let plane = (0..self.planes as i64).contains(&z);
        (0..self.box_rows).filter_map(move |r| {
            let gy = y + r as i64;
            (plane && gy >= 0 && gy < self.rows as i64 && first < last).then(|| {
                let addr = self.global
                    + z as usize * self.plane_bytes
                    + gy as usize * self.row_bytes
                    + (x + first as i64) as usize * self.element_bytes;
                (r, addr, (first, last))
            })
        })
    }

    /// The box whose first element is column `x`, row `y` of plane `z`, as
    /// it lands in shared memory at byte offset `dst` (the swizzle depends
    /// on it): elements outside the tensor are zero. `read(addr, bytes)`
    /// reads global memory (the caller checks it).
    pub fn copy_box(
        &self,
        xyz: (i64, i64, i64),
        dst: usize,
        mut read: impl FnMut(usize, &mut [u8]),
    ) -> Vec<u8> {
        let e = self.element_bytes;
        let row_len = self.box_cols * e;
        let mut out = vec![0u8; self.box_bytes()];
        for (r, addr, (first, last)) in self.rows_inside(xyz) {
            let mut row = vec![0u8; row_len];
            read(addr, &mut row[first * e..last * e]);
            for (i, chunk) in row.chunks(16).enumerate() {
                let at = r * row_len + 16 * i;
                let to = swizzle(self.swizzle, dst + at) - dst;
                out[to..to + chunk.len()].copy_from_slice(chunk);
            }
        }
        out
    }

    /// The reverse of [`Map::copy_box`], a TMA store: `data`, the box as
    /// it lies in shared memory at byte offset `src` (swizzled by its
    /// offset), written to the matrix with its first element at column
    /// `x`, row `y` of plane `z`; what falls outside the tensor (past its
    /// plane's rows) is not written. `write(addr, bytes)` writes one row's
    /// part to global memory (the caller checks it).
    pub fn store_box(
        &self,
        xyz: (i64, i64, i64),
        src: usize,
        data: &[u8],
        mut write: impl FnMut(usize, &[u8]),
    ) {
        let e = self.element_bytes;
        let row_len = self.box_cols * e;
        let mut row = vec![0u8; row_len];
        for (r, addr, (first, last)) in self.rows_inside(xyz) {
            for i in 0..row_len.div_ceil(16) {
                let at = r * row_len + 16 * i;
                let from = swizzle(self.swizzle, src + at) - src;
                let len = 16.min(row_len - 16 * i);
                row[16 * i..16 * i + len].copy_from_slice(&data[from..from + len]);
            }
            write(addr, &row[first * e..last * e]);
        }
    }
}

pub use gpu_isa::swizzle::{swizzle, swizzle_128};
