//! Step 1's shared-memory layout ([`Transposed`]): A's rows paired and B
//! stored n-major, so that every `mma.sync` fragment is one 16-byte load.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::*;

/// Step 1's layout. `mma.sync` fixes which lane holds which element of a
/// fragment, but three orders are ours, and this layout picks all three so
/// that every fragment is one 16-byte shared load, in register order:
///
/// - **The order of k within a k-step.** The sum over k is the same
///   whichever k values a fragment's 16 pairs stand for, as long as A and
///   B agree. A lane's registers hold k-pairs `q` and `q + 4` (`q = lane %
///   4`); in k16 step `s` they stand for words `4 q + 2 s` and `4 q + 2 s +
///   1` of the k-step (word `w`: k `2 w`, `2 w + 1`). A lane's B registers
///   for both steps are then words `4 q..4 q + 4` of its column: 16
///   consecutive bytes.
/// - **B's orientation.** A B register is two neighbours along k of one
///   column of the row-major B; stored as it comes that is two 16-bit
///   loads from two rows. So each thread loads a 4-wide, 8-deep block of B
///   (eight 8-byte loads down 8 rows), turns it into 4 columns of 8 k
///   values with byte permutes (`pair_halves`, 16 words per thread), and
///   stores `Bs` n-major (`Bs[n][k]`, 64-byte rows).
/// - **The order of rows within an m16.** A lane's A registers are rows
///   `g` and `g + 8` (`g = lane / 4`) at words `x` and `x + 1`: two rows.
///   Reading fragment row `g` as row `2 g` and `g + 8` as `2 g + 1`, and
///   storing each pair of rows word by word interleaved (a 128-byte
///   "pair-row": word `w` of row `2 p`, then of `2 p + 1`, ...), the four
///   registers are 16 consecutive bytes. Each thread loads 16 bytes of two
///   neighbouring rows and stores them as two interleaved chunks. C's rows
///   come out in the same order ([`store_c`], `paired`).
///
/// Banks: a pair-row is one 128-byte bank line; 8 lanes of a 16-byte
/// access cover two pair-rows (A) or two 64-byte rows (B). A's chunks move
/// by one slot in odd pair-rows (`chunk ^ (p mod 2)`), so the 8 chunks
/// the stores write (even or odd ones of two pair-rows) fill the line.
/// The threads storing `Bs` write columns `4 p + i` for consecutive `p`,
/// rows 4 apart with the same parity, the same half of a line: so n-rows
/// `r` with bit 2 set trade places with their neighbour (`r ^ 1`). The
/// fragment loads read rows (pair-rows) `g` and `g + 1` together and stay
/// whole lines. Every access is conflict-free, unpadded.
pub(super) struct Transposed;

/// Where n-row `r` of `Bs` lives in [`Transposed`].
#[inline(always)]
const fn b_row(r: usize) -> usize {
    r ^ ((r >> 2) & 1)
}

/// Whether `i` is odd: a function, so that `seq!`'s literal indices make
/// no expression with equal operands (`1 % 2 == 1`).
const fn odd(i: usize) -> bool {
    i % 2 == 1
}

impl Layout for Transposed {
    const W: usize = 128;
    const PAIRED: bool = true;
    /// A: 16 bytes of rows `2 p` and `2 p + 1` for two pair-rows `p`; B: 4
    /// columns x 8 rows as 8 rows of two words.
    type Held = ([[[u32; 4]; 2]; 2], [[u32; 2]; 8]);

    /// Thread `t` (of 128) loads words `4 (t % 4)..+4` of A's rows `2 p`
    /// and `2 p + 1` for pair-rows `p = t / 4` and `t / 4 + 32`, and B's
    /// block of rows `8 (t % 4)..+8`, columns `4 (t / 4)..+4`: a warp's
    /// 8-byte loads of one row cover 8 x 8 bytes of each of 4 rows, whole
    /// sectors.
    #[inline(always)]
    fn load<const VECTOR: bool>(ops: &Operands, k0: usize) -> Self::Held {
        let (octet, quad) = (ops.place.t % 4, ops.place.t / 4);
        // Eight rows' addresses from k0 and n each k-step (see `opaque`).
        let (k0, n) = (opaque(k0), opaque(ops.n));
        let nn = ops.place.block.1 + 4 * quad;
        let across = n.saturating_sub(nn);
        let mut b = [[0u32; 2]; 8];
        seq!(J in 0..8 {{
            let kk = k0 + 8 * octet + J;
            b[J] = words::<VECTOR, 2>(ops.b, kk * n + nn, if kk < ops.k { across } else { 0 });
        }});
        let kk = k0 + 8 * octet;
        let mut a = [[[0u32; 4]; 2]; 2];
        seq!(U in 0..2 { seq!(H in 0..2 {{
            // Pair-row quad + 32 U: rows 2 (quad + 32 U) + H.
            let row = ops.place.block.0 + 2 * (quad + 32 * U) + H;
            let inside = if row < ops.m { ops.k.saturating_sub(kk) } else { 0 };
            a[U][H] = words::<VECTOR, 4>(ops.a, row * ops.k + kk, inside);
        }}); });
        (a, b)
    }

