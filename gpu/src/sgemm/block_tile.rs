//! The block tile machinery of SGEMM steps 3b to 7c: where a block's and
//! a thread's tiles lie, how a thread loads its part of each k-step
//! (plain or `cp.async`, checked at the edges or not), and the k loop of
//! outer products over shared-memory fragments. Each step is a [`Steps`]
//! value; `sgemm_block_tile` runs it.

// `seq!` unrolls loops by substituting 0, 1, ... into index arithmetic:
// `4 * H + I` with `H = 0` is intended.
#![allow(clippy::erasing_op, clippy::identity_op)]
// Loops over register arrays index them with constant-bound counters, which
// LLVM unrolls; iterator chains were not always unrolled (see `load_next`).
#![allow(clippy::needless_range_loop)]

use super::{AS_STRIDE, BK, BM, BN, THREADS, WIDE_BN, stage_floats};
use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::{In, Out, SharedTile, block_idx_x, block_idx_y, math::fma, sync_threads, thread_idx_x};
use crate::gemm::ffma::{epilogue, epilogue4, grouped_block_origin};
use seq_macro::seq;

/// How the block tile kernels differ, step by step.
#[derive(Clone, Copy)]
pub(super) struct Steps {
    /// 16-byte global loads (`ld.global.v4`) where the row is aligned and
    /// whole, and 16-byte shared loads of the fragments.
    pub vector: bool,
    /// Two shared-memory stages: the next k-step's tile is loaded into
    /// registers before the current one is computed, and stored into the
    /// other stage after: one barrier per k-step instead of two.
    pub double_buffer: bool,
    /// The warp-tiled thread layout that makes the fragment reads of `Bs`
    /// conflict-free (see [`thread_tile_origin`]).
    pub warp_tiled: bool,
    /// Launch order grouped by 8 block rows (see [`block_origin`]).
    pub swizzle: bool,
    /// Stage tiles with `cp.async` straight into shared memory (see
    /// [`main_loop_async`]) instead of through registers.
    pub async_copy: bool,
    /// The 128 x 256 block tile with 8 x 16 thread tiles ([`WIDE_BN`])
    /// instead of 128 x 128 with 8 x 8.
    pub wide: bool,
}

impl Steps {
    /// Columns of the block tile.
    pub const fn bn(self) -> usize {
        if self.wide { WIDE_BN } else { BN }
    }
}

/// The block tile this block computes, as `(first row, first column)`, for
/// block tiles `BM x bn`.
///
/// Blocks are launched in order of their linear index, x fastest. Plainly
/// mapped, consecutive blocks walk along one block row of C: they share
/// one 128-row panel of A but each needs another panel of B, and a wave of
/// 264 blocks (2 per SM) touches 2 panels of A and all of B. With
/// `swizzle`, consecutive blocks walk down a group of 8 block rows first:
/// a wave then touches 8 panels of A and ~33 of B, which stay in L2.
#[inline(always)]
fn block_origin(swizzle: bool, bn: usize) -> (usize, usize) {
    if !swizzle {
        return (block_idx_y() as usize * BM, block_idx_x() as usize * bn);
    }
    grouped_block_origin(BM, bn)
}

/// Where this thread's thread tile lies in the block tile: rows
/// `r0 + i + h * r_step` and columns `c0 + j + g * c_step`, for `i, j` in
/// 0..4, `h` in 0..2 and `g` in 0..`bn / 64`: 4 x 4 blocks, 2 x 2 of them
/// (8 x 8) in a 128-wide block tile, 2 x 4 (8 x 16) in a 256-wide one.
///
/// - Contiguous (kernels 3b to 5): thread `t` owns rows `8 (t / 16)..+8`
///   and columns `8 (t % 16)..+8` (`r_step = c_step = 4`). Reading its
///   `B` fragment, lane `t` loads words `8 t..8 t + 4` of a `Bs` row: lanes
///   `t` and `t + 4` hit the same banks (`8 t mod 32`), a 2-way conflict in
///   each 8-lane phase of the 16-byte load, for both halves.
/// - Warp-tiled (kernels 6, 7): 8 warps as 2 x 4 warp tiles of 64 x
///   `bn / 4`; in a warp, lane `l` is at `(l / 4, l % 4)` of an 8 x 4 grid
///   of 4 x 4 blocks, repeated at `+32` rows and every `+16` columns. A
///   warp's `Bs` reads are 4 distinct 16-byte words (16 banks, the other
///   lanes broadcast), its `As` reads 8 distinct (32 banks): no conflict.
#[inline(always)]
fn thread_tile_origin(t: usize, warp_tiled: bool, bn: usize) -> (usize, usize, usize, usize) {
    if warp_tiled {
        let (warp, lane) = (t / 32, t % 32);
        let (wm, wn) = (warp / 4, warp % 4);
        (wm * 64 + (lane / 4) * 4, wn * (bn / 4) + (lane % 4) * 4, 32, 16)
    } else {
        ((t / 16) * 8, (t % 16) * 8, 4, 4)
    }
}

