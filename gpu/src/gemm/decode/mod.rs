//! The decode path: `D = act(alpha op(A) op(B) + beta C + bias)` where
//! `m` or `n` is at most 16, a few tokens against a weight. Each weight
//! element is used by at most 16 products, 32 FLOPs against its 1, 2 or 4
//! bytes, so the call is bound by reading the weight once: 32 MB of bf16
//! for a 4096 x 4096 weight, 10 us at 3.3 TB/s. A 64- or 128-row tile of
//! the tensor-core kernel would multiply 48 or more rows of zeros, and
//! the weight's copy would read it twice; here every byte is read once, in
//! place, with 16-byte loads where its rows allow.
//!
//! The weight `W` has `rows` rows of `k` (one output each) and the
//! tokens `X` are `tokens <= 16` rows of `k`; `out(s, j) = sum_p X(s, p)
//! W(j, p)`. The weight lies K-major (row `j` contiguous: `W[j ldw + p]`)
//! or, in bf16 and f16, N-major (`W[p ldw + j]`, the layout of a `k x n`
//! B). `X` may lie either way; it is small and mostly hits in L1.
//!
//! The kernels (`mma`) multiply on `mma.sync`, the weight as the 16-row
//! A operand and the tokens as the 8-column B operand (two of them past 8
//! tokens). The sum over k does not care in which order k is visited, so
//! each lane loads a contiguous 16 bytes of a row and hands them to two
//! `mma`s as if they were the k-columns its fragment names: in every
//! precision a lane's A register is 4 bytes of k of one row
//! (`crate::dev::mma`), so the same 16-byte load is two `m16n8k16` (bf16,
//! f16), `m16n8k8` (tf32) or `m16n8k32` (FP8) steps, and the tokens'
//! registers, loaded over the same k, pair with them exactly. K-major, a
//! warp's load is 8 rows x 64 contiguous bytes; N-major (16-bit), 4 rows
//! of k x 128 bytes, each register pair of rows `p, p + 1` rearranged
//! into A registers of one column and two neighbouring k.
//!
//! Where a row's start allows, the weight and the tokens are read 16
//! bytes a load; elsewhere (a bf16 row of odd length) element by element,
//! the same bytes in more instructions (not in FP8, whose 16 loads for 16
//! bytes would need more than 128 registers: the host routes FP8 here
//! only on 16-byte rows). The warps' sums meet in shared
//! memory and are added in warp order. Where the weight's rows are too
//! few to fill the SMs, k is also split across blocks: each writes its
//! sums to a workspace and the last to finish an output adds them in
//! split order and applies the epilogue (the split kernel's tickets), so
//! every run gives the same bits.

use half::{bf16, f16};

use super::epilogue::{Output, activate};
use super::store::Scalars;
use crate::dev::atomic::{Ordering, fence};
use crate::dev::fp8::{E4m3, E5m2};
use crate::dev::math::fma;
use crate::dev::{
    In, Out, SharedTile, Tf32, block_idx_x, block_idx_y, block_idx_z, grid_dim_x, sync_threads, thread_idx_x,
};
use crate::kernel;
use seq_macro::seq;

mod mma;

/// Warps per block.
pub const WARPS: usize = 8;
/// Threads per block.
pub const THREADS: usize = 32 * WARPS;
/// The most tokens: two 8-column `mma` tiles.
pub const TOKENS: usize = 16;
/// Weight rows per block of the K-major `mma` kernels: two 16-row tiles a
/// warp.
pub const ROWS_K: usize = 32;
/// Weight columns per block of the N-major `mma` kernels: four 16-column
/// tiles a warp.
pub const ROWS_N: usize = 64;
/// k per step of a warp of the N-major `mma` kernels.
pub const STEP_N: usize = 16;

/// `flags` bit: the weight's rows and batch stride lie on 16 bytes (and,
/// N-major, its `rows` is a multiple of 8: a lane's 8 columns lie all
/// inside it or all outside).
pub const WIDE_W: u32 = 1;
/// `flags` bit: the tokens are contiguous along k and a lane's run of
/// them (16 bytes; 8 in the N-major `mma` kernels) lies on its size.
pub const WIDE_X: u32 = 2;

/// `bias_mode`: no bias.
pub const BIAS_NONE: u32 = 0;
/// `bias_mode`: `bias[s]`, one per token.
pub const BIAS_TOKENS: u32 = 1;
/// `bias_mode`: `bias[j]`, one per weight row.
pub const BIAS_WEIGHT: u32 = 2;

/// k per 64-byte chunk of a warp of the K-major `mma` kernels, for
/// elements of `bytes` bytes.
pub const fn chunk_k(bytes: usize) -> usize {
    64 / bytes
}

