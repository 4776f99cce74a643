//! A decode warp's rows: its online softmax over 16-key chunks, the merge
//! of a row group's warps, and the stores of O, lse or a split's state.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::{Block, RowMap, block_rows, lane_floats, part_floats};
use crate::attention::flash::{bc, mt, swz};
use crate::attention::{log_sum_exp, visible_keys};
use crate::dev::math::{ex2_approx, fma, pack};
use crate::dev::mma::mma_m16n8k16;
use crate::dev::warp::{FULL_MASK, ballot, shfl_xor_f32};
use crate::dev::{Element, Out, SharedArray, sync_threads};
use seq_macro::seq;

/// One row tile's running state: O's accumulators (`D / 8` m16n8
/// fragments; the array holds the largest `D`), and for this lane's two
/// rows the running maximum (score units) and its part of the sum.
#[derive(Clone, Copy)]
pub(super) struct Rows {
    acc: [[f32; 4]; 32],
    m: [f32; 2],
    l: [f32; 2],
}

impl Rows {
    pub(super) const EMPTY: Rows = Rows { acc: [[0.0; 4]; 32], m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
}

/// The first query row of row tile `i` of this warp (block rows).
#[inline(always)]
fn first_row<const D: usize>(at: &Block, i: usize) -> usize {
    16 * (mt(D) * at.row_group() as usize + i)
}

/// One chunk of 16 keys from `key0`, its K and V rows at byte `kv_at` of
/// the stage (V's `2 bc d` bytes after K's): S = Q Kᵀ, the mask where some
/// key is past some row's limit, the online softmax, O += P V.
///
/// # Safety
/// The stage and Q's tile hold their data (after the barrier); the whole
/// warp calls it alike.
#[inline(always)]
pub(super) unsafe fn chunk<T: Element, const D: usize>(
    state: &mut [Rows; 2],
    at: &Block,
    kv_at: usize,
    key0: u32,
    c: f32,
) {
    // SAFETY: Q at byte 0, K at `kv_at`, V `2 bc d` bytes on (the launch's
    // shared memory); read only here, after the barrier.
    let (qs, ks, vs) = unsafe {
        (
            SharedArray::<u16>::launch_sized(),
            SharedArray::<u16>::launch_sized_at(kv_at),
            SharedArray::<u16>::launch_sized_at(kv_at + 2 * bc(D) * D),
        )
    };
    let lane = at.lane() as usize;
    // ldmatrix rows: lane l gives row l % 8 of matrix l / 8 (as in
    // `flash`). Q: (rows 0-7, k 0-7), (8-15, k 0-7), (0-7, k 8-15), (8-15,
    // k 8-15); K: (keys 0-7, k 0-7), (0-7, k 8-15), (8-15, k 0-7), (8-15,
    // k 8-15); V (.trans): (keys 0-7, columns 0-7), (8-15, 0-7), (0-7,
    // 8-15), (8-15, 8-15). The chunk's rows are the stage's `16 ch..`:
    // `kv_at` already points there.
    let q_row = lane % 8 + 8 * (lane / 8 % 2);
    let (k_row, v_row) = (lane % 8 + 8 * (lane / 16), lane % 8 + 8 * (lane / 8 % 2));
    // Row tiles wholly past the group's rows (padding, when the group has
    // fewer rows than the block) are skipped: the test is the warp's alike.
    let live: [bool; 2] = core::array::from_fn(|i| i == 0 || first_row::<D>(at, i) < at.valid_rows as usize);
    let mut s = [[[0.0f32; 4]; 2]; 2];
    seq!(KK in 0..16 {
        if KK < D / 16 {
            // SAFETY: key row < 16, 16 bytes inside a chunk; converged.
            let kb = unsafe { ks.ldmatrix_x4(0, swz(D, k_row, 8 * (2 * KK + lane / 8 % 2))) };
            seq!(I in 0..2 {
                if I < mt(D) && live[I] {
                    let row = first_row::<D>(at, I) + q_row;
                    // SAFETY: row < block_rows(D, 1), as above.
                    let qa = unsafe { qs.ldmatrix_x4(0, swz(D, row, 8 * (2 * KK + lane / 16))) };
                    // SAFETY: the whole warp, converged.
                    unsafe {
                        s[I][0] = mma_m16n8k16::<T>(qa, [kb[0], kb[1]], s[I][0]);
                        s[I][1] = mma_m16n8k16::<T>(qa, [kb[2], kb[3]], s[I][1]);
                    }
                }
            });
        }
    });
    // Whether some key of the chunk is past some row's limit: the split's
    // (or the block's) end, or (causal) the first query's limit `len - s_q
    // + 1`.
    let masked = key0 + 16 > at.key_end || (at.causal() && key0 + 16 + at.s_q > at.len + 1);
    let mut grew = false;
    let mut alpha = [[1.0f32; 2]; 2];
    seq!(I in 0..2 {
        if I < mt(D) && live[I] {
            let rows = &mut state[I];
            let (g, q) = (lane / 4, lane % 4);
            if masked {
                // Element e of key tile j: row g + 8 (e / 2), key 8 j + 2 q + e % 2.
                seq!(J in 0..2 {
                    seq!(E in 0..4 {{
                        let query = at.query(first_row::<D>(at, I) + g + 8 * (E >> 1));
                        let key = key0 as usize + 8 * J + 2 * q + E % 2;
                        let limit = visible_keys(query, at.s_q as usize, at.len as usize, at.causal());
                        if key >= limit.min(at.key_end as usize) {
                            s[I][J][E] = f32::NEG_INFINITY;
                        }
                    }});
                });
            }
            seq!(R in 0..2 {{
                let mut top = s[I][0][2 * R].max(s[I][0][2 * R + 1]).max(s[I][1][2 * R].max(s[I][1][2 * R + 1]));
                // SAFETY: every lane of the warp is here.
                top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1) });
                // SAFETY: as above.
                top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 2) });
                let m = rows.m[R].max(top);
                grew |= m != rows.m[R];
                // The reference point in log2 units; 0 while the row has
                // seen no key (then every p is 2^-inf = 0, and so is alpha).
                // An unchanged maximum rescales by exactly 1 (the sum as O,
                // whose rescale the vote below may skip).
                let reference = if m == f32::NEG_INFINITY { 0.0 } else { m * c };
                alpha[I][R] = if m == rows.m[R] { 1.0 } else { ex2_approx(fma(rows.m[R], c, -reference)) };
                rows.m[R] = m;
                let mut sum = 0.0f32;
                seq!(J in 0..2 {
                    seq!(E in 0..2 {{
                        let p = ex2_approx(fma(s[I][J][2 * R + E], c, -reference));
                        s[I][J][2 * R + E] = p;
                        sum += p;
                    }});
                });
                rows.l[R] = fma(rows.l[R], alpha[I][R], sum);
            }});
        }
    });
    // The rescale of O, where some lane's maximum grew (alpha < 1).
    // SAFETY: every lane of the warp is here.
    if unsafe { ballot(FULL_MASK, grew) } != 0 {
        seq!(I in 0..2 {
            if I < mt(D) && live[I] {
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {
                            state[I].acc[N][E] *= alpha[I][E >> 1];
                        });
                    }
                });
            }
        });
    }
    // O += P V: the scores of key tiles 0 and 1 are the A fragment of the
    // chunk's one k-step as they lie (`flash`'s `Warp::tile` says why).
    let pa: [[u32; 4]; 2] = core::array::from_fn(|i| {
        [
            pack::<T>(s[i][0][0], s[i][0][1]),
            pack::<T>(s[i][0][2], s[i][0][3]),
            pack::<T>(s[i][1][0], s[i][1][1]),
            pack::<T>(s[i][1][2], s[i][1][3]),
        ]
    });
    seq!(P in 0..16 {
        if P < D / 16 {
            // SAFETY: key row < 16, column < D, 16 bytes; converged.
            let vb = unsafe { vs.ldmatrix_x4_trans(0, swz(D, v_row, 8 * (2 * P + lane / 16))) };
            seq!(I in 0..2 {
                if I < mt(D) && live[I] {
                    let acc = &mut state[I].acc;
                    // SAFETY: the whole warp, converged.
                    unsafe {
                        acc[2 * P] = mma_m16n8k16::<T>(pa[I], [vb[0], vb[1]], acc[2 * P]);
                        acc[2 * P + 1] = mma_m16n8k16::<T>(pa[I], [vb[2], vb[3]], acc[2 * P + 1]);
                    }
                }
            });
        }
    });
}

