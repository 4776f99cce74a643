//! Step 2 of the backward, FlashAttention-2 style (`mma.sync`, sm_80 and
//! later): P, dP and dS live in registers; dK and dV stay in registers
//! for the whole launch; dQ is summed across blocks in `f32`.
//!
//! A block of 8 warps owns one K/V head and a tile of [`BC`] = 128 keys,
//! a warp 16 of them. It loads its K and V tiles once, then walks every query tile of
//! [`BR`] = 64 rows of every query head that reads this K/V head (the
//! group's heads in turn, so a grouped head's dK and dV sums stay in
//! registers, with no second pass to add them). Per query tile, each warp
//! computes, for its 16 keys (transposed products, keys as rows), in
//! two passes of [`QC`] = 32 queries:
//!
//! 1. `Sᵀ = K Qᵀ` (K's A fragments and Q's B fragments by `ldmatrix`);
//! 2. `Pᵀ = 2^((Sᵀ scale - lse) log2 e)`, masked past the end of K and the
//!    causal limit (a query past `s_q` has `lse = +inf`: P is 0);
//! 3. `dV += Pᵀ dO`: Pᵀ's accumulators are the A fragments as they lie
//!    (the forward's trick, with keys for rows), dO's B fragments by
//!    `ldmatrix.trans`;
//! 4. `dPᵀ = V dOᵀ`;
//! 5. `dSᵀ = Pᵀ ∘ (dPᵀ - D)`, kept in registers for `dK += dSᵀ Q` (Q by
//!    `ldmatrix.trans`) and stored to shared memory, rounded, for the
//!    last product;
//! 6. after a barrier, `dQ = dS K` over the block's 128 keys for the
//!    tile's 64 queries: a warp takes 16 queries by half the columns (dS
//!    by `ldmatrix.trans` from the key-major tile, K by `ldmatrix.trans`),
//!    each pair of neighbours added into the `f32` accumulator of dQ with
//!    one `red.global.add.v2.f32` (two `red.global.add.f32` where the PTX
//!    predates it).
//!
//! After the last tile, dK (times `scale`) and dV are rounded and stored.
//!
//! **Causal.** Key `j` is seen by queries `i >= j + s_q - s_k`, so a
//! block starts at the query tile of its first key's first query; only
//! tiles that cross the diagonal, or the end of K, compare each pair
//! with the limit.
//!
//! **Pipeline.** Two stages of (Q tile, dO tile, their rows' `lse`
//! and D), as the forward's K and V: wait for this thread's copies, one
//! barrier, issue the next tile's `cp.async` copies into the other stage,
//! compute. A second barrier per tile orders the dS tile's stores before
//! the dQ product's loads (the next tile's first barrier orders the loads
//! before the next stores).
//!
//! **Deterministic.** The `red`s of different key tiles reach a dQ
//! element in whatever order the blocks run: `f32` addition is not
//! associative, so two runs may differ in the last bits. With
//! [`DETERMINISTIC`], each query tile has a turn counter: the block of
//! key tile `j` waits (one thread polls, `ld.acquire`; a barrier holds the
//! rest) until it reads `j`, adds its part, and after a barrier and a
//! fence sets it to `j + 1` (`st.release`). Each element is then summed
//! over the key tiles in order `0, 1, ...`: the same bits every run.
//! Every key tile from 0 up to the last that a query tile sees adds to it
//! (causally, a block's first query tile only grows with its key tile),
//! and the blocks of lower key tiles start first (the grid's order), so
//! the chain completes. The cost: two barriers a tile, and blocks that
//! wait on their neighbours.
//!
//! **Arithmetic.** Per query tile a block runs five products of `64 x
//! 128 x d`, `10 x 64 x 128 x d` FLOPs, for the Q and dO tiles it reads
//! from L2, `2 x 64 d x 2` bytes: 320 FLOP a byte, whatever `d`. Each
//! query tile is read once per key tile, so L2, not DRAM, feeds the
//! block. dQ's sums cost `64 d` words of L2 atomics a tile, one per 1280
//! FLOPs. The L2 applies `red`s an operation at a time, so their count,
//! not their bytes, is what the tensor cores' pace asks of it: 128 keys a
//! block (rather than 64) halve the words a FLOP, and pairs (`.v2`) halve
//! the operations again.
//!
//! Shared memory feeds the products through `ldmatrix`: per tile a warp
//! loads K's or V's A fragments once a pass and the whole Q and dO tiles
//! (each warp reads all 64 queries for its 16 keys), about 200 `x4` loads
//! (100 KB) at `d = 128`, 800 KB a block: at 128 bytes a clock, some 6400
//! clocks a tile, beside 10.5 MFLOP of `mma.sync`.
//!
//! **Registers.** Per thread: dK and dV `d` (128 at `d = 128`), Sᵀ and
//! dPᵀ 16 each, the dQ chunk 32 (after they are
//! dead): all 255 at `d = 128`, with no spill only because nothing else
//! lives long (a masked P is an `ex2` and a select, not a branch per
//! element). The block's place is kept in 32-bit words; each product
//! computes its `ldmatrix` offsets afresh (`Lanes`) and so does each
//! pass its fragment coordinates, rather than one set held through the
//! tile; the copies' addresses are recomputed each tile. `cpu/tests/ptx.rs`
//! holds the result: no stack frame, no spill.
//!
//! Shared memory: K and V tiles (`2 x 128 d` bytes each), two stages of Q
//! and dO (`4 x 2 x 64 d` bytes in all), the dS tile (16 KiB) and the
//! stages' `lse` and D (1 KiB): 145 KiB at `d = 128`, one block an SM. Tiles
//! are swizzled as the forward's (`swz`): conflict-free `ldmatrix` and
//! copies; the dS stores write 8 rows x 4 words of distinct banks.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use super::super::LOG2_E;
use super::super::flash::{copy_tile, swz};
use super::{BR, CAUSAL, DETERMINISTIC, key_tile, turn};
use crate::dev::Element;
use crate::dev::atomic::{Ordering, fence};
use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::math::{ex2_approx, fma, pack};
use crate::dev::mma::mma_m16n8k16;
use crate::dev::registers::opaque;
use crate::dev::{In, Out, SharedArray, block_idx_y, grid_dim_x, sync_threads, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Keys per block: 8 warps of 16.
pub const BC: usize = 128;
/// Threads per block.
pub const THREADS: usize = 256;

/// Queries a warp takes at a time (steps 1 to 5): two passes of 32 a
/// tile, so that Sᵀ and dPᵀ take 16 registers each, not 32, beside dK and
/// dV (128 registers at `d = 128`); the copies and barriers stay one a
/// tile of 64, as the forward's key passes do. (At `d = 64` one pass of
/// 64 left ptxas too few registers for its loads in flight.)
pub const QC: usize = 32;

/// Bytes of a 64-row tile of head dimension `d`, 16-bit.
const fn tile_bytes(d: usize) -> usize {
    2 * 64 * d
}

/// Where things lie in shared memory: K, V (`BC` rows each), then stage
/// `s`'s Q and dO, then the dS tile, then the stages' `lse` and D
/// (64 `f32` each).
const fn k_at(_d: usize) -> usize {
    0
}
const fn v_at(d: usize) -> usize {
    2 * BC * d
}
const fn q_at(d: usize, stage: usize) -> usize {
    4 * BC * d + stage * 2 * tile_bytes(d)
}
const fn do_at(d: usize, stage: usize) -> usize {
    q_at(d, stage) + tile_bytes(d)
}
const fn ds_at(d: usize) -> usize {
    q_at(d, 2)
}
const fn rows_at(d: usize, stage: usize) -> usize {
    ds_at(d) + 2 * BC * BR + stage * 2 * 4 * BR
}

/// Bytes of shared memory for head dimension `d`.
pub const fn shared_bytes(d: usize) -> usize {
    rows_at(d, 2)
}

/// A lane's `ldmatrix_x4` row offsets in a swizzled tile of rows of `W`
/// elements, for the two orders of its four 8 x 8 matrices:
/// - `rows_first`: (rows 0-7, columns 0-7), (rows 8-15, 0-7), (0-7,
///   8-15), (8-15, 8-15): an A fragment (rows are `m`, columns `k`), or
///   with `.trans` the B fragments of two 8-column tiles of a `k x n`
///   operand stored `k`-major;
/// - `columns_first`: (0-7, 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15):
///   the B fragments of two 8-row tiles (`n` rows) of an operand stored
///   `n`-major, `k` along the row, or with `.trans` an A fragment stored
///   `k`-major.
///
/// Lane `l` gives row `l mod 8` of matrix `l / 8`, at logical chunk `2 j +
/// x` of the 16-column group `j`; swizzled (`swz`: rows start at
/// multiples of 8, so the row's XOR is `l mod 8`), that is `8 (j / 4) + ((2
/// (j mod 4) + x) ^ (l mod 8))`: four offsets per lane (`j mod 4`), plus a
/// constant for the block's row and `j / 4`, which `ldmatrix` takes as
/// its immediate. Each offset is [`opaque`], as the forward's are (LLVM
/// would OR the constants into the low bits, which ptxas cannot fold),
/// and built from a value that changes every tile (`zero`), so that no
/// offset is hoisted out of the tile loop to hold a register through it.
#[derive(Clone, Copy)]
struct Lanes<const W: usize>([usize; 4]);

impl<const W: usize> Lanes<W> {
    /// The offsets of `lane`, computed afresh for each `salt` (each product
    /// of a tile passes its own): LLVM would otherwise share one set
    /// between the products and hold it through the tile, where dK and dV
    /// leave no register for it.
    #[inline(always)]
    fn new(lane: usize, columns_first: bool, salt: usize) -> Self {
        Self::from_column(lane, columns_first, salt, 0)
    }

    /// As [`Lanes::new`] for the 16-column groups from column `c0` (a
    /// multiple of 16, which may differ between warps) on: entry `j` is
    /// column `c0 + 16 j`'s. (The swizzle's XOR touches a chunk index's
    /// low three bits only, so the 64-column group rides along.)
    #[inline(always)]
    fn from_column(lane: usize, columns_first: bool, salt: usize, c0: usize) -> Self {
        // (In 32 bits: a 64-bit sum would hold a register for its high
        // word.)
        let lane = (opaque(lane as u32 + salt as u32) - salt as u32) as usize;
        let (r, m) = (lane % 8, lane / 8);
        let (dr, dc) = if columns_first { (m / 2, m % 2) } else { (m % 2, m / 2) };
        Lanes(core::array::from_fn(|j| opaque((r + 8 * dr) * W + 8 * ((2 * (c0 / 16 + j) + dc) ^ r))))
    }

    /// The element offset of this lane's row of the 16 x 16 block at `row0`,
    /// `col0` (multiples of 16; constants once unrolled).
    #[inline(always)]
    fn at(&self, row0: usize, col0: usize) -> usize {
        self.0[(col0 / 16) % 4] + row0 * W + 64 * (col0 / 64)
    }
}

/// The block's place and the problem, in 32-bit words (read as `usize`
/// through the methods): what lives through the tile loop takes one
/// register each, not two, beside dK and dV's 128 (rows fit in 32 bits:
/// `Problem::check`).
#[derive(Clone, Copy)]
struct Block {
    /// K's and V's first row of this K/V head.
    kv_rows: u32,
    /// The tile's first key.
    k0: u32,
    s_q: u32,
    s_k: u32,
    causal: bool,
}

impl Block {
    #[inline(always)]
    fn kv_rows(&self) -> usize {
        self.kv_rows as usize
    }
    #[inline(always)]
    fn k0(&self) -> usize {
        self.k0 as usize
    }
    #[inline(always)]
    fn s_q(&self) -> usize {
        self.s_q as usize
    }
    #[inline(always)]
    fn s_k(&self) -> usize {
        self.s_k as usize
    }
    /// The thread's lane and warp, read from the thread's index where
    /// used (a special register), not held through the loop.
    #[inline(always)]
    fn lane(&self) -> usize {
        thread_idx_x() as usize % 32
    }
    #[inline(always)]
    fn warp(&self) -> usize {
        thread_idx_x() as usize / 32
    }
}

/// One query tile's place: its head's first row (of Q, dO, lse, D and
/// dQ's accumulator) and its first query, in 32-bit words as [`Block`]'s.
#[derive(Clone, Copy)]
struct QueryTile {
    q_rows: u32,
    q0: u32,
}

impl QueryTile {
    /// The tile after this one: the next of its head, or the first
    /// (`first`) of the next head.
    #[inline(always)]
    fn next(self, first: u32, s_q: u32) -> QueryTile {
        if self.q0 + (BR as u32) < s_q {
            QueryTile { q0: self.q0 + BR as u32, ..self }
        } else {
            QueryTile { q_rows: self.q_rows + s_q, q0: first }
        }
    }
}

/// The stage's copies for query tile `at`: Q and dO rows by `cp.async`
/// (rows past `s_q` zero-filled), and each row's `lse` and D by
/// threads 0..64 (`+inf` and 0 past `s_q`: such a row's P is 0).
///
/// # Safety
/// The stage is not read by anyone until the copies are waited for and a
/// barrier passed; the buffers hold the problem's rows.
#[inline(always)]
unsafe fn fill<const D: usize>(
    (q, d_o, lse, delta): (In<u16>, In<u16>, In<f32>, In<f32>),
    at: QueryTile,
    (s_q, stage, t): (usize, usize, usize),
) {
    let (q_rows, q0) = (at.q_rows as usize, at.q0 as usize);
    let valid = s_q.saturating_sub(q0);
    // The thread through a value that changes every tile: its copies'
    // addresses (a row and chunk each, 16 of them at `d = 128`) are then
    // computed where they are used, not hoisted out of the tile loop to
    // hold registers (spilled, beside dK and dV) through it.
    let t = t + (opaque(q0) - q0);
    // SAFETY: the caller's contract; the tiles at their places.
    unsafe {
        copy_tile::<D, THREADS>(q, q_rows + q0, valid, BR, q_at(D, stage), t);
        copy_tile::<D, THREADS>(d_o, q_rows + q0, valid, BR, do_at(D, stage), t);
    }
    if t < BR {
        let row = q_rows + q0 + t;
        // SAFETY: the stage's row values, this thread's alone; a row of
        // the problem's where copied (`row < q_rows + s_q`).
        unsafe {
            let rows = SharedArray::<f32>::launch_sized_at(rows_at(D, stage));
            if t < valid {
                // Copies, not loads: a load's result would hold this
                // thread at the store until it came back from L2.
                rows.copy_async(0, t, lse, row);
                rows.copy_async(0, BR + t, delta, row);
            } else {
                rows.set(t, f32::INFINITY);
                rows.set(BR + t, 0.0);
            }
        }
    }
}

/// Where dQ's sums go: the `f32` accumulator, and in the deterministic
/// mode one turn counter per query tile (`b heads ceil(s_q / 64)` words,
/// zeroed before the launch): a key tile adds its part of a query tile's
/// dQ when the counter reads its turn ([`super::turn`]), then moves it
/// on.
struct DqSum {
    acc: Out<f32>,
    turns: Out<u32>,
    ordered: bool,
}

impl DqSum {
    /// The turn counter of query tile `tile`.
    #[inline(always)]
    fn turn(at: &Block, tile: QueryTile) -> usize {
        let per_head = at.s_q().div_ceil(BR);
        tile.q_rows as usize / at.s_q().max(1) * per_head + tile.q0 as usize / BR
    }

    /// The counter's value at this block's turn on `tile`.
    #[inline(always)]
    fn mine(at: &Block, tile: QueryTile) -> u32 {
        // (The grid's x is the key tiles: a register read, not a
        // division.)
        turn(at.k0 / BC as u32, tile.q0, (at.s_q, at.s_k), at.causal, (BC as u32, grid_dim_x()))
    }

    /// In the ordered mode, waits until the key tiles before this block's
    /// in the order have added into `tile` (one thread polls, the barrier
    /// holds the rest).
    ///
    /// # Safety
    /// Every thread of the block calls it alike; the counters are the
    /// launch's.
    #[inline(always)]
    unsafe fn wait(&self, at: &Block, tile: QueryTile) {
        if !self.ordered {
            return;
        }
        if thread_idx_x() == 0 {
            let (turn, mine) = (Self::turn(at, tile), Self::mine(at, tile));
            // SAFETY: a counter of the launch's; acquires the adds of the
            // key tiles before.
            while unsafe { self.turns.atomic_load(turn, Ordering::Acquire) } != mine {}
        }
        sync_threads();
    }

    /// In the ordered mode, hands `tile` to the next key tile once every
    /// thread's adds are done.
    ///
    /// # Safety
    /// As for [`DqSum::wait`].
    #[inline(always)]
    unsafe fn pass(&self, at: &Block, tile: QueryTile) {
        if !self.ordered {
            return;
        }
        sync_threads();
        if thread_idx_x() == 0 {
            // The block's adds, ordered by the barrier before this
            // thread's fence, are visible before the counter moves.
            fence();
            // SAFETY: as for `wait`.
            unsafe {
                self.turns.atomic_store(Self::turn(at, tile), Self::mine(at, tile) + 1, Ordering::Release)
            };
        }
    }
}

/// Step 2's body for head dimension `D`, in element type `T`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward<T: Element, const D: usize>(
    (q, k, v, o_grad): (In<T>, In<T>, In<T>, In<T>),
    (lse, delta): (In<f32>, In<f32>),
    (dq, dk, dv): (DqSum, Out<T>, Out<T>),
    (heads, kv_heads, s_q, s_k): (u32, u32, u32, u32),
    scale: f32,
    flags: u32,
) {
    let (heads, kv_heads) = (heads.max(1) as usize, kv_heads.max(1) as usize);
    let group = (heads / kv_heads).max(1);
    let bkv = block_idx_y() as usize;
    let (b, kvh) = (bkv / kv_heads, bkv % kv_heads);
    let t = thread_idx_x() as usize;
    let (s_q, s_k) = (s_q as usize, s_k as usize);
    let at = Block {
        kv_rows: (bkv * s_k) as u32,
        k0: key_tile(flags & DETERMINISTIC != 0) * BC as u32,
        s_q: s_q as u32,
        s_k: s_k as u32,
        causal: flags & CAUSAL != 0,
    };
    let (q, k, v, o_grad) =
        (q.same_bytes::<u16>(), k.same_bytes::<u16>(), v.same_bytes::<u16>(), o_grad.same_bytes::<u16>());
    // The first query that sees the tile's first key, and its tile: every
    // later query sees it too.
    let first = if at.causal { (at.k0() + s_q).saturating_sub(s_k) } else { 0 };
    let first_tile = first / BR;
    let per_head = s_q.div_ceil(BR) - first_tile;
    let tiles = group * per_head;
    // The group's heads are consecutive: their tiles, head by head.
    let start = QueryTile { q_rows: ((b * heads + kvh * group) * s_q) as u32, q0: (first_tile * BR) as u32 };
    // SAFETY: K and V at their places, read after the first barrier.
    unsafe {
        copy_tile::<D, THREADS>(k, at.kv_rows() + at.k0(), s_k - at.k0(), BC, k_at(D), t);
        copy_tile::<D, THREADS>(v, at.kv_rows() + at.k0(), s_k - at.k0(), BC, v_at(D), t);
    }
    if tiles > 0 {
        // SAFETY: stage 0, not read yet.
        unsafe { fill::<D>((q, o_grad, lse, delta), start, (s_q, 0, t)) };
    }
    commit_copies();
    let mut grads = Grads::<D>::new();
    let mut tile = start;
    for n in 0..tiles as u32 {
        wait_copies::<0>();
        sync_threads();
        let next = tile.next(start.q0, at.s_q);
        if n + 1 < tiles as u32 {
            // SAFETY: the barrier freed the other stage.
            unsafe { fill::<D>((q, o_grad, lse, delta), next, (s_q, (n as usize + 1) % 2, t)) };
            commit_copies();
        }
        // SAFETY: the stage's copies landed; every thread runs this alike.
        unsafe { grads.tile::<T>(&at, tile, n as usize % 2, scale, &dq) };
        tile = next;
    }
    // SAFETY: dK and dV hold this K/V head's rows.
    unsafe { grads.store::<T>(&at, (dk, dv), scale) };
}