/// 16-byte loads of the `B` tile per thread: 1 (128 wide) or 2 (256 wide).
const fn b_vectors(bn: usize) -> usize {
    bn * BK / (4 * THREADS)
}

/// This thread's part of loading each k-step's tiles of a `BM x TBN` block
/// tile: four elements of `A` (row `bm0 + t / 2`, columns
/// `p0 + 4 (t % 2)..+4`) and `4 b_vectors(TBN)` of `B`: four at row
/// `p0 + t / (TBN / 4)`, columns `bn0 + 4 (t % (TBN / 4))..+4`, and when the
/// tile is 256 wide four more 4 rows further (a warp's 32 loads of 16
/// bytes are then 512 consecutive bytes of one row).
///
/// It holds one pointer into each matrix, advanced by `BK` columns of `A`
/// and `BK` rows of `B` per k-step, and makes the range checks that do not
/// change along k once: the main loop keeps two 64-bit pointers and a
/// stride live instead of a handful of 64-bit indices. At the 128-register
/// cap (see [`BLOCK_TILE_MIN_BLOCKS`]) those registers are the difference
/// between spilling and not.
#[derive(Clone, Copy)]
struct TileLoader<const TBN: usize> {
    a: In<f32>,
    b: In<f32>,
    /// Elements from one k-step's `B` rows to the next: `BK * n`.
    b_step: usize,
    /// Column of A / row of B this thread starts at, relative to the k-step.
    a_col: usize,
    b_row: usize,
    /// The A row exists; how many of the 4 B columns exist.
    a_row_ok: bool,
    b_cols: usize,
    /// Whole 16-byte loads are possible for this thread's A row / B columns.
    a_vector: bool,
    b_vector: bool,
    /// The kernel uses 16-byte loads: in interior block tiles (see
    /// [`sgemm_block_tile`]) `a_vector` and `b_vector` are then both true.
    vector: bool,
    /// Elements between this thread's two `B` loads (4 rows) in a 256-wide tile.
    b_vector_step: usize,
    /// The matrices' first elements: a harmless source address for the
    /// zero-filling copies of elements that do not exist.
    a_start: In<f32>,
    b_start: In<f32>,
}

/// Rows of `B` between a thread's two loads in a 256-wide tile.
const B_VECTOR_ROWS: usize = 4 * THREADS / WIDE_BN;

/// What one thread loads per k-step: 4 `A` values, 4 or 8 `B` values.
type Loaded = ([f32; 4], [[f32; 4]; 2]);

impl<const TBN: usize> TileLoader<TBN> {
    #[inline(always)]
    fn new(
        a: In<f32>,
        b: In<f32>,
        (m, n, k): (usize, usize, usize),
        bm0: usize,
        bn0: usize,
        t: usize,
        vector: bool,
    ) -> Self {
        let (ar, ac) = (bm0 + t / 2, 4 * (t % 2));
        let (br, bc) = (t / (TBN / 4), bn0 + 4 * (t % (TBN / 4)));
        let b_cols = n.saturating_sub(bc).min(4);
        TileLoader {
            a: a.wrapping_offset(ar * k + ac),
            b: b.wrapping_offset(br * n + bc),
            b_step: BK * n,
            a_col: ac,
            b_row: br,
            a_row_ok: ar < m,
            b_cols,
            a_vector: vector && k % 4 == 0 && ar < m,
            b_vector: vector && n % 4 == 0 && b_cols == 4,
            vector,
            b_vector_step: B_VECTOR_ROWS * n,
            a_start: a,
            b_start: b,
        }
    }

