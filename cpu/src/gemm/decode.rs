//! The decode path's host side: whether a call is a few tokens against a
//! weight ([`Decode::of`]: `m` or `n` at most 16, the weight in a layout
//! the kernels read in place), how its k is split across blocks, and the
//! launch ([`gpu::gemm::decode`]).

use gpu::dev::fp8::{E4m3, E5m2};
use gpu::gemm::decode::{
    BIAS_NONE, BIAS_TOKENS, BIAS_WEIGHT, ROWS_K, ROWS_N, STEP_N, TOKENS, WARPS, WIDE_W, WIDE_X, chunk_k,
};
use gpu::launch::{Dim3, Kernel};
use half::{bf16, f16};

use super::call::Call;
use super::precision::{Element, Precision, buffer_of};
use crate::blas::gemm::RowMajor;
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// How the weight lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Row `j` contiguous along k.
    KMajor,
    /// Rows of k contiguous along `j` (16-bit elements only).
    NMajor,
}

/// A call as the decode kernels take it: `out(s, j) = sum_p X(s, p) W(j,
/// p)` for `tokens` tokens and `rows` weight rows, with where each lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decode {
    pub form: Form,
    /// The weight is the row-major call's A (`n` small), else its B.
    pub weight_is_a: bool,
    pub tokens: usize,
    pub rows: usize,
    pub k: usize,
    pub ldw: usize,
    pub w_batch: usize,
    pub x_s: usize,
    pub x_p: usize,
    pub x_batch: usize,
    pub d_s: usize,
    pub d_j: usize,
    pub bias_mode: u32,
    pub flags: u32,
    pub splits: usize,
    /// k per split.
    pub split_len: usize,
    /// Weight rows per block, and the k a split's length is a multiple of.
    pub block_rows: usize,
    pub step: usize,
}

impl Decode {
    /// The decode form of `call` in precision `P` (row-major as `r`, batch
    /// strides `strides` of A and B as the kernels see them), split for
    /// `sms` SMs; `None` where `m` and `n` are both above 16, or the weight
    /// lies N-major in a precision whose kernel reads it K-major only
    /// (tf32, FP8: `mma.sync` takes them K-major), or the precision is
    /// `f32` (FFMA: the sgemm path).
    pub fn of<P: Precision>(
        call: &Call,
        r: &RowMajor,
        strides: (usize, usize),
        sms: usize,
    ) -> Option<Decode> {
        let bytes = size_of::<P::Input>();
        let input = P::OPERAND?;
        if r.m.min(r.n) > TOKENS || r.k == 0 {
            return None;
        }
        // The weight is the larger operand: B (k x n) when m is small.
        let weight_is_a = r.m > r.n;
        let (form, ldw, w_batch, (x_s, x_p), x_batch) = if weight_is_a {
            // W(j, p) = A(j, p); X(s, p) = B(p, s).
            let form = if r.a_t { Form::NMajor } else { Form::KMajor };
            let x = if r.b_t { (r.ldb, 1) } else { (1, r.ldb) };
            (form, r.lda, strides.0, x, strides.1)
        } else {
            // W(j, p) = B(p, j); X(s, p) = A(s, p).
            let form = if r.b_t { Form::KMajor } else { Form::NMajor };
            let x = if r.a_t { (1, r.lda) } else { (r.lda, 1) };
            (form, r.ldb, strides.1, x, strides.0)
        };
        if form == Form::NMajor && input.k_major_only() {
            return None;
        }
        let (tokens, rows) = if weight_is_a { (r.n, r.m) } else { (r.m, r.n) };
        let (d_s, d_j) = if weight_is_a { (1, r.ldc) } else { (r.ldc, 1) };
        // The bias runs along the caller's rows of D: the row-major D's
        // rows, or its columns when the call was swapped; those are the
        // tokens when m is small, the weight's rows when n is.
        let bias_mode = match (call.bias, r.swapped, weight_is_a) {
            (false, ..) => BIAS_NONE,
            (true, false, false) | (true, true, true) => BIAS_TOKENS,
            (true, ..) => BIAS_WEIGHT,
        };
        // 16-byte weight loads where every row starts on 16 bytes (N-major:
        // and a lane's 16 bytes of columns lie all inside the weight or all
        // out); the tokens' runs (16 bytes K-major, 8 N-major) where they
        // are contiguous along k and each token starts on the run.
        let run = if form == Form::NMajor { 8 } else { 16 };
        let on = |ld: usize, stride: usize, unit: usize, skip: bool| {
            (skip || (ld * bytes).is_multiple_of(unit))
                && (call.batch == 1 || (stride * bytes).is_multiple_of(unit))
        };
        let mut flags = 0;
        if on(ldw, w_batch, 16, false) && (form == Form::KMajor || rows.is_multiple_of(16 / bytes)) {
            flags |= WIDE_W;
        }
        if x_p == 1 && on(x_s, x_batch, run, tokens == 1) {
            flags |= WIDE_X;
        }
        // FP8 reads its rows 16 bytes at a time only (`gpu::gemm::decode`):
        // the tile kernel takes the rest.
        if bytes == 1 && (flags != WIDE_W | WIDE_X || !r.k.is_multiple_of(16)) {
            return None;
        }
        let (block_rows, step) = match form {
            Form::KMajor => (ROWS_K, chunk_k(bytes)),
            Form::NMajor => (ROWS_N, STEP_N),
        };
        let (splits, split_len) = split(call.batch * rows.div_ceil(block_rows), r.k, step, sms);
        Some(Decode {
            form,
            weight_is_a,
            tokens,
            rows,
            k: r.k,
            ldw,
            w_batch,
            x_s,
            x_p,
            x_batch,
            d_s,
            d_j,
            bias_mode,
            flags,
            splits,
            split_len,
            block_rows,
            step,
        })
    }

