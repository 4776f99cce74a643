// Over 800 lines: the wgmma ladder (steps 5 to 8) is read top to bottom as one lesson over one ring, producer and consumer; the GEMM library and attention reuse its pieces.
//! Hopper's own tensor-core path (sm_90a): `wgmma` reading its operands
//! from shared memory that TMA fills, synchronized by mbarriers.
//!
//! The bf16 and f16 kernels compute what the `mma.sync` steps do (`C = A
//! B`, row-major 16-bit A and B, `f32` C, any `m`); the tf32 one takes `f32` A
//! and B with B given transposed (`bt`, `n x k` row-major: `C = A bt^T`),
//! because `wgmma` reads tf32 B only K-major. Both read through tensor maps
//! the host encodes for A and B (`maps`: A's, then B's, 16 words each;
//! the kernels take no other handle on A and B). A map's
//! row stride must be a multiple of 16 bytes: for bf16 and f16 `k` and `n`
//! multiples of 8, for tf32 `k` a multiple of 4.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

use crate::dev::barrier::{Mbarrier, fence_init};
use crate::dev::cluster::{cluster_rank, cluster_sync};
use crate::dev::registers;
use crate::dev::shared::launch_sized_base;
use crate::dev::tma::{acquire_map, copy_2d, copy_2d_multicast};
use crate::dev::wgmma::{self, Accumulators, Descriptor, d_f32, shared_address};
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, grid_dim_x, sync_threads, thread_idx_x};
use crate::kernel;
use core::marker::PhantomData;
use seq_macro::seq;

/// Block tile: 128 x 256 of C, 128 bytes of k per stage (64 bf16, 32
/// tf32): A's rows are 128 bytes, as are B's box rows (all with the
/// 128-byte swizzle). (Stages of 32 bf16 k, twice as many, were measured
/// slower: the per-stage waits and copies double; see `docs/notes.md`.)
pub const BM: usize = 128;
pub const BN: usize = 256;
/// Bytes of k per stage: one swizzle span.
const SPAN: usize = 128;
/// Two warpgroups, each 64 rows of the block tile.
pub const THREADS: usize = 256;
/// Stages in the ring: 4 x 48 KB.
pub const STAGES: usize = 4;

/// Bytes of a stage: A's 128 x 128-byte box, then B's 256 x 128 bytes.
const A_BYTES: usize = BM * SPAN;
const STAGE_BYTES: usize = stage_bytes(BM, BN);

/// Bytes of a stage of a tile `bm x bn`: A's `bm` rows of 128 bytes of
/// k, then B's `bn` columns of them.
const fn stage_bytes(bm: usize, bn: usize) -> usize {
    (bm + bn) * SPAN
}

/// The shape of a block tile (`BM` rows by `BN` columns) and how its two
/// consumer warpgroups share it: each owns a `64 x N` part (`N` its
/// accumulators' [`Accumulators::N`], `N / 2` a thread, the `wgmma`
/// shape `m64nNk*`) at [`Tile::part`].
///
/// The ladder's tiles are [`Wide`]; the GEMM library also runs
/// [`Narrow`] and [`Short`] ones, where wide tiles would leave SMs idle or
/// rows and columns empty (128 x 8192 x 8192: 32 wide tiles for 132 SMs;
/// 8192 x 128 x 8192: half of every wide tile past `n`; 16 x 4096 x 4096:
/// 112 of every 128 rows past `m`), and [`Mid`] ones where a last wave
/// of wide tiles would leave most SMs idle (3072 x 3072: 288 wide tiles,
/// 2.2 waves of 132, run as 3; 384 mid tiles, 2.9 waves). Per stage, for
/// `2 BM BN BK` FLOPs:
///
/// | tile | A | B | stage | parts |
/// | --- | --- | --- | --- | --- |
/// | [`Wide`] 128 x 256 | 16 KB | 32 KB | 48 KB | rows 0..64, 64..128 |
/// | [`Mid`] 128 x 192 | 16 KB | 24 KB | 40 KB | rows 0..64, 64..128 |
/// | [`Narrow`] 128 x 128 | 16 KB | 16 KB | 32 KB | rows 0..64, 64..128 |
/// | [`Short`] 64 x 128 | 8 KB | 16 KB | 24 KB | columns 0..64, 64..128 |
///
/// The smaller the tile, the more bytes each multiply-add costs: a narrow
/// stage's 16 KB of A serve half a wide one's products, and a short
/// tile's two warpgroups both read its A. A short tile's smaller stages
/// buy a deeper ring in the same 192 KB (8 stages of 24 KB): more of each
/// row of A and B in flight, which is what the skinny shapes, streaming
/// one operand from memory, wait on. (Narrow tiles keep 4 stages:
/// `docs/notes.md` says why.)
pub trait Tile: Copy + 'static {
    /// Rows of C per block tile.
    const BM: usize;
    /// Columns of C per block tile.
    const BN: usize;
    /// Stages in the ring.
    const STAGES: usize;
    /// A consumer thread's accumulators (their [`Accumulators::N`] is the
    /// part's columns, the instructions' N).
    type Acc: Accumulators;

    /// Where warpgroup `wg`'s part of the tile starts: `(row, column)`
    /// within the tile.
    fn part(wg: usize) -> (usize, usize);

    /// The origin in C of warpgroup `wg`'s part of the tile at `origin`.
    #[inline(always)]
    fn part_at((m0, n0): (usize, usize), wg: usize) -> (usize, usize) {
        let (r, c) = Self::part(wg);
        (m0 + r, n0 + c)
    }
}