    /// The `A` and `B` values of the k-step starting at `p0` (the one the
    /// pointers are at), then moves on to the next k-step. Zeros outside
    /// the matrices; one `ld.global.v4` per four values where possible.
    /// `CHECKED = false` is for interior block tiles of aligned matrices
    /// (see [`sgemm_block_tile`]): no range checks, no branches.
    ///
    /// # Safety
    /// `CHECKED = false` only for an interior block tile of matrices whose
    /// k is a multiple of `BK` and, with 16-byte loads, k and n multiples of
    /// 4 (see [`sgemm_block_tile`]); A and B hold `m k` and `k n` elements.
    #[inline(always)]
    unsafe fn load_next<const CHECKED: bool>(&mut self, k: usize, p0: usize) -> Loaded {
        let (a, b) = (self.a, self.b);
        self.a = self.a.wrapping_offset(BK);
        self.b = self.b.wrapping_offset(self.b_step);
        let mut av = [0.0f32; 4];
        let mut bv = [[0.0f32; 4]; 2];
        if !CHECKED {
            // `vector`, not `a_vector`: known at compile time, so there is
            // no scalar alternative for LLVM to merge the 16-byte loads into.
            // (Index loops with constant bounds, here and below: unrolled,
            // so `bv` stays in registers; iterator adapters such as `take`
            // were not, and put it on the stack.)
            if self.vector {
                // SAFETY: an interior tile (the caller's contract): this k-step's A and B values
                // exist, and k and n are multiples of 4, so the 16-byte loads are aligned.
                av = unsafe { a.load_x4(0) };
                for v in 0..b_vectors(TBN) {
                    // SAFETY: as above.
                    bv[v] = unsafe { b.load_x4(v * self.b_vector_step) };
                }
            } else {
                // SAFETY: an interior tile: these elements exist (the caller's contract).
                av = core::array::from_fn(|i| unsafe { a.load(i) });
                for v in 0..b_vectors(TBN) {
                    // SAFETY: as above.
                    bv[v] = core::array::from_fn(|j| unsafe { b.load(v * self.b_vector_step + j) });
                }
            }
            return (av, bv);
        }
        let ac = p0 + self.a_col;
        if self.a_vector && ac + 4 <= k {
            // SAFETY: `a_vector`: the row exists and k % 4 == 0 (aligned); ac + 4 <= k.
            av = unsafe { a.load_x4(0) };
        } else if self.a_row_ok {
            for (i, v) in av.iter_mut().enumerate() {
                if ac + i < k {
                    // SAFETY: the row exists (`a_row_ok`) and column ac + i < k.
                    *v = unsafe { a.load(i) };
                }
            }
        }
        for v in 0..b_vectors(TBN) {
            if p0 + self.b_row + v * B_VECTOR_ROWS >= k {
                continue;
            }
            let b = b.wrapping_offset(v * self.b_vector_step);
            if self.b_vector {
                // SAFETY: `b_vector`: all 4 columns exist and n % 4 == 0 (aligned); the row is
                // below k (checked above).
                bv[v] = unsafe { b.load_x4(0) };
            } else {
                for j in 0..4 {
                    if j < self.b_cols {
                        // SAFETY: column j < b_cols exists; the row is below k (checked above).
                        bv[v][j] = unsafe { b.load(j) };
                    }
                }
            }
        }
        (av, bv)
    }

