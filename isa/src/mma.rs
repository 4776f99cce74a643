//! Which lane of a warp holds which element of an `mma.sync` fragment
//! (PTX ISA, "Matrix Fragments for mma.m16n8k16" and "for mma.m16n8k8"),
//! and which row an `ldmatrix` register comes from ("Warp-level matrix
//! load instruction: ldmatrix"). With `group = lane / 4` and
//! `quad = lane % 4`:
//!
//! - **A, bf16 or f16** (row-major 16 x 16): element `i` of 8 (register
//!   `i / 2`, the lower index in the low 16 bits) is row
//!   `group + 8 ((i / 2) % 2)`, column `2 quad + i % 2 + 8 (i / 4)`.
//! - **B, bf16 or f16** (16 x 8, "col": k runs along a register): element
//!   `i` of 4 is row (k) `2 quad + i % 2 + 8 (i / 2)`, column `group`.
//! - **A, tf32** (16 x 8): register `i` of 4 is row `group + 8 (i % 2)`,
//!   column `quad + 4 (i / 2)`.
//! - **B, tf32** (8 x 8): register `i` of 2 is row `quad + 4 i`, column
//!   `group`.
//! - **A, FP8** (`m16n8k32`, row-major 16 x 32): element `i` of 16
//!   (register `i / 4`, byte `i % 4`) is row `group + 8 ((i / 4) % 2)`,
//!   column `4 quad + i % 4 + 16 (i / 8)`.
//! - **B, FP8** (32 x 8): element `i` of 8 is row (k)
//!   `4 quad + i % 4 + 16 (i / 4)`, column `group`.
//! - **C and D, f32** (16 x 8): element `i` of 4 is row
//!   `group + 8 (i / 2)`, column `2 quad + i % 2`.
//!
//! In every form a lane's A registers 0 and 2 hold row `group`, 1 and 3
//! row `group + 8`, and registers 0 and 1 of B column `group`, over the
//! same k: a register is always 4 bytes of one row.

/// The lane's place in its warp's fragments: `(group, quad)` = `(lane / 4,
/// lane % 4)`.
#[inline(always)]
const fn parts(lane: u32) -> (u32, u32) {
    (lane / 4, lane % 4)
}

/// `(row, column)` of element `i` (0..8) of lane `lane`'s A fragment of
/// `m16n8k16` bf16 or f16.
#[inline(always)]
pub const fn a_bf16(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * ((i / 2) % 2), 2 * quad + i % 2 + 8 * (i / 4))
}

/// `(row k, column n)` of element `i` (0..4) of the B fragment of
/// `m16n8k16` bf16 or f16.
#[inline(always)]
pub const fn b_bf16(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (2 * quad + i % 2 + 8 * (i / 2), group)
}

/// `(row, column)` of element `i` (0..16) of lane `lane`'s A fragment of
/// `m16n8k32` FP8 (E4M3 or E5M2).
#[inline(always)]
pub const fn a_fp8(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * ((i / 4) % 2), 4 * quad + i % 4 + 16 * (i / 8))
}

/// `(row k, column n)` of element `i` (0..8) of the B fragment of
/// `m16n8k32` FP8.
#[inline(always)]
pub const fn b_fp8(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (4 * quad + i % 4 + 16 * (i / 4), group)
}

/// `(row, column)` of register `i` (0..4) of the A fragment of `m16n8k8`
/// tf32.
#[inline(always)]
pub const fn a_tf32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * (i % 2), quad + 4 * (i / 2))
}

/// `(row k, column n)` of register `i` (0..2) of the B fragment of
/// `m16n8k8` tf32.
#[inline(always)]
pub const fn b_tf32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (quad + 4 * i, group)
}

/// `(row, column)` of element `i` (0..4) of the C and D fragments (both
/// shapes).
#[inline(always)]
pub const fn c_f32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * (i / 2), 2 * quad + i % 2)
}

/// `ldmatrix.m8n8.x4` (`.trans` if `trans`): where half `h` (0: bits
/// 0..16, 1: bits 16..32) of register `j` of lane `lane` comes from, as
/// `(row, element)`: the row is the one lane `row` gave the address of
/// (row `row % 8` of matrix `row / 8 = j`), the element its 16-bit element
/// (0..8). Plain: row `group`, element `2 quad + h` of matrix `j`;
/// `.trans`: row `2 quad + h`, element `group`, so that the register holds
/// two neighbours along a column.
#[inline(always)]
pub const fn ldmatrix_source(lane: u32, j: u32, trans: bool, h: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    if trans { (8 * j + 2 * quad + h, group) } else { (8 * j + group, 2 * quad + h) }
}