/// 128 x 256 tiles, `m64n256` instructions.
#[derive(Clone, Copy)]
pub struct Wide;
/// 128 x 192 tiles, `m64n192` instructions.
#[derive(Clone, Copy)]
pub struct Mid;
/// 128 x 128 tiles, `m64n128` instructions.
#[derive(Clone, Copy)]
pub struct Narrow;
/// 64 x 128 tiles, `m64n64` instructions: both warpgroups multiply the
/// same 64 rows of A, each by its own 64 columns of B.
#[derive(Clone, Copy)]
pub struct Short;

/// [`Tile`] for a tile of [`BM`] rows, each warpgroup 64 of them and
/// all `$bn` columns (`m64n$bn` instructions, `$bn / 2` accumulators a
/// thread).
macro_rules! row_parts_tile {
    ($tile:ident, $bn:expr) => {
        impl Tile for $tile {
            const BM: usize = BM;
            const BN: usize = $bn;
            const STAGES: usize = STAGES;
            type Acc = [f32; $bn / 2];

            #[inline(always)]
            fn part(wg: usize) -> (usize, usize) {
                (64 * wg, 0)
            }
        }
    };
}

row_parts_tile!(Wide, BN);
row_parts_tile!(Mid, 192);
row_parts_tile!(Narrow, 128);

impl Tile for Short {
    const BM: usize = 64;
    const BN: usize = 128;
    const STAGES: usize = 8;
    type Acc = [f32; 32];

    #[inline(always)]
    fn part(wg: usize) -> (usize, usize) {
        (0, 64 * wg)
    }
}

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
const B_BOX_BYTES: usize = 2 * 64 * B_BOX_COLS;
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

/// Shared memory a kernel needs for the ring and `extra` bytes on a
/// 1024-byte boundary after it (`Ring::after`).
pub const fn shared_bytes_with(extra: usize) -> usize {
    shared_bytes_for::<Wide>(extra)
}

/// [`shared_bytes_with`] for tiles `T`.
pub const fn shared_bytes_for<T: Tile>(extra: usize) -> usize {
    1024 + T::STAGES * stage_bytes(T::BM, T::BN) + 2048 + extra
}

/// Shared memory: 1024 bytes of slack to put the stages on the 1024-byte
/// boundary the swizzles need, the stages, two mbarriers per
/// stage ("full" and "empty").
pub const fn shared_bytes() -> usize {
    1024 + STAGES * STAGE_BYTES + 16 * STAGES
}

/// The ring of stages in shared memory, its mbarriers, and what one thread
/// needs to fill a stage: the maps and the block tile's origin.
pub(crate) struct Ring<E, T = Wide> {
    stages: *mut u8,
    bars: SharedArray<u64>,
    maps: In<u64>,
    origin: (usize, usize),
    element: PhantomData<(E, T)>,
}

impl<E, T> Clone for Ring<E, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, T> Copy for Ring<E, T> {}

impl<E: Element, T: Tile> Ring<E, T> {
    /// The ring of this launch: stages from the first 1024-byte boundary,
    /// the mbarriers after them.
    #[inline(always)]
    fn new(maps: In<u64>) -> Ring<E, T> {
        let raw = launch_sized_base();
        let stages = raw.wrapping_add((1024 - shared_address(raw) as usize % 1024) % 1024);
        Ring {
            stages,
            // SAFETY: 2 T::STAGES mbarriers after the stages and the
            // slack, 8-aligned (the declaration's bytes).
            bars: unsafe {
                SharedArray::<u64>::launch_sized_at(1024 + T::STAGES * stage_bytes(T::BM, T::BN))
            },
            maps,
            origin: (block_idx_y() as usize * T::BM, block_idx_x() as usize * T::BN),
            element: PhantomData,
        }
    }

    /// The byte offset, in the launch's shared memory, of what a kernel
    /// places after the ring: the first 1024-byte boundary past the stages
    /// and the mbarriers (at most `1024 + T::STAGES` stages `+ 2048`
    /// bytes in).
    #[inline(always)]
    pub(crate) fn after(self) -> usize {
        let start = self.stages as usize - launch_sized_base() as usize;
        start + T::STAGES * stage_bytes(T::BM, T::BN) + 2048
    }

