//! Tensor cores: the GEMM ladder continued through `mma.sync`.
//!
//! The kernels here compute `C = A B` for row-major `A` (`m x k`) and `B`
//! (`k x n`) in bf16 (their bit patterns as `u16`; `tc_mma_f16_async`: IEEE
//! binary16) and `C` (`m x n`) in `f32`, accumulating in `f32`; the tf32
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

// `seq!` substitutes 0, 1, ... into index arithmetic.
#![allow(clippy::erasing_op, clippy::identity_op)]

/// Steps 4 and on: `wgmma`, TMA and mbarriers, in the sm_90a PTX only.
pub mod hopper;
/// Step 1 in tf32: `mma.sync` m16n8k8 on `f32` inputs.
pub mod tf32;

use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::mma::{a_bf16, b_bf16, c_f32, mma_bf16_m16n8k16, mma_f16_m16n8k16, pack_bf16};
use crate::dev::{In, Out, SharedArray, block_idx_x, block_idx_y, sync_threads, thread_idx_x};
use crate::kernel;
use core::marker::PhantomData;
use half::f16;
use seq_macro::seq;

/// Block tile of every kernel here: 128 x 128 of C, 32 of k per step.
pub const BM: usize = 128;
pub const BN: usize = 128;
pub const BK: usize = 32;
/// Threads: 8 warps as 2 x 4, each a 64 x 32 warp tile of 4 x 4 `m16n8`
/// tiles.
pub const THREADS: usize = 256;

/// Eight consecutive bf16 as four words of two (the lower index in the low
/// half), for one 16-byte shared store.
#[inline(always)]
fn words(v: [u16; 8]) -> [f32; 4] {
    [0, 1, 2, 3].map(|i| f32::from_bits(pack_bf16(v[2 * i], v[2 * i + 1])))
}

/// Where a stage's tiles `As[BM][BK]` and `Bs[BK][BN]` put each element in
/// shared memory, and how a warp takes its fragments from them. Eight
/// consecutive bf16 starting at a column that is a multiple of 8 (16
/// bytes, the unit of every copy) always stay together.
trait Layout {
    /// Bytes of one stage.
    const STAGE_BYTES: usize;
    /// Where `Bs` starts in a stage, in bytes.
    const B_AT: usize;
    /// The bf16 index in `As` of row `r`, column `c`.
    fn a_at(r: usize, c: usize) -> usize;
    /// The bf16 index in `Bs` of row `r`, column `c`.
    fn b_at(r: usize, c: usize) -> usize;
    /// One stage's k-step of 32 for a warp: its fragments, then its
    /// `mma`s.
    ///
    /// # Safety
    /// Every lane of the warp calls it alike; the stage holds the k-step's
    /// tiles (after the barrier).
    unsafe fn multiply(stage: Stage, lane: u32, warp: (usize, usize), acc: &mut Sums);
}

/// Step 1's layout: rows padded by 8 bf16 (16 bytes). A rows are 20 words
/// apart, so the 8 rows one fragment register touches start in banks `20 g
/// mod 32`, all different multiples of 4, and a quad's 4 words fill the
/// gaps: the 32 lanes hit 32 banks.
struct Padded;

const PAD: usize = 8;

impl Layout for Padded {
    const STAGE_BYTES: usize = 2 * (BM * (BK + PAD) + BK * (BN + PAD));
    const B_AT: usize = 2 * BM * (BK + PAD);
    #[inline(always)]
    fn a_at(r: usize, c: usize) -> usize {
        r * (BK + PAD) + c
    }
    #[inline(always)]
    fn b_at(r: usize, c: usize) -> usize {
        r * (BN + PAD) + c
    }
    #[inline(always)]
    unsafe fn multiply(stage: Stage, lane: u32, warp: (usize, usize), acc: &mut Sums) {
        // SAFETY: the caller's contract.
        unsafe { multiply_by_registers(stage, lane, warp, acc) }
    }
}

