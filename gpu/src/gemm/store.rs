//! The library kernel's epilogues: what a consumer warpgroup does with a
//! tile's sums ([`Epilogue`], the device layer's). Two store D through `D = act(alpha acc +
//! beta C + bias)` as they go: `Direct` from the registers (aligned
//! pairs, or element by element), `Staged` through shared memory and the
//! copy engine, so that the consumers return to the tensor cores while D
//! drains. The third, for split k, is `tickets`.

use super::epilogue::{ACT_GELU, ACT_RELU, BIAS_COLS, BIAS_ROWS, Output, activate, gelu, relu};
use super::schedule::{GemmArgs, Item};
use super::tile::Tile;
use crate::dev::SharedArray;
use crate::dev::epilogue::Epilogue;
use crate::dev::math::fma;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::acquire_map;
use crate::dev::tma::{bulk_commit, bulk_wait_read, fence_async_shared, store_2d, swizzle_128};
use crate::dev::warp::sync_warp;
use crate::dev::wgmma::{Accumulators, d_f32};
use crate::dev::{In, Out};
use core::marker::PhantomData;
use seq_macro::seq;

/// The epilogue in the store, from the registers ([`store_through`]), of
/// tiles `L`.
pub(crate) struct Direct<T, L> {
    d: Out<T>,
    w: GemmArgs,
    e: Scalars,
    /// The consumer warpgroup and the thread's index in it.
    me: (usize, u32),
    tile: PhantomData<L>,
}

impl<T, L> Direct<T, L> {
    /// Consumer `me.0`'s epilogue into `d`, thread `me.1`.
    #[inline(always)]
    pub fn new(d: Out<T>, w: GemmArgs, e: Scalars, me: (usize, u32)) -> Direct<T, L> {
        Direct { d, w, e, me, tile: PhantomData }
    }
}

impl<T: Output, L: Tile> Epilogue<Item> for Direct<T, L> {
    type Results = L::Acc;

    #[inline(always)]
    unsafe fn store(&mut self, acc: &L::Acc, item: Item) {
        let (consumer, t) = self.me;
        let (w, part) = (self.w, L::part_at(item.origin(), consumer));
        let at = (item.z() * w.d_batch(), w.ldd());
        // SAFETY: the caller's contract: `d` holds every matrix of the
        // batch at `ldd`, `d_batch` apart, and the bias its values.
        unsafe { store_through::<T, _, 0, 64>(&self.d, acc, part, t, (w.m(), w.n()), at, self.e) };
    }

    fn finish(self) {}
}

/// The epilogue staged through shared memory and stored by the copy
/// engine through D's tensor maps ([`store_staged`]); not with C read or
/// a column bias, whose loads would spill.
pub(crate) struct Staged<T, L> {
    maps: In<u64>,
    /// D's first map, after the batch's A and B maps.
    map: usize,
    /// The warp's staging buffers in the launch's shared memory.
    offset: usize,
    /// The warp's chunks so far.
    count: usize,
    /// The thread is its warp's lane 0, which issues the copies.
    lane0: bool,
    /// The consumer warpgroup and the thread's index in it.
    me: (usize, u32),
    w: GemmArgs,
    e: Scalars,
    output: PhantomData<(T, L)>,
}

impl<T, L> Staged<T, L> {
    /// Consumer `consumer`'s epilogue, thread `t`, its warp's buffers in
    /// the staging at `staging` (past the ring); lane 0 of each warp
    /// acquires D's maps.
    ///
    /// # Safety
    /// The launch passes the batch's D maps after A's and B's; the
    /// staging holds [`STAGING_BYTES`] at `staging`, 1024-aligned.
    #[inline(always)]
    pub unsafe fn new(
        maps: In<u64>,
        staging: usize,
        (consumer, t): (usize, u32),
        w: GemmArgs,
        e: Scalars,
    ) -> Staged<T, L> {
        let (map, lane0) = (2 * w.batch(), t.is_multiple_of(32));
        if lane0 {
            for z in 0..w.batch() {
                // SAFETY: the caller's contract.
                unsafe { acquire_map(maps, map + z) };
            }
        }
        let offset = staging + (4 * consumer + t as usize / 32) * 2 * CHUNK_BYTES;
        Staged { maps, map, offset, count: 0, lane0, me: (consumer, t), w, e, output: PhantomData }
    }
}