    #[inline(always)]
    fn stage(self, s: usize) -> *mut u8 {
        self.stages.wrapping_add(s * stage_bytes(T::BM, T::BN))
    }

    /// Stage `s`'s "full" mbarrier: one arrival (the filling thread's)
    /// and the stage's bytes.
    #[inline(always)]
    fn full(self, s: usize) -> Mbarrier {
        // SAFETY: s < T::STAGES, inside the ring's mbarriers.
        unsafe { Mbarrier::at(self.bars, s) }
    }

    /// Stage `s`'s "empty" mbarrier (step 5): one arrival per consumer
    /// warpgroup done with it.
    #[inline(always)]
    pub(crate) fn empty(self, s: usize) -> Mbarrier {
        // SAFETY: as for `full`.
        unsafe { Mbarrier::at(self.bars, T::STAGES + s) }
    }

    /// One thread, before the block's barrier: the mbarriers (`empty`
    /// expecting `consumers` arrivals) and the maps made visible.
    ///
    /// # Safety
    /// Thread 0 alone; a `sync_threads` follows before any use.
    #[inline(always)]
    unsafe fn init(self, consumers: u32) {
        for s in 0..T::STAGES {
            // SAFETY: one thread, before any use (the caller's contract).
            unsafe { (self.full(s).init(1), self.empty(s).init(consumers)) };
        }
        fence_init();
        // SAFETY: the launch passes two maps.
        unsafe { (acquire_map(self.maps, 0), acquire_map(self.maps, 1)) };
    }

    /// Fills stage `s` with k-step `step` of the block tile at `(m0, n0)`:
    /// TMA copies (A's `T::BM`-row box, then B's `T::BN` columns: 48, 32
    /// or 24 KB in all) counting their bytes on `full(s)`.
    ///
    /// # Safety
    /// One thread; nothing reads or writes the stage until `full(s)`'s
    /// phase is observed complete.
    #[inline(always)]
    unsafe fn fill(self, s: usize, step: usize, origin: (usize, usize)) {
        // SAFETY: the caller's contract; maps 0 and 1 are A's and B's.
        unsafe { self.fill_from(s, step, origin, (0, 1)) }
    }

    /// [`Ring::fill`] from the maps `(a, b)` of the launch's (a batched
    /// launch has a pair per matrix of the batch).
    ///
    /// # Safety
    /// As for [`Ring::fill`]; the maps exist, A's and B's.
    #[inline(always)]
    pub(crate) unsafe fn fill_from(
        self,
        s: usize,
        step: usize,
        (m0, n0): (usize, usize),
        (a, b): (usize, usize),
    ) {
        let (at, k0) = (self.stage(s), (step * E::BK) as i32);
        // SAFETY: the stage is 1024-aligned with room for the boxes; the
        // maps are the launch's; the phase expects one arrival, with the
        // boxes' bytes (out-of-bounds elements are zeros, and count).
        unsafe {
            self.full(s).arrive_expect_tx(stage_bytes(T::BM, T::BN) as u32);
            copy_2d(at, self.maps, a, (k0, m0 as i32), self.full(s));
            E::copy_b(at.wrapping_add(T::BM * SPAN), self.maps, b, k0, (n0, T::BN), self.full(s));
        }
    }

    /// Warpgroup `wg`'s part ([`Tile::part`]: 64 x `N` x `BK`) of stage
    /// `s`, added to `acc`: four `wgmma`s ([`Element::multiply`]), issued
    /// (not waited for).
    ///
    /// Row `r` of A lies `128 r` bytes into the stage; B's column `c` (a
    /// multiple of 64) `128 c` bytes into B's part in either layout: a
    /// K-major B row per column, or an MN-major box (`B_BOX_BYTES`) per 64
    /// columns.
    ///
    /// # Safety
    /// The warpgroup runs it converged; the stage's bytes have landed.
    #[inline(always)]
    unsafe fn multiply(self, s: usize, wg: usize, acc: T::Acc) -> T::Acc {
        let base = shared_address(self.stage(s));
        let (row, col) = T::part(wg);
        let (a, b) = (base + (row * SPAN) as u32, base + ((T::BM + col) * SPAN) as u32);
        wgmma::fence();
        // SAFETY: the caller's contract; the part's rows of A and columns
        // of B lie inside the stage.
        let acc = unsafe { E::multiply(a, b, acc) };
        wgmma::commit();
        acc
    }
}

/// The block's start: the ring of this launch, its mbarriers initialized
/// by thread 0 (`consumers` arrivals on each "empty") and visible to every
/// thread after the barrier; and the k-steps of a tile.
#[inline(always)]
pub(crate) fn start<E: Element>(maps: In<u64>, consumers: u32, k: u32) -> (Ring<E>, usize) {
    (start_ring::<E, Wide>(maps, consumers), (k as usize).div_ceil(E::BK))
}