/// A warp's 16 keys' dK and dV accumulators: `D / 8` m16n8 fragments each
/// (the arrays hold the largest `D`, 128).
struct Grads<const D: usize> {
    dk: [[f32; 4]; 16],
    dv: [[f32; 4]; 16],
}

impl<const D: usize> Grads<D> {
    #[inline(always)]
    fn new() -> Self {
        Grads { dk: [[0.0; 4]; 16], dv: [[0.0; 4]; 16] }
    }

    /// `Sᵀ` or `dPᵀ` for the warp's 16 keys and the tile's 64 queries: `A
    /// Bᵀ` with A the warp's rows of the tile at byte `a_at` (K or V) and
    /// B the query tile at `b_at` (Q or dO).
    ///
    /// # Safety
    /// Both tiles hold their data (after the barrier); the whole warp.
    #[inline(always)]
    unsafe fn keys_by_queries<T: Element>(
        lane: usize,
        warp: usize,
        (a_at, b_at): (usize, usize),
        (q_off, salt): (usize, usize),
    ) -> [[f32; 4]; 8] {
        // SAFETY: the caller's contract.
        let (a, bt) =
            unsafe { (SharedArray::<u16>::launch_sized_at(a_at), SharedArray::<u16>::launch_sized_at(b_at)) };
        let (la, lb) = (Lanes::<D>::new(lane, false, salt), Lanes::<D>::new(lane, true, salt));
        let row0 = 16 * warp;
        let mut s = [[0.0f32; 4]; 8];
        seq!(KK in 0..8 {
            if KK < D / 16 {
                // SAFETY: rows < 64, 16 bytes inside a row; converged.
                let fa = unsafe { a.ldmatrix_x4(0, la.at(row0, 16 * KK)) };
                seq!(P in 0..4 {
                    if P < QC / 16 {
                        // SAFETY: as above.
                        let fb = unsafe { bt.ldmatrix_x4(0, lb.at(q_off + 16 * P, 16 * KK)) };
                        // SAFETY: the whole warp, converged.
                        unsafe {
                            s[2 * P] = mma_m16n8k16::<T>(fa, [fb[0], fb[1]], s[2 * P]);
                            s[2 * P + 1] = mma_m16n8k16::<T>(fa, [fb[2], fb[3]], s[2 * P + 1]);
                        }
                    }
                });
            }
        });
        s
    }