    /// The `cp.async` form of [`TileLoader::load_next`]: copies the k-step
    /// at `p0` straight into `stage` (A transposed, 4 bytes per copy; B 16
    /// bytes per copy where whole and aligned) and moves on. Elements
    /// outside the matrices are written as zeros without reading.
    ///
    /// # Safety
    /// `CHECKED = false` only for an interior block tile of matrices whose
    /// k is a multiple of `BK` and, with 16-byte loads, k and n multiples of
    /// 4 (see [`sgemm_block_tile`]); A and B hold `m k` and `k n` elements.
    /// `stage` is a whole stage of shared memory no thread reads until this
    /// thread has waited for the copies and the block has passed a barrier.
    #[inline(always)]
    unsafe fn copy_next<const CHECKED: bool>(
        &mut self,
        stage: SharedTile<f32, AS_STRIDE>,
        t: usize,
        k: usize,
        p0: usize,
    ) {
        let (a, b) = (self.a, self.b);
        self.a = self.a.wrapping_offset(BK);
        self.b = self.b.wrapping_offset(self.b_step);
        // SAFETY: a stage holds the A half, then the B half (the caller's contract).
        let (a_tile, b_tile) = (stage, unsafe { stage_b::<TBN>(stage) });
        let (a_r, b_r, b_c) = (4 * (t % 2), t / (TBN / 4), 4 * (t % (TBN / 4)));
        let ac = p0 + self.a_col;
        for i in 0..4 {
            if !CHECKED {
                // SAFETY: an interior tile: the element exists; its destination in the A half is
                // this thread's until the wait and the barrier.
                unsafe { a_tile.copy_async(a_r + i, t / 2, a, i) };
            } else {
                let (src, ok) = if self.a_row_ok && ac + i < k { (a, true) } else { (self.a_start, false) };
                // SAFETY: read only when the element exists (`ok`); otherwise zeros, from a
                // harmless address.
                unsafe { a_tile.copy_async_or_zero(a_r + i, t / 2, src, i, ok) };
            }
        }
        for v in 0..b_vectors(TBN) {
            let (b, r) = (b.wrapping_offset(v * self.b_vector_step), b_r + v * B_VECTOR_ROWS);
            if !CHECKED {
                // SAFETY: an interior tile: the 4 elements exist, 16-byte aligned; the destination
                // is this thread's.
                unsafe { b_tile.copy_async4(r, b_c, b, 0) };
            } else if self.b_vector {
                let (src, ok) = if p0 + r < k { (b, true) } else { (self.b_start, false) };
                // SAFETY: read only when the row exists (`ok`); `b_vector`: whole and aligned.
                unsafe { b_tile.copy_async4_or_zero(r, b_c, src, 0, ok) };
            } else {
                for j in 0..4 {
                    let ok = p0 + r < k && j < self.b_cols;
                    let src = if ok { b } else { self.b_start };
                    // SAFETY: read only when the element exists (`ok`).
                    unsafe { b_tile.copy_async_or_zero(r, b_c + j, src, j, ok) };
                }
            }
        }
    }
}

/// Stores a thread's loaded elements into one stage: `A` transposed into
/// `As[k][m]` (4 scalar stores; with the 132-word stride a warp's 32
/// stores land in 32 banks), `B` as is into `Bs[k][n]` (16-byte stores).
///
/// # Safety
/// `stage` is a whole stage of a `TBN`-wide block tile's shared memory, and
/// no thread reads it until the barrier that follows.
#[inline(always)]
unsafe fn store_tiles<const TBN: usize>(stage: SharedTile<f32, AS_STRIDE>, t: usize, (av, bv): Loaded) {
    for (i, v) in av.iter().enumerate() {
        // SAFETY: (4 (t % 2) + i, t / 2) lies in the 8 x 132 A half; each thread stores its own
        // elements.
        unsafe { stage.store(4 * (t % 2) + i, t / 2, *v) };
    }
    // SAFETY: the stage holds both halves (the caller's contract).
    let b_tile = unsafe { stage_b::<TBN>(stage) };
    for v in 0..b_vectors(TBN) {
        // SAFETY: inside the B half; each thread stores its own 4 words.
        unsafe { b_tile.store_x4(t / (TBN / 4) + v * B_VECTOR_ROWS, 4 * (t % (TBN / 4)), bv[v]) };
    }
}

/// The `B` half of a stage, after its `A` half.
///
/// # Safety
/// `stage` is a whole stage of a `TBN`-wide block tile.
#[inline(always)]
unsafe fn stage_b<const TBN: usize>(stage: SharedTile<f32, AS_STRIDE>) -> SharedTile<f32, TBN> {
    // SAFETY: the caller's contract: the stage holds both halves.
    unsafe { stage.offset(BK * AS_STRIDE) }.restride::<TBN>()
}