/// [`start`]'s ring alone, for tiles `T`.
#[inline(always)]
pub(crate) fn start_ring<E: Element, T: Tile>(maps: In<u64>, consumers: u32) -> Ring<E, T> {
    let ring = Ring::<E, T>::new(maps);
    if thread_idx_x() == 0 {
        // SAFETY: thread 0, the barrier follows.
        unsafe { ring.init(consumers) };
    }
    sync_threads();
    ring
}

/// The producer of steps 5 and 6: one thread fills the ring with every
/// k-step of each tile in `tiles` (their origins), in turn. Before its
/// `i`-th fill of stage `s` (`i > 0`), it waits for both consumers to have
/// released round `i - 1` (parity `(i - 1) mod 2` of "empty").
///
/// # Safety
/// One thread; the ring initialized with "empty" counting the consumers,
/// which release every stage they consume.
#[inline(always)]
unsafe fn produce<E: Element>(ring: Ring<E>, tiles: impl Iterator<Item = (usize, usize)>, steps: usize) {
    // SAFETY: the caller's contract; `fill`'s, for the stage it was handed.
    unsafe { produce_with(ring, tiles, steps, |s, step, origin| ring.fill(s, step, origin)) }
}

/// [`produce`], filling each stage with `fill(stage, k-step, origin)`.
///
/// # Safety
/// As for [`produce`]; `fill` is safe to call for a stage that nothing
/// reads or writes until its "full" phase completes.
#[inline(always)]
unsafe fn produce_with<E: Element>(
    ring: Ring<E>,
    tiles: impl Iterator<Item = (usize, usize)>,
    steps: usize,
    fill: impl Fn(usize, usize, (usize, usize)),
) {
    let mut it = 0;
    for origin in tiles {
        for step in 0..steps {
            let (s, round) = (it % STAGES, it / STAGES);
            // SAFETY: the caller's contract; the stage is free once both
            // consumers released its previous round.
            unsafe {
                if round > 0 {
                    ring.empty(s).wait(((round - 1) % 2) as u32);
                }
                fill(s, step, origin);
            }
            it += 1;
        }
    }
}

/// A consumer warpgroup's sums for one tile: the ring's k-steps `*it..*it
/// + steps`. Each stage is waited for on "full" (parity: its round mod 2),
/// multiplied, and released on "empty" (one arrival per warpgroup) once
/// the next stage's group is queued behind it (`wait_group 1`), the last
/// after `wait_group 0`.
///
/// # Safety
/// The warpgroup runs it converged; the ring initialized, with the
/// producer filling these k-steps.
#[inline(always)]
pub(crate) unsafe fn consume<E: Element, T: Tile>(
    ring: Ring<E, T>,
    consumer: usize,
    steps: usize,
    it: &mut usize,
) -> T::Acc {
    // SAFETY: the caller's contract; initialized, and this is the
    // warpgroup's one arrival for the stage's round, after its `wgmma`
    // reads of it completed.
    unsafe { consume_with(ring, consumer, steps, it, |empty| empty.arrive()) }
}

/// [`consume`], releasing each stage with `release(its "empty")` from the
/// warpgroup's first thread.
///
/// # Safety
/// As for [`consume`]; `release` is safe to call once per stage and
/// round, after the warpgroup's reads of the stage completed.
#[inline(always)]
unsafe fn consume_with<E: Element, T: Tile>(
    ring: Ring<E, T>,
    consumer: usize,
    steps: usize,
    it: &mut usize,
    release: impl Fn(Mbarrier),
) -> T::Acc {
    let leader = thread_idx_x().is_multiple_of(128);
    let release = |i: usize| release(ring.empty(i % T::STAGES));
    let mut acc = T::Acc::zeroed();
    for step in 0..steps {
        let s = *it % T::STAGES;
        // SAFETY: the caller's contract; the stage has landed after the
        // wait.
        acc = unsafe {
            ring.full(s).wait(((*it / T::STAGES) % 2) as u32);
            ring.multiply(s, consumer, acc)
        };
        acc = wgmma::wait_for::<1, _>(acc);
        if step > 0 && leader {
            release(*it - 1);
        }
        *it += 1;
    }
    acc = wgmma::wait_for::<0, _>(acc);
    if steps > 0 && leader {
        release(*it - 1);
    }
    acc
}