/// The merge of a row group's `wk` warps: warps past the first write their
/// state (thread-minor: word `f` of lane `l` in slot `s` at `(s
/// lane_floats + f) 32 + l`, a warp's 32 stores one conflict-free pass),
/// a barrier, then the first warp rescales its own and their states to
/// the largest maximum and adds them (`2^((m_w - m) c)`, as the online
/// softmax does).
///
/// # Safety
/// Every thread of the block calls it, after a barrier past every read of
/// the stages; the launch passes `shared_bytes(D)`.
#[inline(always)]
pub(super) unsafe fn merge_warps<const D: usize>(state: &mut [Rows; 2], at: &Block, c: f32) {
    let lane = at.lane() as usize;
    let f = lane_floats(D);
    // SAFETY: the stages' bytes (after Q's): `3 lane_floats(D) 32` words
    // fit in them (`lane_floats` is at most 136 words, the stages 16 K).
    let scratch = unsafe { SharedArray::<f32>::launch_sized_at(2 * block_rows(D, 1) * D) };
    let slot = |part: u32| ((at.row_group() * (at.wk() - 1) + part - 1) as usize) * f;
    let word = |base: usize, i: usize| (base + i) * 32 + lane;
    if at.part() != 0 {
        let base = slot(at.part());
        seq!(I in 0..2 {
            if I < mt(D) {
                let first = I * (D / 2 + 4);
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {
                            // SAFETY: inside the scratch; this lane's word.
                            unsafe { scratch.store(0, word(base, first + 4 * N + E), state[I].acc[N][E]) };
                        });
                    }
                });
                seq!(R in 0..2 {
                    // SAFETY: as above.
                    unsafe {
                        scratch.store(0, word(base, first + D / 2 + R), state[I].m[R]);
                        scratch.store(0, word(base, first + D / 2 + 2 + R), state[I].l[R]);
                    }
                });
            }
        });
    }
    sync_threads();
    if at.part() != 0 {
        return;
    }
    for part in 1..at.wk() {
        let base = slot(part);
        seq!(I in 0..2 {
            if I < mt(D) {
                let first = I * (D / 2 + 4);
                let mut scales = [[0.0f32; 2]; 2];
                seq!(R in 0..2 {{
                    // SAFETY: the other warp wrote these before the barrier.
                    let (m, l) = unsafe {
                        (scratch.load(0, word(base, first + D / 2 + R)), scratch.load(0, word(base, first + D / 2 + 2 + R)))
                    };
                    let rows = &mut state[I];
                    let new = rows.m[R].max(m);
                    let reference = if new == f32::NEG_INFINITY { 0.0 } else { new * c };
                    scales[R] = [ex2_approx(fma(rows.m[R], c, -reference)), ex2_approx(fma(m, c, -reference))];
                    rows.l[R] = fma(rows.l[R], scales[R][0], scales[R][1] * l);
                    rows.m[R] = new;
                }});
                seq!(N in 0..32 {
                    if N < D / 8 {
                        seq!(E in 0..4 {{
                            // SAFETY: as above.
                            let x = unsafe { scratch.load(0, word(base, first + 4 * N + E)) };
                            let acc = &mut state[I].acc[N][E];
                            *acc = fma(*acc, scales[E >> 1][0], scales[E >> 1][1] * x);
                        }});
                    }
                });
            }
        });
    }
}