    /// `acc += Xᵀ B` for the warp's 16 keys: X (keys by the tile's 64
    /// queries) from its accumulators `x`, rounded, as A fragments; B the
    /// query tile at byte `b_at` (dO or Q, query-major) by
    /// `ldmatrix.trans`.
    ///
    /// # Safety
    /// The tile holds its data; the whole warp.
    #[inline(always)]
    unsafe fn add_product<T: Element>(
        acc: &mut [[f32; 4]; 16],
        lane: usize,
        x: &[[f32; 4]; 8],
        (b_at, q_off, salt): (usize, usize, usize),
    ) {
        // SAFETY: the caller's contract.
        let bt = unsafe { SharedArray::<u16>::launch_sized_at(b_at) };
        let lb = Lanes::<D>::new(lane, false, salt);
        seq!(KT in 0..4 {
          if KT < QC / 16 {
            let fa = [
                pack::<T>(x[2 * KT][0], x[2 * KT][1]),
                pack::<T>(x[2 * KT][2], x[2 * KT][3]),
                pack::<T>(x[2 * KT + 1][0], x[2 * KT + 1][1]),
                pack::<T>(x[2 * KT + 1][2], x[2 * KT + 1][3]),
            ];
            seq!(P in 0..8 {
                if P < D / 16 {
                    // SAFETY: rows < 64, columns < D; converged.
                    let fb = unsafe { bt.ldmatrix_x4_trans(0, lb.at(q_off + 16 * KT, 16 * P)) };
                    // SAFETY: the whole warp, converged.
                    unsafe {
                        acc[2 * P] = mma_m16n8k16::<T>(fa, [fb[0], fb[1]], acc[2 * P]);
                        acc[2 * P + 1] = mma_m16n8k16::<T>(fa, [fb[2], fb[3]], acc[2 * P + 1]);
                    }
                }
            });
          }
        });
    }