/// Steps 2 and 3's layout: no padding; the 16-byte pieces ("chunks") of
/// each row are permuted by an XOR with bits of the row, so that the eight
/// rows one `ldmatrix` matrix reads (and the rows 16-byte stores write)
/// land in eight different 16-byte slots of the 128-byte bank line:
///
/// - `As` rows are 64 bytes (4 chunks): chunk `c` of row `r` goes to
///   `c ^ (r / 2 mod 4)`. Rows `r..r + 8` (`r` a multiple of 8) then sit in
///   slots `4 (r mod 2) + (c ^ (r / 2 mod 4))`: all 8 different.
/// - `Bs` rows are 256 bytes (16 chunks, 2 bank lines): chunk `c` goes to
///   `c ^ (r mod 8)`, slot `(c ^ r) mod 8`: 8 consecutive rows, 8 slots.
///
/// The same 16 KB as the unpadded tiles, every access conflict-free.
struct Swizzled;

impl Layout for Swizzled {
    const STAGE_BYTES: usize = 2 * (BM * BK + BK * BN);
    const B_AT: usize = 2 * BM * BK;
    #[inline(always)]
    fn a_at(r: usize, c: usize) -> usize {
        r * BK + 8 * ((c / 8) ^ ((r / 2) % 4)) + c % 8
    }
    #[inline(always)]
    fn b_at(r: usize, c: usize) -> usize {
        r * BN + 8 * ((c / 8) ^ (r % 8)) + c % 8
    }
    #[inline(always)]
    unsafe fn multiply(stage: Stage, lane: u32, warp: (usize, usize), acc: &mut Sums) {
        // SAFETY: the caller's contract.
        unsafe { multiply_by_ldmatrix(stage, lane, warp, acc, mma_bf16_m16n8k16) }
    }
}

/// One stage's tiles, as 16-bit elements and as 32-bit words (the same
/// bytes).
#[derive(Clone, Copy)]
struct Stage {
    a: SharedArray<u16>,
    b: SharedArray<u16>,
    a_words: SharedArray<f32>,
    b_words: SharedArray<f32>,
}

impl Stage {
    /// Stage `s` of layout `L`.
    ///
    /// # Safety
    /// The launch passes at least `s + 1` stages of `L::STAGE_BYTES`.
    #[inline(always)]
    unsafe fn of<L: Layout>(s: usize) -> Stage {
        let at = s * L::STAGE_BYTES;
        // SAFETY: the caller's contract; As first, Bs at B_AT.
        unsafe {
            Stage {
                a: SharedArray::launch_sized_at(at),
                b: SharedArray::launch_sized_at(at + L::B_AT),
                a_words: SharedArray::launch_sized_at(at),
                b_words: SharedArray::launch_sized_at(at + L::B_AT),
            }
        }
    }
}

/// Step 1 and step 2's main loop: two shared stages; the next k-step's
/// tiles are loaded into registers before this one's multiplies and
/// stored into the other stage after them, so their global latency
/// overlaps the tensor cores' work (the SGEMM ladder's double buffer).
#[inline(always)]
fn prefetch_loop<L: Layout>(a: In<u16>, b: In<u16>, c: Out<f32>, (m, n, k): (u32, u32, u32)) {
    let ops = Operands::<L>::new(a, b, (m, n, k));
    let Place { lane, warp: (wm, wn), block: (m0, n0), .. } = ops.place;
    // SAFETY: s < 2 stages (the declarations'), each read only after the
    // barrier that follows its store.
    let store = |s: usize, tiles: [[u16; 8]; 4]| unsafe { ops.store(s, tiles) };
    let mut acc = [[[0.0f32; 4]; 4]; 4];

    store(0, ops.load(0));
    sync_threads();
    let (mut k0, mut stage) = (0, 0);
    while k0 < ops.k {
        let next = ops.load(k0 + BK);
        // SAFETY: the whole block runs this alike; the stage is filled (two
        // stages passed).
        unsafe { L::multiply(Stage::of::<L>(stage), lane, (wm, wn), &mut acc) };
        // The other stage was last read before the previous barrier.
        store(stage ^ 1, next);
        sync_threads();
        (k0, stage) = (k0 + BK, stage ^ 1);
    }

    // SAFETY: the launch's contract: c holds m n elements.
    unsafe { store_c(c, &acc, lane, (m0 + wm, n0 + wn), (ops.m, ops.n)) };
}