impl<T: Output, L: Tile> Epilogue<Item> for Staged<T, L> {
    type Results = L::Acc;

    #[inline(always)]
    unsafe fn store(&mut self, acc: &L::Acc, item: Item) {
        let s = self;
        let (consumer, t) = s.me;
        let to = (s.maps, s.map + item.z(), s.offset);
        let part = L::part_at(item.origin(), consumer);
        // SAFETY: the caller's and `Staged::new`'s contracts; map `map + z`
        // is matrix z's D, acquired by lane 0.
        unsafe { store_staged_by::<T, _>(to, &mut s.count, acc, part, t, (s.w.m(), s.w.n()), s.e) };
    }

    fn finish(self) {
        // The block's last stores have read their buffers (the copy
        // engine's writes to D complete on their own).
        if self.lane0 {
            bulk_wait_read::<0>();
        }
    }
}

/// `D = act(alpha acc + beta C + bias)`: the epilogue's scalars.
#[derive(Clone, Copy)]
pub struct Scalars {
    pub alpha: f32,
    pub beta: f32,
    pub bias: In<f32>,
    pub bias_mode: u32,
    pub act: u32,
}

/// A warpgroup's sums of its part of a tile ([`Tile::part`]), at `(m0,
/// n0)` in D, through the epilogue into `D` (`d[base + i ldd + j]`,
/// inside `m x n` only): each thread's sums (128 for a wide tile's part)
/// lie in two rows 8 apart, in pairs of neighbouring columns ([`d_f32`]).
/// Only pairs `LO..HI` of the part's `A::N / 4` are stored (all of them,
/// but for the k-split fix-up, which holds a quarter of 64 at a time).
///
/// The store is the tile's fixed cost, paid while the tensor cores wait,
/// so the usual case (no C, no column bias, aligned pairs) is
/// straight-line code (`store_pairs`), the activation chosen here, once,
/// each its own unrolled store. (Tested per element, the choices compiled
/// to some 2,300 instructions per warp and tile, branches and address
/// arithmetic around 64 stores, more than the instruction cache holds.)
/// The rest takes `store_odd`, which tests per element: with C or a
/// column bias unrolled alike, the compiler hoists their loads across the
/// store and the 16-bit outputs' kernels spill (ptxas, sm_90a).
///
/// # Safety
/// `d` holds the matrix at `base`, `ldd`; the bias (by its mode) `m` or
/// `n` values; no other thread touches these elements.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_through<T: Output, A: Accumulators, const LO: usize, const HI: usize>(
    d: &Out<T>,
    acc: &A,
    origin: (usize, usize),
    t: u32,
    (m, n): (usize, usize),
    (base, ldd): (usize, usize),
    e: Scalars,
) {
    let (mn, at) = ((m, n), (base, ldd));
    // SAFETY: the caller's contract; pairs only when all three are even.
    unsafe {
        let pairs = n.is_multiple_of(2) && ldd.is_multiple_of(2) && base.is_multiple_of(2);
        if !pairs || e.beta != 0.0 {
            return store_odd::<T, A, LO, HI>(d, acc, origin, t, mn, at, e);
        }
        match e.act {
            ACT_RELU => store_pairs::<T, A, LO, HI>(d, acc, origin, t, mn, at, e, relu),
            ACT_GELU => store_pairs::<T, A, LO, HI>(d, acc, origin, t, mn, at, e, gelu),
            _ => store_pairs::<T, A, LO, HI>(d, acc, origin, t, mn, at, e, |x| x),
        }
    }
}