    /// One query tile (the module's steps 1 to 6) from stage `stage`.
    ///
    /// # Safety
    /// The stage holds the tile's data (after the barrier); every thread
    /// of the block calls it alike; `dq` holds the problem's rows.
    #[inline(always)]
    unsafe fn tile<T: Element>(&mut self, at: &Block, tile: QueryTile, stage: usize, scale: f32, dq: &DqSum) {
        // The lane, through a value that changes every tile (`Lanes`): so
        // are the dS stores' swizzled addresses (16 of them otherwise
        // held through the loop).
        let lane = (at.lane() as u32 + (opaque(tile.q0) - tile.q0)) as usize;
        let (g, qd) = (lane / 4, lane % 4);
        // SAFETY: the stage's `lse` and D, read only.
        let rows = unsafe { SharedArray::<f32>::launch_sized_at(rows_at(D, stage)) };
        // (In 32 bits, as the block's words.)
        let q0 = tile.q0;
        let masked =
            at.k0 + BC as u32 > at.s_k || (at.causal && at.k0 + (BC as u32) + at.s_q > q0 + at.s_k + 1);
        // SAFETY: the dS tile, written by this warp's lanes at their own
        // places (read after the barrier below).
        let ds = unsafe { SharedArray::<u32>::launch_sized_at(ds_at(D)) };
        seq!(H in 0..2 {
            if H < BR / QC {
                let q_off = H * QC;
                // The lane's row and column in the fragments, afresh for
                // the pass (`Lanes::new` says why).
                let (g, qd) = {
                    let lane = opaque(lane as u32 + 8 + H) - (8 + H);
                    ((lane / 4) as usize, (lane % 4) as usize)
                };
                // 1, 2: Pᵀ, masked where some pair of the tile is past its
                // limit.
                // SAFETY: the caller's contract.
                let mut p = unsafe { Self::keys_by_queries::<T>(lane, at.warp(), (k_at(D), q_at(D, stage)), (q_off, 1 + 8 * H)) };
                seq!(J in 0..8 {
                    if J < QC / 8 {
                        seq!(E in 0..4 {{
                            let col = q_off + 8 * J + 2 * qd + E % 2;
                            let (key, query) = (at.k0 + 16 * at.warp() as u32 + (g + 8 * (E >> 1)) as u32, q0 + col as u32);
                            // SAFETY: col < 64.
                            let reference = unsafe { rows.get(col) };
                            // Past K, or causally past the query's last key
                            // (`visible_keys`; a query past `s_q` has P = 0
                            // from its lse, whatever this says).
                            let hidden = masked && (key >= at.s_k || (at.causal && key + at.s_q > query + at.s_k));
                            // (`ex2` of every element, then a select: no
                            // branch per element. The score less its
                            // `lse`, then to base 2: the stage holds `lse`
                            // as copied.)
                            let e = ex2_approx(fma(p[J][E], scale, -reference) * LOG2_E);
                            p[J][E] = if hidden { 0.0 } else { e };
                        }});
                    }
                });
                // 3: dV += Pᵀ dO.
                // SAFETY: the caller's contract.
                unsafe { Self::add_product::<T>(&mut self.dv, lane, &p, (do_at(D, stage), q_off, 2 + 8 * H)) };
                // 4, 5: dSᵀ = Pᵀ ∘ (dPᵀ - D), into `p`.
                // SAFETY: the caller's contract.
                let dp = unsafe { Self::keys_by_queries::<T>(lane, at.warp(), (v_at(D), do_at(D, stage)), (q_off, 3 + 8 * H)) };
                seq!(J in 0..8 {
                    if J < QC / 8 {
                        seq!(R in 0..2 {{
                            seq!(E in 0..2 {{
                                // SAFETY: column < 64.
                                let d = unsafe { rows.get(BR + q_off + 8 * J + 2 * qd + E) };
                                p[J][2 * R + E] *= dp[J][2 * R + E] - d;
                            }});
                            let key = 16 * at.warp() + g + 8 * R;
                            let pair = pack::<T>(p[J][2 * R], p[J][2 * R + 1]);
                            // SAFETY: inside the dS tile (key < 64, query
                            // pair < 64); this lane's pair alone.
                            unsafe { ds.set(swz(BR, key, q_off + 8 * J + 2 * qd) / 2, pair) };
                        }});
                    }
                });
                // dK += dSᵀ Q.
                // SAFETY: the caller's contract.
                unsafe { Self::add_product::<T>(&mut self.dk, lane, &p, (q_at(D, stage), q_off, 4 + 8 * H)) };
            }
        });
        // 6: every warp's dS in place, then dQ += dS K over the block's
        // 128 keys: warp `w` takes queries `16 (w mod 4)` on and the
        // columns of half `w / 4` (`D / 2` of them).
        sync_threads();
        // SAFETY: the dS tile (all written) and K, read only.
        let (dss, ks) = unsafe {
            (SharedArray::<u16>::launch_sized_at(ds_at(D)), SharedArray::<u16>::launch_sized_at(k_at(D)))
        };
        // (The warp through a value that changes every tile, as the lane:
        // what derives from it is not held through the loop.)
        let warp = (opaque(at.warp() as u32 + tile.q0) - tile.q0) as usize;
        let (rows16, half) = (warp % 4, warp / 4);
        let lk = Lanes::<D>::from_column(lane, false, 5, half * D / 2);
        // dS by `.trans`, stored key-major: the `columns_first` order
        // (`Lanes`) at the warp's 16 queries, one offset (`k` steps are
        // 16 rows on).
        let (r, m) = (lane % 8, lane / 8);
        let ls = opaque((r + 8 * (m / 2)) * BR + 8 * ((2 * rows16 + m % 2) ^ r));
        // SAFETY: every thread is here.
        unsafe { dq.wait(at, tile) };
        let mut acc = [[0.0f32; 4]; 8];
        seq!(KK in 0..8 {{
            // SAFETY: keys < 128, queries < 64; converged.
            let fa = unsafe { dss.ldmatrix_x4_trans(0, ls + 16 * KK * BR) };
            seq!(P in 0..4 {
                if P < D / 32 {
                    // SAFETY: keys < 128, columns < D; converged.
                    let fb = unsafe { ks.ldmatrix_x4_trans(0, lk.at(16 * KK, 16 * P)) };
                    // SAFETY: the whole warp, converged.
                    unsafe {
                        acc[2 * P] = mma_m16n8k16::<T>(fa, [fb[0], fb[1]], acc[2 * P]);
                        acc[2 * P + 1] = mma_m16n8k16::<T>(fa, [fb[2], fb[3]], acc[2 * P + 1]);
                    }
                }
            });
        }});
        seq!(R in 0..2 {{
            let query = tile.q0 as usize + 16 * rows16 + g + 8 * R;
            if query < at.s_q() {
                let first = (tile.q_rows as usize + query) * D + half * D / 2 + 2 * qd;
                seq!(N in 0..8 {
                    if N < D / 16 {
                        let (at, pair) = (first + 8 * N, [acc[N][2 * R], acc[N][2 * R + 1]]);
                        // SAFETY: inside the row of dQ's accumulator; an
                        // even index. (One `red` for the pair where the
                        // PTX has it.)
                        #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90a"))]
                        unsafe { dq.acc.reduce_add_pair(at, pair) };
                        #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
                        // SAFETY: as above.
                        unsafe {
                            dq.acc.reduce_add(at, pair[0]);
                            dq.acc.reduce_add(at + 1, pair[1]);
                        }
                    }
                });
            }
        }});
        // SAFETY: every thread is here.
        unsafe { dq.pass(at, tile) };
    }

