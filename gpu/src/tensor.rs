// Over 800 lines: the mma.sync ladder is read top to bottom as one lesson, each kernel a step from the one before over shared private fragment code.
//! Tensor cores: the GEMM ladder continued through `mma.sync`.
//!
//! The kernels here compute `C = A B` for row-major `A` (`m x k`) and `B`
//! (`k x n`) in bf16 (`tc_mma_f16_async`: IEEE binary16; the steps move
//! their bits as `u16`, whatever they mean) and `C` (`m x n`) in `f32`, accumulating in `f32`; the tf32
//! ones (`tf32`, and one in `hopper`) take `f32` A and B transposed. Any
//! `m`, `n`, `k` for the `mma.sync` steps: edge tiles read zeros outside
//! the matrices and store only inside `C`. The device layer's `mma` module
//! says which lane holds which element of each fragment.
//!
//! FLOPs: `2 m n k`. One `m16n8k16` does 16 x 8 x 16 = 2048 multiply-adds
//! for the warp in one instruction, where the FP32 pipe takes 64 `FFMA`
//! instructions: the tensor cores' rate is an order of magnitude above
//! SGEMM's, which is why the ceiling here is cuBLAS's GEMM in the same
//! precision.
//!
//! Steps 1-3 share one warp tile: 64 x 64 of C as 4 x 8 `m16n8` fragments
//! (128 `f32` sums per lane), in blocks of 128 rows: 128 x 128 (4 warps,
//! two blocks per SM) in step 1, 128 x 256 (8 warps) in steps 2 and 3. Per
//! k16 a warp reads 4 A fragments (512 bytes each) and 8 B fragments (256
//! each) for 32 `mma.sync`s: 4 KB of shared memory per 64 K multiply-adds,
//! where a 64 x 32 warp tile reads 3 KB per 32 K.

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

/// Steps 4 and on: `wgmma`, TMA and mbarriers, in the sm_90a PTX only.
pub mod hopper;
/// Step 1 in tf32: `mma.sync` m16n8k8 on `f32` inputs.
pub mod tf32;
mod transposed;

use transposed::Transposed;

use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::mma::{c_f32, mma_m16n8k16};
use crate::dev::registers::{opaque, pair_halves};
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use half::{bf16, f16};
use seq_macro::seq;

/// Block tile of steps 1-3: 128 rows of C by `W` columns (step 1: 128,
/// two blocks per SM; steps 2 and 3: 256, one), 32 of k per step; `W`
/// threads, `W / 32` warps as 2 rows of `W / 64`, each a 64 x 64 warp tile
/// of 4 x 8 `m16n8` tiles.
pub const BM: usize = 128;
pub const BK: usize = 32;

/// One warp's sums: its `64 x 8 N` piece of C as 4 x `N` `m16n8` fragments
/// (steps 1-3: `N` = 8; the tf32 step: 4).
pub(crate) type Sums<const N: usize = 8> = [[[f32; 4]; N]; 4];

/// Bytes of A's tile in a stage: 128 rows of 32 bf16 (64 bytes).
const A_BYTES: usize = 2 * BM * BK;
/// Bytes of one stage of a `w`-wide block tile: A's tile, then B's (32 x
/// `w` bf16, in either orientation).
const fn stage_bytes(w: usize) -> usize {
    2 * (BM * BK + BK * w)
}

/// Where a thread works: its index `t` and lane, its warp's 64 x 64 piece
/// of the block tile (`w / 32` warps as 2 rows of `w / 64`), the block
/// tile's origin in C, and the tile's width `w` (also the threads).
#[derive(Clone, Copy)]
struct Place {
    t: usize,
    lane: u32,
    warp: (usize, usize),
    block: (usize, usize),
    w: usize,
}

impl Place {
    #[inline(always)]
    fn here(w: usize) -> Place {
        let t = thread_idx_x() as usize;
        let (warp, across) = (t / 32, w / 64);
        Place {
            t,
            lane: (t % 32) as u32,
            warp: (warp / across * 64, warp % across * 64),
            block: (block_idx_y() as usize * BM, block_idx_x() as usize * w),
            w,
        }
    }
}

/// The operands as a block stages them: A and B, the problem, this
/// thread's place, and whether every row starts on 16 bytes (`k` and `n`
/// multiples of 8: then a run of 8 elements starting at a multiple of 8,
/// or of 4 at a multiple of 4, is wholly inside or wholly outside its
/// matrix, and one vector load takes it).
#[derive(Clone, Copy)]
struct Operands {
    a: In<u16>,
    b: In<u16>,
    m: usize,
    n: usize,
    k: usize,
    place: Place,
    vector: bool,
}