/// The thread's two rows (`row`, `row + 8`): their bias values (0 unless
/// the bias runs along rows), read once per tile.
#[inline(always)]
fn rows_bias(e: Scalars, row: usize, m: usize) -> [f32; 2] {
    let one = |row: usize| {
        if e.bias_mode == BIAS_ROWS && row < m {
            // SAFETY: row < m, the bias's length in this mode.
            unsafe { e.bias.load(row) }
        } else {
            0.0
        }
    };
    [one(row), one(row + 8)]
}

/// The aligned store without C: `act(alpha sum + bias)`, one `fma` and
/// the activation per element. Each pair is one conversion and one store
/// ([`Output::store_pair`]) at a constant offset from one of the thread's
/// two row addresses, predicated on lying inside D: a row test made once,
/// a column test per pair of pairs. A row bias is read once per tile (two
/// values a thread), a column bias once per pair of columns and used for
/// both of the thread's rows (`n / 4` values a thread, not one an element).
///
/// # Safety
/// As for [`store_through`]; `n`, `ldd` and `base` even.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_pairs<T: Output, A: Accumulators, const LO: usize, const HI: usize>(
    d: &Out<T>,
    acc: &A,
    (m0, n0): (usize, usize),
    t: u32,
    (m, n): (usize, usize),
    (base, ldd): (usize, usize),
    e: Scalars,
    act: impl Fn(f32) -> f32,
) {
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + r as usize, n0 + col as usize);
    let bias = rows_bias(e, row, m);
    let rows = [base + row * ldd + col, base + (row + 8) * ldd + col];
    let inside = [row < m, row + 8 < m];
    let mut columns = [0.0f32; 2];
    seq!(J in 0..64 {{
        let j: usize = J;
        let (h, col) = (j % 2, col + 8 * (j / 2));
        let here = j < A::N / 4 && (LO..HI).contains(&j) && col < n;
        if here && e.bias_mode == BIAS_COLS && (h == 0 || j == LO) {
            // SAFETY: col + 1 < n (both even), the bias's length in this
            // mode.
            columns = unsafe { [e.bias.load(col), e.bias.load(col + 1)] };
        }
        if here && inside[h] {
            let at = rows[h] + 8 * (j / 2);
            let (b0, b1) = (bias[h] + columns[0], bias[h] + columns[1]);
            let v = [act(fma(e.alpha, acc[2 * j], b0)), act(fma(e.alpha, acc[2 * j + 1], b1))];
            // SAFETY: both inside D (n even, col even: col + 1 < n), at
            // even; this thread's elements alone.
            unsafe { T::store_pair(d, at, v) };
        }
    }});
}

/// The store without aligned pairs (`n`, `ldd` or `base` odd): each
/// element tested and stored alone, the epilogue's choices made per
/// element (rare shapes; one copy of the code for all of them).
///
/// # Safety
/// As for [`store_through`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_odd<T: Output, A: Accumulators, const LO: usize, const HI: usize>(
    d: &Out<T>,
    acc: &A,
    (m0, n0): (usize, usize),
    t: u32,
    (m, n): (usize, usize),
    (base, ldd): (usize, usize),
    e: Scalars,
) {
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + r as usize, n0 + col as usize);
    let bias = rows_bias(e, row, m);
    let one = |sum: f32, h: usize, col: usize| {
        let row = row + 8 * h;
        if row < m && col < n {
            let at = base + row * ldd + col;
            let mut x = fma(e.alpha, sum, bias[h]);
            // SAFETY: inside D; this thread's element alone; col < n,
            // the bias's length when it runs along columns.
            unsafe {
                if e.beta != 0.0 {
                    x += e.beta * d.load(at).to_f32();
                }
                if e.bias_mode == BIAS_COLS {
                    x += e.bias.load(col);
                }
                d.store(at, T::of_f32(activate(e.act, x)));
            }
        }
    };
    seq!(J in 0..64 {{
        let j: usize = J;
        if j < A::N / 4 && (LO..HI).contains(&j) {
            let col = col + 8 * (j / 2);
            one(acc[2 * j], j % 2, col);
            one(acc[2 * j + 1], j % 2, col + 1);
        }
    }});
}