    /// The same call split `splits` ways across blocks (as near as whole
    /// steps allow), where given.
    pub fn split_into(self, splits: Option<usize>) -> Decode {
        let Some(splits) = splits else { return self };
        let split_len = self.k.div_ceil(splits.max(1)).div_ceil(self.step) * self.step;
        Decode { splits: self.k.div_ceil(split_len), split_len, ..self }
    }

    /// The launch's grid for `batch` matrices.
    pub fn grid(&self, batch: usize) -> Dim3 {
        Dim3 { x: self.rows.div_ceil(self.block_rows) as u32, y: self.splits as u32, z: batch as u32 }
    }

    /// The kernel for precision `P` and output `O`.
    pub fn kernel<P: Precision, O: Element>(&self) -> Option<&'static Kernel> {
        kernels::<O>(P::NAME, self.form)
    }
}

/// The k-splits across blocks for `blocks` blocks of weight rows over `k`
/// in steps of `step`: enough for three blocks per SM (each block keeps 8
/// warps' loads in flight; three fill an SM's memory pipeline), but each
/// split at least four steps per warp, 32 splits at most. Returns the
/// splits and k per split (a multiple of the step).
pub fn split(blocks: usize, k: usize, step: usize, sms: usize) -> (usize, usize) {
    let least = WARPS * step * 4;
    let wanted = (3 * sms).div_ceil(blocks.max(1));
    let splits = wanted.min(k / least).clamp(1, 32);
    let split_len = k.div_ceil(splits).div_ceil(step) * step;
    (k.div_ceil(split_len), split_len)
}

