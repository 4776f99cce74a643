//! A consumer warpgroup: 64 of the tile's [`BR`] queries, its products on
//! the tensor cores (`wgmma`), the online softmax in registers, O and lse
//! stored.
//!
//! **Per key tile `j`** (stage `s`): wait for K; in its turn, issue `S_j =
//! Q K_jᵀ` (`d / 16` `wgmma`s, A = Q and B = K from shared memory) and
//! then `O += P_{j-1} V_{j-1}` (`bc / 16` `wgmma`s, A = P from registers),
//! two groups; hand the turn over; wait for the first group only
//! (`wait_group 1`) and run the softmax of `S_j` (mask, row maxima, `P_j =
//! 2^(S c - m c)`, row sums, the rescale factor) while `P_{j-1} V_{j-1}`
//! still runs on the tensor cores; then wait for it (`wait_group 0`),
//! release its stage and rescale O. After the last tile, `P V` of the
//! last one alone. The softmax of one tile overlaps the other product of
//! the warpgroup: the intra-warpgroup overlap of FlashAttention-3.
//!
//! **Turns** (the ping-pong of two warpgroups): each warpgroup issues its
//! products only in its turn, then passes the turn to the other (mbarrier
//! `turn(c)`: one arrival per warp of the other warpgroup). So while one
//! warpgroup runs its softmax (`MUFU.EX2` and the FP32 pipes) the other's
//! products keep the tensor cores busy, and the two alternate rather than
//! contending. Warpgroup 0 waits for `turn(0)`'s phase `r - 1` before its
//! round `r` (none before round 0), warpgroup 1 for `turn(1)`'s phase `r`:
//! each phase is completed by the other's round, and no phase can complete
//! twice before the waiter saw it (each needs the waiter's own arrivals in
//! between).

use super::pipeline::Smem;
use super::scheduler::{Problem, Tile};
use super::{BR, SPAN};
use crate::attention::{Half, visible_keys};
use crate::dev::math::{ex2_approx, fma, lg2_approx};
use crate::dev::warp::{FULL_MASK, shfl_xor_f32};
use crate::dev::wgmma::{self, Accumulators, Descriptor, d_f32, shared_address, wait_for};
use crate::dev::{Out, thread_idx_x};
use seq_macro::seq;

/// A consumer warpgroup: which (0: the tile's first 64 queries, 1: the
/// next), its thread, and the block's layout.
#[derive(Clone, Copy)]
pub(super) struct Consumer {
    pub c: usize,
    pub t: usize,
    pub smem: Smem,
}

/// Where the warpgroup's rows of one tile go.
#[derive(Clone, Copy)]
struct Rows {
    /// The warpgroup's first query.
    q0: usize,
    /// O's and lse's first row of the head.
    head_row: usize,
}

/// A warpgroup's running state for its 64 rows: O (`d / 2` per thread),
/// and per row of the thread (`g`, `g + 8` of its warp) the running
/// maximum (in score units) and this thread's part of the running sum.
struct State<O> {
    o: O,
    m: [f32; 2],
    l: [f32; 2],
}

impl Consumer {
    /// This warpgroup's turn to issue round `r` has come.
    #[inline(always)]
    fn wait_turn(self, r: usize) {
        // SAFETY: initialized (the block's start); see the module.
        unsafe {
            if self.c == 1 {
                self.smem.turn(1).wait((r % 2) as u32);
            } else if r > 0 {
                self.smem.turn(0).wait(((r - 1) % 2) as u32);
            }
        }
    }

    /// Passes the turn to the other warpgroup: one arrival per warp, after
    /// the warp issued.
    #[inline(always)]
    fn pass_turn(self) {
        if self.t.is_multiple_of(32) {
            // SAFETY: initialized, counting the four warps.
            unsafe { self.smem.turn(1 - self.c).arrive() };
        }
    }

    /// One arrival of the warpgroup on `bar` (from its first thread), after
    /// a wait that saw its reads complete.
    #[inline(always)]
    fn release(self, bar: crate::dev::barrier::Mbarrier) {
        if self.t == 0 {
            // SAFETY: initialized, counting one arrival per warpgroup.
            unsafe { bar.arrive() };
        }
    }

    /// Issues `S = Q Kᵀ` for stage `s` (`D / 16` k16 steps) into `acc`
    /// (its values unread: the first step does not add), uncommitted.
    ///
    /// # Safety
    /// Converged warpgroup; Q and stage `s`'s K have landed.
    #[inline(always)]
    unsafe fn issue_qk<T: Half, O: Accumulators, S: Accumulators>(self, mut acc: S, s: usize) -> S {
        let (d, bc) = (O::N, S::N);
        let q = shared_address(self.smem.q()) + (self.c * 64 * SPAN) as u32;
        let k = shared_address(self.smem.k(s));
        seq!(KK in 0..16 {
            if KK < d / 16 {
                let a = Descriptor::swizzled(SPAN as u32, q + ((KK / 4) * BR * SPAN + 32 * (KK % 4)) as u32, 16, 1024);
                let b = Descriptor::swizzled(SPAN as u32, k + ((KK / 4) * bc * SPAN + 32 * (KK % 4)) as u32, 16, 1024);
                // SAFETY: the caller's contract; Q's rows of this
                // warpgroup and K's, K-major, as the layout says.
                acc = unsafe { T::wgmma_ss::<S, false>(acc, a, b, KK > 0) };
            }
        });
        acc
    }