impl Operands {
    #[inline(always)]
    fn new(a: In<u16>, b: In<u16>, (m, n, k): (u32, u32, u32), w: usize) -> Operands {
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let vector = k.is_multiple_of(8) && n.is_multiple_of(8);
        Operands { a, b, m, n, k, place: Place::here(w), vector }
    }

    /// Whether the block tile lies wholly inside C, rows start on 16
    /// bytes, and every element index of A and B fits in 32 bits: then
    /// every k-step wholly inside `k` is loaded by [`Layout::load_inside`].
    #[inline(always)]
    fn inside(&self) -> bool {
        let (m0, n0) = self.place.block;
        let fits = |rows: usize, cols: usize| rows as u64 * cols as u64 <= 1 << 32;
        self.vector
            && m0 + BM <= self.m
            && n0 + self.place.w <= self.n
            && fits(self.m, self.k)
            && fits(self.k, self.n)
    }

    /// A's vector `h` of this thread: tile row `v / 4`, columns `8 (v %
    /// 4)..+8` for `v = t + w h` (a 256-thread block: h 0 or 1), as `(row,
    /// chunk)`.
    #[inline(always)]
    fn a_spot(&self, h: usize) -> (usize, usize) {
        let v = self.place.t + h * self.place.w;
        (v / 4, v % 4)
    }

    /// A's vector `h` of this thread in the k-step at `k0` ([`Operands::a_spot`]),
    /// as four words (zeros outside A).
    #[inline(always)]
    fn a_vector<const VECTOR: bool>(&self, k0: usize, h: usize) -> [u32; 4] {
        let (r, chunk) = self.a_spot(h);
        let (row, kk) = (self.place.block.0 + r, k0 + 8 * chunk);
        let inside = if row < self.m { self.k.saturating_sub(kk) } else { 0 };
        words::<VECTOR, 4>(self.a, row * self.k + kk, inside)
    }
}

/// `2 N` bf16 from `i` as `N` words (`N` = 4 or 2; the lower index in
/// the low half), the first `inside` of them read from `src`, the rest
/// zeros. `VECTOR`: `inside` is 0 or at least `2 N` and `i` a multiple of
/// `2 N`, so one 16- or 8-byte load reads them. Loads only: nothing here
/// waits for the data, so a prefetch stays in flight until its store.
#[inline(always)]
fn words<const VECTOR: bool, const N: usize>(src: In<u16>, i: usize, inside: usize) -> [u32; N] {
    const { assert!(N == 4 || N == 2, "16- or 8-byte vectors") };
    if !VECTOR {
        // SAFETY: each element guarded: inside the buffer, or a zero.
        let e = |j: usize| if j < inside { u32::from(unsafe { src.load(i + j) }) } else { 0 };
        core::array::from_fn(|w| e(2 * w) | e(2 * w + 1) << 16)
    } else if inside < 2 * N {
        [0; N]
    } else {
        // SAFETY: i..i + 2 N inside the buffer, i a multiple of 2 N.
        unsafe { vector::<N>(src, i / 2) }
    }
}

/// Words `w..w + N` of `src` (`N` = 4 or 2) by one 16- or 8-byte load.
///
/// # Safety
/// They lie inside the buffer, and `w` is a multiple of `N`.
#[inline(always)]
unsafe fn vector<const N: usize>(src: In<u16>, w: usize) -> [u32; N] {
    // Each word is read once, by this thread: cached in L2 only.
    if N == 4 {
        // SAFETY: the caller's contract (16 bytes on 16).
        let v = unsafe { src.words().load16_cg(w) };
        core::array::from_fn(|i| v[i % 4])
    } else {
        // SAFETY: the caller's contract (8 bytes on 8).
        let v = unsafe { src.words().load8_cg(w) };
        core::array::from_fn(|i| v[i % 2])
    }
}

/// One stage's tiles as 32-bit words (A's at word 0, B's after it) and
/// as bf16 elements (for `ldmatrix`).
#[derive(Clone, Copy)]
struct Stage {
    a: SharedArray<u16>,
    b: SharedArray<u16>,
    a_words: SharedArray<f32>,
    b_words: SharedArray<f32>,
}