    #[inline(always)]
    fn load_inside(ops: &Operands, k0: usize) -> Self::Held {
        let (octet, quad) = ((ops.place.t % 4) as u32, (ops.place.t / 4) as u32);
        let (m0, n0) = (ops.place.block.0 as u32, ops.place.block.1 as u32);
        // In words (k and n are even): rows of k / 2 and n / 2.
        let (k, n, k0) = (opaque(ops.k as u32 / 2), opaque(ops.n as u32 / 2), opaque(k0 as u32));
        // B's rows k0 + 8 octet + J, columns from n0 + 4 quad.
        let first = (k0 + 8 * octet) * n + n0 / 2 + 2 * quad;
        // SAFETY: inside B (`inside`), 8 bytes on 8.
        let b = seq!(J in 0..8 { [#(unsafe { vector::<2>(ops.b, (first + J * n) as usize) },)*] });
        // A's rows 2 (quad + 32 U) + H, columns from k0 + 8 octet.
        let first = (m0 + 2 * quad) * k + k0 / 2 + 4 * octet;
        // SAFETY: inside A, 16 bytes on 16.
        let a = seq!(U in 0..2 { [#([unsafe { vector::<4>(ops.a, (first + 64 * U * k) as usize) },
                                       unsafe { vector::<4>(ops.a, (first + (64 * U + 1) * k) as usize) }],)*] });
        (a, b)
    }

    #[inline(always)]
    unsafe fn store(ops: &Operands, s: usize, (a, b): Self::Held) {
        // SAFETY: the caller's contract.
        let stage = unsafe { Stage::of(s, Self::W) };
        let (octet, quad) = (ops.place.t % 4, ops.place.t / 4);
        // Pair-rows quad and quad + 32, chunks 2 octet and 2 octet + 1 (one slot over in
        // odd pair-rows): words 4 octet..+2 of both rows, then ..+4.
        let flip = quad % 2;
        seq!(U in 0..2 { seq!(C in 0..2 {{
            let chunk = [a[U][0][2 * C], a[U][1][2 * C], a[U][0][2 * C + 1], a[U][1][2 * C + 1]];
            let at = 32 * (quad + 32 * U) + 4 * ((2 * octet + C) ^ flip);
            // SAFETY: pair-row < 64, 16 bytes at word 32 p + 4 slot (slot < 8).
            unsafe { stage.a_words.store_x4(0, at, chunk.map(f32::from_bits)) };
        }}); });
        // Column 4 quad + I goes to n-row b_row(4 quad + I) = 4 quad + (I ^
        // flip): two row offsets, the other two 2 rows further.
        let rows = [4 * quad + flip, 4 * quad + 1 - flip];
        seq!(I in 0..4 {{
            // Its k values 8 octet..+8: halves of pairs of loaded rows.
            let i: usize = I;
            let column: [u32; 4] = core::array::from_fn(|p| pair_halves::<{ odd(I) }>(b[2 * p][i / 2], b[2 * p + 1][i / 2]));
            let r = rows[i % 2] + 2 * (i / 2);
            // SAFETY: n-row < 128, 16 bytes at word 16 r + 4 octet of B's tile.
            unsafe { stage.b_words.store_x4(0, 16 * r + 4 * octet, column.map(f32::from_bits)) };
        }});
    }

    /// Per k-step of 32: 8 B loads (one per n8 column block, all four of
    /// its registers for both k16 steps), then per k16 step and m16 one A
    /// load and 8 `mma.sync`: 16 shared loads for 64 `mma`s.
    #[inline(always)]
    unsafe fn multiply(stage: Stage, lane: u32, (wm, wn): (usize, usize), acc: &mut Sums) {
        let (g, q) = (lane as usize / 4, lane as usize % 4);
        // n-row wn + 8 NI + g lives at wn + 8 NI + b_row(g): one base, and
        // constant offsets.
        let b_at = 16 * (wn + b_row(g)) + 4 * q;
        let mut fb = [[0u32; 4]; 8];
        seq!(NI in 0..8 {
            // SAFETY: n-row < 128, 16 bytes at column 8 q.
            fb[NI] = unsafe { stage.b4(b_at + 16 * 8 * NI) };
        });
        // Pair-row wm / 2 + 8 MI + g, chunk (2 q + s) ^ (g mod 2).
        let a_at = [0, 1].map(|s| 32 * (wm / 2 + g) + 4 * ((2 * q + s) ^ (g % 2)));
        // k16 step by k16 step: an accumulator's second `mma` comes 32
        // independent ones after its first, past the tensor core's latency.
        seq!(S in 0..2 {{
            seq!(MI in 0..4 {{
                // SAFETY: pair-row < 64, 16 bytes.
                let fa = unsafe { stage.a4(a_at[S] + 32 * 8 * MI) };
                seq!(NI in 0..8 {
                    // SAFETY: the caller's contract (a converged warp).
                    acc[MI][NI] = unsafe { mma_m16n8k16::<bf16>(fa, [fb[NI][2 * S], fb[NI][2 * S + 1]], acc[MI][NI]) };
                });
            }});
        }});
    }
}
