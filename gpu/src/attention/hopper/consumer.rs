//! A consumer warpgroup: 64 of the tile's [`BR`] queries, its products on
//! the tensor cores (`wgmma`), the online softmax in registers, each
//! finished tile handed to the kernel's epilogue (`epilogue`).
//!
//! **Per key tile `j`** (stage `s`): wait for K; in its turn, issue `S_j =
//! Q K_jᵀ` (`d / 16` `wgmma`s, FP8 `d / 32`; A = Q and B = K from shared
//! memory) and then `O += P_{j-1} V_{j-1}` (`bc / 16` `wgmma`s, FP8 `bc /
//! 32` on Vᵀ; A = P from registers),
//! two groups; hand the turn over; wait for the first group only
//! (`wait_group 1`) and run the softmax of `S_j` (mask, row maxima, `P_j =
//! 2^(S c - m c)` in place, row sums, the rescale factor) while `P_{j-1}
//! V_{j-1}` still runs on the tensor cores; then wait for it (`wait_group
//! 0`), release its stage, rescale O (where a row's reference moved:
//! [`SLACK`]) and only then pack `P_j` into the
//! registers `P_{j-1}` held (a `wgmma` reads its registers until its
//! wait). ptxas would still move the wait above the softmax, to
//! interleave the packs with the exponentials: a store of the row sums
//! before it holds it there (`wait_for_after`, `Smem::pin`; at d = 256
//! the registers for that are lacking). After the last tile, `P V` of the
//! last one alone. The softmax of one tile overlaps the other product of
//! the warpgroup: the intra-warpgroup overlap of FlashAttention-3.
//!
//! **Turns** (the ping-pong of two warpgroups, with [`super::PING_PONG`]
//! only): each warpgroup issues its
//! products only in its turn, then passes the turn to the other (mbarrier
//! `turn(c)`: one arrival per warp of the other warpgroup). So while one
//! warpgroup runs its softmax (`MUFU.EX2` and the FP32 pipes) the other's
//! products keep the tensor cores busy, and the two alternate rather than
//! contending. Warpgroup 0 waits for `turn(0)`'s phase `r - 1` before its
//! round `r` (none before round 0), warpgroup 1 for `turn(1)`'s phase `r`:
//! each phase is completed by the other's round, and no phase can complete
//! twice before the waiter saw it (each needs the waiter's own arrivals in
//! between).

use super::epilogue::{Finished, Rows, State};
use super::pipeline::{Smem, span_of, v_transposed};
use super::scheduler::{AttentionArgs, Deal, WorkTile};
use super::{BR, Scaling};
use crate::attention::{tree32, visible_keys};
use crate::dev::epilogue::Epilogue;
use crate::dev::math::{self, ex2_approx, fma};
use crate::dev::pipeline::PipelineState;
use crate::dev::schedule::TileScheduler;
use crate::dev::thread_idx_x;
use crate::dev::warp::{FULL_MASK, ballot, shfl_idx_u32, shfl_xor_f32};
use crate::dev::wgmma::{self, Accumulators, Descriptor, d_f32, shared_address, wait_for, wait_for_after};
use crate::dev::{Element, Input};
use seq_macro::seq;

/// How far (in powers of 2) a row's maximum may pass the reference its
/// exponentials subtract before the reference moves to it: `P = 2^(s c -
/// m c)` then lies below `2^SLACK` (bf16 and f16 hold it, `l` in `f32`
/// with room to spare), O and `l` keep the stale reference, and the final
/// `O / l` and lse use it too: the same result, its roundings relative
/// to each value's size as before. Random scores pass it by that much
/// almost only on a row's first key tile, so most tiles skip O's rescale
/// (`d / 2` multiplies a thread, one a score).
///
/// Only at d = 256, where the rescale (128 multiplies a thread) waits for
/// `P V` and nothing overlaps it. At d = 64 and 128 it runs beside the
/// next tile's packing, and the vote and the branch cost more than the
/// multiplies they save (A/B in `docs/notes.md`).
const SLACK: f32 = 8.0;