/// Four consecutive floats of a shared row: one `ld.shared.v4` when
/// `vector`, else four `ld.shared.b32`.
///
/// # Safety
/// The four floats lie inside the tile; with `vector`, `r * S + c` is a
/// multiple of 4.
#[inline(always)]
unsafe fn fragment<const S: usize>(tile: SharedTile<f32, S>, r: usize, c: usize, vector: bool) -> [f32; 4] {
    if vector {
        // SAFETY: the caller's contract.
        unsafe { tile.load_x4(r, c) }
    } else {
        // SAFETY: the caller's contract.
        core::array::from_fn(|j| unsafe { tile.load(r, c + j) })
    }
}

/// Where a thread's thread tile lies (see [`thread_tile_origin`]).
#[derive(Clone, Copy)]
struct ThreadTile {
    t: usize,
    r0: usize,
    c0: usize,
    r_step: usize,
    c_step: usize,
}

/// A thread's sums: 8 rows of up to 16 columns (8 in the 128-wide block
/// tile, whose kernels never touch the other 8: the compiler drops them).
type Accumulators = [[f32; 16]; 8];

/// A thread's fragments of one `p`: its 8 `A` values (two 4-row blocks of
/// column `p` of `As`) and `TBN / 16` `B` values (blocks of row `p` of `Bs`).
type Fragments = ([f32; 8], [f32; 16]);

/// Loads this thread's fragments of row `p` of a stage.
///
/// # Safety
/// `stage` is a whole, filled stage of a `TBN`-wide block tile, and `p < BK`.
#[inline(always)]
unsafe fn load_fragments<const TBN: usize>(
    stage: SharedTile<f32, AS_STRIDE>,
    p: usize,
    ThreadTile { r0, c0, r_step, c_step, .. }: ThreadTile,
    vector: bool,
) -> Fragments {
    // SAFETY: the stage holds both halves (the caller's contract).
    let (a_tile, b_tile) = (stage, unsafe { stage_b::<TBN>(stage) });
    let mut af = [0.0f32; 8];
    let mut bf = [0.0f32; 16];
    for h in 0..2 {
        // SAFETY: row p < BK, and the thread tile's rows and columns lie inside the block tile:
        // inside the stage.
        af[4 * h..4 * h + 4].copy_from_slice(&unsafe { fragment(a_tile, p, r0 + h * r_step, vector) });
    }
    for g in 0..TBN / 64 {
        // SAFETY: as above.
        bf[4 * g..4 * g + 4].copy_from_slice(&unsafe { fragment(b_tile, p, c0 + g * c_step, vector) });
    }
    (af, bf)
}

/// The outer product of one `p`'s fragments into the thread tile: 64 or
/// 128 FMAs, each fragment value reused 8 or 16 times from its register.
#[inline(always)]
fn multiply_fragments<const TBN: usize>(acc: &mut Accumulators, (af, bf): &Fragments) {
    // Unrolled at compile time (`seq!`): `acc`, `af` and `bf` are indexed
    // by constants only and live in registers.
    seq!(I in 0..8 { seq!(J in 0..16 {
        if J < TBN / 16 {
            acc[I][J] = fma(af[I], bf[J], acc[I][J]);
        }
    }); });
}

/// One k-step's products: for each of the `BK` values of `p`, the thread
/// loads its fragments from `stage` and multiplies them into `acc`.
///
/// # Safety
/// As for [`load_fragments`], for every `p`.
#[inline(always)]
unsafe fn multiply_stage<const TBN: usize>(
    acc: &mut Accumulators,
    stage: SharedTile<f32, AS_STRIDE>,
    geometry: ThreadTile,
    vector: bool,
) {
    seq!(P in 0..8 {{
        // SAFETY: the caller's contract, for each P < BK.
        let fragments = unsafe { load_fragments::<TBN>(stage, P, geometry, vector) };
        multiply_fragments::<TBN>(acc, &fragments);
    }});
}