impl Stage {
    /// Stage `s` of a `w`-wide block tile.
    ///
    /// # Safety
    /// The launch passes at least `s + 1` stages of [`stage_bytes`]`(w)`.
    #[inline(always)]
    unsafe fn of(s: usize, w: usize) -> Stage {
        let at = s * stage_bytes(w);
        // SAFETY: the caller's contract; A first, B at A_BYTES.
        unsafe {
            Stage {
                a: SharedArray::launch_sized_at(at),
                b: SharedArray::launch_sized_at(at + A_BYTES),
                a_words: SharedArray::launch_sized_at(at),
                b_words: SharedArray::launch_sized_at(at + A_BYTES),
            }
        }
    }

    /// Reads words `w..w + 4` of A's tile (one 16-byte `ld.shared.v4`).
    ///
    /// # Safety
    /// `w + 4 <= BM BK / 2`, `w` a multiple of 4, after the stage's barrier.
    #[inline(always)]
    unsafe fn a4(self, w: usize) -> [u32; 4] {
        // SAFETY: the caller's contract.
        unsafe { self.a_words.load_x4(0, w) }.map(f32::to_bits)
    }

    /// Reads words `w..w + 4` of B's tile.
    ///
    /// # Safety
    /// As for [`Stage::a4`], in B's tile.
    #[inline(always)]
    unsafe fn b4(self, w: usize) -> [u32; 4] {
        // SAFETY: the caller's contract.
        unsafe { self.b_words.load_x4(0, w) }.map(f32::to_bits)
    }
}

/// How a step stages a k-step: what each thread loads from global memory
/// (held in registers across the previous k-step's multiplies), where it
/// puts it in a stage, and how a warp takes its fragments from there.
trait Layout {
    /// The block tile's width (and threads).
    const W: usize;
    /// Whether fragment rows `g` and `g + 8` are C's rows `2 g` and `2 g +
    /// 1` ([`store_c`]).
    const PAIRED: bool;
    /// What one thread holds of a k-step between its loads and its stores.
    type Held: Copy;
    /// This thread's loads of the k-step at `k0`, zeros outside the
    /// matrices (`VECTOR`: `ops.vector`, vector loads).
    fn load<const VECTOR: bool>(ops: &Operands, k0: usize) -> Self::Held;
    /// The same loads for a k-step wholly inside A and B when
    /// [`Operands::inside`]: no bounds to check, and each address one
    /// 32-bit multiply-add from a row's index and one widening
    /// multiply-add onto the base (`IMAD`, `IMAD.WIDE.U32`), where 64-bit
    /// indices with their checks take about ten instructions a load.
    fn load_inside(ops: &Operands, k0: usize) -> Self::Held;
    /// Stores what [`Layout::load`] gave into stage `s`.
    ///
    /// # Safety
    /// The launch passes at least `s + 1` stages; nobody reads the stage
    /// until a barrier, and nobody has read it since the last one.
    unsafe fn store(ops: &Operands, s: usize, held: Self::Held);
    /// One stage's k-step of 32 for a warp: its fragments, then its
    /// `mma`s.
    ///
    /// # Safety
    /// Every lane of the warp calls it alike; the stage holds the k-step's
    /// tiles (after the barrier).
    unsafe fn multiply(stage: Stage, lane: u32, warp: (usize, usize), acc: &mut Sums);
}

/// Steps 2 and 3's layout: no padding, B row-major as it comes; the
/// 16-byte pieces ("chunks") of each row are permuted by an XOR with bits
/// of the row, so that the eight rows one `ldmatrix` matrix reads (and the
/// rows 16-byte stores write) land in eight different 16-byte slots of the
/// 128-byte bank line:
///
/// - `As` rows are 64 bytes (4 chunks): chunk `c` of row `r` goes to
///   `c ^ (r / 2 mod 4)`. Rows `r..r + 8` (`r` a multiple of 8) then sit in
///   slots `4 (r mod 2) + (c ^ (r / 2 mod 4))`: all 8 different.
/// - `Bs` rows are 512 bytes (32 chunks, 4 bank lines): chunk `c` goes to
///   `c ^ (r mod 8)`, slot `(c ^ r) mod 8`: 8 consecutive rows, 8 slots.
///
/// The same 24 KB as the unpadded tiles, every access conflict-free.
struct Swizzled;

impl Swizzled {
    /// The bf16 index in `As` of row `r`, column `c`.
    #[inline(always)]
    fn a_at(r: usize, c: usize) -> usize {
        r * BK + 8 * ((c / 8) ^ ((r / 2) % 4)) + c % 8
    }