/// The decode kernel of precision `name`, form `form`, output `O`.
fn kernels<O: Element>(name: &str, form: Form) -> Option<&'static Kernel> {
    macro_rules! pick {
        ($kernel:ident) => {
            Some(&gpu::gemm::decode::$kernel::KERNELS[<O as gpu::gemm::decode::$kernel::Instance>::INDEX])
        };
    }
    match (name, form) {
        ("bf16", Form::KMajor) => pick!(gemm_decode_k_bf16),
        ("f16", Form::KMajor) => pick!(gemm_decode_k_f16),
        ("tf32", Form::KMajor) => pick!(gemm_decode_k_tf32),
        ("e4m3", Form::KMajor) => pick!(gemm_decode_k_e4m3),
        ("e5m2", Form::KMajor) => pick!(gemm_decode_k_e5m2),
        ("bf16", Form::NMajor) => pick!(gemm_decode_n_bf16),
        ("f16", Form::NMajor) => pick!(gemm_decode_n_f16),
        _ => None,
    }
}

/// The buffers of a decode launch.
pub struct Buffers<'a, I, O> {
    pub w: &'a DeviceBuffer<I>,
    pub x: &'a DeviceBuffer<I>,
    pub d: &'a mut DeviceBuffer<O>,
    pub sums: &'a mut DeviceBuffer<f32>,
    pub tickets: &'a mut DeviceBuffer<u32>,
    pub bias: &'a DeviceBuffer<f32>,
}

/// Launches `plan`'s kernel for `call` (precision `P`, output `O`) with
/// `alpha` (the FP8 scales folded in).
///
/// # Safety
/// `b` holds what `plan` and `call` name: the weight and tokens at their
/// strides, D at `ldc` and `stride_c`, the bias its values; with several
/// splits `sums` holds `batch splits tokens rows` values and `tickets`
/// `256 batch blocks` zeros.
pub unsafe fn launch<P: Precision, O: Element>(
    gpu: &Gpu,
    call: &Call,
    plan: &Decode,
    alpha: f32,
    b: Buffers<'_, P::Input, O>,
) -> Result<()> {
    let grid = plan.grid(call.batch);
    macro_rules! go {
        ($kernel:ident, $t:ty) => {{
            let (Some(w), Some(x)) = (buffer_of::<$t, _>(b.w), buffer_of::<$t, _>(b.x)) else {
                return Err(Error::InvalidInput(format!(
                    "gemm {call}: {} takes {} inputs",
                    P::NAME,
                    stringify!($t)
                )));
            };
            // SAFETY: the caller's contract.
            unsafe {
                gpu::gemm::decode::$kernel::launch::<O, _>(
                    gpu,
                    grid,
                    w,
                    x,
                    b.d,
                    b.sums,
                    b.tickets,
                    b.bias,
                    plan.rows as u32,
                    plan.k as u32,
                    plan.tokens as u32,
                    plan.ldw as u64,
                    plan.w_batch as u64,
                    plan.x_s as u64,
                    plan.x_p as u64,
                    plan.x_batch as u64,
                    plan.d_s as u64,
                    plan.d_j as u64,
                    call.stride_c as u64,
                    plan.splits as u32,
                    plan.split_len as u32,
                    plan.flags,
                    alpha,
                    call.gemm.beta,
                    plan.bias_mode,
                    call.act.code(),
                )
            }
        }};
    }
    match (P::NAME, plan.form) {
        ("bf16", Form::KMajor) => go!(gemm_decode_k_bf16, bf16),
        ("f16", Form::KMajor) => go!(gemm_decode_k_f16, f16),
        ("tf32", Form::KMajor) => go!(gemm_decode_k_tf32, f32),
        ("e4m3", Form::KMajor) => go!(gemm_decode_k_e4m3, E4m3),
        ("e5m2", Form::KMajor) => go!(gemm_decode_k_e5m2, E5m2),
        ("bf16", Form::NMajor) => go!(gemm_decode_n_bf16, bf16),
        ("f16", Form::NMajor) => go!(gemm_decode_n_f16, f16),
        _ => Err(Error::InvalidInput(format!("gemm {call}: no decode kernel for {}", P::NAME))),
    }
}