/// Bytes of one staging buffer: a warp's 16 rows of a 128-byte-wide
/// column chunk of the tile (64 16-bit or 32 `f32` columns), laid out as
/// a TMA box with the 128-byte swizzle.
const CHUNK_BYTES: usize = 16 * 128;
/// Two buffers for each of the 8 consumer warps.
pub(super) const STAGING_BYTES: usize = 8 * 2 * CHUNK_BYTES;

/// The staged store: a warpgroup's sums of its part of a tile (at `(m0,
/// n0)` in D) through the epilogue (`act(alpha sum + bias)`, the bias, if any, per row) into
/// shared memory, and from there to D by the copy engine,
/// so the consumers go back to the tensor cores while D drains to memory.
///
/// Each warp owns 16 rows of its warpgroup's part and stages them a chunk of 128
/// bytes of columns at a time into one of its two 2 KB buffers
/// (`offset`, the warp's first, in the launch's shared memory): its lanes
/// write the chunk (each pair one 4- or 8-byte store at its swizzled
/// place: the 8 rows of a store instruction fall in 8 different 16-byte
/// columns, so a warp's 128 or 256 bytes take the fewest wavefronts),
/// fence the writes for the asynchronous proxy and meet at a `sync_warp`;
/// lane 0 then issues the TMA store of the 16 x 128-byte box, which
/// leaves out whatever lies past `m` or `n` (no guards). Before a buffer
/// is written again, lane 0 waits until the store two chunks back has
/// read it (`wait_group.read 1`) and the warp meets again. A 128 x 256
/// tile is 32 (16-bit) or 64 (`f32`) such stores of 2 KB.
///
/// `count` numbers the warp's chunks across tiles (which buffer is next).
///
/// # Safety
/// The warpgroup runs it converged; map `map` of `maps` is D's (16 x 128
/// -byte boxes, 128-byte swizzle), acquired by lane 0 of each warp; the
/// staging lies at `offset` (1024-aligned, two buffers per warp); the bias
/// (by its mode) holds `m` or `n` values.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_staged<T: Output, A: Accumulators>(
    (maps, map, offset): (In<u64>, usize, usize),
    count: &mut usize,
    acc: &A,
    (m0, n0): (usize, usize),
    t: u32,
    (m, _): (usize, usize),
    e: Scalars,
    act: impl Fn(f32) -> f32,
) {
    let (r, _) = d_f32(t, 0);
    let row = m0 + r as usize;
    let bias = rows_bias(e, row, m);
    let (g, q, lane0) = ((t % 32 / 4) as usize, (t % 4) as usize, t.is_multiple_of(32));
    let finish = |sum: f32, h: usize| act(fma(e.alpha, sum, bias[h]));
    // Columns per chunk, and groups of 8 columns (`j / 2`) per chunk.
    let cols = 128 / size_of::<T>();
    let groups = cols / 8;
    seq!(C in 0..8 {{
        let c: usize = C;
        if c < A::N / cols {
            let at = offset + (*count % 2) * CHUNK_BYTES;
            if lane0 {
                bulk_wait_read::<1>();
            }
            sync_warp(u32::MAX);
            // SAFETY: the warp's buffer, free (the wait above, ordered
            // before every lane by the sync); 4- or 8-byte elements at
            // multiples of their size.
            let buf = unsafe { SharedArray::<T::Pair>::launch_sized_at(at) };
            seq!(P in 0..8 {{
                let p: usize = P;
                if p < groups {
                    let jj = c * groups + p;
                    seq!(H in 0..2 {{
                        let h: usize = H;
                        let j = 2 * jj + h;
                        let v = [finish(acc[2 * j], h), finish(acc[2 * j + 1], h)];
                        let byte = (g + 8 * h) * 128 + (8 * p + 2 * q) * size_of::<T>();
                        // SAFETY: inside the buffer; this lane's pair alone.
                        unsafe { buf.set(swizzle_128(byte) / size_of::<T::Pair>(), T::pack(v)) };
                    }});
                }
            }});
            fence_async_shared();
            sync_warp(u32::MAX);
            if lane0 {
                let origin = ((n0 + c * cols) as i32, (m0 + 16 * (t / 32) as usize) as i32);
                // SAFETY: the caller's contract; the lanes' writes are
                // fenced and ordered before this by the sync.
                unsafe { store_2d(launch_sized_base().wrapping_add(at), maps, map, origin) };
                bulk_commit();
            }
            *count += 1;
        }
    }});
}

