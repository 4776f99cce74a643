//! The precision axis, written once: what an element type is on the host
//! and to cuBLAS ([`Element`]), and what a precision multiplies, with
//! which kernel and which error ([`Precision`]). The launcher, the host
//! reference, its error bound and the cuBLAS peer all read these, so a
//! new precision is one marker type and its impls.

use cudarc::cublas::sys::{cublasComputeType_t, cudaDataType_t};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::launch::{Dim3, Kernel};
use half::{bf16, f16};

use crate::runtime::{DeviceBuffer, Gpu, Result};
use lab_runtime::MapElement;

/// A matrix element type as stored in device memory: `f32`, bf16 or f16.
pub trait Element:
    DeviceRepr
    + ValidAsZeroBits
    + MapElement
    + gpu::gemm::pack::gemm_pack::Instance
    + gpu::gemm::epilogue::gemm_epilogue::Instance
    + gpu::gemm::wgmma::gemm_wgmma_bf16::Instance
    + gpu::gemm::wgmma::gemm_wgmma_f16::Instance
    + gpu::gemm::wgmma::gemm_wgmma_tf32::Instance
    + gpu::gemm::epilogue::Output
    + Copy
    + Default
    + Send
    + Sync
    + std::fmt::Debug
{
    const NAME: &'static str;
    /// The relative error of rounding a real number (in range) to this
    /// type, to nearest: half an ulp, `2^-p` for `p` bits of significand.
    const ROUNDING: f64;
    /// The smallest positive subnormal: the absolute error of rounding
    /// near zero.
    const TINY: f64;
    /// Bytes in a 16-byte row start: elements per 16 bytes.
    const PER_16: usize = 16 / size_of::<Self>();
    /// Its value (`Output::of_f32` rounds to it from `f32`, to nearest
    /// even).
    fn to_f64(self) -> f64 {
        <Self as gpu::gemm::epilogue::Output>::to_f32(self) as f64
    }
    /// cuBLAS's name for it.
    fn cuda_type() -> cudaDataType_t;
    /// Its bits (to compare outputs exactly, NaNs included).
    fn bits(self) -> u32;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const ROUNDING: f64 = 1.0 / (1u64 << 24) as f64;
    const TINY: f64 = 1.401298464324817e-45;
    fn cuda_type() -> cudaDataType_t {
        cudaDataType_t::CUDA_R_32F
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Element for bf16 {
    const NAME: &'static str = "bf16";
    const ROUNDING: f64 = 1.0 / 256.0;
    const TINY: f64 = 9.183549615799121e-41;
    fn cuda_type() -> cudaDataType_t {
        cudaDataType_t::CUDA_R_16BF
    }
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}

impl Element for f16 {
    const NAME: &'static str = "f16";
    const ROUNDING: f64 = 1.0 / 2048.0;
    const TINY: f64 = 5.960464477539063e-8;
    fn cuda_type() -> cudaDataType_t {
        cudaDataType_t::CUDA_R_16F
    }
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}

/// The scalars of a library `wgmma` launch after its buffers (see
/// `gpu::gemm::wgmma`).
#[derive(Clone, Copy, Debug)]
pub struct WgmmaScalars {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ldd: u32,
    pub d_batch: u64,
    pub batch: u32,
    pub splits: u32,
    pub split_steps: u32,
    pub alpha: f32,
    pub beta: f32,
    pub bias_mode: u32,
    pub act: u32,
}

/// The buffers of a library `wgmma` launch: the maps, A and B they
/// describe, D, the split sums' workspace, the bias.
pub struct WgmmaBuffers<'a, I, O> {
    pub maps: &'a DeviceBuffer<u64>,
    pub a: &'a DeviceBuffer<I>,
    pub b: &'a DeviceBuffer<I>,
    pub d: &'a mut DeviceBuffer<O>,
    pub sums: &'a mut DeviceBuffer<f32>,
    pub bias: &'a DeviceBuffer<f32>,
}

/// A precision a GEMM multiplies in: its input element, the error of its
/// products, and the kernel that multiplies it.
pub trait Precision: 'static {
    /// `--precision`'s name.
    const NAME: &'static str;
    /// What A and B hold.
    type Input: Element;
    /// The relative error of one product of two inputs as the hardware
    /// forms it, before accumulation: 0 where the product of two inputs
    /// is exact in `f32` (bf16, f16: 8 and 11 significant bits, 22 at
    /// most in the product), `2^-9` for tf32 (each `f32` input truncated
    /// to 10 mantissa bits, off by less than `2^-10` relative).
    const PRODUCT_ERROR: f64;
    /// The tensor-core kernel reads B K-major (`n x k`), as `wgmma` must
    /// for tf32; the 16-bit kernels read it N-major (`k x n`).
    const B_K_MAJOR: bool;
    /// The library's `wgmma` kernel for output type `O`, or `None` (the
    /// FFMA path, `f32`).
    fn kernel<O: Element>() -> Option<&'static Kernel>;
    /// k per stage of that kernel (one 128-byte row).
    const BK: usize = 128 / size_of::<Self::Input>();
    /// Launches [`Precision::kernel`].
    ///
    /// # Safety
    /// The maps describe A and B within `a` and `b`; `c` holds what the
    /// scalars name (the kernel's contract).
    unsafe fn launch<O: Element>(
        gpu: &Gpu,
        grid: Dim3,
        x: WgmmaBuffers<'_, Self::Input, O>,
        s: WgmmaScalars,
    ) -> Result<()>;
    /// cuBLAS's compute type for the same products.
    fn cublas_compute() -> cublasComputeType_t;
}

