//! The in-run peer: `cublasGemmStridedBatchedEx` on the same call, the
//! same buffers, in the same precision (tf32: `CUBLAS_COMPUTE_32F_FAST_TF32`;
//! bf16 and f16: `CUBLAS_COMPUTE_32F`; f32: pedantic FP32) and output
//! type. cuBLAS is column-major: a row-major call goes as `Dᵀ = op(B)ᵀ
//! op(A)ᵀ`.

use cudarc::cublas::sys as cublas_sys;
use cudarc::driver::{DevicePtr, DevicePtrMut};

use super::call::Call;
use super::precision::{Element, Input, Precision};
use crate::blas::cublas::Cublas;
use crate::blas::{Layout, Op};
use crate::runtime::{DeviceBuffer, Error, Result};

impl Cublas {
    /// `call` (without epilogue) through `cublasGemmStridedBatchedEx`.
    pub fn gemm<P: Precision, O: Element>(
        &self,
        call: &Call,
        a: &DeviceBuffer<P::Input>,
        b: &DeviceBuffer<P::Input>,
        c: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        call.check(a.len(), b.len(), c.len(), if call.bias { usize::MAX } else { 0 })?;
        if call.has_epilogue() {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: cublasGemmEx has no epilogue (cuBLASLt's)"
            )));
        }
        let g = &call.gemm;
        let on_gpu = |what| Error::InvalidInput(format!("cuBLAS needs {what} on the GPU"));
        let (a, b) = (a.as_cuda().ok_or_else(|| on_gpu("A"))?, b.as_cuda().ok_or_else(|| on_gpu("B"))?);
        let c = c.as_cuda_mut().ok_or_else(|| on_gpu("C"))?;
        let stream = self.stream();
        let (a_ptr, _ga) = a.device_ptr(stream);
        let (b_ptr, _gb) = b.device_ptr(stream);
        let (c_ptr, _gc) = c.device_ptr_mut(stream);
        let op = |o: Op| match o {
            Op::N => cublas_sys::cublasOperation_t::CUBLAS_OP_N,
            Op::T => cublas_sys::cublasOperation_t::CUBLAS_OP_T,
        };
        // Column-major as it is; row-major as the transposed product.
        let ((first, op1, ld1, s1), (second, op2, ld2, s2), (m, n)) = match g.layout {
            Layout::Col => {
                ((a_ptr, g.op_a, g.lda, call.stride_a), (b_ptr, g.op_b, g.ldb, call.stride_b), (g.m, g.n))
            }
            Layout::Row => {
                ((b_ptr, g.op_b, g.ldb, call.stride_b), (a_ptr, g.op_a, g.lda, call.stride_a), (g.n, g.m))
            }
        };
        let int = |x: usize| x as i32;
        let (alpha, beta) = (g.alpha, g.beta);
        // SAFETY: the buffers hold the batch at its leading dimensions and
        // strides (checked above); the pointers stay valid while the
        // guards live; alpha and beta are host f32s, as the f32 compute
        // types take them.
        let status = unsafe {
            cublas_sys::cublasGemmStridedBatchedEx(
                *self.handle(),
                op(op1),
                op(op2),
                int(m),
                int(n),
                int(g.k),
                (&alpha as *const f32).cast(),
                first as *const std::ffi::c_void,
                P::Input::cuda_type(),
                int(ld1.max(1)),
                s1 as i64,
                second as *const std::ffi::c_void,
                P::Input::cuda_type(),
                int(ld2.max(1)),
                s2 as i64,
                (&beta as *const f32).cast(),
                c_ptr as *mut std::ffi::c_void,
                O::cuda_type(),
                int(g.ldc.max(1)),
                call.stride_c as i64,
                int(call.batch),
                P::cublas_compute(),
                cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if status != cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::InvalidInput(format!(
                "cublasGemmStridedBatchedEx ({call}) failed: {status:?}"
            )));
        }
        Ok(())
    }
}