/// Warpgroup `wg`'s sums (rows `64 wg..+64` of the block tile) into C,
/// inside C only. Accumulators `2 j` and `2 j + 1` are neighbours in a
/// row: with `PAIRS` (`n` even, as in every bf16 TMA problem) the pair is
/// 8-byte aligned, one 8-byte store, and a warp's store fills 8 whole
/// 32-byte sectors; otherwise (an odd `n`, which tf32 allows) two 4-byte
/// stores.
///
/// A thread's 128 sums lie in two rows, 8 apart, at columns `8 (j / 2) +
/// 2 q` ([`d_f32`]): where the tile lies wholly inside C (every tile but
/// the last row and column of them), each store is at a constant offset
/// from one of two row pointers, unguarded; edge tiles check every pair.
///
/// # Safety
/// `c` holds `m n` elements; with `PAIRS`, `n` is even; no other thread
/// writes these.
#[inline(always)]
unsafe fn store<const PAIRS: bool>(
    c: &Out<f32>,
    acc: &[f32; 128],
    origin: (usize, usize),
    wg: usize,
    t: u32,
    (m, n): (usize, usize),
) {
    // SAFETY: the caller's contract, C's rows `n` apart from its start.
    unsafe { store_at::<PAIRS, _>(c, acc, Wide::part_at(origin, wg), t, (m, n), (0, n)) }
}

/// [`store`] of a warpgroup's part of a tile, at `(m0, n0)` in C (its
/// 64 rows and `A::N` columns), into the `m x n` matrix whose element `(i,
/// j)` is `c[base + i ldc + j]`.
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

/// 4. `wgmma` fed by TMA and mbarriers.
///
/// Each stage is filled by one thread with five TMA copies (A's 128 x 64
/// box and B's four 64 x 64 boxes, 48 KB) that count their bytes on the
/// stage's mbarrier, so no other thread spends an instruction on loads:
/// the copy engine writes the swizzles, which are the layouts the `wgmma`
/// descriptors read. Each warpgroup multiplies its 64 x 256 piece of C
/// with four `wgmma.m64n256k16` per stage, each 64 x 256 x 16 =
/// 262,144 multiply-adds in one instruction for 128 threads (a k16 of
/// `mma.sync` m16n8k16 tiles would take 128 instructions per warpgroup),
/// with 128 `f32` accumulators per thread.
///
/// The ring: `STAGES - 1` stages are in flight while one is multiplied.
/// At its `i`-th use stage `s` is waited for with parity `(i / STAGES) mod
/// 2`; after the multiplies have completed (`wgmma.wait_group 0`) and a
/// barrier, thread 0 refills it with the k-step `STAGES` ahead. That wait
/// and barrier stall the tensor cores once per stage, which is what step 5
/// (producer and consumer warpgroups) removes.
///
/// Launch: `maps` as the module says; the grid covers C with 128 x 256
/// tiles, 256 threads; `k` and `n` multiples of 8.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_bf16`.
#[kernel(block = THREADS, shared = shared_bytes(), tile = [BN, BM], arch = "sm_90a")]
pub fn tc_wgmma_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x() as usize;
    let (ring, steps) = start::<Bf16>(maps, 1, k);
    if t == 0 {
        for s in 0..STAGES.min(steps) {
            // SAFETY: thread 0; nothing touches the stage before its wait.
            unsafe { ring.fill(s, s, ring.origin) };
        }
    }
    let wg = t / 128;
    let mut acc = wgmma::zeros();
    for step in 0..steps {
        let s = step % STAGES;
        // SAFETY: initialized above; then the warpgroup, converged, on a
        // landed stage.
        acc = unsafe {
            ring.full(s).wait(((step / STAGES) % 2) as u32);
            ring.multiply(s, wg, acc)
        };
        acc = wgmma::wait::<0>(acc);
        // Every warpgroup is done with stage s.
        sync_threads();
        if t == 0 && step + STAGES < steps {
            // SAFETY: as above.
            unsafe { ring.fill(s, step + STAGES, ring.origin) };
        }
    }
    // SAFETY: c holds m n elements; each thread its own.
    unsafe { store::<true>(&c, &acc, ring.origin, wg, (t % 128) as u32, (m as usize, n as usize)) };
}

/// Threads of [`tc_wgmma_ws_bf16()`]: a producer warpgroup and two consumers.
pub const WS_THREADS: usize = 384;