    /// The bf16 index in `Bs` of row `r`, column `c`.
    #[inline(always)]
    fn b_at(r: usize, c: usize) -> usize {
        r * Self::W + 8 * ((c / 8) ^ (r % 8)) + c % 8
    }

    /// B's vector `h` (0..4) of this thread in a k-step: tile
    /// row `v / 32`, columns `8 (v % 32)..+8` for `v = t + 256 h`: a warp
    /// reads 512 consecutive bytes of one row.
    #[inline(always)]
    fn b_spot(ops: &Operands, h: usize) -> (usize, usize) {
        let v = ops.place.t + h * Self::W;
        (v / 32, v % 32)
    }

    /// Copies this thread's vectors of the k-step at `k0` into stage `s`
    /// with 16-byte `cp.async` (zeros outside the matrices), uncommitted.
    ///
    /// # Safety
    /// `ops.vector`; as for [`Layout::store`], and nobody reads the stage
    /// until the copies are waited for.
    #[inline(always)]
    unsafe fn copy_async(ops: &Operands, s: usize, k0: usize) {
        let Operands { a, b, m, n, k, .. } = *ops;
        let (m0, n0) = ops.place.block;
        // SAFETY: the caller's contract.
        let stage = unsafe { Stage::of(s, Self::W) };
        seq!(H in 0..2 {{
            let (r, chunk) = ops.a_spot(H);
            let (row, kk) = (m0 + r, k0 + 8 * chunk);
            // SAFETY: inside A when valid (word = element / 2, a multiple
            // of 4: rows start on 16 bytes); the caller's contract.
            unsafe {
                stage.a_words.copy_async4_or_zero(0, Self::a_at(r, 8 * chunk) / 2, a.words(), (row * k + kk) / 2, row < m && kk < k)
            };
        }});
        seq!(H in 0..4 {{
            let (r, chunk) = Self::b_spot(ops, H);
            let (kk, nn) = (k0 + r, n0 + 8 * chunk);
            // SAFETY: as above, in B.
            unsafe {
                stage.b_words.copy_async4_or_zero(0, Self::b_at(r, 8 * chunk) / 2, b.words(), (kk * n + nn) / 2, kk < k && nn < n)
            };
        }});
    }
}

impl Layout for Swizzled {
    const W: usize = 256;
    const PAIRED: bool = false;
    /// A's two vectors and B's four.
    type Held = [[u32; 4]; 6];

    #[inline(always)]
    fn load<const VECTOR: bool>(ops: &Operands, k0: usize) -> Self::Held {
        let mut held = [[0u32; 4]; 6];
        held[0] = ops.a_vector::<VECTOR>(k0, 0);
        held[1] = ops.a_vector::<VECTOR>(k0, 1);
        // Four rows' addresses from k0 and n each k-step (see `opaque`).
        let (k0, n) = (opaque(k0), opaque(ops.n));
        seq!(H in 0..4 {{
            let (r, chunk) = Self::b_spot(ops, H);
            let (kk, nn) = (k0 + r, ops.place.block.1 + 8 * chunk);
            let inside = if kk < ops.k { n.saturating_sub(nn) } else { 0 };
            held[2 + H] = words::<VECTOR, 4>(ops.b, kk * n + nn, inside);
        }});
        held
    }

    #[inline(always)]
    fn load_inside(ops: &Operands, k0: usize) -> Self::Held {
        let t = ops.place.t as u32;
        let (m0, n0) = (ops.place.block.0 as u32, ops.place.block.1 as u32);
        // In words (k and n are even): rows of k / 2 and n / 2.
        let (k, n, k0) = (opaque(ops.k as u32 / 2), opaque(ops.n as u32 / 2), opaque(k0 as u32));
        // A's rows t / 4 + 64 H (`a_spot`), B's rows t / 32 + 8 H (`b_spot`).
        let a = (m0 + t / 4) * k + k0 / 2 + 4 * (t % 4);
        let b = (k0 + t / 32) * n + n0 / 2 + 4 * (t % 32);
        let mut held = [[0u32; 4]; 6];
        // SAFETY: inside A (`inside`), 16 bytes on 16.
        seq!(H in 0..2 { held[H] = unsafe { vector::<4>(ops.a, (a + 64 * H * k) as usize) }; });
        // SAFETY: inside B, 16 bytes on 16.
        seq!(H in 0..4 { held[2 + H] = unsafe { vector::<4>(ops.b, (b + 8 * H * n) as usize) }; });
        held
    }