/// A stored element's bits: what a buffer holds (`f32` for tf32).
pub trait Raw: Copy + 'static {
    const BYTES: usize = size_of::<Self>();
    fn raw(self) -> u32;
}

impl Raw for f32 {
    #[inline(always)]
    fn raw(self) -> u32 {
        self.to_bits()
    }
}
impl Raw for bf16 {
    #[inline(always)]
    fn raw(self) -> u32 {
        self.to_bits() as u32
    }
}
impl Raw for f16 {
    #[inline(always)]
    fn raw(self) -> u32 {
        self.to_bits() as u32
    }
}
impl Raw for E4m3 {
    #[inline(always)]
    fn raw(self) -> u32 {
        self.0 as u32
    }
}
impl Raw for E5m2 {
    #[inline(always)]
    fn raw(self) -> u32 {
        self.0 as u32
    }
}

/// The shape and layout of a launch, as the kernels' parameters give it.
#[derive(Clone, Copy)]
pub struct Shape {
    /// Weight rows (outputs per token).
    pub rows: usize,
    pub k: usize,
    pub tokens: usize,
    /// Elements between the weight's rows (K-major) or rows of k (N-major).
    pub ldw: usize,
    pub w_batch: usize,
    /// Elements between tokens, and between neighbours along k, of `X`.
    pub x_s: usize,
    pub x_p: usize,
    pub x_batch: usize,
    pub splits: usize,
    /// k per split, a multiple of the kernel's step.
    pub split_len: usize,
    pub flags: u32,
}

/// Where `out(s, j)` goes (`d[z d_batch + s d_s + j d_j]`) and the
/// epilogue's scalars (`bias_mode` [`BIAS_TOKENS`] or [`BIAS_WEIGHT`]).
#[derive(Clone, Copy)]
pub struct Store {
    pub d_s: usize,
    pub d_j: usize,
    pub d_batch: usize,
    pub e: Scalars,
}

/// `4 W` bytes of `S`s from `src[at + e stride]`, `e < 4 W / S::BYTES`,
/// as `W` words, low bytes first: one 16- or 8-byte load (`W` 4 or 2)
/// when `wide`, else one load per element, those at `e >= valid` zero.
///
/// # Safety
/// The elements at `e < valid` lie in the buffer; with `wide`, `stride` is
/// 1, `valid` covers all the bytes and `at S::BYTES` is a multiple of
/// their count.
#[inline(always)]
unsafe fn load_words<S: Raw, const W: usize>(
    src: In<S>,
    at: usize,
    stride: usize,
    valid: usize,
    wide: bool,
) -> [u32; W] {
    let words = src.recast::<u32>();
    let first = at * S::BYTES / 4;
    if wide && valid >= 4 * W / S::BYTES {
        // SAFETY: the caller's contract.
        unsafe {
            if W == 4 {
                let v = words.load16::<4>(first);
                return core::array::from_fn(|i| v[i]);
            }
            if W == 2 {
                let v = words.load8::<2>(first);
                return core::array::from_fn(|i| v[i]);
            }
        }
    }
    core::array::from_fn(|word| {
        let mut bits = 0;
        for part in 0..4 / S::BYTES.min(4) {
            let e = (4 * word) / S::BYTES + part;
            if e < valid {
                // SAFETY: the caller's contract.
                bits |= unsafe { src.load(at + e * stride) }.raw() << (8 * S::BYTES * part);
            }
        }
        bits
    })
}

/// 16 bytes of `S`s ([`load_words`]).
///
/// # Safety
/// As for [`load_words`].
#[inline(always)]
unsafe fn load16<S: Raw>(src: In<S>, at: usize, stride: usize, valid: usize, wide: bool) -> [u32; 4] {
    // SAFETY: the caller's contract.
    unsafe { load_words(src, at, stride, valid, wide) }
}

/// 8 bytes of `S`s ([`load_words`]).
///
/// # Safety
/// As for [`load_words`].
#[inline(always)]
unsafe fn load8<S: Raw>(src: In<S>, at: usize, stride: usize, valid: usize, wide: bool) -> [u32; 2] {
    // SAFETY: the caller's contract.
    unsafe { load_words(src, at, stride, valid, wide) }
}

/// What a block works on: the weight, the tokens, the launch's shape and
/// the block's place in it.
#[derive(Clone, Copy)]
struct Work<S> {
    w: In<S>,
    x: In<S>,
    p: Shape,
    at: Place,
}

/// The block's place: its first weight row, its split, its matrix; and
/// the k range `lo..hi` of its split.
#[derive(Clone, Copy)]
struct Place {
    j0: usize,
    split: usize,
    z: usize,
    lo: usize,
    hi: usize,
}