/// 1. `mma.sync` with shared-memory tiles: the first tensor-core step.
///
/// Each k-step of 32 stages a 128 x 32 tile of A and a 32 x 128 tile of B
/// in shared memory: 16-byte loads and stores, two of each per thread and
/// operand, when rows start on 16 bytes (`k` and `n` multiples of 8), and
/// element by element with zeros outside the matrices otherwise. Then warp
/// `w`, a 64 x 32 piece of C, does 2 x 4 x 4 `m16n8k16`: 32 x 2048
/// multiply-adds per barrier. Two shared stages with a register prefetch
/// ([`prefetch_loop`]). Rows are padded ([`Padded`]); each lane loads its
/// fragments register by register ([`multiply_by_registers`]).
///
/// Launch: `a` holds `m k`, `b` `k n`, `c` `m n` elements; the grid covers
/// C with 128 x 128 tiles (`tile`), 256 threads.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16`.
#[kernel(block = THREADS, shared = 2 * Padded::STAGE_BYTES, tile = [BN, BM])]
pub fn tc_mma_bf16(a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    prefetch_loop::<Padded>(a, b, c, (m, n, k));
}

/// 2. `ldmatrix` from a swizzled layout.
///
/// Step 1 builds each warp's fragments from 32 shared loads per k16 (16
/// words of A, 16 half-words of B, which `ldmatrix.trans`'s transposition
/// would give whole): ncu shows its warps waiting on the shared-memory pipe.
/// Here one `ldmatrix.x4` gives a lane a whole 16 x 16 A fragment, and one
/// `ldmatrix.x4.trans` two 16 x 8 B fragments, read k-row by k-row from the
/// row-major `Bs`: 6 instructions per k16 in place of 32, 96 bytes per
/// lane each. Their rows are 16-byte pieces anywhere in shared memory, so
/// the tiles drop the padding and permute each row's pieces instead
/// ([`Swizzled`]): each 8 x 8 matrix is served in one pass.
///
/// Launch: as [`tc_mma_bf16`].
/// Measured: `BENCHMARKS.md`, rows `tc_ldmatrix_bf16`.
#[kernel(block = THREADS, shared = 2 * Swizzled::STAGE_BYTES, tile = [BN, BM])]
pub fn tc_ldmatrix_bf16(a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    prefetch_loop::<Swizzled>(a, b, c, (m, n, k));
}

/// Where a thread works: its index `t` and lane, its warp's 64 x 32 piece
/// of the block tile (8 warps as 2 x 4), and the block tile's origin in C.
#[derive(Clone, Copy)]
struct Place {
    t: usize,
    lane: u32,
    warp: (usize, usize),
    block: (usize, usize),
}

impl Place {
    #[inline(always)]
    fn here() -> Place {
        let t = thread_idx_x() as usize;
        let warp = t / 32;
        Place {
            t,
            lane: (t % 32) as u32,
            warp: (warp / 4 * 64, warp % 4 * 32),
            block: (block_idx_y() as usize * BM, block_idx_x() as usize * BN),
        }
    }
}

/// The operands as a block stages them: A and B, the problem, this
/// thread's place, and whether every row starts on 16 bytes (`k` and `n`
/// multiples of 8, so a vector of 8 is wholly in or out of its matrix).
///
/// Thread `t` moves vectors `v = t` and `t + 256` of each tile: A row
/// `v / 4`, columns `8 (v % 4)..+8` of 32; B row `v / 16`, columns
/// `8 (v % 16)..+8` of 128.
struct Operands<L> {
    a: In<u16>,
    b: In<u16>,
    m: usize,
    n: usize,
    k: usize,
    place: Place,
    vector: bool,
    layout: PhantomData<L>,
}

impl<L> Clone for Operands<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for Operands<L> {}

impl<L: Layout> Operands<L> {
    #[inline(always)]
    fn new(a: In<u16>, b: In<u16>, (m, n, k): (u32, u32, u32)) -> Operands<L> {
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let vector = k.is_multiple_of(8) && n.is_multiple_of(8);
        Operands { a, b, m, n, k, place: Place::here(), vector, layout: PhantomData }
    }

