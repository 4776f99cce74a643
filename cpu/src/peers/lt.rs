//! The in-run peer for what `cublasGemmEx` cannot take: `cublasLtMatmul`
//! for FP8 inputs (per-tensor scales through `A_SCALE_POINTER` and
//! `B_SCALE_POINTER`) and for epilogues (`BIAS`, `RELU_BIAS`,
//! `GELU_BIAS`, `RELU`, `GELU`), on the same call and buffers.
//!
//! - cuBLASLt is column-major: a row-major call goes as `Dᵀ = op(B)ᵀ
//!   op(A)ᵀ`, as in [`super::cublas`]. Its bias runs along the rows of the
//!   column-major D, so a bias is peered for column-major calls only.
//! - Its FP8 kernels take A transposed and B not (column-major terms): the
//!   library's native FP8 layout (row-major A `m x k`, B given as `n x
//!   k`) is exactly that.
//! - FP8 runs with `FAST_ACCUM` on: the tensor core accumulates as ours
//!   does, with no promotion into `f32` registers between instructions.
//! - Block-scaled FP8 ([`Lt::prepare_block_scaled`], CUDA 12.9's modes
//!   for sm_90): `VEC128_32F` for the activations (one scale per 1 x 128,
//!   stored `kb * m + row`) and `BLK128x128_32F` for the weights (stored
//!   `nb * L4 + kb`, `L4` the k-blocks rounded up to 4), as the cuBLAS
//!   documentation's "scaling factors layouts" give them; in
//!   column-major terms the weights are the first operand. It promotes
//!   into `f32`, so `FAST_ACCUM` is off.
//!
//! [`Lt::prepare`] makes the descriptors, layouts and the heuristic's
//! algorithm once; [`Prepared::run`] only enqueues the matmul, so a timed
//! loop measures the GPU, not descriptor setup.

use std::ffi::c_void;

use cudarc::cublas::sys::cudaDataType_t as BlasType;
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys;
use cudarc::cublaslt::sys::cublasLtMatmulDescAttributes_t as Desc;
use cudarc::driver::{DevicePtr, DevicePtrMut};

use crate::blas::{Layout, Op};
use crate::gemm::call::{Act, Call};
use crate::gemm::precision::{Element, Input, Precision};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// A cuBLASLt handle and its workspace (32 MiB, NVIDIA's advice for Hopper).
pub struct Lt {
    handle: sys::cublasLtHandle_t,
    workspace: DeviceBuffer<u8>,
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
}

const WORKSPACE: usize = 32 << 20;

fn failed(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::InvalidInput(format!("cuBLASLt {what} failed: {e:?}"))
}

/// The same C enum (`library_types.h`) as cuBLASLt's sys layer names it.
fn lt_type(t: BlasType) -> sys::cudaDataType {
    // SAFETY: both are cudarc's bindings of `cudaDataType_t`, one `repr(u32)`
    // enum with the same discriminants (transmute checks the size).
    unsafe { std::mem::transmute::<BlasType, sys::cudaDataType>(t) }
}