    #[inline(always)]
    unsafe fn store(ops: &Operands, s: usize, held: Self::Held) {
        // SAFETY: the caller's contract.
        let stage = unsafe { Stage::of(s, Self::W) };
        seq!(H in 0..2 {{
            let (r, chunk) = ops.a_spot(H);
            // SAFETY: row < 128, a whole chunk (the swizzle moves chunks).
            unsafe { stage.a_words.store_x4(0, Self::a_at(r, 8 * chunk) / 2, held[H].map(f32::from_bits)) };
        }});
        seq!(H in 0..4 {{
            let (r, chunk) = Self::b_spot(ops, H);
            // SAFETY: row < 32, a whole chunk.
            unsafe { stage.b_words.store_x4(0, Self::b_at(r, 8 * chunk) / 2, held[2 + H].map(f32::from_bits)) };
        }});
    }

    #[inline(always)]
    unsafe fn multiply(stage: Stage, lane: u32, warp: (usize, usize), acc: &mut Sums) {
        // SAFETY: the caller's contract.
        unsafe { multiply_by_ldmatrix(stage, lane, warp, acc, mma_m16n8k16::<bf16>) }
    }
}

/// Shared stages of steps 1 and 2.
pub const PREFETCH_STAGES: usize = 2;
/// How many k-steps ahead steps 1 and 2 load a k-step's tiles.
const LOADS_AHEAD: usize = 2;

/// Steps 1 and 2's main loop, the SGEMM ladder's register prefetch made a
/// pipeline: a k-step's tiles are loaded into registers two k-steps
/// ahead and stored into shared memory one k-step ahead. At the start of
/// k-step `i` (after its barrier) each thread stores what it loaded during
/// k-step `i - 1` (the tiles of `i + 1`, which have had a whole k-step of
/// multiplies to arrive) into the stage read in k-step `i - 1` (every warp
/// is past it: the barrier), loads the tiles of `i + 2` into the same
/// registers, and multiplies k-step `i`. Two stages, one barrier per
/// k-step, and no register holds more than one k-step's loads; storing at
/// the end of the k-step instead, as the SGEMM ladder does, leaves each
/// load only the rest of its k-step's multiplies to arrive. The vector and
/// the element-by-element loads are two copies of the loop, chosen once:
/// inside one, nothing between a load and its store reads the loaded
/// registers. A block tile inside C runs its k-steps wholly inside `k`
/// without bounds checks ([`Layout::load_inside`]), then the rest checked.
#[inline(always)]
fn prefetch_loop<L: Layout>(a: In<u16>, b: In<u16>, c: Out<f32>, dims: (u32, u32, u32)) {
    let ops = Operands::new(a, b, dims, L::W);
    if ops.vector { prefetch_loop_of::<L, true>(&ops, c) } else { prefetch_loop_of::<L, false>(&ops, c) }
}

#[inline(always)]
fn prefetch_loop_of<L: Layout, const VECTOR: bool>(ops: &Operands, c: Out<f32>) {
    let Place { lane, warp: (wm, wn), block: (m0, n0), .. } = ops.place;
    let mut acc: Sums = [[[0.0f32; 4]; 8]; 4];
    // SAFETY: stage 0 of the declared two, read after the barrier.
    unsafe { L::store(ops, 0, L::load::<VECTOR>(ops, 0)) };
    let mut held = L::load::<VECTOR>(ops, BK);
    sync_threads();
    let steps = ops.k.div_ceil(BK);
    // The k-steps whose loads (two ahead) lie wholly inside A and B, for a
    // block tile inside C, run without bounds checks; the rest with them.
    let unchecked = if VECTOR && ops.inside() { (ops.k / BK).saturating_sub(LOADS_AHEAD) } else { 0 };
    for step in 0..unchecked {
        k_step::<L>(ops, step, &mut held, &mut acc, |k0| L::load_inside(ops, k0));
    }
    for step in unchecked..steps {
        k_step::<L>(ops, step, &mut held, &mut acc, |k0| L::load::<VECTOR>(ops, k0));
    }
    // SAFETY: the launch's contract: c holds m n elements.
    unsafe { store_c(c, &acc, lane, (m0 + wm, n0 + wn), (ops.m, ops.n), L::PAIRED) };
}

