//! The kernel's epilogue: what a consumer warpgroup does with its rows of
//! each finished work tile ([`TileStore`]).
//!
//! A whole tile's rows are finished here: `O / l` rounded to the output
//! type (two neighbours per 4-byte store) and each row's log-sum-exp. A
//! chunk of a split tile (the deal's tail, `scheduler`) leaves its state
//! instead, unnormalized: O, each row's reference and whole sum, which the
//! merge kernel (`merge`) combines with the other chunks'.

use super::pipeline::Smem;
use super::scheduler::AttentionArgs;
use crate::attention::log_sum_exp;
use crate::dev::epilogue::Epilogue;
use crate::dev::registers::opaque;
use crate::dev::warp::{FULL_MASK, shfl_xor_f32};
use crate::dev::wgmma::{Accumulators, d_f32};
use crate::dev::{Element, Out, block_idx_x, grid_dim_x, math};
use core::marker::PhantomData;
use seq_macro::seq;

/// A warpgroup's running state for its 64 rows: O (`d / 2` per thread),
/// and per row of the thread (`g`, `g + 8` of its warp) the running
/// maximum (in score units) and this thread's part of the running sum.
pub(super) struct State<O> {
    pub o: O,
    pub m: [f32; 2],
    pub l: [f32; 2],
}

/// Where the warpgroup's rows of one tile go.
#[derive(Clone, Copy)]
pub(super) struct Rows {
    /// The warpgroup's first query.
    pub q0: usize,
    /// O's and lse's first row of the head.
    pub head_row: usize,
}

/// A finished work tile: its place in the block's deal and the
/// warpgroup's rows of it.
#[derive(Clone, Copy)]
pub(super) struct Finished {
    pub n: usize,
    pub rows: Rows,
    /// The tile's scale of the scores to powers of 2 (`scale log2 e`).
    pub c: f32,
    /// What multiplies its O (V's descale: 1 but for FP8).
    pub v: f32,
}

/// The epilogue of a launch: O and lse, the split chunks' workspace, and
/// what says which tiles are chunks (the deal's plan in shared memory).
/// `O` and `S` are the accumulators of O and of S (`S::N`: the key tile).
pub(super) struct TileStore<T, O, S> {
    o: Out<T>,
    lse: Out<f32>,
    states: Out<f32>,
    p: AttentionArgs,
    smem: Smem,
    /// The consumer warpgroup and the thread's index in it.
    me: (usize, usize),
    accumulators: PhantomData<(O, S)>,
}

impl<T, O, S> TileStore<T, O, S> {
    /// Consumer `me.0`'s epilogue into `o` and `lse`, chunks into
    /// `states`, thread `me.1`.
    #[inline(always)]
    pub fn new(
        (o, lse): (Out<T>, Out<f32>),
        states: Out<f32>,
        p: AttentionArgs,
        smem: Smem,
        me: (usize, usize),
    ) -> Self {
        TileStore { o, lse, states, p, smem, me, accumulators: PhantomData }
    }
}

impl<T: Element, O: Accumulators, S: Accumulators> Epilogue<Finished> for TileStore<T, O, S> {
    type Results = State<O>;

    #[inline(always)]
    unsafe fn store(&mut self, st: &State<O>, f: Finished) {
        // SAFETY: the plan written before the block's barrier.
        match unsafe { self.p.chunk_of(self.smem.plan(), f.n as u32) } {
            // SAFETY: the caller's contract.
            None => unsafe { self.rows(st, f) },
            // SAFETY: the caller's contract; a chunk only with a split.
            Some(tile) => unsafe { self.chunk(st, tile, f.v) },
        }
    }

    fn finish(self) {}
}

impl<T: Element, O: Accumulators, S: Accumulators> TileStore<T, O, S> {
    /// O `v / l` into the tile's rows below `s_q` (two neighbours per
    /// 4-byte store), lse by each row's first thread (`+inf` for a row that
    /// saw no key).
    ///
    /// # Safety
    /// `o` and `lse` hold the problem's rows; every lane of the warp calls it.
    #[inline(always)]
    unsafe fn rows(&self, st: &State<O>, Finished { rows, c, v, .. }: Finished) {
        let (p, lse) = (self.p, &self.lse);
        let d = O::N;
        let (r, col) = d_f32(self.me.1 as u32, 0);
        let o = self.o.recast::<u32>();
        // SAFETY: every lane of the warp is here.
        let sums = unsafe { row_sums(st.l) };
        seq!(R in 0..2 {{
            let l = sums[R];
            let row = rows.q0 + r as usize + 8 * R;
            if row < p.s_q as usize {
                let inv = if l > 0.0 { v / l } else { 0.0 };
                let first = (rows.head_row + row) * d + col as usize;
                seq!(N in 0..32 {
                    if N < d / 8 {
                        let pair = math::pack::<T>(st.o[4 * N + 2 * R] * inv, st.o[4 * N + 2 * R + 1] * inv);
                        // SAFETY: inside the row (column 8 N + 2 q + 1 <
                        // d), 4 bytes on 4; this thread's two elements.
                        unsafe { o.store((first + 8 * N) / 2, pair) };
                    }
                });
                if col == 0 {
                    let value = log_sum_exp(st.m[R] * c, l);
                    // SAFETY: row < s_q; one thread per row.
                    unsafe { lse.store(rows.head_row + row, value) };
                }
            }
        }});
    }

    /// A chunk of a split tile (`tile`: its index in the last round, see
    /// `scheduler`): the consumer's state for its rows (O times `v`, and each row's
    /// reference and whole sum) into the block's slot of `states`, each
    /// thread its own words, thread-minor (a warp's stores whole 128-byte
    /// lines).
    ///
    /// # Safety
    /// A split launch, `states` as its contract says; every lane of the
    /// warp calls it; `tile` is a chunk's of this block.
    #[inline(always)]
    unsafe fn chunk(&self, st: &State<O>, tile: u32, v: f32) {
        let (p, states, (consumer, t)) = (self.p, &self.states, self.me);
        let d = O::N;
        let Some(tail) = p.tail(grid_dim_x().max(1), S::N) else { return };
        // SAFETY: every lane of the warp is here.
        let sums = unsafe { row_sums(st.l) };
        // The thread's place in the slot, its words 128 apart; through
        // `opaque`, or LLVM hoists the thread's part of it out of the tile
        // loop, and that pointer is held (spilled at d = 256) through it.
        let f = d / 2 + 4;
        let at = opaque((tail.slot(block_idx_x(), tile) as usize * 2 + consumer) * f * 128 + t);
        seq!(I in 0..128 {
            if I < O::N / 2 {
                // SAFETY: the slot lies in the workspace (two a block).
                unsafe { states.store(at + 128 * I, st.o[I] * v) };
            }
        });
        seq!(R in 0..2 {
            // SAFETY: as above.
            unsafe { states.store(at + 128 * (d / 2 + R), st.m[R]) };
            // SAFETY: as above.
            unsafe { states.store(at + 128 * (d / 2 + 2 + R), sums[R]) };
        });
    }
}

/// Each of the thread's two rows' sum: the parts its quad's four threads
/// hold, added.
///
/// # Safety
/// Every lane of the warp calls it.
#[inline(always)]
unsafe fn row_sums(l: [f32; 2]) -> [f32; 2] {
    let mut l = l;
    seq!(R in 0..2 {
        // SAFETY: the caller's contract.
        l[R] += unsafe { shfl_xor_f32(FULL_MASK, l[R], 1) };
        // SAFETY: as above.
        l[R] += unsafe { shfl_xor_f32(FULL_MASK, l[R], 2) };
    });
    l
}