    /// dK (times `scale`) and dV of the warp's keys below `s_k`, two
    /// elements of a row per 4-byte store.
    ///
    /// # Safety
    /// `dk` and `dv` hold the K/V head's `s_k` rows of `D` at `at.kv_rows()`;
    /// every lane of the warp calls it.
    #[inline(always)]
    unsafe fn store<T: Element>(&self, at: &Block, (dk, dv): (Out<T>, Out<T>), scale: f32) {
        let (g, qd) = (at.lane() / 4, at.lane() % 4);
        let (dk, dv) = (dk.recast::<u32>(), dv.recast::<u32>());
        seq!(R in 0..2 {{
            let key = at.k0() + 16 * at.warp() + g + 8 * R;
            if key < at.s_k() {
                let first = (at.kv_rows() + key) * D + 2 * qd;
                seq!(N in 0..16 {
                    if N < D / 8 {
                        let (k_pair, v_pair) = (
                            pack::<T>(self.dk[N][2 * R] * scale, self.dk[N][2 * R + 1] * scale),
                            pack::<T>(self.dv[N][2 * R], self.dv[N][2 * R + 1]),
                        );
                        // SAFETY: inside the row, 4 bytes on 4; this lane's
                        // two elements.
                        unsafe {
                            dk.store((first + 8 * N) / 2, k_pair);
                            dv.store((first + 8 * N) / 2, v_pair);
                        }
                    }
                });
            }
        }});
    }
}