/// K-step `step` of [`prefetch_loop`]: stores `held` (its next k-step's
/// tiles), loads the tiles [`LOADS_AHEAD`] k-steps ahead into it with
/// `load`, multiplies, and waits for the block.
#[inline(always)]
fn k_step<L: Layout>(
    ops: &Operands,
    step: usize,
    held: &mut L::Held,
    acc: &mut Sums,
    load: impl Fn(usize) -> L::Held,
) {
    // SAFETY: stage (step + 1) % 2 was last read in k-step step - 1,
    // before the last barrier; it is read after the next one.
    unsafe { L::store(ops, (step + 1) % PREFETCH_STAGES, *held) };
    *held = load((step + LOADS_AHEAD) * BK);
    // SAFETY: the whole block runs this alike; the stage was filled
    // before this k-step's barrier.
    unsafe { L::multiply(Stage::of(step % PREFETCH_STAGES, L::W), ops.place.lane, ops.place.warp, acc) };
    sync_threads();
}

/// 1. `mma.sync` with shared-memory tiles: the first tensor-core step.
///
/// Each k-step of 32 stages a 128 x 32 tile of A and a 32 x 128 tile of B
/// in shared memory (16 KB), B turned n-major on its way (`Transposed`);
/// then each of the 4 warps, a 64 x 64 piece of C, takes every fragment
/// with 16-byte shared loads (16 per k-step) and does 2 x 4 x 8
/// `m16n8k16`: 64 x 2048 multiply-adds per barrier. The tiles pass through
/// registers, loaded two k-steps ahead and stored one ahead into two
/// shared stages (`prefetch_loop`): four 16-byte loads of A and eight
/// 8-byte loads of B per thread and k-step have a whole k-step of
/// multiplies to arrive. Global loads are 16 and 8 bytes wide when rows
/// start on 16 bytes (`k` and `n` multiples of 8), element by element with
/// zeros outside the matrices otherwise.
///
/// Registers: 128 sums and 32 words of loads in flight per thread, over
/// 200 in all, so two blocks of 4 warps share an SM, one's barrier and
/// loads overlapping the other's multiplies. Per k-step and block: 2 x 128
/// x 128 x 32 = 1 M FLOPs for 16 KB from L2, 64 FLOP per byte.
///
/// Launch: `a` holds `m k`, `b` `k n`, `c` `m n` elements; the grid covers
/// C with 128 x 128 tiles (`tile`), 128 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16`.
#[kernel(block = Transposed::W, shared = PREFETCH_STAGES * stage_bytes(Transposed::W), tile = [Transposed::W, BM], min_blocks = 2)]
pub fn tc_mma_bf16(a: In<bf16>, b: In<bf16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    prefetch_loop::<Transposed>(a.same_bytes(), b.same_bytes(), c, (m, n, k));
}

/// 2. `ldmatrix` from a swizzled layout.
///
/// Step 1 turns B n-major in registers on its way into shared memory (8
/// loads of 8 bytes and 16 byte shuffles per thread and k-step) so that
/// its fragments are plain 16-byte loads. `ldmatrix` gives the same
/// fragments from the layout B arrives in: one `ldmatrix.x4` gives a lane
/// a whole 16 x 16 A fragment, and one `ldmatrix.x4.trans` two 16 x 8 B
/// fragments read k-row by k-row from the row-major `Bs`: 8 per k16, the
/// same bytes as step 1's loads. The tiles are staged as they come (16-byte
/// loads and stores); their rows are 16-byte pieces anywhere in shared
/// memory, so the pieces are permuted (`Swizzled`) and each 8 x 8 matrix
/// is served in one pass. Without the transposition a thread holds 24
/// words of loads, not 32: the block tile grows to 128 x 256 (8 warps, one
/// block per SM), 85 FLOP per byte from L2. The same two-stage register
/// pipeline as step 1 (`prefetch_loop`).
///
/// Launch: as [`tc_mma_bf16()`], with 128 x 256 tiles and 256 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_ldmatrix_bf16`.
#[kernel(block = Swizzled::W, shared = PREFETCH_STAGES * stage_bytes(Swizzled::W), tile = [Swizzled::W, BM])]
pub fn tc_ldmatrix_bf16(a: In<bf16>, b: In<bf16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    prefetch_loop::<Swizzled>(a.same_bytes(), b.same_bytes(), c, (m, n, k));
}

/// Stages in flight of [`tc_mma_bf16_async()`].
pub const STAGES: usize = 3;