/// The row group's rows: with one split, O (`acc v_scale / l`, two
/// elements of a row a 4-byte store) and lse; with more, the state (O's
/// accumulators times V's descale, the maximum in log2 units `m c`, and
/// the whole sum) into the split's workspace, row `q_row` at word `(split
/// rows_all + q_row) part_floats(D)`.
///
/// # Safety
/// O, lse and the workspace hold the launch's rows; every lane of the
/// warp calls it.
#[inline(always)]
pub(super) unsafe fn store<T: Element, const D: usize>(
    state: &mut [Rows; 2],
    (at, map): (&Block, &RowMap),
    (o, lse, parts): (Out<T>, Out<f32>, Out<f32>),
    (split, splits, rows_all): (u32, u32, u32),
    (c, v_scale): (f32, f32),
) {
    let lane = at.lane() as usize;
    let (g, q) = (lane / 4, lane % 4);
    let o = o.recast::<u32>();
    let (split, rows_all) = (split as usize, rows_all as usize);
    seq!(I in 0..2 {
        if I < mt(D) {
            seq!(R in 0..2 {{
                let rows = &state[I];
                // The row's sum over its quad.
                let mut l = rows.l[R];
                // SAFETY: every lane of the warp is here.
                l += unsafe { shfl_xor_f32(FULL_MASK, l, 1) };
                // SAFETY: as above.
                l += unsafe { shfl_xor_f32(FULL_MASK, l, 2) };
                let r = first_row::<D>(at, I) + g + 8 * R;
                if r < at.valid_rows as usize {
                    let row = map.q_row(r);
                    if splits == 1 {
                        let inv = if l > 0.0 { v_scale / l } else { 0.0 };
                        seq!(N in 0..32 {
                            if N < D / 8 {
                                let pair = pack::<T>(rows.acc[N][2 * R] * inv, rows.acc[N][2 * R + 1] * inv);
                                // SAFETY: inside the row, 4 bytes on 4; this lane's two elements.
                                unsafe { o.store((row * D + 8 * N + 2 * q) / 2, pair) };
                            }
                        });
                        if q == 0 {
                            // SAFETY: one lane per row.
                            unsafe { lse.store(row, log_sum_exp(rows.m[R] * c, l)) };
                        }
                    } else {
                        let base = (split * rows_all + row) * part_floats(D);
                        seq!(N in 0..32 {
                            if N < D / 8 {
                                // SAFETY: inside the workspace (the launch's contract).
                                unsafe {
                                    parts.store(base + 8 * N + 2 * q, rows.acc[N][2 * R] * v_scale);
                                    parts.store(base + 8 * N + 2 * q + 1, rows.acc[N][2 * R + 1] * v_scale);
                                }
                            }
                        });
                        if q == 0 {
                            // SAFETY: as above.
                            unsafe {
                                parts.store(base + D, rows.m[R] * c);
                                parts.store(base + D + 1, l);
                            }
                        }
                    }
                }
            }});
        }
    });
}