impl Place {
    #[inline(always)]
    fn of(p: &Shape, rows_per_block: usize) -> Place {
        let split = block_idx_y() as usize;
        let lo = split * p.split_len;
        Place {
            j0: block_idx_x() as usize * rows_per_block,
            split,
            z: block_idx_z() as usize,
            lo,
            hi: p.k.min(lo + p.split_len),
        }
    }
}

/// The block's end: the thread's sums (`values[i]` is token and block
/// row `place(i)`) into slab `slab` of shared memory (`SLABS` of them,
/// `TOKENS x ROWS` each: one a warp where the warps split k), the slabs
/// added in order, then through the epilogue into D, or with several
/// splits through the workspace and the tickets.
///
/// # Safety
/// The launch's contract; the whole block runs it; every word of the
/// slabs is written by one thread.
#[inline(always)]
unsafe fn finish<O: Output, const ROWS: usize, const SLABS: usize, const N: usize>(
    values: &[f32; N],
    place: impl Fn(usize) -> (usize, usize),
    slab: usize,
    at: Place,
    (d, sums, tickets): (Out<O>, Out<f32>, Out<u32>),
    p: Shape,
    e: Store,
) {
    let tid = thread_idx_x() as usize;
    // SAFETY: the launch passes `SLABS TOKENS ROWS` words.
    let red = unsafe { SharedTile::<f32, 0>::launch_sized() };
    // Every loop below unrolled (`seq!`, its bound tested inside): an
    // array indexed in a loop the compiler keeps would live in local
    // memory.
    seq!(I in 0..64 {
        let i: usize = I;
        if i < N {
            let (s, r) = place(i);
            // SAFETY: s < 16 and r < ROWS: inside; this thread's word.
            unsafe { red.set((slab * TOKENS + s) * ROWS + r, values[i]) };
        }
    });
    sync_threads();
    let per_thread = TOKENS * ROWS / THREADS;
    let out = |q: usize| {
        let o = tid + q * THREADS;
        (o / ROWS, at.j0 + o % ROWS)
    };
    let inside = |(s, j): (usize, usize)| s < p.tokens && j < p.rows;
    let mut totals = [0.0f32; 8];
    seq!(Q in 0..8 {
        let q: usize = Q;
        if q < per_thread {
            for slab in 0..SLABS {
                // SAFETY: inside, written before the barrier.
                totals[q] += unsafe { red.get(slab * TOKENS * ROWS + tid + q * THREADS) };
            }
        }
    });
    // SAFETY: the launch's contract: D, the bias, the workspace and the
    // tickets hold what they name.
    unsafe {
        if p.splits == 1 {
            seq!(Q in 0..8 {
                let q: usize = Q;
                if q < per_thread && inside(out(q)) {
                    store_one(&d, out(q), at.z, totals[q], e);
                }
            });
            return;
        }
        // This split's sums, `batch splits tokens rows` in all.
        let sum_at =
            |split: usize, (s, j): (usize, usize)| ((at.z * p.splits + split) * p.tokens + s) * p.rows + j;
        seq!(Q in 0..8 {
            let q: usize = Q;
            if q < per_thread && inside(out(q)) {
                sums.store(sum_at(at.split, out(q)), totals[q]);
            }
        });
        // The thread's ticket for its outputs, drawn with release: the
        // last split to draw it adds every split's sums in split order.
        let ticket = ((at.z * grid_dim_x() as usize) + block_idx_x() as usize) * THREADS + tid;
        if tickets.atomic_add(ticket, 1, Ordering::Release) as usize + 1 == p.splits {
            fence();
            tickets.atomic_store(ticket, 0, Ordering::Relaxed);
            let all = In::from_out(sums.recast::<f32>());
            for q in 0..per_thread {
                if inside(out(q)) {
                    let mut total = 0.0;
                    for split in 0..p.splits {
                        total += all.load(sum_at(split, out(q)));
                    }
                    store_one(&d, out(q), at.z, total, e);
                }
            }
        }
    }
}

/// `D = act(alpha sum + beta C + bias)` at `out(s, j)` of matrix `z`.
///
/// # Safety
/// `d` holds the element; the bias its value.
#[inline(always)]
unsafe fn store_one<O: Output>(d: &Out<O>, (s, j): (usize, usize), z: usize, sum: f32, st: Store) {
    let (at, e) = (z * st.d_batch + s * st.d_s + j * st.d_j, st.e);
    // SAFETY: the caller's contract.
    unsafe {
        let bias = match e.bias_mode {
            BIAS_TOKENS => e.bias.load(s),
            BIAS_WEIGHT => e.bias.load(j),
            _ => 0.0,
        };
        let mut v = fma(e.alpha, sum, bias);
        if e.beta != 0.0 {
            v += e.beta * d.load(at).to_f32();
        }
        d.store(at, O::of_f32(activate(e.act, v)));
    }
}

