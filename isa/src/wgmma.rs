//! `wgmma`'s shared-memory matrix descriptors, the byte offset of an
//! operand's element, and the accumulators' lane map (PTX ISA,
//! "Asynchronous Warpgroup Level Matrix Multiply-Accumulate", "Matrix
//! Descriptor Format" and "Register Fragments").
//!
//! A descriptor: bits 0-13 the shared address / 16, 16-29 the
//! leading-dimension byte offset / 16 (LBO), 32-45 the stride-dimension
//! byte offset / 16 (SBO), 62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32).
//! With an `S`-byte swizzle the operand is made of atoms of 8 rows of `S`
//! bytes, each row's 16-byte units permuted by
//! [`swizzle`](crate::swizzle::swizzle) of the address. For elements of
//! `E` bytes ([`element_offset`]):
//!
//! - **K-major**: element `(r, k)` is at `start + S (r mod 8) + SBO (r / 8)
//!   + E k`.
//! - **MN-major** (`S / E` of M or N per row): element `(k, n)` is at
//!   `start + E (n mod S/E) + S (k mod 8) + SBO (k / 8) + LBO (n / (S/E))`.

/// A shared-memory matrix descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor(pub u64);

impl Descriptor {
    /// The descriptor of an operand swizzled over `span` bytes (128, 64 or
    /// 32) at shared address `start` with byte offsets `lbo` and `sbo`.
    #[inline(always)]
    pub const fn swizzled(span: u32, start: u32, lbo: u32, sbo: u32) -> Descriptor {
        let layout: u64 = match span {
            128 => 1,
            64 => 2,
            _ => 3,
        };
        Descriptor(field(start) | field(lbo) << 16 | field(sbo) << 32 | layout << 62)
    }

    /// The swizzle span in bytes its layout type names (0: none).
    pub const fn span(self) -> usize {
        match self.0 >> 62 {
            1 => 128,
            2 => 64,
            3 => 32,
            _ => 0,
        }
    }

    /// The same operand `bytes` further on (the next k16 of a K-major
    /// tile: 32 bytes).
    #[inline(always)]
    pub const fn advanced(self, bytes: u32) -> Descriptor {
        Descriptor(self.0 + (bytes >> 4) as u64)
    }

    /// `(start, lbo, sbo)` in bytes.
    pub const fn fields(self) -> (usize, usize, usize) {
        let d = self.0;
        (((d & 0x3fff) << 4) as usize, ((d >> 16 & 0x3fff) << 4) as usize, ((d >> 32 & 0x3fff) << 4) as usize)
    }
}

/// A byte count as a 14-bit descriptor field (in 16-byte units).
#[inline(always)]
const fn field(bytes: u32) -> u64 {
    ((bytes >> 4) & 0x3fff) as u64
}

/// The byte address, before the swizzle, of element `(row, col)` of the
/// operand `desc` describes, for elements of `bytes` bytes (2: bf16, 4:
/// tf32): K-major (`row` in M or N, `col` in K) or MN-major (`row` in K,
/// `col` in M or N). See the module documentation.
pub const fn element_offset(
    desc: Descriptor,
    mn_major: bool,
    bytes: usize,
    (row, col): (usize, usize),
) -> usize {
    let ((start, lbo, sbo), span) = (desc.fields(), desc.span());
    if mn_major {
        let per_row = span / bytes;
        start + bytes * (col % per_row) + span * (row % 8) + sbo * (row / 8) + lbo * (col / per_row)
    } else {
        start + span * (row % 8) + sbo * (row / 8) + bytes * col
    }
}

/// `(row, column)` of accumulator `i` (of `N / 2`) of warpgroup thread
/// `t`: row `16 (t / 32) + g + 8 (i / 2 mod 2)`, column
/// `8 (i / 4) + 2 q + i mod 2`, with `g = (t mod 32) / 4`, `q = t mod 4`.
#[inline(always)]
pub const fn d_f32(t: u32, i: u32) -> (u32, u32) {
    let (warp, lane) = (t / 32 % 4, t % 32);
    (16 * warp + lane / 4 + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2)
}

/// The column of an earlier product's accumulators that FP8 A fragment
/// byte `k` (of a `k32` step's 32) holds when those accumulators are
/// packed as they lie (four a register, each register's own row): within
/// each 16 of k, byte `4 q + i` of lane `q` of a quad is column `8 (i / 2)
/// + 2 q + i mod 2` ([`d_f32`]'s columns of that lane). A product that sums
/// over k gives the same result if B's row `k` holds what column
/// `fp8_column(k)` multiplies: that is how such a packed P meets V.
#[inline(always)]
pub const fn fp8_column(k: u32) -> u32 {
    let (half, byte) = (k / 16, k % 16);
    let (q, i) = (byte / 4, byte % 4);
    16 * half + 8 * (i / 2) + 2 * q + i % 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each 16 of k is permuted onto itself, and a lane's four bytes of one
    /// register are the columns its accumulators hold in one row.
    #[test]
    fn fp8_column_is_the_accumulators_permutation() {
        let mut seen = [false; 32];
        for k in 0..32 {
            let c = fp8_column(k);
            assert_eq!(c / 16, k / 16);
            assert!(!seen[c as usize]);
            seen[c as usize] = true;
        }
        for lane in 0..32u32 {
            let q = lane % 4;
            // Accumulators 0, 1, 4, 5 (row g): columns 2q, 2q+1, 8+2q, 9+2q.
            let cols = [0, 1, 4, 5].map(|i| d_f32(lane, i).1);
            let bytes = [0, 1, 2, 3].map(|i| fp8_column(4 * q + i));
            assert_eq!(cols, bytes);
        }
    }
}
