//! How the GEMM's ring holds an element type: how B lies in a stage, how
//! the copy engine fills it, and which `wgmma` form multiplies it. All of
//! it follows from the element's operand type ([`crate::dev::Input`]):
//! 16-bit B is read as given (`k x n`, MN-major), tf32 and FP8 B as its
//! transpose (`n x k`, K-major), since the ISA transposes neither.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::tile::{BN, SPAN};
use crate::dev::Element;
use crate::dev::wgmma::{Accumulators, Descriptor};
use seq_macro::seq;

/// An element type as the GEMM's ring holds it, for every tensor-core
/// element type ([`Element`]): the bf16, f16, tf32, E4M3 and E5M2 kernels
/// differ only here.
pub trait RingElement: Element {
    /// k per stage (one 128-byte row).
    const BK: usize = SPAN / Self::BYTES;
    /// B is K-major in a stage (tf32, FP8).
    const B_K_MAJOR: bool = Self::INPUT.k_major_only();
    /// B's TMA box, `(rows, cols)` of the matrix B's map describes: four
    /// boxes of 64 n across one 128-byte row of k where B is MN-major, one
    /// box of the tile's `BN` rows of k where it is K-major.
    const B_BOX: (usize, usize) = if Self::B_K_MAJOR { (BN, Self::BK) } else { (Self::BK, B_BOX_COLS) };

    /// The TMA copies of B's part of k-step `k0` for the tile at column
    /// `n0`, `cols` wide (256 or 128), into the stage at `at`: `copy(to,
    /// (x, y))` copies the box of B's map whose first element is column
    /// `x`, row `y` to `to` (a 2-D map's, or one plane of a stack's).
    ///
    /// # Safety
    /// `copy` is safe to call with the stage's boxes (B's map's box has
    /// the tile's rows where B is K-major).
    #[inline(always)]
    unsafe fn copy_b(at: *mut u8, k0: i32, (n0, cols): (usize, usize), copy: impl Fn(*mut u8, (i32, i32))) {
        if Self::B_K_MAJOR {
            copy(at, (k0, n0 as i32));
            return;
        }
        seq!(J in 0..4 {
            if J * B_BOX_COLS < cols {
                // Box J lies B_BOX_BYTES further.
                copy(at.wrapping_add(J * B_BOX_BYTES), ((n0 + J * B_BOX_COLS) as i32, k0));
            }
        });
    }

    /// Four `wgmma`s (`m64nNk*`, `N = A::N`): the warpgroup's 64 rows of
    /// A at shared address `a_at`, times the stage's B (`N` columns) at
    /// `b_at`, added to `acc`.
    ///
    /// # Safety
    /// As for the `wgmma` instructions.
    #[inline(always)]
    unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A {
        // SAFETY: the caller's contract.
        unsafe {
            if Self::B_K_MAJOR {
                four_wgmmas(a_at, b_at, K_MAJOR_B, acc, A::mma_ss::<Self, false>)
            } else {
                four_wgmmas(a_at, b_at, MN_MAJOR_B, acc, A::mma_ss::<Self, true>)
            }
        }
    }
}

impl<E: Element> RingElement for E {}

/// Columns of B per 16-bit TMA box: one 128-byte row.
pub const B_BOX_COLS: usize = 64;
/// Bytes of one 16-bit B box.
pub(crate) const B_BOX_BYTES: usize = 2 * 64 * B_BOX_COLS;
// A box of 64 columns takes 128 bytes a column, as a K-major B's rows do
// (`Ring::multiply` finds a part's columns so in either layout).
const _: () = assert!(B_BOX_BYTES == B_BOX_COLS * SPAN);

/// B's layout in a stage, as [`four_wgmmas`] steps through it: bytes from
/// one instruction's k to the next, and the descriptor's LBO.
///
/// 16-bit B is MN-major: groups of 8 k-rows 1024 bytes apart (SBO), its
/// 64-column boxes `B_BOX_BYTES` apart (LBO), k16 steps 2048 bytes apart.
const MN_MAJOR_B: (u32, u32) = (2048, B_BOX_BYTES as u32);
/// tf32 and FP8 B are K-major, as A: rows 128 bytes apart, 8-row groups
/// 1024 bytes apart (SBO), each instruction's k (32 bytes: k8 of tf32, k32
/// of FP8) 32 bytes further in the row (LBO unused).
const K_MAJOR_B: (u32, u32) = (32, 16);

/// Four `wgmma`s (`mma`), one stage's 128 bytes of k: the warpgroup's 64
/// rows of A at `a_at` (K-major: rows 128 bytes apart, 8-row groups 1024
/// bytes apart, 32 bytes of k per instruction) times B at `b_at`, laid out
/// as `(b_step, b_lbo)` say.
///
/// # Safety
/// As for the `wgmma` instructions.
#[inline(always)]
unsafe fn four_wgmmas<A: Accumulators>(
    a_at: u32,
    b_at: u32,
    (b_step, b_lbo): (u32, u32),
    mut acc: A,
    mma: unsafe fn(A, Descriptor, Descriptor, bool) -> A,
) -> A {
    seq!(KK in 0..4 {{
        let da = Descriptor::swizzled(SPAN as u32, a_at + 32 * KK, 16, 1024);
        let db = Descriptor::swizzled(SPAN as u32, b_at + b_step * KK, b_lbo, 1024);
        // SAFETY: the caller's contract.
        acc = unsafe { mma(acc, da, db, true) };
    }});
    acc
}