/// 3. A 3-stage `cp.async` pipeline, on step 2's layout and `ldmatrix`.
///
/// Steps 1 and 2 pass every tile through registers (24 of each thread's
/// in step 2), and each thread's stores wait for its own loads. Here each
/// thread issues `cp.async.cg` copies of 16 bytes straight from global
/// into a stage of shared memory (no register holds them, no instruction
/// of the thread waits for them) for the k-step two ahead, while the
/// tensor cores work on the current one: `STAGES - 1` = 2 k-steps of
/// loads, 48 KB per block, in flight at all times. Per
/// k-step: wait for the oldest group (`cp.async.wait_group 1`), one
/// barrier (after which the stage read in the previous k-step is free),
/// issue and commit the next group, multiply.
///
/// Rows that do not start on 16 bytes (`k` or `n` not a multiple of 8)
/// cannot be copied 16 bytes at a time: such launches fill each stage with
/// ordinary guarded loads and stores instead, through the same pipeline.
///
/// Launch: as [`tc_ldmatrix_bf16()`], with [`STAGES`] stages of shared memory.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16_async`.
#[kernel(block = Swizzled::W, shared = STAGES * stage_bytes(Swizzled::W), tile = [Swizzled::W, BM])]
pub fn tc_mma_bf16_async(a: In<bf16>, b: In<bf16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    pipeline(a.same_bytes(), b.same_bytes(), c, (m, n, k), mma_m16n8k16::<bf16>);
}

/// 3, f16: step 3 on IEEE binary16 inputs: the same bytes staged the same
/// way (16-bit elements, whatever they mean), `mma.sync`'s f16 form.
///
/// Launch: as [`tc_mma_bf16_async()`], with f16 `a` and `b`.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_f16_async`.
#[kernel(block = Swizzled::W, shared = STAGES * stage_bytes(Swizzled::W), tile = [Swizzled::W, BM])]
pub fn tc_mma_f16_async(a: In<f16>, b: In<f16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    pipeline(a.same_bytes(), b.same_bytes(), c, (m, n, k), mma_m16n8k16::<f16>);
}

/// Step 3's body, multiplying with `mma` (see [`tc_mma_bf16_async`]).
#[inline(always)]
fn pipeline(a: In<u16>, b: In<u16>, c: Out<f32>, dims: (u32, u32, u32), mma: Mma) {
    let ops = Operands::new(a, b, dims, Swizzled::W);
    let Place { lane, warp: (wm, wn), block: (m0, n0), .. } = ops.place;
    // Fills stage s with the k-step at k0 (zeros past the matrices): 16-byte
    // copies when every row starts on 16 bytes, else loads and stores; and
    // commits it as one group (empty when there is nothing to load).
    let fill = |s: usize, k0: usize| {
        if k0 < ops.k {
            // SAFETY: s < STAGES, the declaration's stages; the stage is
            // not read until this group is waited for and a barrier passed.
            unsafe {
                if ops.vector {
                    Swizzled::copy_async(&ops, s, k0);
                } else {
                    Swizzled::store(&ops, s, Swizzled::load::<false>(&ops, k0));
                }
            }
        }
        commit_copies();
    };
    let mut acc: Sums = [[[0.0f32; 4]; 8]; 4];
    for s in 0..STAGES - 1 {
        fill(s, s * BK);
    }
    let steps = ops.k.div_ceil(BK);
    for step in 0..steps {
        // This k-step's group has landed (at most the newer one in flight);
        // after the barrier every thread's copies are visible, and every
        // warp is done with the stage the previous k-step read.
        wait_copies::<{ STAGES as u32 - 2 }>();
        sync_threads();
        fill((step + STAGES - 1) % STAGES, (step + STAGES - 1) * BK);
        // SAFETY: the whole block runs this alike; the stage is filled.
        unsafe { multiply_by_ldmatrix(Stage::of(step % STAGES, Swizzled::W), lane, (wm, wn), &mut acc, mma) };
    }
    // Nothing left in flight: the last groups were empty.
    wait_copies::<0>();
    // SAFETY: the launch's contract: c holds m n elements.
    unsafe { store_c(c, &acc, lane, (m0 + wm, n0 + wn), (ops.m, ops.n), false) };
}