/// The k loop of [`sgemm_block_tile`] with `cp.async` (see
/// [`crate::dev::copy`]) into two shared stages. Before computing k-step
/// `s`, each thread waits for its own copies of that step and the barrier
/// publishes everyone's; the same barrier tells that all finished step
/// `s - 1`, so its stage is refilled with step `s + 1` while `s` is
/// computed. One barrier per k-step and no staging registers.
///
/// # Safety
/// As for [`main_loop`].
#[inline(always)]
unsafe fn main_loop_async<const CHECKED: bool, const TBN: usize>(
    steps: Steps,
    k: usize,
    mut loader: TileLoader<TBN>,
    first: SharedTile<f32, AS_STRIDE>,
    geometry: ThreadTile,
) -> Accumulators {
    // SAFETY: the launch passes two stages (the caller's contract).
    let stage = |i: usize| unsafe { first.offset(i * stage_floats(TBN)) };
    let t = geometry.t;
    let mut acc = [[0.0f32; 16]; 8];
    let steps_k = k.div_ceil(BK);
    if steps_k > 0 {
        // SAFETY: the caller's contract: interior tiles unchecked, the others checked.
        unsafe { loader.copy_next::<CHECKED>(stage(0), t, k, 0) };
        commit_copies();
    }
    for s in 0..steps_k {
        // `wait_group` covers committed groups only: every copy is committed
        // right after it is issued. (The emulator reports a copy still in
        // flight at exit, which is how a missing commit here was found.)
        wait_copies::<0>();
        sync_threads();
        if s + 1 < steps_k {
            // SAFETY: as above; stage (s + 1) % 2 was last read in step s - 1, before this step's
            // barrier.
            unsafe { loader.copy_next::<CHECKED>(stage((s + 1) % 2), t, k, (s + 1) * BK) };
            commit_copies();
        }
        // SAFETY: this thread waited for its copies of step s, and the barrier for everyone's.
        unsafe { multiply_stage::<TBN>(&mut acc, stage(s % 2), geometry, steps.vector) };
    }
    acc
}

/// The k loop of [`sgemm_block_tile`]: returns the thread tile's sums.
///
/// # Safety
/// As for [`TileLoader::load_next`]; `first` starts the launch's shared
/// memory, which holds one stage (two with double buffering or `cp.async`),
/// and every thread of the block calls this.
#[inline(always)]
unsafe fn main_loop<const CHECKED: bool, const TBN: usize>(
    steps: Steps,
    k: usize,
    mut loader: TileLoader<TBN>,
    first: SharedTile<f32, AS_STRIDE>,
    geometry: ThreadTile,
) -> Accumulators {
    let t = geometry.t;
    // Stage `i` starts `i * stage_floats(TBN)` floats in. (Computed, not
    // picked from an array of two tiles: an array indexed at run time
    // would live on the stack and its pointers would lose the shared
    // address space, turning every `ld.shared` into a generic `ld`.)
    // SAFETY: the launch passes one stage, or two when double-buffered (the caller's contract).
    let stage = |i: usize| unsafe { first.offset(i * stage_floats(TBN)) };
    let mut acc = [[0.0f32; 16]; 8];
    let steps_k = k.div_ceil(BK);

    if steps_k > 0 {
        // SAFETY: the caller's contract: interior tiles unchecked, the others checked.
        let loaded = unsafe { loader.load_next::<CHECKED>(k, 0) };
        // SAFETY: stage 0, filled before anyone reads it (the barrier follows).
        unsafe { store_tiles::<TBN>(stage(0), t, loaded) };
        sync_threads();
    }
    for s in 0..steps_k {
        let cur = if steps.double_buffer { s % 2 } else { 0 };
        let next = s + 1 < steps_k;
        // Double buffering: the next tile's global loads are issued now and
        // are in flight during the FMAs below.
        let mut prefetched = ([0.0f32; 4], [[0.0f32; 4]; 2]);
        if steps.double_buffer && next {
            // SAFETY: as for the first k-step's loads.
            prefetched = unsafe { loader.load_next::<CHECKED>(k, (s + 1) * BK) };
        }
        // SAFETY: the stage was filled and published before the last barrier.
        unsafe { multiply_stage::<TBN>(&mut acc, stage(cur), geometry, steps.vector) };
        if steps.double_buffer {
            if next {
                // The other stage was last read before the previous barrier.
                // SAFETY: nobody reads the other stage until the barrier below.
                unsafe { store_tiles::<TBN>(stage(cur ^ 1), t, prefetched) };
            }
            sync_threads();
        } else {
            // Everyone must be done reading the stage before it is refilled.
            sync_threads();
            if next {
                // SAFETY: as for the first k-step's loads.
                let loaded = unsafe { loader.load_next::<CHECKED>(k, (s + 1) * BK) };
                // SAFETY: everyone finished reading stage 0 at the barrier above.
                unsafe { store_tiles::<TBN>(stage(0), t, loaded) };
                sync_threads();
            }
        }
    }

    acc
}