/// One kernel per head dimension `$d` (the body is [`backward`]'s).
macro_rules! head_dims {
    ($($(#[$doc:meta])* $name:ident($d:literal);)*) => {$(
        $(#[$doc])*
        #[kernel(block = THREADS, shared = shared_bytes($d), tile = [BC, 1], types = [bf16, f16])]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Element>(
            q: In<T>,
            k: In<T>,
            v: In<T>,
            o_grad: In<T>,
            lse: In<f32>,
            delta: In<f32>,
            dq: Out<f32>,
            turns: Out<u32>,
            dk: Out<T>,
            dv: Out<T>,
            heads: u32,
            kv_heads: u32,
            s_q: u32,
            s_k: u32,
            scale: f32,
            flags: u32,
        ) {
            let dq = DqSum { acc: dq, turns, ordered: flags & DETERMINISTIC != 0 };
            backward::<T, $d>((q, k, v, o_grad), (lse, delta), (dq, dk, dv), (heads, kv_heads, s_q, s_k), scale, flags);
        }
    )*};
}

head_dims! {
    /// 2. The fused backward, FlashAttention-2 style, `d = 64` (the module
    /// documentation has the idea, the fragments and the arithmetic).
    ///
    /// Launch: Q, dO `[b, heads, s_q, 64]`, K, V, dK, dV `[b, kv_heads,
    /// s_k, 64]`, lse and D (`attention_backward_dot`) `[b, heads, s_q]`,
    /// dq dQ's `f32` accumulator, Q's shape, zeroed; `turns` (with
    /// [`DETERMINISTIC`] in `flags`) `b heads ceil(s_q / 64)` zeros; the
    /// grid is `ceil(s_k / 64)` x `b kv_heads` blocks of 128 threads;
    /// `kv_heads` divides `heads`; `scale > 0`; `flags` [`CAUSAL`] and
    /// [`DETERMINISTIC`]. Then `attention_backward_dq` makes dQ.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_flash_d64`.
    attention_backward_flash_d64(64);
    /// 2. The fused backward at `d = 128`: as
    /// [`attention_backward_flash_d64()`], rows of 128.
    /// Measured: `BENCHMARKS.md`, rows `attention_backward_flash_d128`.
    attention_backward_flash_d128(128);
}