/// 5. Warp specialization: a producer warpgroup and two consumers.
///
/// Step 4's warpgroups both load and multiply, so once per stage they all
/// stop: each waits for its `wgmma`s to finish (`wait_group 0`) and for
/// the block's barrier before the stage can be refilled, and the tensor
/// cores idle meanwhile. Here the roles are split. One thread of the
/// producer warpgroup only fills stages: before reusing stage `s` it waits
/// on the stage's "empty" mbarrier. The two consumer warpgroups only
/// multiply: each waits on the stage's "full" mbarrier, issues its four
/// `wgmma`s, then waits for the *previous* stage's group (`wait_group 1`,
/// so one group is always queued behind the running one) and releases
/// that stage with one arrival on its "empty" mbarrier (count 2, one per
/// consumer). No `sync_threads` after the start: the mbarriers order
/// everything, and the tensor cores always have the next group queued.
///
/// Phases: at round `r = i / STAGES` of stage `s`, consumers wait on
/// "full" with parity `r mod 2`, the producer (from the second round on)
/// on "empty" with parity `(r - 1) mod 2`.
///
/// Launch: as [`tc_wgmma_bf16()`], with 384 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_ws_bf16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, arch = "sm_90a")]
pub fn tc_wgmma_ws_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x() as usize;
    let (ring, steps) = start::<Bf16>(maps, 2, k);
    if t < 128 {
        // SAFETY: the warpgroup, converged; 40 + 2 x 232 = 3 x 168, the
        // registers ptxas gives each of the 384 threads.
        unsafe { registers::release::<40>() };
        if t == 0 {
            // SAFETY: one thread; "empty" counts the two consumers.
            unsafe { produce(ring, core::iter::once(ring.origin), steps) };
        }
        return;
    }
    // SAFETY: as above; the producer releases what this claims.
    unsafe { registers::claim::<232>() };
    let consumer = t / 128 - 1;
    // SAFETY: the warpgroup, converged; the producer fills these steps.
    let acc = unsafe { consume(ring, consumer, steps, &mut 0) };
    // SAFETY: c holds m n elements; each thread its own.
    unsafe { store::<true>(&c, &acc, ring.origin, consumer, (t % 128) as u32, (m as usize, n as usize)) };
}

/// Tile-rows per group of [`tc_wgmma_persistent_bf16()`]'s tile order.
pub const GROUP: usize = 16;

/// [`grouped`] with groups of `group` tile-rows.
#[inline(always)]
pub fn grouped_by(group: usize, i: usize, (tiles_m, tiles_n): (usize, usize)) -> (usize, usize) {
    let per_group = (group * tiles_n).max(1);
    let first = i / per_group * group;
    let rows = tiles_m.saturating_sub(first).clamp(1, group.max(1));
    let j = i % per_group;
    (first + j % rows, j / rows)
}

/// Tile `i` of a `tiles_m x tiles_n` grid of block tiles, in grouped
/// order: down a group of [`GROUP`] tile-rows, then to the next column,
/// group after group. The tiles in flight at once (one per SM) then share
/// a few stripes of A and of B rather than one stripe of A and all of B.
///
/// (`i` < `tiles_m tiles_n`, so neither divisor is 0; the clamps say so
/// to the compiler, which otherwise keeps a panic path for each.)
#[inline(always)]
pub fn grouped(i: usize, grid: (usize, usize)) -> (usize, usize) {
    grouped_by(GROUP, i, grid)
}

/// 6. Persistent blocks and a grouped tile order.
///
/// ncu on step 5 at 8192^3 shows the memory system, not the tensor cores,
/// at its limit: L2 busy nearly all the time and half its reads missing to
/// DRAM. One block per tile, launched in row order, puts 132 tiles in
/// flight that span 4 tile-rows of A and all 32 tile-columns of B: each
/// wave streams the whole of B. Here one block per SM loops over the
/// tiles (`persistent`), taking them in grouped order ([`grouped`]): 16
/// tile-rows by 8 tile-columns per wave, half the stripes. And the ring
/// runs on across tiles: the producer fills the next tile's stages while
/// the consumers store the last one's sums, so no tile starts with an
/// empty pipeline.
///
/// Each thread counts the k-steps it has seen over all its tiles (`it`):
/// stage `it mod STAGES`, round `it / STAGES`, as in step 5. A consumer
/// releases a stage once the next group is queued, and the last stage of a
/// tile after its final `wait_group 0`.
///
/// Launch: as [`tc_wgmma_ws_bf16()`], one block per SM (fewer if there are
/// fewer tiles).
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_bf16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<Bf16>(maps, c, (m, n, k));
}

/// 6, f16: step 6 on IEEE binary16 inputs (`wgmma`'s f16 form; the
/// layouts, copies and ring of the bf16 kernel).
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], with maps of f16 A and B.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_f16`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_f16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<F16>(maps, c, (m, n, k));
}

/// 6, tf32: step 6 on `f32` inputs read as tf32, `C = A bt^T` with `bt`
/// the `n x k` transpose of B.
///
/// `wgmma`'s tf32 form is `m64n256k8`: a k8 of 4-byte elements is the same
/// 32 bytes of a shared row as a bf16 k16, so a stage holds 32 of k in the
/// same 48 KB (A 128 x 32, B 256 x 32) and four instructions consume it,
/// at half the multiply-adds: the tensor cores' tf32 rate is half their
/// bf16 rate, and the bytes per multiply-add double. Neither operand may
/// be MN-major, so B comes K-major, one 256 x 32 box per stage from `bt`.
/// Each input loses its low 13 mantissa bits (truncated, 10 kept): the
/// host's error bound allows `2^-10` relative per input.
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], with maps of `f32` A (`m x
/// k`) and `bt` (`n x k`); `k` a multiple of 4 (16-byte rows), any `m` and `n`.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_persistent_tf32`.
#[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
pub fn tc_wgmma_persistent_tf32(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    persistent::<Tf32>(maps, c, (m, n, k));
}