/// `f32` inputs multiplied in `f32` (FFMA): the `sgemm` path.
pub struct F32;
/// `f32` inputs read as tf32 by the tensor cores.
pub struct Tf32;
/// bf16 inputs.
pub struct Bf16;
/// IEEE binary16 inputs.
pub struct F16;

macro_rules! tensor_precision {
    ($marker:ty, $name:literal, $input:ty, $error:expr, $k_major:literal, $kernel:ident, $compute:ident) => {
        impl Precision for $marker {
            const NAME: &'static str = $name;
            type Input = $input;
            const PRODUCT_ERROR: f64 = $error;
            const B_K_MAJOR: bool = $k_major;
            fn kernel<O: Element>() -> Option<&'static Kernel> {
                Some(&gpu::gemm::wgmma::$kernel::KERNELS[<O as gpu::gemm::wgmma::$kernel::Instance>::INDEX])
            }
            unsafe fn launch<O: Element>(
                gpu: &Gpu,
                grid: Dim3,
                x: WgmmaBuffers<'_, $input, O>,
                s: WgmmaScalars,
            ) -> Result<()> {
                // SAFETY: the caller's contract.
                unsafe {
                    gpu::gemm::wgmma::$kernel::launch::<O, _>(
                        gpu,
                        grid,
                        x.maps,
                        x.a,
                        x.b,
                        x.d,
                        x.sums,
                        x.bias,
                        s.m,
                        s.n,
                        s.k,
                        s.ldd,
                        s.d_batch,
                        s.batch,
                        s.splits,
                        s.split_steps,
                        s.alpha,
                        s.beta,
                        s.bias_mode,
                        s.act,
                    )
                }
            }
            fn cublas_compute() -> cublasComputeType_t {
                cublasComputeType_t::$compute
            }
        }
    };
}

tensor_precision!(Tf32, "tf32", f32, 1.0 / 512.0, true, gemm_wgmma_tf32, CUBLAS_COMPUTE_32F_FAST_TF32);
tensor_precision!(Bf16, "bf16", bf16, 0.0, false, gemm_wgmma_bf16, CUBLAS_COMPUTE_32F);
tensor_precision!(F16, "f16", f16, 0.0, false, gemm_wgmma_f16, CUBLAS_COMPUTE_32F);

impl Precision for F32 {
    const NAME: &'static str = "f32";
    type Input = f32;
    const PRODUCT_ERROR: f64 = 0.0;
    const B_K_MAJOR: bool = false;
    fn kernel<O: Element>() -> Option<&'static Kernel> {
        None
    }
    unsafe fn launch<O: Element>(
        _: &Gpu,
        _: Dim3,
        _: WgmmaBuffers<'_, f32, O>,
        _: WgmmaScalars,
    ) -> Result<()> {
        unreachable!("f32 has no tensor-core kernel: `kernel()` is None")
    }
    fn cublas_compute() -> cublasComputeType_t {
        cublasComputeType_t::CUBLAS_COMPUTE_32F_PEDANTIC
    }
}