/// The block tile of kernels 3b to 7 (`BM x TBN`, stepping `BK` through
/// k): each k-step, 256 threads stage the A (transposed) and B tiles in
/// shared memory; then for each of the 8 `p`, a thread loads its 8 `A`
/// values and 8 or 16 `B` values (its fragments) into registers and does
/// 64 or 128 FMAs: in the 128-wide tile 16 shared loads (4 with `load_x4`)
/// per 64 FMAs, against 2 per FMA in kernel 2.
#[inline(always)]
///
/// # Safety
/// A, B and C hold `m k`, `k n` and `m n` elements; the launch passes the
/// shared memory of `steps` (one or two stages of a `TBN`-wide tile) and a
/// grid of `BM x TBN` block tiles over C.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn sgemm_block_tile<const TBN: usize>(
    steps: Steps,
    a: In<f32>,
    b: In<f32>,
    c: Out<f32>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    let dims @ (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread_idx_x() as usize;
    let (bm0, bn0) = block_origin(steps.swizzle, TBN);
    let (r0, c0, r_step, c_step) = thread_tile_origin(t, steps.warp_tiled, TBN);
    // SAFETY: the launch passes one stage, or two when double-buffered.
    let first = unsafe { SharedTile::<f32, AS_STRIDE>::launch_sized() };
    let loader = TileLoader::<TBN>::new(a, b, dims, bm0, bn0, t, steps.vector);
    // Interior block tiles of matrices whose rows are 16-byte aligned and
    // whose k is a multiple of BK need no range check anywhere in the main
    // loop: they run a copy of it without checks (all but the last block
    // row and column at 4096^3), the edge tiles the checked one.
    let interior =
        bm0 + BM <= m && bn0 + TBN <= n && k % BK == 0 && (!steps.vector || (k % 4 == 0 && n % 4 == 0));
    let geometry = ThreadTile { t, r0, c0, r_step, c_step };
    let acc = match (steps.async_copy, interior) {
        // SAFETY: the caller's contract; the unchecked loops run on interior tiles only.
        (true, true) => unsafe { main_loop_async::<false, TBN>(steps, k, loader, first, geometry) },
        // SAFETY: as above.
        (true, false) => unsafe { main_loop_async::<true, TBN>(steps, k, loader, first, geometry) },
        // SAFETY: as above.
        (false, true) => unsafe { main_loop::<false, TBN>(steps, k, loader, first, geometry) },
        // SAFETY: as above.
        (false, false) => unsafe { main_loop::<true, TBN>(steps, k, loader, first, geometry) },
    };

    seq!(H in 0..2 { seq!(I in 0..4 { seq!(G in 0..4 {{
        let row = bm0 + r0 + H * r_step + I;
        let col = bn0 + c0 + G * c_step;
        if G < TBN / 64 && row < m {
            let v: [f32; 4] = [acc[4 * H + I][4 * G], acc[4 * H + I][4 * G + 1], acc[4 * H + I][4 * G + 2], acc[4 * H + I][4 * G + 3]];
            if steps.vector && n % 4 == 0 && col + 4 <= n {
                let at = row * n + col;
                // SAFETY: row < m, col + 4 <= n and n % 4 == 0 (aligned): these 4 elements are this thread's.
                unsafe { epilogue4(&c, at, v, alpha, beta) };
            } else {
                for (j, v) in v.iter().enumerate() {
                    if col + j < n {
                        let at = row * n + col + j;
                        // SAFETY: row < m and col + j < n; this element is this thread's.
                        unsafe { c.store(at, epilogue(*v, alpha, beta, || c.load(at))) };
                    }
                }
            }
        }
    }}); }); });
}