/// Step 6's body for either element type (see
/// [`tc_wgmma_persistent_bf16`]).
#[inline(always)]
fn persistent<E: Element>(maps: In<u64>, c: Out<f32>, (m, n, k): (u32, u32, u32)) {
    let t = thread_idx_x() as usize;
    let (m, n) = (m as usize, n as usize);
    let (ring, steps) = start::<E>(maps, 2, k);
    let grid = (m.div_ceil(BM), n.div_ceil(BN));
    // This block's tiles, as the origins of their C tiles.
    let tiles = (block_idx_x() as usize..grid.0 * grid.1).step_by(grid_dim_x() as usize).map(|tile| {
        let (tm, tn) = grouped(tile, grid);
        (tm * BM, tn * BN)
    });
    if t < 128 {
        // SAFETY: the warpgroup, converged; 40 + 2 x 232 = 3 x 168.
        unsafe { registers::release::<40>() };
        if t == 0 {
            // SAFETY: one thread; "empty" counts the two consumers.
            unsafe { produce(ring, tiles, steps) };
        }
        return;
    }
    // SAFETY: as above; the producer releases what this claims.
    unsafe { registers::claim::<232>() };
    let consumer = t / 128 - 1;
    // An odd n (tf32 only: 16-bit TMA needs multiples of 8) stores element
    // by element, in a loop of its own: the even loop has no branch. (The
    // even loop is written out here: through `consume_tiles` too, the
    // same source measured slower for bf16, a matter of where LLVM places
    // the blocks; docs/notes.md has the numbers.)
    let t = (t % 128) as u32;
    // SAFETY: the warpgroup, converged; the producer fills these tiles.
    unsafe {
        if E::BYTES == 2 || n.is_multiple_of(2) {
            let mut it = 0;
            for origin in tiles {
                let acc = consume(ring, consumer, steps, &mut it);
                store::<true>(&c, &acc, origin, consumer, t, (m, n));
            }
        } else {
            consume_tiles::<E, false>(ring, tiles, (consumer, t), steps, &c, (m, n));
        }
    }
}

/// A consumer warpgroup of step 6: each of its tiles' sums ([`consume`]),
/// stored ([`store`]).
///
/// # Safety
/// The warpgroup runs it converged; the producer fills `tiles` as here;
/// `c` holds `m n` elements, `n` even with `PAIRS`.
#[inline(always)]
unsafe fn consume_tiles<E: Element, const PAIRS: bool>(
    ring: Ring<E>,
    tiles: impl Iterator<Item = (usize, usize)>,
    (consumer, t): (usize, u32),
    steps: usize,
    c: &Out<f32>,
    (m, n): (usize, usize),
) {
    let mut it = 0;
    for origin in tiles {
        // SAFETY: the caller's contract.
        unsafe {
            let acc = consume(ring, consumer, steps, &mut it);
            store::<PAIRS>(c, &acc, origin, consumer, t, (m, n));
        }
    }
}

/// Blocks per cluster of [`tc_wgmma_cluster_bf16()`]: two, one above the
/// other in C, sharing their B.
pub const CLUSTER: usize = 2;

impl Ring<Bf16> {
    /// Step 7's fill of stage `s`, in the block of rank `rank` of its
    /// cluster: its own A box as in [`Ring::fill`], and its share of B,
    /// boxes `2 rank` and `2 rank + 1` of the four, multicast to every
    /// block of the cluster (whose tiles all start at column `n0`). "full"
    /// expects the whole stage's bytes: its A, its B boxes, and those the
    /// other blocks multicast, which count on it as they land.
    ///
    /// # Safety
    /// One thread of each block; nothing reads or writes the stage in any
    /// block of the cluster until its "full" phase is observed complete,
    /// the stage free in every block (each one's consumers released it).
    #[inline(always)]
    unsafe fn fill_multicast(self, s: usize, step: usize, (m0, n0): (usize, usize), rank: usize) {
        let (at, k0) = (self.stage(s), (step * Bf16::BK) as i32);
        let everyone = ((1 << CLUSTER) - 1) as u16;
        // SAFETY: as for `fill`; the B boxes land at the same offsets in
        // every block, each counting them on its own "full".
        unsafe {
            self.full(s).arrive_expect_tx(STAGE_BYTES as u32);
            copy_2d(at, self.maps, 0, (k0, m0 as i32), self.full(s));
            seq!(H in 0..2 {{
                let j = 2 * rank + H;
                let box_at = at.wrapping_add(A_BYTES + j * B_BOX_BYTES);
                copy_2d_multicast(box_at, self.maps, 1, ((n0 + j * B_BOX_COLS) as i32, k0), self.full(s), everyone);
            }});
        }
    }
}