    /// Vector `h` (0 or 1) of this thread: its A spot `(row, column)` and
    /// its B spot in the tiles.
    #[inline(always)]
    fn spots(&self, h: usize) -> ((usize, usize), (usize, usize)) {
        let v = self.place.t + h * THREADS;
        ((v / 4, 8 * (v % 4)), (v / 16, 8 * (v % 16)))
    }

    /// This thread's vectors of the k-step at `k0` (A's two, then B's):
    /// 16-byte loads where the vector lies in its matrix and rows start on
    /// 16 bytes, element by element otherwise, zeros outside.
    #[inline(always)]
    fn load(&self, k0: usize) -> [[u16; 8]; 4] {
        let Operands { a, b, m, n, k, vector, .. } = *self;
        let (m0, n0) = self.place.block;
        let mut out = [[0u16; 8]; 4];
        seq!(H in 0..2 {{
            let ((ra, ca), (rb, cb)) = self.spots(H);
            let (row, kk) = (m0 + ra, k0 + ca);
            out[H] = if vector && row < m && kk + 8 <= k {
                // SAFETY: inside A; row * k + kk is a multiple of 8.
                unsafe { a.load16::<8>(row * k + kk) }
            } else {
                // SAFETY: each element guarded: inside A, or a zero.
                core::array::from_fn(|e| if row < m && kk + e < k { unsafe { a.load(row * k + kk + e) } } else { 0 })
            };
            let (kk, nn) = (k0 + rb, n0 + cb);
            out[2 + H] = if vector && kk < k && nn + 8 <= n {
                // SAFETY: inside B; kk * n + nn is a multiple of 8.
                unsafe { b.load16::<8>(kk * n + nn) }
            } else {
                // SAFETY: each element guarded: inside B, or a zero.
                core::array::from_fn(|e| if kk < k && nn + e < n { unsafe { b.load(kk * n + nn + e) } } else { 0 })
            };
        }});
        out
    }

    /// Stores this thread's vectors (from [`Operands::load`]) into stage
    /// `s`, one 16-byte store each.
    ///
    /// # Safety
    /// The launch passes at least `s + 1` stages; nobody reads them until
    /// a barrier.
    #[inline(always)]
    unsafe fn store(&self, s: usize, tiles: [[u16; 8]; 4]) {
        // SAFETY: the caller's contract.
        let stage = unsafe { Stage::of::<L>(s) };
        seq!(H in 0..2 {{
            let ((ra, ca), (rb, cb)) = self.spots(H);
            // SAFETY: A row < BM, columns ca..+8 of BK; B row < BK, columns
            // cb..+8 of BN; the layout keeps them 16 bytes, together.
            unsafe {
                stage.a_words.store4(0, L::a_at(ra, ca) / 2, words(tiles[H]));
                stage.b_words.store4(0, L::b_at(rb, cb) / 2, words(tiles[2 + H]));
            }
        }});
    }

    /// Copies this thread's vectors of the k-step at `k0` into stage `s`
    /// with 16-byte `cp.async` (zeros outside the matrices), uncommitted.
    ///
    /// # Safety
    /// `self.vector`; as for [`Operands::store`], and nobody reads the
    /// stage until the copies are waited for.
    #[inline(always)]
    unsafe fn copy_async(&self, s: usize, k0: usize) {
        let Operands { a, b, m, n, k, .. } = *self;
        let (m0, n0) = self.place.block;
        // SAFETY: the caller's contract.
        let stage = unsafe { Stage::of::<L>(s) };
        seq!(H in 0..2 {{
            let ((ra, ca), (rb, cb)) = self.spots(H);
            let (row, kk, kb, nn) = (m0 + ra, k0 + ca, k0 + rb, n0 + cb);
            let (a_to, b_to) = (L::a_at(ra, ca) / 2, L::b_at(rb, cb) / 2);
            // SAFETY: inside A and B when valid (word index = element / 2, a
            // multiple of 4, as rows start on 16 bytes); the caller's
            // contract for the stage.
            unsafe {
                stage.a_words.copy_async4_or_zero(0, a_to, a.words(), (row * k + kk) / 2, row < m && kk < k);
                stage.b_words.copy_async4_or_zero(0, b_to, b.words(), (kb * n + nn) / 2, kb < k && nn < n);
            }
        }});
    }
}

