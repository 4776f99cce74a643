//! The GEMM epilogue: `D = act(alpha W + beta C + bias)`, rounded to the
//! output type, where `W` is the sum of the k-splits' `f32` partial
//! products, added in split order (the same result on every run, whatever
//! the split count's timing).
//!
//! One thread per element of `D`, a warp along a row: 32 consecutive
//! outputs, so each of `W`'s splits is read in 4 whole sectors per request
//! and `D` written in 4 (`f32`) or 2 (16-bit). The pass moves `4 splits +
//! 2 out` bytes per element (plus `out` more when `beta != 0`): it is
//! memory-bound, and small beside the product when `k` is large. `C` is
//! read only when `beta != 0`, so a `C` full of NaN does not leak into `D`
//! when `beta = 0`, as BLAS requires.

use half::{bf16, f16};

use crate::dev::math::{self, tanh_approx};
use crate::dev::{In, Out, block_idx_x, block_idx_y, block_idx_z, thread_idx_x};
use crate::kernel;

/// Threads per block, along a row.
pub const THREADS: usize = 256;
/// Rows per block.
pub const ROWS: usize = 4;

/// An output element type: `f32`, bf16 or f16, rounded to nearest even
/// from the `f32` result.
pub trait Output: Copy + 'static {
    fn of_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
    /// Stores `v` rounded at `d[at]` and `d[at + 1]` with one store (8
    /// bytes for `f32`, 4 for 16-bit types).
    ///
    /// # Safety
    /// Both elements lie in `d`; `at` is even and `d` 8-byte aligned.
    unsafe fn store_pair(d: &Out<Self>, at: usize, v: [f32; 2]);

    /// `d[at]` and `d[at + 1]` with one load.
    ///
    /// # Safety
    /// As for [`Output::store_pair`].
    unsafe fn load_pair(d: &Out<Self>, at: usize) -> [f32; 2];

    /// Two neighbours rounded and packed as one shared-memory element (4
    /// bytes for 16-bit types, 8 for `f32`), the lower column first.
    type Pair: Copy;
    fn pack(v: [f32; 2]) -> Self::Pair;
}

/// The 16-bit types' pair: one 4-byte word, `at / 2` (`at` even).
macro_rules! half_pair {
    ($t:ty) => {
        type Pair = u32;
        #[inline(always)]
        fn pack(v: [f32; 2]) -> u32 {
            math::pack::<$t>(v[0], v[1])
        }
        #[inline(always)]
        fn of_f32(x: f32) -> $t {
            math::round::<$t>(x)
        }

        #[inline(always)]
        unsafe fn store_pair(d: &Out<$t>, at: usize, v: [f32; 2]) {
            // SAFETY: the caller's contract: `at` even, so `at / 2` is the
            // 4-byte word holding both.
            unsafe { d.recast::<u32>().store(at / 2, math::pack::<$t>(v[0], v[1])) };
        }

        #[inline(always)]
        unsafe fn load_pair(d: &Out<$t>, at: usize) -> [f32; 2] {
            // SAFETY: as for `store_pair`.
            let w = unsafe { d.recast::<u32>().load(at / 2) };
            [Output::to_f32(<$t>::from_bits(w as u16)), Output::to_f32(<$t>::from_bits((w >> 16) as u16))]
        }
    };
}

impl Output for f32 {
    type Pair = u64;
    #[inline(always)]
    fn pack(v: [f32; 2]) -> u64 {
        u64::from(v[0].to_bits()) | u64::from(v[1].to_bits()) << 32
    }
    #[inline(always)]
    unsafe fn store_pair(d: &Out<f32>, at: usize, v: [f32; 2]) {
        // SAFETY: the caller's contract.
        unsafe { d.store_x2(at, v) };
    }
    #[inline(always)]
    unsafe fn load_pair(d: &Out<f32>, at: usize) -> [f32; 2] {
        // SAFETY: the caller's contract.
        unsafe { [d.load(at), d.load(at + 1)] }
    }
    #[inline(always)]
    fn of_f32(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
}

impl Output for bf16 {
    half_pair!(bf16);
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
}

impl Output for f16 {
    half_pair!(f16);
    #[inline(always)]
    fn to_f32(self) -> f32 {
        math::f16_to_f32(self.to_bits())
    }
}

/// No bias.
pub const BIAS_NONE: u32 = 0;
/// `bias[i]` added to row `i` of `D` (as the kernel sees `D`).
pub const BIAS_ROWS: u32 = 1;
/// `bias[j]` added to column `j`.
pub const BIAS_COLS: u32 = 2;

/// No activation.
pub const ACT_NONE: u32 = 0;
/// `max(x, 0)`.
pub const ACT_RELU: u32 = 1;
/// GELU, tanh form: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
pub const ACT_GELU: u32 = 2;

/// GELU, tanh form, with `tanh.approx` ([`tanh_approx`]): a few
/// instructions, so that the epilogue stays small where it is unrolled
/// into a kernel's store. Its error beside the exact function: `|x| / 2`
/// times `tanh.approx`'s, about `2^-11` relative.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    // sqrt(2 / pi)
    let u = 0.797_884_6 * (x + 0.044_715 * x * x * x);
    0.5 * x * (1.0 + tanh_approx(u))
}