/// A consumer warpgroup: which (0: the tile's first 64 queries, 1: the
/// next), its thread, and the block's layout.
#[derive(Clone, Copy)]
pub(super) struct Consumer {
    pub c: usize,
    pub t: usize,
    pub smem: Smem,
    /// Whether the two take turns (the ping-pong, [`super::PING_PONG`]).
    pub ping_pong: bool,
}

/// What a tile's key steps share and change: the rows' state, S's and
/// P's registers, the block's key tile count (stage and round) and this
/// warpgroup's turn count.
struct Walk<O, S: Accumulators> {
    st: State<O>,
    sc: S,
    pr: S::Fragments,
    /// The K/V ring's use.
    kv: PipelineState,
    /// This warpgroup's turns (a ring of one).
    turn: PipelineState,
}

/// What a tile's key steps read.
#[derive(Clone, Copy)]
struct At {
    rows: Rows,
    /// The keys the warpgroup's first row sees.
    first_limit: usize,
    key_tiles: usize,
    p: AttentionArgs,
    c: f32,
}

impl Consumer {
    /// This warpgroup's turn to issue round `r` has come.
    #[inline(always)]
    fn wait_turn(self, turn: PipelineState) {
        if !self.ping_pong {
            return;
        }
        // SAFETY: initialized (the block's start); see the module.
        unsafe {
            if self.c == 1 {
                self.smem.turn(1).wait(turn.phase());
            } else if let Some(phase) = turn.refill_phase() {
                self.smem.turn(0).wait(phase);
            }
        }
    }