/// Stages in flight of [`tc_mma_bf16_async`].
pub const STAGES: usize = 3;

/// 3. A 3-stage `cp.async` pipeline, on step 2's layout and `ldmatrix`.
///
/// Steps 1 and 2 hold the next k-step's tiles in registers (32 of its 161) and
/// waits for them after one k-step of multiplies: too little work to hide
/// the loads' latency with one block of 8 warps per SM. Here each thread
/// issues `cp.async.cg` copies of 16 bytes straight from global into a
/// stage of shared memory (no register holds them) for the k-step two
/// ahead, while the tensor cores work on the current one: `STAGES - 1` =
/// 2 k-steps of loads, 32 KB per block, in flight at all times. Per
/// k-step: wait for the oldest group (`cp.async.wait_group 1`), one
/// barrier (after which the stage read in the previous k-step is free),
/// issue and commit the next group, multiply.
///
/// Rows that do not start on 16 bytes (`k` or `n` not a multiple of 8)
/// cannot be copied 16 bytes at a time: such launches fill each stage with
/// ordinary guarded loads and stores instead, through the same pipeline.
///
/// Launch: as [`tc_mma_bf16`], with [`STAGES`] stages of shared memory.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_bf16_async`.
#[kernel(block = THREADS, shared = STAGES * Swizzled::STAGE_BYTES, tile = [BN, BM])]
pub fn tc_mma_bf16_async(a: In<u16>, b: In<u16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    pipeline(a, b, c, (m, n, k), mma_bf16_m16n8k16);
}

/// 3, f16: step 3 on IEEE binary16 inputs: the same bytes staged the same
/// way (16-bit elements, whatever they mean), `mma.sync`'s f16 form.
///
/// Launch: as [`tc_mma_bf16_async`], with f16 `a` and `b`.
/// Measured: `BENCHMARKS.md`, rows `tc_mma_f16_async`.
#[kernel(block = THREADS, shared = STAGES * Swizzled::STAGE_BYTES, tile = [BN, BM])]
pub fn tc_mma_f16_async(a: In<f16>, b: In<f16>, c: Out<f32>, m: u32, n: u32, k: u32) {
    pipeline(a.same_bytes(), b.same_bytes(), c, (m, n, k), mma_f16_m16n8k16);
}

/// Step 3's body, multiplying with `mma` (see [`tc_mma_bf16_async`]).
#[inline(always)]
fn pipeline(a: In<u16>, b: In<u16>, c: Out<f32>, (m, n, k): (u32, u32, u32), mma: Mma) {
    let ops = Operands::<Swizzled>::new(a, b, (m, n, k));
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
                    ops.copy_async(s, k0);
                } else {
                    ops.store(s, ops.load(k0));
                }
            }
        }
        commit_copies();
    };
    let mut acc = [[[0.0f32; 4]; 4]; 4];
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
        unsafe { multiply_by_ldmatrix(Stage::of::<Swizzled>(step % STAGES), lane, (wm, wn), &mut acc, mma) };
    }
    // Nothing left in flight: the last groups were empty.
    wait_copies::<0>();
    // SAFETY: the launch's contract: c holds m n elements.
    unsafe { store_c(c, &acc, lane, (m0 + wm, n0 + wn), (ops.m, ops.n)) };
}

/// One warp's sums: its 64 x 32 piece of C as 4 x 4 `m16n8` fragments.
pub(crate) type Sums = [[[f32; 4]; 4]; 4];