impl Lt {
    pub fn new(gpu: &Gpu) -> Result<Lt> {
        // SAFETY: only tries to dlopen libcublasLt.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::InvalidInput(
                "cuBLASLt (libcublasLt.so.13) not found: add CUDA's lib64 folder to LD_LIBRARY_PATH".into(),
            ));
        }
        let cuda = gpu.cuda().ok_or_else(|| Error::InvalidInput("cuBLASLt needs a GPU".into()))?;
        let handle = lt::create_handle().map_err(|e| failed("create", e))?;
        Ok(Lt { handle, workspace: gpu.alloc::<u8>(WORKSPACE)?, stream: cuda.stream.clone() })
    }

    /// Descriptors, layouts and algorithm for `call` on these buffers
    /// (the scales, with FP8, uploaded to `scales`).
    pub fn prepare<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        c: &DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<Prepared> {
        self.prepare_scaled::<P, O>(gpu, call, c, bias, None)
    }

    /// [`Lt::prepare`] for a block-scaled E4M3 `call` (row-major, A `m x
    /// k`, B given as `n x k`): `scale_a` one per 1 x 128 of A (`m x
    /// ceil(k / 128)`, row-major), `scale_b` one per 128 x 128 of B
    /// (`ceil(n / 128) x ceil(k / 128)`, row-major), repacked into
    /// cuBLASLt's layouts.
    pub fn prepare_block_scaled<O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        c: &DeviceBuffer<O>,
        (scale_a, scale_b): (&[f32], &[f32]),
    ) -> Result<Prepared> {
        let g = &call.gemm;
        if (g.layout, g.op_a, g.op_b, call.batch, call.act) != (Layout::Row, Op::N, Op::T, 1, Act::None) {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: cuBLASLt's block scales are peered for one row-major call of A and Bᵀ, no activation"
            )));
        }
        let blocks = g.k.div_ceil(128);
        let (row_blocks, padded) = (g.n.div_ceil(128), blocks.next_multiple_of(4));
        if scale_a.len() != g.m * blocks || scale_b.len() != row_blocks * blocks {
            return Err(Error::InvalidInput(format!("gemm {call}: the block scales' lengths")));
        }
        // The activations' scales k-block-major; the weights' with each
        // block of rows' k-blocks padded to a multiple of 4.
        let a: Vec<f32> = (0..blocks * g.m).map(|i| scale_a[(i % g.m) * blocks + i / g.m]).collect();
        let mut b = vec![0.0f32; row_blocks * padded];
        for (nb, row) in scale_b.chunks(blocks).enumerate() {
            b[nb * padded..nb * padded + blocks].copy_from_slice(row);
        }
        self.prepare_scaled::<crate::gemm::E4m3, O>(gpu, call, c, None, Some((&a, &b)))
    }

    /// [`Lt::prepare`], with block scales (`Some((activations', weights'))`
    /// in cuBLASLt's layouts) or without.
    fn prepare_scaled<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        c: &DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
        blocks: Option<(&[f32], &[f32])>,
    ) -> Result<Prepared> {
        call.check(usize::MAX, usize::MAX, c.len(), bias.map_or(0, DeviceBuffer::len))?;
        let g = &call.gemm;
        if call.bias && g.layout == Layout::Row {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: cuBLASLt's bias runs along column-major rows; a row-major call's bias has no peer"
            )));
        }
        let epilogue = match (call.bias, call.act) {
            (false, Act::None) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
            (false, Act::Relu) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU,
            (false, Act::Gelu) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU,
            (true, Act::None) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            (true, Act::Relu) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            (true, Act::Gelu) => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        let mut p = Prepared {
            handle: self.handle,
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algo: None,
            scales: None,
            alpha: g.alpha,
            beta: g.beta,
            workspace: self.workspace.address(),
            stream: self.stream.clone(),
            order: g.layout,
        };
        let compute = P::cublas_compute();
        // SAFETY: the compute type is cublasComputeType_t's (cuBLAS and cuBLASLt share it).
        let compute = unsafe {
            std::mem::transmute::<cudarc::cublas::sys::cublasComputeType_t, sys::cublasComputeType_t>(compute)
        };
        p.desc =
            lt::create_matmul_desc(compute, lt_type(BlasType::CUDA_R_32F)).map_err(|e| failed("desc", e))?;
        let op = |o: Op| match o {
            Op::N => cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
            Op::T => cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T,
        };
        // Column-major as it is; row-major as the transposed product.
        let ((op1, ld1, s1, rows1, cols1), (op2, ld2, s2, rows2, cols2), (m, n)) = match g.layout {
            Layout::Col => (
                (g.op_a, g.lda, call.stride_a, g.m, g.k),
                (g.op_b, g.ldb, call.stride_b, g.k, g.n),
                (g.m, g.n),
            ),
            Layout::Row => (
                (g.op_b, g.ldb, call.stride_b, g.n, g.k),
                (g.op_a, g.lda, call.stride_a, g.k, g.m),
                (g.n, g.m),
            ),
        };
        // A stored matrix's rows and columns: op(X)'s, swapped when transposed.
        let stored = |o: Op, r: usize, c: usize| if o == Op::T { (c, r) } else { (r, c) };
        let desc = p.desc;
        let set = |attr, value: &dyn Attribute| value.set(desc, attr);
        let (t1, t2) = (op(op1), op(op2));
        set(Desc::CUBLASLT_MATMUL_DESC_TRANSA, &t1)?;
        set(Desc::CUBLASLT_MATMUL_DESC_TRANSB, &t2)?;
        set(Desc::CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue)?;
        if let Some(bias) = bias {
            let at: u64 = bias.address();
            let f32_type = lt_type(BlasType::CUDA_R_32F);
            set(Desc::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &at)?;
            set(Desc::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &f32_type)?;
        }
        if let Some((activations, weights)) = blocks {
            use sys::cublasLtMatmulMatrixScale_t::*;
            // Row-major: the weights (B) are cuBLASLt's first operand.
            let scales = [gpu.upload(weights)?, gpu.upload(activations)?];
            let (first, second) = (scales[0].address(), scales[1].address());
            set(Desc::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &first)?;
            set(Desc::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &second)?;
            set(Desc::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F)?;
            set(Desc::CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F)?;
            p.scales = Some(scales);
        } else if P::SCALED {
            // Each scale in its own allocation (256-byte aligned).
            let scales = [gpu.upload(&[call.scales.0])?, gpu.upload(&[call.scales.1])?];
            let (sa, sb) = (scales[0].address(), scales[1].address());
            // In column-major terms the first operand is B for a row-major call.
            let (first, second) = if g.layout == Layout::Row { (sb, sa) } else { (sa, sb) };
            set(Desc::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &first)?;
            set(Desc::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &second)?;
            let fast: i8 = 1;
            set(Desc::CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast)?;
            p.scales = Some(scales);
        }
        let layout = |t: BlasType, (rows, cols): (usize, usize), ld: usize, stride: usize| {
            let l = lt::create_matrix_layout(lt_type(t), rows as u64, cols as u64, ld.max(1) as i64)
                .map_err(|e| failed("layout", e))?;
            if call.batch != 1 {
                let (count, offset) = (call.batch as i32, stride as i64);
                // SAFETY: a live layout; the attributes are an i32 and an i64.
                unsafe {
                    use sys::cublasLtMatrixLayoutAttribute_t::*;
                    lt::set_matrix_layout_attribute(
                        l,
                        CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                        (&count as *const i32).cast(),
                        4,
                    )
                    .and_then(|()| {
                        lt::set_matrix_layout_attribute(
                            l,
                            CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                            (&offset as *const i64).cast(),
                            8,
                        )
                    })
                    .map_err(|e| failed("batch layout", e))?;
                }
            }
            Ok::<_, Error>(l)
        };
        let input = P::Input::cuda_type();
        p.layouts[0] = layout(input, stored(op1, rows1, cols1), ld1, s1)?;
        p.layouts[1] = layout(input, stored(op2, rows2, cols2), ld2, s2)?;
        p.layouts[2] = layout(O::cuda_type(), (m, n), g.ldc, call.stride_c)?;
        let pref = lt::create_matmul_pref().map_err(|e| failed("preference", e))?;
        let size = WORKSPACE as u64;
        // SAFETY: live objects; the attribute is a u64.
        let heuristic = unsafe {
            lt::set_matmul_pref_attribute(
                pref,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&size as *const u64).cast(),
                8,
            )
            .and_then(|()| {
                lt::get_matmul_algo_heuristic(
                    self.handle,
                    p.desc,
                    p.layouts[0],
                    p.layouts[1],
                    p.layouts[2],
                    p.layouts[2],
                    pref,
                )
            })
        };
        // SAFETY: created above, used by nothing else.
        let _ = unsafe { lt::destroy_matmul_pref(pref) };
        p.algo = Some(heuristic.map_err(|e| failed(&format!("heuristic for {call}"), e))?.algo);
        Ok(p)
    }
}