/// Steps 2 and 3's fragments, by `ldmatrix` (see `dev::matrix`), into `mma`: lane `l`
/// names row `l % 8` of 8 x 8 matrix `l / 8`. For A's 16 x 16 at
/// `(16 MI, 16 KS)` the four matrices are rows 0-7 and 8-15 (lanes 0-15)
/// at k 0-7, then both at k 8-15 (lanes 16-31): registers 0-3 in the order
/// of the `m16n8k16` A fragment. For B, `.trans` reads k-rows 0-7 and 8-15
/// of n-block `2 P` (lanes 0-15), then of n-block `2 P + 1`: the B
/// fragments of two `m16n8` tiles. Then 4 x 8 `mma.sync` per k16.
///
/// # Safety
/// As for [`Layout::multiply`], on a [`Swizzled`] stage.
#[inline(always)]
unsafe fn multiply_by_ldmatrix(stage: Stage, lane: u32, (wm, wn): (usize, usize), acc: &mut Sums, mma: Mma) {
    let l = lane as usize;
    let (row, half) = (l % 8 + 8 * ((l / 8) % 2), 8 * (l / 16));
    seq!(KS in 0..2 {{
        // B's fragments for the k16 first, then A's one m16 at a time: 4
        // registers of A live at once, not 16.
        let mut fb = [[0u32; 2]; 8];
        seq!(P in 0..4 {{
            // SAFETY: k-row < BK, columns ..+8 < 256, 16 bytes (the layout
            // keeps 8-column pieces whole); a converged warp.
            let r = unsafe { stage.b.ldmatrix_x4_trans(0, Swizzled::b_at(16 * KS + row, wn + 16 * P + half)) };
            fb[2 * P] = [r[0], r[1]];
            fb[2 * P + 1] = [r[2], r[3]];
        }});
        seq!(MI in 0..4 {{
            // SAFETY: row < BM, columns ..+8 < BK, as above.
            let fa = unsafe { stage.a.ldmatrix_x4(0, Swizzled::a_at(wm + 16 * MI + row, 16 * KS + half)) };
            seq!(NI in 0..8 {
                // SAFETY: the caller's contract (a converged warp).
                acc[MI][NI] = unsafe { mma(fa, fb[NI], acc[MI][NI]) };
            });
        }});
    }});
}

/// An `m16n8k16` of 16-bit inputs: [`mma_m16n8k16`] in bf16 or f16 (the
/// same fragments).
type Mma = unsafe fn([u32; 4], [u32; 2], [f32; 4]) -> [f32; 4];

/// A warp's sums into C (`m x n`, row-major) at `(r0, c0)`, inside C only.
/// A lane's elements `2 h` and `2 h + 1` of a fragment are neighbours in
/// one row: one 8-byte store when `n` is even (the pair then starts on 8
/// bytes), so a warp's store fills whole 32-byte sectors of 8 rows.
/// Fragment row `g + 8 h` of an m16 is C's row `g + 8 h`, or with `paired`
/// (step 1's row order, see [`Transposed`]) row `2 g + h`.
///
/// # Safety
/// `c` holds `m n` elements; no other thread writes this warp's piece.
#[inline(always)]
pub(crate) unsafe fn store_c<const N: usize>(
    c: Out<f32>,
    acc: &Sums<N>,
    lane: u32,
    (r0, c0): (usize, usize),
    (m, n): (usize, usize),
    paired: bool,
) {
    // Where a lane's element 2 h of fragment (MI, NI) goes: (row, column).
    let at = |mi: usize, ni: usize, h: u32| {
        let (r, col) = c_f32(lane, 2 * h);
        let r = if paired { 2 * (r % 8) + r / 8 } else { r } as usize;
        (r0 + 16 * mi + r, c0 + 8 * ni + col as usize)
    };
    // Two copies of the loop, chosen once: with the odd-n case in the same
    // branch, LLVM splits the pair stores into single words.
    if n.is_multiple_of(2) {
        seq!(MI in 0..4 { seq!(NI in 0..8 { seq!(H in 0..2 {{
            let (row, col) = at(MI, NI, H);
            if NI < N && row < m && col < n {
                // SAFETY: inside C (n even: col + 1 < n too), 8-byte aligned;
                // this lane's elements alone.
                unsafe { c.store_x2(row * n + col, [acc[MI][NI % N][2 * H], acc[MI][NI % N][2 * H + 1]]) };
            }
        }}); }); });
    } else {
        seq!(MI in 0..4 { seq!(NI in 0..8 { seq!(H in 0..2 { seq!(E in 0..2 {{
            let (row, col) = at(MI, NI, H);
            if NI < N && row < m && col + E < n {
                // SAFETY: inside C; this lane's element alone.
                unsafe { c.store(row * n + col + E, acc[MI][NI % N][2 * H + E]) };
            }
        }}); }); }); });
    }
}