    /// Passes the turn to the other warpgroup: one arrival per warp, after
    /// the warp issued.
    #[inline(always)]
    fn pass_turn(self) {
        if self.ping_pong && self.t.is_multiple_of(32) {
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

    /// Issues `S = Q Kᵀ` for stage `s` (one `wgmma` per 32 bytes of a
    /// row: `d / 16` k16 steps, FP8 `d / 32` k32) into `acc` (its values
    /// unread: the first step does not add), uncommitted.
    ///
    /// # Safety
    /// Converged warpgroup; Q and stage `s`'s K have landed.
    #[inline(always)]
    unsafe fn issue_qk<I: Element, O: Accumulators, S: Accumulators>(self, mut acc: S, s: usize) -> S {
        let (d, bc) = (O::N, S::N);
        let span = span_of(d * I::BYTES);
        // Each step's descriptors are the first ones advanced by a
        // constant: one add each, not the fields packed again (the start
        // field, in 16-byte units, holds any shared address below 256 KB,
        // so the add never carries out of it).
        let q_rows = shared_address(self.smem.q()) + (self.c * 64 * span) as u32;
        let q = Descriptor::swizzled(span as u32, q_rows, 16, 8 * span as u32);
        let k = Descriptor::swizzled(span as u32, shared_address(self.smem.k(s)), 16, 8 * span as u32);
        // Steps per column block.
        let per = span / 32;
        seq!(KK in 0..16 {{
            let kk: usize = KK;
            if kk < d * I::BYTES / 32 {
                let a = q.advanced(((kk / per) * BR * span + 32 * (kk % per)) as u32);
                let b = k.advanced(((kk / per) * bc * span + 32 * (kk % per)) as u32);
                // SAFETY: the caller's contract; Q's rows of this
                // warpgroup and K's, K-major, as the layout says.
                acc = unsafe { acc.mma_ss::<I, false>(a, b, kk > 0) };
            }
        }});
        acc
    }

    /// Issues `O += P V` for stage `s` (`bc / 16` k16 steps, FP8 `bc / 32`
    /// k32, P's A fragments from registers), uncommitted.
    ///
    /// # Safety
    /// Converged warpgroup; stage `s`'s V has landed.
    #[inline(always)]
    unsafe fn issue_pv<I: Element, O: Accumulators, S: Accumulators>(
        self,
        mut o: O,
        p: &S::Fragments,
        s: usize,
    ) -> O {
        let bc = S::N;
        let at = shared_address(self.smem.v(s));
        if v_transposed::<I>() {
            // Vᵀ, K-major: `d` rows of the tile's `bc` keys, one span.
            let span = span_of(bc) as u32;
            let vt = Descriptor::swizzled(span, at, 16, 8 * span);
            seq!(KT in 0..4 {
                if KT < bc / 32 {
                    let a = [p[4 * KT], p[4 * KT + 1], p[4 * KT + 2], p[4 * KT + 3]];
                    // SAFETY: the caller's contract; Vᵀ K-major (D x 32
                    // keys), its keys permuted as P's bytes are.
                    o = unsafe { o.mma_rs::<I, false>(a, vt.advanced(32 * KT), true) };
                }
            });
        } else {
            let span = span_of(O::N * I::BYTES);
            let v = Descriptor::swizzled(span as u32, at, (bc * span) as u32, 8 * span as u32);
            seq!(KT in 0..8 {
                if KT < bc / 16 {
                    let b = v.advanced((KT * 16 * span) as u32);
                    let a = [p[4 * KT], p[4 * KT + 1], p[4 * KT + 2], p[4 * KT + 3]];
                    // SAFETY: the caller's contract; V MN-major (16 keys x D).
                    o = unsafe { o.mma_rs::<I, true>(a, b, true) };
                }
            });
        }
        o
    }

    /// The warpgroup's part of every tile of the block, each finished tile
    /// handed to `epilogue`.
    ///
    /// # Safety
    /// Converged warpgroup; the mbarriers initialized; the producer fills
    /// the same tiles; the epilogue's buffers hold the problem's rows.
    #[inline(always)]
    pub unsafe fn run<I: Element, O: Accumulators, S: Accumulators>(
        self,
        p: AttentionArgs,
        mut epilogue: impl Epilogue<Finished, Results = State<O>>,
        scaling: Scaling,
    ) {
        let smem = self.smem;
        let bc = S::N;
        // The block's key tiles so far, this warpgroup's turns; S's and P's
        // registers (S's unread by a tile's first product, which does not
        // add).
        let state = State { o: O::zeroed(), m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
        let mut w = Walk {
            st: state,
            sc: S::zeroed(),
            pr: S::fragments_zeroed(),
            kv: smem.ring(),
            turn: PipelineState::new(1),
        };
        // SAFETY: the plan written before the block's barrier.
        let deal = unsafe { Deal::new(p, smem.plan(), bc) };
        for (n, tile) in deal.work().enumerate() {
            let WorkTile { bh, kvh, q0, j0, key_tiles, .. } = tile;
            let (j0, key_tiles) = (j0 as usize, key_tiles as usize);
            let rows = Rows { q0: q0 + 64 * self.c, head_row: bh * p.s_q as usize };
            let (c, v) = scaling.of(kvh, p);
            // Whether a tile needs masking: its last key lies past the
            // limit of the warpgroup's first row (the end of K included).
            let first_limit = visible_keys(
                rows.q0.min((p.s_q as usize).saturating_sub(1)),
                p.s_q as usize,
                p.s_k as usize,
                p.causal,
            );
            let at = At { rows, first_limit, key_tiles, p, c };
            // SAFETY: initialized; Q's `n`-th fill.
            unsafe { smem.q_full().wait(PipelineState::new(1).at(n).phase()) };
            w.st = State { o: O::zeroed(), m: [f32::NEG_INFINITY; 2], l: [0.0; 2] };
            // (Fresh S and P registers: nothing of the last tile's lives
            // through its store.)
            (w.sc, w.pr) = (S::zeroed(), S::fragments_zeroed());
            // The first key tile has no `P V` before it: its own code, so
            // that no branch lies between a fence and its `wgmma`s (ptxas
            // would fence again there, or serialize).
            if key_tiles > j0 {
                // SAFETY: the caller's contract.
                unsafe { self.step::<I, O, S, false>(&mut w, j0, at) };
            }
            for j in j0 + 1..key_tiles {
                // SAFETY: the caller's contract.
                unsafe { self.step::<I, O, S, true>(&mut w, j, at) };
            }
            if key_tiles > j0 {
                // `P V` of the last key tile.
                let (sp, pp) = (w.kv.previous().stage(), w.kv.previous().phase());
                // SAFETY: initialized; V's fill of this round.
                unsafe { smem.v_full(sp).wait(pp) };
                self.wait_turn(w.turn);
                w.st.o = w.st.o.pinned();
                w.pr = pin::<I, S>(w.pr);
                wgmma::fence();
                // SAFETY: V landed (the wait).
                w.st.o = unsafe { self.issue_pv::<I, O, S>(w.st.o, &w.pr, sp) };
                wgmma::commit();
                self.pass_turn();
                w.turn.advance();
                w.st.o = wait_for::<0, O>(w.st.o);
                self.release(smem.v_empty(sp));
            } else {
                self.release(smem.q_empty());
            }
            // SAFETY: the caller's contract; the warpgroup, converged.
            unsafe { epilogue.store(&w.st, Finished { n, rows, c, v }) };
        }
        epilogue.finish();
    }

    /// Key tile `j` of the tile (the ring's use `w.kv`): `S_j = Q K_jᵀ` and, with
    /// `PV`, `O += P_{j-1} V_{j-1}`, issued in this warpgroup's turn; the
    /// softmax of `S_j` while `P V` runs; O rescaled (see the module).
    ///
    /// # Safety
    /// As for [`Consumer::run`]; `PV` exactly when `j > 0`.
    #[inline(always)]
    unsafe fn step<I: Element, O: Accumulators, S: Accumulators, const PV: bool>(
        self,
        w: &mut Walk<O, S>,
        j: usize,
        at: At,
    ) {
        let smem = self.smem;
        let bc = S::N;
        let (s, parity) = (w.kv.stage(), w.kv.phase());
        let (sp, pp) = (w.kv.previous().stage(), w.kv.previous().phase());
        // Every wait before the fence: between a fence and its `wgmma`s
        // ptxas wants straight-line code.
        // SAFETY: initialized; the stages' fills of these rounds.
        unsafe {
            smem.k_full(s).wait(parity);
            if PV {
                smem.v_full(sp).wait(pp);
            }
        }
        self.wait_turn(w.turn);
        // What the products read from registers, computed before the fence
        // (see `Accumulators::pinned_fragments`).
        w.sc = w.sc.pinned();
        if PV {
            w.st.o = w.st.o.pinned();
            w.pr = pin::<I, S>(w.pr);
        }
        wgmma::fence();
        // SAFETY: Q and K landed (the waits).
        w.sc = unsafe { self.issue_qk::<I, O, S>(w.sc, s) };
        wgmma::commit();
        if PV {
            // SAFETY: V of the previous tile landed (the wait).
            w.st.o = unsafe { self.issue_pv::<I, O, S>(w.st.o, &w.pr, sp) };
            wgmma::commit();
        }
        self.pass_turn();
        w.turn.advance();
        w.sc = if PV { wait_for::<1, S>(w.sc) } else { wait_for::<0, S>(w.sc) };
        self.release(smem.k_empty(s));
        if j + 1 == at.key_tiles {
            // This warpgroup's last read of Q in the tile is done.
            self.release(smem.q_empty());
        }
        let key0 = j * bc;
        let masked = key0 + bc > at.first_limit;
        // The lazy rescale, at d = 256 only (see `SLACK`).
        let lazy = O::N > 128;
        let alpha = self.softmax::<S>(
            (&mut w.st.m, &mut w.st.l),
            &mut w.sc,
            (at.rows, key0, masked, lazy),
            at.p,
            at.c,
        );
        if PV {
            w.st.o = if O::N <= 128 {
                // After the softmax, not before it (see `wait_for_after`).
                let after = w.st.l[0] + w.st.l[1];
                let pin = smem.pin(4 * self.c + self.t / 32);
                // SAFETY: this warp's pin.
                unsafe { wait_for_after::<0, O>(w.st.o, after, pin, self.t.is_multiple_of(32)) }
            } else {
                // At d = 256 the consumers have no registers for `P_{j-1}`
                // to live through the softmax (ptxas spills), and the
                // exponentials take a quarter of the products' time: ptxas
                // may wait first.
                wait_for::<0, O>(w.st.o)
            };
            self.release(smem.v_empty(sp));
            // O's rescale; where lazy, only in a warp where some row's
            // reference moved (a vote: the branch is the warp's, not a
            // thread's).
            // SAFETY: every lane of the warp is here.
            if !lazy || unsafe { ballot(FULL_MASK, alpha != [1.0; 2]) } != 0 {
                seq!(I in 0..128 {{
                    let i: usize = I;
                    if i < O::N / 2 {
                        w.st.o[i] *= alpha[(i / 2) % 2];
                    }
                }});
            }
        }
        // P into the registers `P_{j-1} V_{j-1}` read: only after its wait
        // (ptxas would otherwise wait for it before the exponentials).
        w.pr = pack::<I, S>(&w.sc);
        w.kv.advance();
    }

    /// The online softmax of one key tile's scores `sc` (keys `key0..`):
    /// where `masked`, scores past each row's limit become `-inf`; each
    /// row's reference `m` moves to its maximum where that passes it (by
    /// more than [`SLACK`] where `lazy`), `sc` becomes `P = 2^(s c - m c)`
    /// (still `f32`: [`pack`] makes it the A fragments of `P V`), `l` takes the
    /// row sums; returns each row's rescale factor `2^(m_old c - m_new c)`
    /// for O (1 where `m` stayed).
    #[inline(always)]
    fn softmax<S: Accumulators>(
        self,
        (mm, ll): (&mut [f32; 2], &mut [f32; 2]),
        sc: &mut S,
        (rows, key0, masked, lazy): (Rows, usize, bool, bool),
        p: AttentionArgs,
        c: f32,
    ) -> [f32; 2] {
        let t = self.t as u32;
        if masked {
            // Each of the thread's two rows' limit, once; its keys are
            // `key0 + col0 + 8 (i / 4) + i mod 2` for accumulator `i`.
            let (r0, col0) = d_f32(t, 0);
            let limit = |r: u32| {
                let row = rows.q0 + r as usize;
                // Rows past s_q are never stored: any limit will do.
                visible_keys(
                    row.min((p.s_q as usize).saturating_sub(1)),
                    p.s_q as usize,
                    p.s_k as usize,
                    p.causal,
                )
            };
            // In 32 bits (key counts are, as `AttentionArgs`'s lengths): one
            // compare a score rather than a 64-bit pair.
            let first = key0 as u32 + col0;
            let limits =
                [(limit(r0) as u32).saturating_sub(first), (limit(r0 + 8) as u32).saturating_sub(first)];
            seq!(I in 0..128 {{
                let i: usize = I;
                if i < S::N / 2 && (8 * (i / 4) + i % 2) as u32 >= limits[(i / 2) % 2] {
                    sc[I] = f32::NEG_INFINITY;
                }
            }});
        }
        let mut alpha = [0.0f32; 2];
        seq!(R in 0..2 {{
            let r: usize = R;
            // Row r's values are accumulators `4 k + 2 r + (0, 1)` (S has at
            // most 64 a thread): place `2 k + (0, 1)` of a tree.
            let mut v = [f32::NEG_INFINITY; 32];
            seq!(I in 0..64 {{
                let i: usize = I;
                if i < S::N / 2 && (i / 2) % 2 == r {
                    v[(i / 4) * 2 + i % 2] = sc[I];
                }
            }});
            let mut top = tree32(v, f32::max);
            // The row's four threads (one quad) agree.
            // SAFETY: every lane of the warp is here.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 1) });
            // SAFETY: as above.
            top = top.max(unsafe { shfl_xor_f32(FULL_MASK, top, 2) });
            // Where lazy, the reference moves only when the row's maximum
            // passes it by more than 2^SLACK, or from -inf; else it is the
            // maximum.
            let stays = lazy && (top - mm[R]) * c <= SLACK;
            let m = if lazy { if stays { mm[R] } else { top } } else { mm[R].max(top) };
            // 0 while the row has seen no key (every p and alpha is then 0).
            let reference = if m == f32::NEG_INFINITY { 0.0 } else { m * c };
            alpha[R] = if stays { 1.0 } else { ex2_approx(fma(mm[R], c, -reference)) };
            mm[R] = m;
            let mut v = [-0.0f32; 32];
            seq!(I in 0..64 {{
                let i: usize = I;
                if i < S::N / 2 && (i / 2) % 2 == r {
                    let e = ex2_approx(fma(sc[I], c, -reference));
                    sc[I] = e;
                    v[(i / 4) * 2 + i % 2] = e;
                }
            }});
            ll[R] = ll[R] * alpha[R] + tree32(v, |a, b| a + b);
        }});
        alpha
    }
}

/// P (the softmax's `f32` values in S's registers) rounded to `I` and
/// packed: bf16 or f16, in pairs, accumulators `8 t..8 t + 8` the A fragment of
/// k16 step `t` of `P V` as they lie; FP8 (always E4M3), four a register, each
/// register one row's two pairs (accumulators `16 t + 8 (j / 2) + 2 (j mod
/// 2)`, the next, and the same 4 on, for register `j` of k32 step `t`):
/// the keys of byte `k` of the step are then
/// [`crate::dev::wgmma::fp8_column`]`(k)`, as Vᵀ's are.
#[inline(always)]
fn pack<I: Element, S: Accumulators>(sc: &S) -> S::Fragments {
    let mut pr = S::fragments_zeroed();
    if I::BYTES == 1 {
        seq!(K in 0..16 {{
            let k: usize = K;
            if k < S::N / 8 {
                let at = 16 * (k / 4) + 8 * ((k % 4) / 2) + 2 * (k % 2);
                pr[k] = math::e4m3x4_bits([sc[at], sc[at + 1], sc[at + 4], sc[at + 5]]);
            }
        }});
    } else {
        seq!(K in 0..32 {
            if K < S::N / 4 {
                pr[K] = match I::INPUT {
                    Input::Bf16 => math::bf16x2_bits(sc[2 * K], sc[2 * K + 1]),
                    _ => math::f16x2_bits(sc[2 * K], sc[2 * K + 1]),
                };
            }
        });
    }
    pr
}

/// P's fragments pinned before a fence ([`Accumulators::pinned_fragments`]):
/// the `N / 8` FP8 registers, or all `N / 4` 16-bit ones.
#[inline(always)]
fn pin<I: Element, S: Accumulators>(pr: S::Fragments) -> S::Fragments {
    if I::BYTES == 1 { S::pinned_fp8_fragments(pr) } else { S::pinned_fragments(pr) }
}

/// The thread's index in its warpgroup and the warpgroup's consumer index.
/// The index is broadcast from lane 0, so that ptxas knows it is the
/// warp's (`shfl_idx_u32`): Q's `wgmma` descriptors, which depend on it,
/// are then formed in uniform registers (one `R2UR` fewer per descriptor
/// and product).
///
/// # Safety
/// Every lane of the warp calls it.
#[inline(always)]
pub(super) unsafe fn who() -> (usize, usize) {
    let t = thread_idx_x();
    // SAFETY: the caller's contract.
    let warpgroup = unsafe { shfl_idx_u32(FULL_MASK, t / 128, 0) };
    (warpgroup as usize - 1, t as usize % 128)
}