/// [`store_staged`] with the activation and the bias's direction chosen.
///
/// # Safety
/// As for [`store_staged`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_staged_by<T: Output, A: Accumulators>(
    to: (In<u64>, usize, usize),
    count: &mut usize,
    acc: &A,
    origin: (usize, usize),
    t: u32,
    mn: (usize, usize),
    e: Scalars,
) {
    // SAFETY: the caller's contract.
    unsafe {
        match e.act {
            ACT_RELU => store_staged::<T, A>(to, count, acc, origin, t, mn, e, relu),
            ACT_GELU => store_staged::<T, A>(to, count, acc, origin, t, mn, e, gelu),
            _ => store_staged::<T, A>(to, count, acc, origin, t, mn, e, |x| x),
        }
    }
}

/// A warpgroup's `f32` sums of its part of a tile, at `(m0, n0)` in C (its
/// 64 rows and `A::N` columns), into the `m x n` matrix whose element `(i,
/// j)` is `c[base + i ldc + j]`, inside it only. Accumulators `2 j` and
/// `2 j + 1` are neighbours in a row: with `PAIRS` (`n` even, as in every
/// 16-bit TMA problem) the pair is 8-byte aligned, one 8-byte store, and a
/// warp's store fills 8 whole 32-byte sectors; otherwise (an odd `n`,
/// which tf32 allows) two 4-byte stores.
///
/// A thread's sums lie in two rows, 8 apart, at columns `8 (j / 2) + 2 q`
/// ([`d_f32`]): where the tile lies wholly inside C (every tile but the
/// last row and column of them), each store is at a constant offset from
/// one of two row pointers, unguarded; edge tiles check every pair.
///
/// # Safety
/// `c` holds `base + (m - 1) ldc + n` elements, `ldc >= n`; with `PAIRS`,
/// `n`, `ldc` and `base` are even; no other thread writes these.
#[inline(always)]
pub(crate) unsafe fn store_at<const PAIRS: bool, A: Accumulators>(
    c: &Out<f32>,
    acc: &A,
    (m0, n0): (usize, usize),
    t: u32,
    (m, n): (usize, usize),
    (base, ldc): (usize, usize),
) {
    // SAFETY: (both loops) inside C (n even: col + 1 < n too, and the
    // pair's index even; n odd: each element checked); this thread's alone.
    let pair = |at: usize, j: usize, last: bool| unsafe {
        if PAIRS {
            c.store_x2(at, [acc[2 * j], acc[2 * j + 1]]);
        } else {
            c.store(at, acc[2 * j]);
            if last {
                c.store(at + 1, acc[2 * j + 1]);
            }
        }
    };
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + r as usize, n0 + col as usize);
    // Pairs `j < A::N / 4` (64 of them for 256 columns).
    if row + 8 < m && n0 + A::N <= n {
        let rows = [base + row * ldc + col, base + (row + 8) * ldc + col];
        seq!(J in 0..64 {{
            let j: usize = J;
            if j < A::N / 4 {
                pair(rows[j % 2] + 8 * (j / 2), j, true);
            }
        }});
    } else {
        seq!(J in 0..64 {{
            let j: usize = J;
            let (row, col) = (row + 8 * (j % 2), col + 8 * (j / 2));
            if j < A::N / 4 && row < m && col < n {
                pair(base + row * ldc + col, j, col + 1 < n);
            }
        }});
    }
}