#[cfg(test)]
mod tests {
    use super::{Decode, Form, split};
    use crate::blas::{Gemm, Layout, Op};
    use crate::gemm::{Bf16, Call, E4m3, F32, Precision};
    use gpu::gemm::decode::{WIDE_W, WIDE_X};

    fn of<P: Precision>(op_a: Op, op_b: Op, (m, n, k): (usize, usize, usize)) -> Option<Decode> {
        let call = Call::new(Gemm::new(Layout::Row, op_a, op_b, m, n, k));
        let r = call.gemm.row_major();
        Decode::of::<P>(&call, &r, (m * k, k * n), 132)
    }

    /// Which operand is the weight, how it lies, and which loads are 16
    /// bytes wide, from the layout and the rows' alignment.
    #[test]
    fn the_weight_and_its_loads_follow_the_layout() {
        // m small, B N-major: the weight is B, its rows of k 8192 bytes.
        let d = of::<Bf16>(Op::N, Op::N, (4, 4096, 4096)).unwrap();
        assert_eq!((d.form, d.weight_is_a, d.tokens, d.rows), (Form::NMajor, false, 4, 4096));
        assert_eq!(d.flags, WIDE_W | WIDE_X);
        // An odd k: the tokens' rows (A's, k long) leave 16 bytes.
        assert_eq!(of::<Bf16>(Op::N, Op::N, (4, 4096, 4095)).unwrap().flags, WIDE_W);
        // An odd n: the weight's rows do.
        assert_eq!(of::<Bf16>(Op::N, Op::N, (4, 4095, 4096)).unwrap().flags, WIDE_X);
        // One token: its row's length does not matter.
        assert_eq!(of::<Bf16>(Op::N, Op::N, (1, 4096, 4096)).unwrap().flags, WIDE_W | WIDE_X);
        // n small: A is the weight, K-major; B's tokens lie along n.
        let d = of::<Bf16>(Op::N, Op::N, (4096, 8, 4096)).unwrap();
        assert_eq!((d.form, d.weight_is_a, d.tokens, d.x_s, d.x_p), (Form::KMajor, true, 8, 1, 8));
        assert_eq!(d.flags, WIDE_W);
        // FP8 reads an N-major weight only through the tile kernel's pack.
        assert!(of::<E4m3>(Op::N, Op::N, (4, 4096, 4096)).is_none());
        assert_eq!(of::<E4m3>(Op::N, Op::T, (4, 4096, 4096)).unwrap().form, Form::KMajor);
        // f32 (FFMA) keeps the sgemm path.
        assert!(of::<F32>(Op::N, Op::N, (16, 4096, 4096)).is_none());
        // Neither side small: not a decode call.
        assert!(of::<Bf16>(Op::N, Op::N, (17, 4096, 4096)).is_none());
    }

    /// Splits fill three blocks per SM, each split at least four steps a
    /// warp, and cover k exactly.
    #[test]
    fn splits_fill_the_sms_and_cover_k() {
        // bf16 4096 x 4096 K-major: 128 blocks of 32 rows, chunks of 32.
        assert_eq!(split(128, 4096, 32, 132), (4, 1024));
        // 16384 rows: 512 blocks already fill 132 SMs three times over.
        assert_eq!(split(512, 4096, 32, 132), (1, 4096));
        // Short k: one split (700 is under four steps of 16 a warp twice).
        assert_eq!(split(64, 700, 16, 132), (1, 704));
        // 1 x 4096 x 4096 bf16 N-major: 64 blocks of 64 columns want 7
        // splits, and k allows 8 of at least 512.
        assert_eq!(split(64, 4096, 16, 132), (7, 592));
        for (blocks, k, step) in [(1, 100_000, 64), (7, 12_345, 16), (64, 4096, 16)] {
            let (splits, len) = split(blocks, k, step, 132);
            assert!(len.is_multiple_of(step) && splits * len >= k && (splits - 1) * len < k);
            assert!(splits <= 32);
        }
    }
}