/// A value of a matmul descriptor's attribute (an enum, a pointer, a flag).
trait Attribute {
    fn set(&self, desc: sys::cublasLtMatmulDesc_t, attr: sys::cublasLtMatmulDescAttributes_t) -> Result<()>;
}

impl<T: Copy> Attribute for T {
    fn set(&self, desc: sys::cublasLtMatmulDesc_t, attr: sys::cublasLtMatmulDescAttributes_t) -> Result<()> {
        let (ptr, size) = ((self as *const T).cast::<c_void>(), size_of::<T>());
        // SAFETY: a live descriptor; `ptr` points at the attribute's value, of its type and size
        // (the callers pass the types cublasLt.h gives each attribute).
        unsafe { lt::set_matmul_desc_attribute(desc, attr, ptr, size) }.map_err(|e| failed("attribute", e))
    }
}

impl Drop for Lt {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// One call made ready for `cublasLtMatmul`.
pub struct Prepared {
    handle: sys::cublasLtHandle_t,
    desc: sys::cublasLtMatmulDesc_t,
    /// The first operand's, the second's, C's and D's.
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: Option<sys::cublasLtMatmulAlgo_t>,
    scales: Option<[DeviceBuffer<f32>; 2]>,
    alpha: f32,
    beta: f32,
    workspace: u64,
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
    order: Layout,
}

impl Prepared {
    /// Enqueues the matmul on `a`, `b` and `c` (`C` on entry, `D` after),
    /// the buffers `prepare` was given the call for.
    pub fn run<I: Input, O: Element>(
        &self,
        a: &DeviceBuffer<I>,
        b: &DeviceBuffer<I>,
        c: &mut DeviceBuffer<O>,
    ) -> Result<()> {
        let on_gpu = |what| Error::InvalidInput(format!("cuBLASLt needs {what} on the GPU"));
        let (a, b) = (a.as_cuda().ok_or_else(|| on_gpu("A"))?, b.as_cuda().ok_or_else(|| on_gpu("B"))?);
        let c = c.as_cuda_mut().ok_or_else(|| on_gpu("C"))?;
        let (a_ptr, _ga) = a.device_ptr(&self.stream);
        let (b_ptr, _gb) = b.device_ptr(&self.stream);
        let (c_ptr, _gc) = c.device_ptr_mut(&self.stream);
        let (first, second) = if self.order == Layout::Row { (b_ptr, a_ptr) } else { (a_ptr, b_ptr) };
        let algo = self.algo.as_ref().ok_or_else(|| failed("prepare", "no algorithm"))?;
        // SAFETY: the descriptors describe these buffers (`prepare`'s call, checked there); the
        // pointers stay valid while the guards live; alpha and beta are host f32s (scale type
        // f32); the workspace is WORKSPACE bytes.
        unsafe {
            lt::matmul(
                self.handle,
                self.desc,
                (&self.alpha as *const f32).cast(),
                (&self.beta as *const f32).cast(),
                first as *const c_void,
                self.layouts[0],
                second as *const c_void,
                self.layouts[1],
                c_ptr as *const c_void,
                self.layouts[2],
                c_ptr as *mut c_void,
                self.layouts[2],
                algo,
                self.workspace as *mut c_void,
                WORKSPACE,
                self.stream.cu_stream() as sys::cudaStream_t,
            )
        }
        .map_err(|e| failed("matmul", e))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: created in `prepare`, destroyed once; null ones skipped.
        unsafe {
            for l in self.layouts {
                if !l.is_null() {
                    let _ = lt::destroy_matrix_layout(l);
                }
            }
            if !self.desc.is_null() {
                let _ = lt::destroy_matmul_desc(self.desc);
            }
        }
        let _ = &self.scales;
    }
}