/// `max(x, 0)`.
#[inline(always)]
pub fn relu(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.0 }
}

/// The activation `act` of `x`.
#[inline(always)]
pub fn activate(act: u32, x: f32) -> f32 {
    match act {
        ACT_RELU => relu(x),
        ACT_GELU => gelu(x),
        _ => x,
    }
}

/// `D = act(alpha W + beta C + bias)` for the `m x n` matrix `D` of batch
/// `z`: `D[i][j]` is `d[z d_batch + i ldd + j]` (and `C` the same
/// elements, read first when `beta != 0`); `W` is the sum over `s <
/// splits` of `w[z w_batch + s w_split + i ldw + j]` (0 with no splits:
/// `k = 0`); the bias is `bias[i]` or `bias[j]` by `bias_mode`.
///
/// Launch: 256 x 1 threads; the grid `(n / 256, m / 4, batch)` rounded up.
// In the PTX's part of every kernel but the GEMM library's `wgmma` and
// grouped ones, which use this module's types only (`gpu/src/lib.rs`).
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
#[kernel(block = THREADS, tile = [THREADS, ROWS], types = [f32, bf16, f16])]
#[allow(clippy::too_many_arguments)]
pub fn gemm_epilogue<T: Output>(
    w: In<f32>,
    d: Out<T>,
    bias: In<f32>,
    m: u32,
    n: u32,
    ldw: u32,
    w_batch: u64,
    w_split: u64,
    splits: u32,
    ldd: u32,
    d_batch: u64,
    alpha: f32,
    beta: f32,
    bias_mode: u32,
    act: u32,
) {
    let (m, n) = (m as usize, n as usize);
    let j = block_idx_x() as usize * THREADS + thread_idx_x() as usize;
    let (z, i0) = (block_idx_z() as usize, block_idx_y() as usize * ROWS);
    if j >= n || i0 >= m {
        return;
    }
    // The thread's rows' partial sums, split by split: each split's
    // `ROWS` loads are independent and issued together, so a warp keeps
    // `ROWS` 128-byte rows in flight instead of one (the pass is a stream
    // of `splits m n` words; one load at a time left it latency-bound).
    let rows = (m - i0).min(ROWS);
    let mut sums = [0.0f32; ROWS];
    for s in 0..splits as usize {
        let base = z * w_batch as usize + s * w_split as usize + i0 * ldw as usize + j;
        for (r, sum) in sums.iter_mut().enumerate() {
            if r < rows {
                // SAFETY: (i0 + r, j) is inside W's split `s` of batch
                // `z`, which `w` holds (the launch's contract).
                *sum += unsafe { w.load(base + r * ldw as usize) };
            }
        }
    }
    for (r, &sum) in sums.iter().enumerate().take(rows) {
        let i = i0 + r;
        let at = z * d_batch as usize + i * ldd as usize + j;
        let mut x = alpha * sum;
        if beta != 0.0 {
            // SAFETY: (i, j) is inside D, which `d` holds; this thread
            // alone reads and then writes it.
            x += beta * unsafe { d.load(at) }.to_f32();
        }
        let b = match bias_mode {
            BIAS_ROWS => Some(i),
            BIAS_COLS => Some(j),
            _ => None,
        };
        if let Some(b) = b {
            // SAFETY: i < m, j < n: inside the bias the mode names (m or n
            // elements, the launch's contract).
            x += unsafe { bias.load(b) };
        }
        // SAFETY: as for the read of C.
        unsafe { d.store(at, T::of_f32(activate(act, x))) };
    }
}