    /// Issues `O += P V` for stage `s` (`BC / 16` k16 steps, P's A
    /// fragments from registers), uncommitted.
    ///
    /// # Safety
    /// Converged warpgroup; stage `s`'s V has landed.
    #[inline(always)]
    unsafe fn issue_pv<T: Half, O: Accumulators, S: Accumulators>(self, mut o: O, p: &[u32; 32], s: usize) -> O {
        let bc = S::N;
        let v = shared_address(self.smem.v(s));
        seq!(KT in 0..8 {
            if KT < bc / 16 {
                let b = Descriptor::swizzled(SPAN as u32, v + (KT * 16 * SPAN) as u32, (bc * SPAN) as u32, 1024);
                let a = [p[4 * KT], p[4 * KT + 1], p[4 * KT + 2], p[4 * KT + 3]];
                // SAFETY: the caller's contract; V MN-major (16 keys x D).
                o = unsafe { T::wgmma_rs::<O, true>(o, a, b, true) };
            }
        });
        o
    }

    /// The warpgroup's part of every tile of the block.
    ///
    /// # Safety
    /// Converged warpgroup; the mbarriers initialized; the producer fills
    /// the same tiles; `o` and `lse` hold the problem's rows.
    #[inline(always)]
    pub unsafe fn run<T: Half, O: Accumulators, S: Accumulators>(
        self,
        p: Problem,
        (o, lse): (Out<T>, Out<f32>),
        c: f32,
    ) {
        let smem = self.smem;
        let bc = S::N;
        let (mut it, mut round, mut n) = (0usize, 0usize, 0usize);
        for tile in p.tiles(bc) {
            let Tile { bh, q0, key_tiles, .. } = tile;
            let rows = Rows { q0: q0 + 64 * self.c, head_row: bh * p.s_q };
            // Whether a tile needs masking: its last key lies past the
            // limit of the warpgroup's first row (the end of K included).
            let first_limit = visible_keys(rows.q0.min(p.s_q.saturating_sub(1)), p.s_q, p.s_k, p.causal);
            // SAFETY: initialized; Q's `n`-th fill.
            unsafe { smem.q_full().wait((n % 2) as u32) };
            let mut st = State { o: O::zeroed(), m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
            let mut pr = [0u32; 32];
            let mut sc = S::zeroed();
            for j in 0..key_tiles {
                let (s, parity) = smem.stage(it);
                let (sp, pp) = smem.stage(it.wrapping_sub(1));
                // Every wait before the fence: between a fence and its
                // `wgmma`s ptxas wants straight-line code.
                // SAFETY: initialized; the stages' fills of these rounds.
                unsafe {
                    smem.k_full(s).wait(parity);
                    if j > 0 {
                        smem.v_full(sp).wait(pp);
                    }
                }
                self.wait_turn(round);
                // What the products read from registers, computed before
                // the fence (see `wgmma::pinned_fragments`).
                // (S's registers: the last tile's, unread by the first
                // product, which does not add.)
                sc = sc.pinned();
                st.o = st.o.pinned();
                pr = wgmma::pinned_fragments(pr);
                wgmma::fence();
                // SAFETY: Q and K landed (the waits).
                sc = unsafe { self.issue_qk::<T, O, S>(sc, s) };
                wgmma::commit();
                if j > 0 {
                    // SAFETY: V of the previous tile landed (the wait).
                    st.o = unsafe { self.issue_pv::<T, O, S>(st.o, &pr, sp) };
                }
                // (An empty group at j = 0: `wait_group 1` below then
                // always means "S is done".)
                wgmma::commit();
                self.pass_turn();
                round += 1;
                sc = wait_for::<1, S>(sc);
                self.release(smem.k_empty(s));
                if j + 1 == key_tiles {
                    // This warpgroup's last read of Q in the tile is done.
                    self.release(smem.q_empty());
                }
                let key0 = j * bc;
                let masked = key0 + bc > first_limit;
                let alpha = self.softmax::<T, S>((&mut st.m, &mut st.l), &mut sc, &mut pr, (rows, key0, masked), p, c);
                st.o = wait_for::<0, O>(st.o);
                if j > 0 {
                    self.release(smem.v_empty(sp));
                }
                seq!(I in 0..128 {
                    if I < O::N / 2 {
                        st.o[I] *= alpha[(I / 2) % 2];
                    }
                });
                it += 1;
            }
            if key_tiles > 0 {
                let (sp, pp) = smem.stage(it - 1);
                // SAFETY: as above.
                unsafe { smem.v_full(sp).wait(pp) };
                self.wait_turn(round);
                st.o = st.o.pinned();
                pr = wgmma::pinned_fragments(pr);
                wgmma::fence();
                // SAFETY: as above.
                st.o = unsafe { self.issue_pv::<T, O, S>(st.o, &pr, sp) };
                wgmma::commit();
                self.pass_turn();
                round += 1;
                st.o = wait_for::<0, O>(st.o);
                self.release(smem.v_empty(sp));
            } else {
                self.release(smem.q_empty());
            }
            // SAFETY: the caller's contract.
            unsafe { self.store::<T, O>(&mut st, rows, p, (&o, &lse), c) };
            n += 1;
        }
    }

    /// The online softmax of one key tile's scores `sc` (keys `key0..`):
    /// where `masked`, scores past each row's limit become `-inf`; each
    /// row's maximum `m` grows, `P = 2^(s c - m c)` is packed into `pr` as
    /// the A fragments of `P V`, `l` takes the row sums; returns each
    /// row's rescale factor `2^(m_old c - m_new c)` for O.
    #[inline(always)]
    fn softmax<T: Half, S: Accumulators>(
        self,
        (mm, ll): (&mut [f32; 2], &mut [f32; 2]),
        sc: &mut S,
        pr: &mut [u32; 32],
        (rows, key0, masked): (Rows, usize, bool),
        p: Problem,
        c: f32,
    ) -> [f32; 2] {
        let t = self.t as u32;
        if masked {
            seq!(I in 0..128 {
                if I < S::N / 2 {
                    let (r, col) = d_f32(t, I);
                    let row = rows.q0 + r as usize;
                    // Rows past s_q are never stored: any limit will do.
                    let limit = visible_keys(row.min(p.s_q.saturating_sub(1)), p.s_q, p.s_k, p.causal);
                    if key0 + col as usize >= limit {
                        sc[I] = f32::NEG_INFINITY;
                    }
                }
            });
        }
        let mut alpha = [0.0f32; 2];
        seq!(R in 0..2 {{
            let mut top = f32::NEG_INFINITY;
            seq!(I in 0..128 {
                if I < S::N / 2 && (I / 2) % 2 == R {
                    top = top.max(sc[I]);
                }
            });
            // The row's four threads (one quad) agree.
            // SAFETY: every lane of the warp is here.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1) });
            // SAFETY: as above.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 2) });
            let m = mm[R].max(top);
            // 0 while the row has seen no key (every p and alpha is then 0).
            let reference = if m == f32::NEG_INFINITY { 0.0 } else { m * c };
            alpha[R] = ex2_approx(fma(mm[R], c, -reference));
            mm[R] = m;
            let mut sum = 0.0f32;
            seq!(I in 0..128 {
                if I < S::N / 2 && (I / 2) % 2 == R {
                    let e = ex2_approx(fma(sc[I], c, -reference));
                    sc[I] = e;
                    sum += e;
                }
            });
            ll[R] = ll[R] * alpha[R] + sum;
        }});
        // Accumulators 8 t..8 t + 8 are the A fragment of k16 step t.
        seq!(K in 0..32 {
            if K < S::N / 4 {
                pr[K] = T::pack(sc[2 * K], sc[2 * K + 1]);
            }
        });
        alpha
    }

    /// O / l into the rows below `s_q` (two neighbours per 4-byte store),
    /// lse by each row's first thread (`+inf` for a row that saw no key).
    ///
    /// # Safety
    /// `o` and `lse` hold the problem's rows; every lane of the warp calls it.
    #[inline(always)]
    unsafe fn store<T: Half, O: Accumulators>(
        self,
        st: &mut State<O>,
        rows: Rows,
        p: Problem,
        (o, lse): (&Out<T>, &Out<f32>),
        c: f32,
    ) {
        let d = O::N;
        let (r, col) = d_f32(self.t as u32, 0);
        let o = o.recast::<u32>();
        seq!(R in 0..2 {{
            let mut l = st.l[R];
            // SAFETY: every lane of the warp is here.
            l += unsafe { shfl_xor_f32(FULL_MASK, l, 1) };
            // SAFETY: as above.
            l += unsafe { shfl_xor_f32(FULL_MASK, l, 2) };
            let row = rows.q0 + r as usize + 8 * R;
            if row < p.s_q {
                let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
                let first = (rows.head_row + row) * d + col as usize;
                seq!(N in 0..32 {
                    if N < d / 8 {
                        let pair = T::pack(st.o[4 * N + 2 * R] * inv, st.o[4 * N + 2 * R + 1] * inv);
                        // SAFETY: inside the row (column 8 N + 2 q + 1 <
                        // d), 4 bytes on 4; this thread's two elements.
                        unsafe { o.store((first + 8 * N) / 2, pair) };
                    }
                });
                if col == 0 {
                    let value =
                        if l > 0.0 { (st.m[R] * c + lg2_approx(l)) * core::f32::consts::LN_2 } else { f32::INFINITY };
                    // SAFETY: row < s_q; one thread per row.
                    unsafe { lse.store(rows.head_row + row, value) };
                }
            }
        }});
    }
}

/// The thread's index in its warpgroup and the warpgroup's consumer index.
#[inline(always)]
pub(super) fn who() -> (usize, usize) {
    let t = thread_idx_x() as usize;
    (t / 128 - 1, t % 128)
}