/// Step 1's fragments: from shared memory register by register, at the
/// places the PTX ISA's lane map names. An A register is two neighbours
/// along k of one row, one 32-bit load (lanes of a quad read consecutive
/// words, the 8 groups rows 20 words apart: banks `20 g + q mod 32`, all 32
/// different); a B register is two neighbours along k of one column, two
/// 16-bit loads from two rows. Then 4 x 4 `mma.sync` per k16.
///
/// # Safety
/// As for [`Layout::multiply`], on a [`Padded`] stage.
#[inline(always)]
unsafe fn multiply_by_registers(stage: Stage, lane: u32, (wm, wn): (usize, usize), acc: &mut Sums) {
    seq!(KS in 0..2 {{
        // Straight-line code (`seq!`): the fragments and sums stay in
        // registers only when every index is a constant. B's fragments for
        // the k16 first, then A's one m16 at a time.
        let mut fb = [[0u32; 2]; 4];
        seq!(NI in 0..4 { seq!(REG in 0..2 {{
            let (kk, col) = b_bf16(lane, 2 * REG);
            let (kk, col) = (16 * KS + kk as usize, wn + 8 * NI + col as usize);
            // SAFETY: kk + 1 < BK, col < BN.
            fb[NI][REG] = unsafe { pack_bf16(stage.b.get(Padded::b_at(kk, col)), stage.b.get(Padded::b_at(kk + 1, col))) };
        }}); });
        seq!(MI in 0..4 {{
            let mut fa = [0u32; 4];
            seq!(REG in 0..4 {{
                let (r, col) = a_bf16(lane, 2 * REG);
                let at = Padded::a_at(wm + 16 * MI + r as usize, 16 * KS + col as usize);
                // SAFETY: row < BM; the word of columns col, col + 1 < BK.
                fa[REG] = unsafe { stage.a_words.get(at / 2) }.to_bits();
            }});
            seq!(NI in 0..4 {
                // SAFETY: the caller's contract (a converged warp).
                acc[MI][NI] = unsafe { mma_bf16_m16n8k16(fa, fb[NI], acc[MI][NI]) };
            });
        }});
    }});
}

/// Steps 2 and 3's fragments, by `ldmatrix` (see `dev::matrix`), into `mma`: lane `l`
/// names row `l % 8` of 8 x 8 matrix `l / 8`. For A's 16 x 16 at
/// `(16 MI, 16 KS)` the four matrices are rows 0-7 and 8-15 (lanes 0-15)
/// at k 0-7, then both at k 8-15 (lanes 16-31): registers 0-3 in the order
/// of the `m16n8k16` A fragment. For B, `.trans` reads k-rows 0-7 and 8-15
/// of n-block `2 P` (lanes 0-15), then of n-block `2 P + 1`: the B
/// fragments of two `m16n8` tiles. Then 4 x 4 `mma.sync` per k16.
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
        let mut fb = [[0u32; 2]; 4];
        seq!(P in 0..2 {{
            // SAFETY: k-row < BK, columns ..+8 < BN, 16 bytes (the layout
            // keeps 8-column pieces whole); a converged warp.
            let r = unsafe { stage.b.ldmatrix_x4_trans(0, Swizzled::b_at(16 * KS + row, wn + 16 * P + half)) };
            fb[2 * P] = [r[0], r[1]];
            fb[2 * P + 1] = [r[2], r[3]];
        }});
        seq!(MI in 0..4 {{
            // SAFETY: row < BM, columns ..+8 < BK, as above.
            let fa = unsafe { stage.a.ldmatrix_x4(0, Swizzled::a_at(wm + 16 * MI + row, 16 * KS + half)) };
            seq!(NI in 0..4 {
                // SAFETY: the caller's contract (a converged warp).
                acc[MI][NI] = unsafe { mma(fa, fb[NI], acc[MI][NI]) };
            });
        }});
    }});
}

/// An `m16n8k16` of 16-bit inputs: [`mma_bf16_m16n8k16`] or
/// [`mma_f16_m16n8k16`] (the same fragments).
type Mma = unsafe fn([u32; 4], [u32; 2], [f32; 4]) -> [f32; 4];

/// A warp's sums into C (`m x n`, row-major) at `(r0, c0)`, inside C only.
///
/// # Safety
/// `c` holds `m n` elements; no other thread writes this warp's piece.
#[inline(always)]
pub(crate) unsafe fn store_c(
    c: Out<f32>,
    acc: &Sums,
    lane: u32,
    (r0, c0): (usize, usize),
    (m, n): (usize, usize),
) {
    seq!(MI in 0..4 { seq!(NI in 0..4 { seq!(I in 0..4 {{
        let (r, col) = c_f32(lane, I);
        let (row, col) = (r0 + 16 * MI + r as usize, c0 + 8 * NI + col as usize);
        if row < m && col < n {
            // SAFETY: inside C; this lane's element alone.
            unsafe { c.store(row * n + col, acc[MI][NI][I]) };
        }
    }}); }); });
}
