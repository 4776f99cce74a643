//! The element types of the Hopper GEMM: how B lies in a stage, how the
//! copy engine fills it, and which `wgmma` form multiplies it.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::tile::{BN, SPAN};
use crate::dev::In;
use crate::dev::barrier::Mbarrier;
use crate::dev::tma::copy_2d;
use crate::dev::wgmma::{Accumulators, Descriptor};
use seq_macro::seq;

/// An element type of the `wgmma` kernels: how B lies in a stage, how the
/// copy engine fills it, how a warpgroup multiplies a stage.
pub trait Element: Copy {
    /// Bytes of one element.
    const BYTES: usize;
    /// k per stage (one 128-byte row).
    const BK: usize = SPAN / Self::BYTES;
    /// B's TMA box, `(rows, cols)` of the matrix B's map describes.
    const B_BOX: (usize, usize);

    /// The TMA copies of B's part of k-step `k0` for the tile at column
    /// `n0`, `cols` wide (256 or 128), through map `map` of `maps` (B's),
    /// into the stage at `at`, counting on `bar`.
    ///
    /// # Safety
    /// As for [`copy_2d`], with map `map` B's (boxes of `cols` rows where
    /// B is K-major).
    unsafe fn copy_b(at: *mut u8, maps: In<u64>, map: usize, k0: i32, n: (usize, usize), bar: Mbarrier);

    /// Four `wgmma`s (`m64nNk*`, `N = A::N`): the warpgroup's 64 rows of
    /// A at shared address `a_at`, times the stage's B (`N` columns) at
    /// `b_at`, added to `acc`.
    ///
    /// # Safety
    /// As for the `wgmma` instructions.
    unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A;
}

/// bf16 bits: B row-major `k x n`, in four 64 x 64 boxes (rows of 64 n,
/// MN-major).
#[derive(Clone, Copy)]
pub struct Bf16;

/// Columns of B per bf16 TMA box: one 128-byte row.
pub const B_BOX_COLS: usize = 64;
/// Bytes of one bf16 B box.
pub(crate) const B_BOX_BYTES: usize = 2 * 64 * B_BOX_COLS;
// A box of 64 columns takes 128 bytes a column, as a K-major B's rows do
// (`Ring::multiply` finds a part's columns so in either layout).
const _: () = assert!(B_BOX_BYTES == B_BOX_COLS * SPAN);

impl Element for Bf16 {
    const BYTES: usize = 2;
    const B_BOX: (usize, usize) = (Self::BK, B_BOX_COLS);

    #[inline(always)]
    unsafe fn copy_b(
        at: *mut u8,
        maps: In<u64>,
        map: usize,
        k0: i32,
        (n0, cols): (usize, usize),
        bar: Mbarrier,
    ) {
        seq!(J in 0..4 {
            if J * B_BOX_COLS < cols {
                let origin = ((n0 + J * B_BOX_COLS) as i32, k0);
                // SAFETY: the caller's contract; box J is B_BOX_BYTES further.
                unsafe { copy_2d(at.wrapping_add(J * B_BOX_BYTES), maps, map, origin, bar) };
            }
        });
    }

    #[inline(always)]
    unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A {
        // SAFETY: the caller's contract.
        unsafe { four_wgmmas(a_at, b_at, MN_MAJOR_B, acc, A::mma_ss::<true, true>) }
    }
}

/// IEEE binary16: laid out, copied and multiplied as [`Bf16`] (16-bit
/// elements, B row-major `k x n`), through `wgmma`'s f16 form.
#[derive(Clone, Copy)]
pub struct F16;

impl Element for F16 {
    const BYTES: usize = 2;
    const B_BOX: (usize, usize) = Bf16::B_BOX;

    #[inline(always)]
    unsafe fn copy_b(at: *mut u8, maps: In<u64>, map: usize, k0: i32, n: (usize, usize), bar: Mbarrier) {
        // SAFETY: the caller's contract.
        unsafe { Bf16::copy_b(at, maps, map, k0, n, bar) }
    }

    #[inline(always)]
    unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A {
        // SAFETY: the caller's contract.
        unsafe { four_wgmmas(a_at, b_at, MN_MAJOR_B, acc, A::mma_ss::<false, true>) }
    }
}

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

/// `f32` values read as tf32: B given as its transpose (`n x k`
/// row-major), one 256 x 32 box (rows of 32 k, K-major, as `wgmma` needs).
#[derive(Clone, Copy)]
pub struct Tf32;

impl Element for Tf32 {
    const BYTES: usize = 4;
    const B_BOX: (usize, usize) = (BN, Self::BK);

    #[inline(always)]
    unsafe fn copy_b(
        at: *mut u8,
        maps: In<u64>,
        map: usize,
        k0: i32,
        (n0, _): (usize, usize),
        bar: Mbarrier,
    ) {
        // SAFETY: the caller's contract (the map's box has the tile's rows).
        unsafe { copy_2d(at, maps, map, (k0, n0 as i32), bar) };
    }

    #[inline(always)]
    unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A {
        // SAFETY: the caller's contract.
        unsafe { four_wgmmas(a_at, b_at, K_MAJOR_B, acc, A::mma_ss_k_major::<0>) }
    }
}

/// FP8 E4M3 bytes: laid out and copied as [`Tf32`] (A `m x k`, B given as
/// its transpose `n x k`, both K-major: the ISA transposes no 8-bit
/// operand), 128 k per stage, four `k32` instructions.
#[derive(Clone, Copy)]
pub struct E4m3;

/// FP8 E5M2 bytes, as [`E4m3`].
#[derive(Clone, Copy)]
pub struct E5m2;

macro_rules! fp8_element {
    ($marker:ty, $input:literal) => {
        impl Element for $marker {
            const BYTES: usize = 1;
            const B_BOX: (usize, usize) = (BN, Self::BK);

            #[inline(always)]
            unsafe fn copy_b(
                at: *mut u8,
                maps: In<u64>,
                map: usize,
                k0: i32,
                n: (usize, usize),
                bar: Mbarrier,
            ) {
                // SAFETY: the caller's contract.
                unsafe { Tf32::copy_b(at, maps, map, k0, n, bar) };
            }

            #[inline(always)]
            unsafe fn multiply<A: Accumulators>(a_at: u32, b_at: u32, acc: A) -> A {
                // SAFETY: the caller's contract.
                unsafe { four_wgmmas(a_at, b_at, K_MAJOR_B, acc, A::mma_ss_k_major::<$input>) }
            }
        }
    };
}

fp8_element!(E4m3, 1);
fp8_element!(E5m2, 2);
