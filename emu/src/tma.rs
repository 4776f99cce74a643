//! The tensor-memory accelerator on the emulator: the emulator's own
//! encoding of a 2-D tensor map, and the box copy it describes.
//!
//! On a GPU a tensor map is 128 opaque bytes from `cuTensorMapEncodeTiled`.
//! The emulator's map is 128 bytes too, with the fields the copy needs in
//! plain words, so that the same kernel reads either from global memory.

/// A 2-D tiled tensor map: a row-major matrix of `rows x cols` elements
/// of `element_bytes` at `global`, rows `row_bytes` apart, copied in boxes
/// of `box_rows x box_cols`, laid out in shared memory row after row
/// (`box_cols * element_bytes` bytes each), swizzled over `swizzle` bytes
/// (0: not at all; 32, 64 or 128: [`swizzle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Map2d {
    pub global: usize,
    pub element_bytes: usize,
    pub cols: usize,
    pub rows: usize,
    pub row_bytes: usize,
    pub box_cols: usize,
    pub box_rows: usize,
    pub swizzle: usize,
}

/// Marks the emulator's encoding (word 0).
const MAGIC: u64 = 0x656d_7574_6d61_7032;

impl Map2d {
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
        ];
        w[0] = MAGIC;
        for (slot, f) in w[1..].iter_mut().zip(fields) {
            *slot = f as u64;
        }
        w
    }

    /// The map `words` encode, if they are the emulator's encoding.
    pub fn decode(words: &[u64; 16]) -> Option<Map2d> {
        (words[0] == MAGIC).then(|| {
            let f = |i: usize| words[i] as usize;
            Map2d {
                global: f(1),
                element_bytes: f(2),
                cols: f(3),
                rows: f(4),
                row_bytes: f(5),
                box_cols: f(6),
                box_rows: f(7),
                swizzle: f(8),
            }
        })
    }

    /// Bytes of one box in shared memory.
    pub fn box_bytes(&self) -> usize {
        self.box_rows * self.box_cols * self.element_bytes
    }

    /// The rows of the box at column `x`, row `y` that lie in the matrix
    /// with some of their columns: each as its row in the box, the global
    /// address of its first element inside the matrix, and the box columns
    /// `first..last` inside it.
    fn rows_inside(&self, (x, y): (i64, i64)) -> impl Iterator<Item = (usize, usize, (usize, usize))> + '_ {
        let first = (-x).clamp(0, self.box_cols as i64) as usize;
        let last = (self.cols as i64 - x).clamp(0, self.box_cols as i64) as usize;
        (0..self.box_rows).filter_map(move |r| {
            let gy = y + r as i64;
            (gy >= 0 && gy < self.rows as i64 && first < last).then(|| {
                let addr = self.global
                    + gy as usize * self.row_bytes
                    + (x + first as i64) as usize * self.element_bytes;
                (r, addr, (first, last))
            })
        })
    }

    /// The box whose first element is column `x`, row `y`, as it lands in
    /// shared memory at byte offset `dst` (the swizzle depends on it):
    /// elements outside the matrix are zero. `read(addr, bytes)` reads
    /// global memory (the caller checks it).
    pub fn copy_box(
        &self,
        (x, y): (i64, i64),
        dst: usize,
        mut read: impl FnMut(usize, &mut [u8]),
    ) -> Vec<u8> {
        let e = self.element_bytes;
        let row_len = self.box_cols * e;
        let mut out = vec![0u8; self.box_bytes()];
        for (r, addr, (first, last)) in self.rows_inside((x, y)) {
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

    /// The reverse of [`Map2d::copy_box`], a TMA store: `data`, the box as
    /// it lies in shared memory at byte offset `src` (swizzled by its
    /// offset), written to the matrix with its first element at column
    /// `x`, row `y`; what falls outside the matrix is not written.
    /// `write(addr, bytes)` writes one row's part to global memory (the
    /// caller checks it).
    pub fn store_box(
        &self,
        (x, y): (i64, i64),
        src: usize,
        data: &[u8],
        mut write: impl FnMut(usize, &[u8]),
    ) {
        let e = self.element_bytes;
        let row_len = self.box_cols * e;
        let mut row = vec![0u8; row_len];
        for (r, addr, (first, last)) in self.rows_inside((x, y)) {
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
