//! The swizzles of TMA copies and `wgmma` operands (PTX ISA, "Tensor
//! Swizzling Modes", and the matrix descriptors' layout types).

/// The swizzles of TMA and `wgmma` over `span` bytes (32, 64 or 128:
/// `CU_TENSOR_MAP_SWIZZLE_{32,64,128}B`, the descriptors' layout types 3,
/// 2 and 1; 0 leaves `a` as it is): the 16-byte unit of a shared-memory
/// byte offset within its `span`, `a / 16 mod (span / 16)`, is XORed with
/// the 128-byte row `a / 128 mod (span / 16)`. Over the 8 rows of a
/// `8 span`-byte atom, each column of units lands in every position once,
/// so the rows of a column spread over the banks.
#[inline(always)]
pub const fn swizzle(span: usize, a: usize) -> usize {
    let units = span / 16;
    if units <= 1 { a } else { a ^ (((a >> 7) & (units - 1)) << 4) }
}

/// [`swizzle`] over 128 bytes: the unit `a / 16 mod 8` XORed with the row
/// `a / 128 mod 8`.
#[inline(always)]
pub const fn swizzle_128(a: usize) -> usize {
    swizzle(128, a)
}