/// 7. Thread-block clusters and TMA multicast.
///
/// In step 6 two blocks on tiles one above the other read the same B
/// stripe from L2, each for itself: per stage 16 KB of A and 32 KB of B a
/// block, and L2 serves every byte once per block. Here the two are one
/// cluster of 2 (`cluster = [2, 1, 1]`): each block's producer copies its
/// own A box and *half* of B, and multicasts that half into both blocks'
/// shared memory (`copy_2d_multicast`, mask `0b11`). A stage still holds
/// all 48 KB in each block, but the pair asks L2 for 2 x 16 + 32 = 64 KB
/// instead of 96: a third less traffic per multiply-add.
///
/// The price is coupling. A producer now writes into its peer's stage, so
/// it must wait until the *peer's* consumers are done with it too: each
/// consumer warpgroup releases a stage on the "empty" mbarrier of both
/// blocks (`arrive_in(rank)`: `mapa` and a remote arrive), and "empty"
/// counts 2 x 2 arrivals. "full" expects 48 KB in each block, which the
/// two producers' copies complete between them. The mbarriers must be
/// initialized in both blocks before either uses the other's (a cluster
/// barrier after the initialization), and no block may exit while its
/// peer can still arrive on its mbarriers (a cluster barrier at the end).
///
/// The persistent schedule of step 6 runs over cluster tiles of 256 x
/// 256 (the pair's tiles), in grouped order with the same stripes per
/// group; the block of rank `r` takes rows `128 r..+128` of each.
///
/// Launch: as [`tc_wgmma_persistent_bf16()`], in whole clusters of 2.
/// Measured: `BENCHMARKS.md`, rows `tc_wgmma_cluster_bf16`.
#[kernel(
    block = WS_THREADS,
    shared = shared_bytes(),
    tile = [BN, BM],
    min_blocks = 1,
    persistent = true,
    cluster = [CLUSTER, 1, 1],
    arch = "sm_90a"
)]
pub fn tc_wgmma_cluster_bf16(maps: In<u64>, c: Out<f32>, m: u32, n: u32, k: u32) {
    let t = thread_idx_x() as usize;
    let (m, n) = (m as usize, n as usize);
    let rank = cluster_rank() as usize;
    let ring = Ring::<Bf16>::new(maps);
    if t == 0 {
        // SAFETY: thread 0; the cluster barrier follows. "empty" counts
        // both consumers of every block of the cluster.
        unsafe { ring.init(2 * CLUSTER as u32) };
    }
    // Both blocks' mbarriers initialized and visible cluster-wide before
    // either arrives on or copies into the other's.
    cluster_sync();
    let steps = (k as usize).div_ceil(Bf16::BK);
    let grid = (m.div_ceil(CLUSTER * BM), n.div_ceil(BN));
    let clusters = grid_dim_x() as usize / CLUSTER;
    // This cluster's tiles, and this block's part of each (rows 128 rank..).
    let tiles = (block_idx_x() as usize / CLUSTER..grid.0 * grid.1).step_by(clusters.max(1)).map(|tile| {
        let (tm, tn) = grouped_by(GROUP / CLUSTER, tile, grid);
        ((CLUSTER * tm + rank) * BM, tn * BN)
    });
    if t < 128 {
        // SAFETY: the warpgroup, converged; 40 + 2 x 232 = 3 x 168.
        unsafe { registers::release::<40>() };
        if t == 0 {
            // SAFETY: one thread; "empty" counts every consumer of the
            // cluster, so a stage is free in both blocks when it is here.
            unsafe {
                produce_with(ring, tiles, steps, |s, step, origin| ring.fill_multicast(s, step, origin, rank))
            };
        }
    } else {
        // SAFETY: as above; the producer releases what this claims.
        unsafe { registers::claim::<232>() };
        let consumer = t / 128 - 1;
        let t = (t % 128) as u32;
        let mut it = 0;
        // SAFETY: the warpgroup, converged; the producers fill these
        // tiles; each stage is released in both blocks, whose "empty"
        // expect it (initialized before the cluster barrier, and neither
        // block exits before the one below).
        let release = |empty: Mbarrier| unsafe {
            for r in 0..CLUSTER as u32 {
                empty.arrive_in(r);
            }
        };
        for origin in tiles {
            // SAFETY: as above; c holds m n elements, n even (TMA's 16-byte
            // rows), each thread its own.
            unsafe {
                let acc = consume_with(ring, consumer, steps, &mut it, release);
                store::<true>(&c, &acc, origin, consumer, t, (m, n));
            }
        }
    }
    // The peer may still arrive on this block's "empty" mbarriers.
    cluster_sync();
}