/// Waits for the kernel ahead of this dependent launch before the
/// thread's first global access (as the packs do).
#[inline(always)]
fn wait_before_global_access() {
    crate::dev::grid::wait_for_prerequisites();
}

/// One kernel of a form for an element, and its launch contract, at two
/// blocks an SM (128 registers a thread).
macro_rules! decode {
    ($(#[$doc:meta])* $name:ident, $form:ident, $rows:expr, $stored:ty, $element:ty) => {
        $(#[$doc])*
        ///
        /// Launch: 256 threads; the grid `(rows / ROWS, splits, batch)`
        /// rounded up (`ROWS` the form's rows per block); `w` holds the
        /// batch's weights (`rows x k`, K-major or N-major by the form, at
        /// `ldw`, `w_batch` apart), `x` the tokens (`X(s, p)` at `z x_batch
        /// + s x_s + p x_p`), `d` every `out(s, j)` (at `z d_batch + s d_s
        /// + j d_j`, read when `beta != 0`), the bias its values by
        /// `bias_mode`; with `splits > 1`, `sums` holds `batch splits
        /// tokens rows` values and `tickets` `batch blocks 256` zeros
        /// (zeros again after the launch); `split_len` a multiple of the
        /// form's step; `flags` as [`WIDE_W`] and [`WIDE_X`] say.
        #[kernel(
            block = THREADS,
            shared = WARPS * TOKENS * $rows * 4,
            tile = [$rows, 1],
            min_blocks = 2,
            dependent = true,
            arch = "sm_90a",
            types = [f32, bf16, f16]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<O: Output>(
            w: In<$stored>,
            x: In<$stored>,
            d: Out<O>,
            sums: Out<f32>,
            tickets: Out<u32>,
            bias: In<f32>,
            rows: u32,
            k: u32,
            tokens: u32,
            ldw: u64,
            w_batch: u64,
            x_s: u64,
            x_p: u64,
            x_batch: u64,
            d_s: u64,
            d_j: u64,
            d_batch: u64,
            splits: u32,
            split_len: u32,
            flags: u32,
            alpha: f32,
            beta: f32,
            bias_mode: u32,
            act: u32,
        ) {
            let p = Shape {
                rows: rows as usize,
                k: k as usize,
                tokens: tokens as usize,
                ldw: ldw as usize,
                w_batch: w_batch as usize,
                x_s: x_s as usize,
                x_p: x_p as usize,
                x_batch: x_batch as usize,
                splits: splits as usize,
                split_len: split_len as usize,
                flags,
            };
            let e = Store {
                d_s: d_s as usize,
                d_j: d_j as usize,
                d_batch: d_batch as usize,
                e: Scalars { alpha, beta, bias, bias_mode, act },
            };
            wait_before_global_access();
            let k = Work { w, x, p, at: Place::of(&p, $rows) };
            // SAFETY: the launch's contract (above).
            unsafe { mma::$form::<$stored, $element, O>(k, (d, sums, tickets), e) }
        }
    };
}

/// The kernels, each by [`decode!`], and the host's one trait over their
/// instances for an output type.
macro_rules! kernels {
    ($($(#[$doc:meta])* $name:ident($($spec:tt)+);)*) => {
        $(decode!($(#[$doc])* $name, $($spec)+);)*

        /// Every decode kernel's instance for one output type: what an
        /// output type of the host's library call implements. (Host only:
        /// the kernels' modules of launch items are.)
        #[cfg(not(target_arch = "nvptx64"))]
        pub trait Instances: $($name::Instance +)* Sized {}

        #[cfg(not(target_arch = "nvptx64"))]
        impl<T: $($name::Instance +)* Sized> Instances for T {}
    };
}

kernels! {
    /// bf16 tokens against a K-major bf16 weight.
    gemm_decode_k_bf16(decode_k, ROWS_K, bf16, bf16);
    /// f16 tokens against a K-major f16 weight.
    gemm_decode_k_f16(decode_k, ROWS_K, f16, f16);
    /// `f32` tokens against a K-major `f32` weight, multiplied as tf32.
    gemm_decode_k_tf32(decode_k, ROWS_K, f32, Tf32);
    /// E4M3 tokens against a K-major E4M3 weight (the scales folded into
    /// `alpha`).
    gemm_decode_k_e4m3(decode_k, ROWS_K, E4m3, E4m3);
    /// E5M2 tokens against a K-major E5M2 weight.
    gemm_decode_k_e5m2(decode_k, ROWS_K, E5m2, E5m2);
    /// bf16 tokens against an N-major bf16 weight.
    gemm_decode_n_bf16(decode_n, ROWS_N, bf16, bf16);
    /// f16 tokens against an N-major f16 weight.
    gemm_decode_n_f16(decode_n, ROWS_N, f16, f16);
}
