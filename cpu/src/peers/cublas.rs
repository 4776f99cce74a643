//! cuBLAS on the same call, the same buffers: SGEMM in FP32 (math mode
//! `CUBLAS_DEFAULT_MATH`: no TF32 tensor cores) for `sgemm`, and
//! `cublasGemmStridedBatchedEx` in the library call's precision (tf32:
//! `CUBLAS_COMPUTE_32F_FAST_TF32`; bf16 and f16: `CUBLAS_COMPUTE_32F`; f32:
//! pedantic FP32) and output type. cuBLAS is column-major: a row-major
//! call goes as `Dᵀ = op(B)ᵀ op(A)ᵀ`.

use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig, sys as cublas_sys};

use cudarc::driver::{DevicePtr, DevicePtrMut};

use crate::blas::{Gemm, Layout, Op};
use crate::gemm::Call;
use crate::gemm::precision::{Element, Input, Precision};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

pub struct Cublas {
    blas: CudaBlas,
    /// The stream the handle runs on (for raw pointers' guards).
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
}

impl Cublas {
    pub fn new(gpu: &Gpu) -> Result<Self> {
        // SAFETY: only tries to dlopen libcublas.
        if !unsafe { cublas_sys::is_culib_present() } {
            return Err(Error::InvalidInput(
                "cuBLAS (libcublas.so.13) not found: add CUDA's lib64 folder to LD_LIBRARY_PATH".into(),
            ));
        }
        let cuda = gpu.cuda().ok_or_else(|| Error::InvalidInput("cuBLAS needs a GPU".into()))?;
        let blas = CudaBlas::new(cuda.stream.clone())
            .map_err(|e| Error::InvalidInput(format!("cuBLAS could not start: {e:?}")))?;
        // SAFETY: a valid handle; the mode is a plain enum.
        let status = unsafe {
            cublas_sys::cublasSetMathMode(*blas.handle(), cublas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)
        };
        if status != cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::InvalidInput(format!("cublasSetMathMode failed: {status:?}")));
        }
        Ok(Cublas { blas, stream: cuda.stream.clone() })
    }

    /// The cuBLAS handle (for the calls the safe API lacks).
    pub(crate) fn handle(&self) -> &cublas_sys::cublasHandle_t {
        self.blas.handle()
    }

    /// The stream the handle runs on.
    pub(crate) fn stream(&self) -> &std::sync::Arc<cudarc::driver::CudaStream> {
        &self.stream
    }

    /// `g` through `cublasSgemm`. cuBLAS is column-major: a column-major
    /// call goes as it is; a row-major one as `Cᵀ = op(B)ᵀ op(A)ᵀ`, B first
    /// with `m` and `n` swapped (the same reduction the kernels' host side
    /// makes, in the other direction).
    pub fn run(
        &self,
        g: &Gemm,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        g.check_buffers(a.len(), b.len(), c.len())?;
        let on_gpu = |what| Error::InvalidInput(format!("cuBLAS needs {what} on the GPU"));
        let (a, b) = (a.as_cuda().ok_or_else(|| on_gpu("A"))?, b.as_cuda().ok_or_else(|| on_gpu("B"))?);
        let c = c.as_cuda_mut().ok_or_else(|| on_gpu("C"))?;
        let op = |o: Op| match o {
            Op::N => cublas_sys::cublasOperation_t::CUBLAS_OP_N,
            Op::T => cublas_sys::cublasOperation_t::CUBLAS_OP_T,
        };
        let int = |x: usize| x as i32;
        let (first, second, cfg) = match g.layout {
            Layout::Col => (
                a,
                b,
                GemmConfig {
                    transa: op(g.op_a),
                    transb: op(g.op_b),
                    m: int(g.m),
                    n: int(g.n),
                    k: int(g.k),
                    alpha: g.alpha,
                    lda: int(g.lda),
                    ldb: int(g.ldb),
                    beta: g.beta,
                    ldc: int(g.ldc),
                },
            ),
            Layout::Row => (
                b,
                a,
                GemmConfig {
                    transa: op(g.op_b),
                    transb: op(g.op_a),
                    m: int(g.n),
                    n: int(g.m),
                    k: int(g.k),
                    alpha: g.alpha,
                    lda: int(g.ldb),
                    ldb: int(g.lda),
                    beta: g.beta,
                    ldc: int(g.ldc),
                },
            ),
        };
        if [g.m, g.n, g.k, g.lda, g.ldb, g.ldc].iter().any(|&x| x > i32::MAX as usize) {
            return Err(Error::InvalidInput(format!("cuBLAS takes 32-bit dimensions, not {g}")));
        }
        // SAFETY: the buffers hold the matrices at their leading dimensions (checked above).
        unsafe { self.blas.gemm(cfg, first, second, c) }
            .map_err(|e| Error::InvalidInput(format!("cublasSgemm failed: {e:?}")))
    }

    /// `C = A B` in precision `P` for row-major `A` (`m x k`) and `B` (`k x
    /// n`; where `P` reads B K-major, as `wgmma` does tf32, its transpose
    /// `bt`, `n x k`), `f32` `C`, accumulating in `f32` (`cublasGemmEx` with
    /// `P`'s input type and compute type: bf16 and f16 `CUBLAS_COMPUTE_32F`,
    /// tensor cores; tf32 `CUBLAS_COMPUTE_32F_FAST_TF32`), as the
    /// column-major `Cᵀ = Bᵀ Aᵀ` (B K-major: `(btᵀ)ᵀ Aᵀ`, the first operand
    /// transposed, "TN"). `T` is the buffers' element as the caller holds
    /// it (bf16 as its bits, `u16`): `P`'s input type's size.
    pub fn gemm_rows<P: Precision, T: cudarc::driver::DeviceRepr>(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        if size_of::<T>() != size_of::<P::Input>() {
            return Err(Error::InvalidInput(format!("{} GEMM: {}-byte elements", P::NAME, size_of::<T>())));
        }
        if a.len() < m * k || b.len() < k * n || c.len() < m * n {
            return Err(Error::InvalidInput(format!("{} GEMM {m}x{n}x{k}: buffers too small", P::NAME)));
        }
        let ldb = if P::B_K_MAJOR { k } else { n };
        let types = (P::Input::cuda_type(), P::cublas_compute());
        self.gemm_ex(
            P::NAME,
            (m, n, k),
            ((b, 0), P::B_K_MAJOR, ldb),
            ((a, 0), k),
            (c, 0, f32::cuda_type()),
            types,
        )
    }

    /// The grouped call's peer, a loop of dense calls: `D_g = A_g B_g` for
    /// each group `g` of `spans` (its first row and rows; B's stack as the
    /// grouped kernel reads it, [`crate::gemm::grouped`]), one
    /// `cublasGemmEx` a group (`alpha = 1`).
    pub fn gemm_groups<P: Precision, O: Element>(
        &self,
        spans: &[(usize, usize)],
        (n, k): (usize, usize),
        a: &DeviceBuffer<P::Input>,
        b: &DeviceBuffer<P::Input>,
        d: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        let ldb = if P::B_K_MAJOR { k } else { n };
        let types = (P::Input::cuda_type(), P::cublas_compute());
        for (g, &(start, rows)) in spans.iter().enumerate().filter(|(_, s)| s.1 > 0) {
            let (first, second) = ((b, g * n * k), (a, start * k));
            if a.len() < (start + rows) * k || b.len() < (g + 1) * n * k || d.len() < (start + rows) * n {
                return Err(Error::InvalidInput(format!("cuBLAS group {g}: buffers too small")));
            }
            self.gemm_ex(
                P::NAME,
                (rows, n, k),
                (first, P::B_K_MAJOR, ldb),
                (second, k),
                (d, start * n, O::cuda_type()),
                types,
            )?;
        }
        Ok(())
    }

    /// `cublasGemmEx` for the row-major `C (m x n) = A B`, as the
    /// column-major `Cᵀ = Bᵀ Aᵀ`: `first` is B's buffer and the element B
    /// starts at (transposed for cuBLAS when `true`) at leading dimension
    /// `ldb`, `second` A's at `lda`; inputs of type `ty`, C from element
    /// `c_at` of its buffer, of type `c_type`, `compute` the compute type.
    #[allow(clippy::too_many_arguments)]
    fn gemm_ex<T: cudarc::driver::DeviceRepr, C: cudarc::driver::DeviceRepr>(
        &self,
        what: &str,
        (m, n, k): (usize, usize, usize),
        ((first, first_at), transposed, ldb): ((&DeviceBuffer<T>, usize), bool, usize),
        ((second, second_at), lda): ((&DeviceBuffer<T>, usize), usize),
        (c, c_at, c_type): (&mut DeviceBuffer<C>, usize, cublas_sys::cudaDataType_t),
        (ty, compute): (cublas_sys::cudaDataType_t, cublas_sys::cublasComputeType_t),
    ) -> Result<()> {
        if [m, n, k].iter().any(|&x| x > i32::MAX as usize) {
            return Err(Error::InvalidInput(format!("cuBLAS takes 32-bit dimensions, not {m}x{n}x{k}")));
        }
        let on_gpu = |what| Error::InvalidInput(format!("cuBLAS needs {what} on the GPU"));
        let (b, a) =
            (first.as_cuda().ok_or_else(|| on_gpu("B"))?, second.as_cuda().ok_or_else(|| on_gpu("A"))?);
        let c = c.as_cuda_mut().ok_or_else(|| on_gpu("C"))?;
        let stream = &self.stream;
        let (a_ptr, _ga) = a.device_ptr(stream);
        let (b_ptr, _gb) = b.device_ptr(stream);
        let (c_ptr, _gc) = c.device_ptr_mut(stream);
        let at = |ptr: u64, i: usize, bytes: usize| (ptr + (i * bytes) as u64) as *const std::ffi::c_void;
        let (a_ptr, b_ptr) = (at(a_ptr, second_at, size_of::<T>()), at(b_ptr, first_at, size_of::<T>()));
        let c_ptr = at(c_ptr, c_at, size_of::<C>()) as *mut std::ffi::c_void;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = |t: bool| {
            if t {
                cublas_sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                cublas_sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let int = |x: usize| x as i32;
        // Leading dimensions of empty matrices must still be at least 1.
        let (lda, ldb, ldc) = (lda.max(1), ldb.max(1), n.max(1));
        // SAFETY: the buffers hold the matrices (the callers checked); the
        // pointers stay valid while the guards live; alpha and beta are
        // host f32s.
        let status = unsafe {
            cublas_sys::cublasGemmEx(
                *self.blas.handle(),
                op(transposed),
                op(false),
                int(n),
                int(m),
                int(k),
                (&alpha as *const f32).cast(),
                b_ptr,
                ty,
                int(ldb),
                a_ptr,
                ty,
                int(lda),
                (&beta as *const f32).cast(),
                c_ptr,
                c_type,
                int(ldc),
                compute,
                cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        if status != cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(Error::InvalidInput(format!("cublasGemmEx ({what}) failed: {status:?}")));
        }
        Ok(())
    }

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
