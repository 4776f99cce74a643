//! The precision axis, written once: what an element type is on the host
//! and to cuBLAS ([`Input`], and [`Element`] for what D may hold), and what a precision multiplies, with
//! which kernel and which error ([`Precision`]). The launcher, the host
//! reference, its error bound and the cuBLAS peer all read these, so a
//! new precision is one marker type and its impls.

use cudarc::cublas::sys::{cublasComputeType_t, cudaDataType_t};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::launch::{Dim3, Kernel};
use gpu_isa::fp8;
use half::{bf16, f16};

use super::tile::TileShape;
use crate::runtime::{DeviceBuffer, Gpu, Result};
use lab_runtime::MapElement;

/// What A and B may hold: `f32`, bf16, f16, FP8 E4M3 or E5M2.
pub trait Input:
    DeviceRepr
    + ValidAsZeroBits
    + MapElement
    + gpu::gemm::pack::gemm_pack::Instance
    + gpu::gemm::pack::gemm_repitch::Instance
    + Copy
    + Default
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    const NAME: &'static str;
    /// The relative error of rounding a real number (in range) to this
    /// type, to nearest: half an ulp, `2^-p` for `p` bits of significand.
    const ROUNDING: f64;
    /// The smallest positive subnormal: the absolute error of rounding
    /// near zero.
    const TINY: f64;
    /// Elements per 16 bytes (a row start the copy engine accepts).
    const PER_16: usize = 16 / size_of::<Self>();
    /// Its value.
    fn to_f64(self) -> f64;
    /// `x` rounded to this type, to nearest even (FP8: saturating).
    fn round_f32(x: f32) -> Self;
    /// cuBLAS's name for it.
    fn cuda_type() -> cudaDataType_t;
    /// Its bits (to compare outputs exactly, NaNs included).
    fn bits(self) -> u32;
}

/// What D may hold (`f32`, bf16 or f16): an input type with the
/// epilogue's conversions and a `wgmma` kernel instance per precision.
pub trait Element:
    Input
    + gpu::gemm::epilogue::gemm_epilogue::Instance
    + gpu::gemm::wgmma::Instances
    + gpu::gemm::grouped::Instances
    + gpu::gemm::blockscaled::gemm_blockscaled_e4m3::Instance
    + gpu::gemm::blockscaled::gemm_grouped_blockscaled_e4m3::Instance
    + gpu::gemm::decode::Instances
    + gpu::gemm::epilogue::Output
{
}

macro_rules! element {
    ($t:ty, $name:expr, $rounding:expr, $tiny:expr, $cuda:ident) => {
        impl Input for $t {
            const NAME: &'static str = $name;
            const ROUNDING: f64 = $rounding;
            const TINY: f64 = $tiny;
            fn to_f64(self) -> f64 {
                <Self as gpu::gemm::epilogue::Output>::to_f32(self) as f64
            }
            fn round_f32(x: f32) -> Self {
                <Self as gpu::gemm::epilogue::Output>::of_f32(x)
            }
            fn cuda_type() -> cudaDataType_t {
                cudaDataType_t::$cuda
            }
            fn bits(self) -> u32 {
                self.to_bits().into()
            }
        }
        impl Element for $t {}
    };
}

element!(f32, "f32", 1.0 / (1u64 << 24) as f64, 1.401298464324817e-45, CUDA_R_32F);
element!(bf16, <bf16 as gpu::dev::Element>::INPUT.name(), 1.0 / 256.0, 9.183549615799121e-41, CUDA_R_16BF);
element!(f16, <f16 as gpu::dev::Element>::INPUT.name(), 1.0 / 2048.0, 5.960464477539063e-8, CUDA_R_16F);

macro_rules! fp8_input {
    ($t:ty, $cuda:ident) => {
        impl Input for $t {
            const NAME: &'static str = <$t as gpu::dev::Element>::INPUT.name();
            const ROUNDING: f64 = 1.0 / (2u64 << <$t>::MANTISSA) as f64;
            const TINY: f64 = 0.0;
            fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            fn round_f32(x: f32) -> Self {
                <$t>::from_f32(x)
            }
            fn cuda_type() -> cudaDataType_t {
                cudaDataType_t::$cuda
            }
            fn bits(self) -> u32 {
                self.0.into()
            }
        }
    };
}

fp8_input!(fp8::E4m3, CUDA_R_8F_E4M3);
fp8_input!(fp8::E5m2, CUDA_R_8F_E5M2);

/// The scalars of a library `wgmma` launch after its buffers (see
/// `gpu::gemm::wgmma`), and which of its kernels takes them.
#[derive(Clone, Copy, Debug)]
pub struct WgmmaScalars {
    /// The kernel's tiles (not a parameter: it picks the kernel).
    pub tile: TileShape,
    pub m: u32,
    pub n: u32,
    /// k-steps of [`Precision::BK`]: `ceil(k / BK)`.
    pub k_steps: u32,
    pub ldd: u32,
    pub d_batch: u64,
    pub batch: u32,
    pub splits: u32,
    pub split_steps: u32,
    pub alpha: f32,
    pub beta: f32,
    pub bias_mode: u32,
    pub act: u32,
    /// 1 when the maps hold D's after A's and B's (the store through
    /// shared memory and TMA), 0 when D's rows cannot take TMA.
    pub d_maps: u32,
}

/// The buffers of a library `wgmma` launch: the maps (A and B are read
/// through them alone), D, the split sums' workspace and tickets, the
/// bias.
pub struct WgmmaBuffers<'a, O> {
    pub maps: &'a DeviceBuffer<u64>,
    pub d: &'a mut DeviceBuffer<O>,
    pub sums: &'a mut DeviceBuffer<f32>,
    /// One zero word per thread and tile (`256 batch tiles`), left zero.
    pub tickets: &'a mut DeviceBuffer<u32>,
    pub bias: &'a DeviceBuffer<f32>,
}

/// A precision a GEMM multiplies in: its input element, the error of its
/// products, and the kernel that multiplies it. Its name, B's layout, the
/// products' error and the scale factors follow from the tensor cores'
/// operand type ([`Precision::OPERAND`], the device element's).
pub trait Precision: 'static {
    /// The tensor cores' operand type, that of the device element the
    /// kernels stage (`<bf16 as gpu::dev::Element>::INPUT`, ...), or
    /// `None`: `f32` multiplied by FFMA.
    const OPERAND: Option<gpu::dev::Input>;
    /// `--precision`'s name.
    const NAME: &'static str = match Self::OPERAND {
        Some(input) => input.name(),
        None => "f32",
    };
    /// What A and B hold.
    type Input: Input;
    /// The relative error of one product of two inputs as the hardware
    /// forms it, before accumulation: 0 where the product of two inputs
    /// is exact in `f32` (bf16, f16: 8 and 11 significant bits, 22 at
    /// most in the product; FP8), `2^-9` for tf32 (each `f32` input
    /// truncated to 10 mantissa bits, off by less than `2^-10` relative).
    const PRODUCT_ERROR: f64 = match Self::OPERAND {
        Some(gpu::dev::Input::Tf32) => 1.0 / 512.0,
        _ => 0.0,
    };
    /// The relative error of the accumulation, as a multiple of `S = sum_p
    /// |a_ip b_pj|`, for `k` products and `splits` partial sums: each
    /// addition into an `f32` accumulator errs by at most one ulp of the
    /// running sum (`2^-23 S`), so `(k + splits + 2) 2^-23` (the ISA fixes
    /// neither the order nor the rounding of the tensor cores' additions).
    fn sum_error(k: usize, splits: usize) -> f64 {
        (k + splits + 2) as f64 * f64::powi(2.0, -23)
    }
    /// A and B come with per-tensor scale factors (FP8, as cuBLASLt's
    /// `A_SCALE_POINTER` / `B_SCALE_POINTER`): `D = alpha scale_a scale_b
    /// op(A) op(B) + ...`.
    const SCALED: bool = matches!(Self::OPERAND, Some(input) if input.is_fp8());
    /// The tensor-core kernel reads B K-major (`n x k`), as `wgmma` must
    /// for tf32 and FP8; the 16-bit kernels read it N-major (`k x n`).
    const B_K_MAJOR: bool = matches!(Self::OPERAND, Some(input) if input.k_major_only());
    /// The library's `wgmma` kernel for output type `O`, or `None` (the
    /// FFMA path, `f32`).
    /// On tiles `tile` (the one-split kernels; the split ones take the
    /// same launch).
    fn kernel<O: Element>(tile: TileShape) -> Option<&'static Kernel>;
    /// k per stage of that kernel (one 128-byte row).
    const BK: usize = 128 / size_of::<Self::Input>();
    /// Launches [`Precision::kernel`].
    ///
    /// # Safety
    /// The maps describe A and B within live buffers; `d` holds what the
    /// scalars name (the kernel's contract).
    unsafe fn launch<O: Element>(
        gpu: &Gpu,
        grid: Dim3,
        x: WgmmaBuffers<'_, O>,
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
/// FP8 E4M3 inputs with per-tensor scales.
pub struct E4m3;
/// FP8 E5M2 inputs with per-tensor scales.
pub struct E5m2;

/// The launch of the library `wgmma` kernel `$kernel` with a call's buffers and
/// scalars (all six kernels of a precision take the same arguments).
macro_rules! wgmma_launch {
    ($kernel:ident, $gpu:expr, $grid:expr, $x:expr, $s:expr) => {{
        let (x, s) = ($x, $s);
        gpu::gemm::wgmma::$kernel::launch::<O, _>(
            $gpu,
            $grid,
            x.maps,
            x.d,
            x.sums,
            x.tickets,
            x.bias,
            s.m,
            s.n,
            s.k_steps,
            s.ldd,
            s.d_batch,
            s.batch,
            s.splits,
            s.split_steps,
            s.alpha,
            s.beta,
            s.bias_mode,
            s.act,
            s.d_maps,
        )
    }};
}

macro_rules! tensor_precision {
    ($marker:ty, $element:ty, $input:ty, $kernel:ident / $split:ident, $mid:ident / $mid_split:ident, $narrow:ident / $narrow_split:ident, $short:ident / $short_split:ident, $compute:ident $(, $extra:item)*) => {
        impl Precision for $marker {
            const OPERAND: Option<gpu::dev::Input> = Some(<$element as gpu::dev::Element>::INPUT);
            type Input = $input;
            $($extra)*
            fn kernel<O: Element>(tile: TileShape) -> Option<&'static Kernel> {
                Some(match tile {
                    TileShape::Wide => &gpu::gemm::wgmma::$kernel::KERNELS[<O as gpu::gemm::wgmma::$kernel::Instance>::INDEX],
                    TileShape::Mid => &gpu::gemm::wgmma::$mid::KERNELS[<O as gpu::gemm::wgmma::$mid::Instance>::INDEX],
                    TileShape::Narrow => &gpu::gemm::wgmma::$narrow::KERNELS[<O as gpu::gemm::wgmma::$narrow::Instance>::INDEX],
                    TileShape::Short => &gpu::gemm::wgmma::$short::KERNELS[<O as gpu::gemm::wgmma::$short::Instance>::INDEX],
                })
            }
            unsafe fn launch<O: Element>(
                gpu: &Gpu,
                grid: Dim3,
                x: WgmmaBuffers<'_, O>,
                s: WgmmaScalars,
            ) -> Result<()> {
                // SAFETY: the caller's contract; the split kernel where k
                // is split, on the tiles asked for.
                unsafe {
                    match (s.splits > 1, s.tile) {
                        (true, TileShape::Wide) => wgmma_launch!($split, gpu, grid, x, s),
                        (false, TileShape::Wide) => wgmma_launch!($kernel, gpu, grid, x, s),
                        (true, TileShape::Mid) => wgmma_launch!($mid_split, gpu, grid, x, s),
                        (false, TileShape::Mid) => wgmma_launch!($mid, gpu, grid, x, s),
                        (true, TileShape::Narrow) => wgmma_launch!($narrow_split, gpu, grid, x, s),
                        (false, TileShape::Narrow) => wgmma_launch!($narrow, gpu, grid, x, s),
                        (true, TileShape::Short) => wgmma_launch!($short_split, gpu, grid, x, s),
                        (false, TileShape::Short) => wgmma_launch!($short, gpu, grid, x, s),
                    }
                }
            }
            fn cublas_compute() -> cublasComputeType_t {
                cublasComputeType_t::$compute
            }
        }
    };
}

tensor_precision!(
    Tf32,
    gpu::dev::Tf32,
    f32,
    gemm_wgmma_tf32 / gemm_wgmma_tf32_split,
    gemm_wgmma_tf32_n192 / gemm_wgmma_tf32_n192_split,
    gemm_wgmma_tf32_n128 / gemm_wgmma_tf32_n128_split,
    gemm_wgmma_tf32_m64 / gemm_wgmma_tf32_m64_split,
    CUBLAS_COMPUTE_32F_FAST_TF32
);
tensor_precision!(
    Bf16,
    bf16,
    bf16,
    gemm_wgmma_bf16 / gemm_wgmma_bf16_split,
    gemm_wgmma_bf16_n192 / gemm_wgmma_bf16_n192_split,
    gemm_wgmma_bf16_n128 / gemm_wgmma_bf16_n128_split,
    gemm_wgmma_bf16_m64 / gemm_wgmma_bf16_m64_split,
    CUBLAS_COMPUTE_32F
);
tensor_precision!(
    F16,
    f16,
    f16,
    gemm_wgmma_f16 / gemm_wgmma_f16_split,
    gemm_wgmma_f16_n192 / gemm_wgmma_f16_n192_split,
    gemm_wgmma_f16_n128 / gemm_wgmma_f16_n128_split,
    gemm_wgmma_f16_m64 / gemm_wgmma_f16_m64_split,
    CUBLAS_COMPUTE_32F
);
tensor_precision!(
    E4m3,
    fp8::E4m3,
    fp8::E4m3,
    gemm_wgmma_e4m3 / gemm_wgmma_e4m3_split,
    gemm_wgmma_e4m3_n192 / gemm_wgmma_e4m3_n192_split,
    gemm_wgmma_e4m3_n128 / gemm_wgmma_e4m3_n128_split,
    gemm_wgmma_e4m3_m64 / gemm_wgmma_e4m3_m64_split,
    CUBLAS_COMPUTE_32F,
    fn sum_error(k: usize, splits: usize) -> f64 {
        fp8_sum_error(k, splits)
    }
);
tensor_precision!(
    E5m2,
    fp8::E5m2,
    fp8::E5m2,
    gemm_wgmma_e5m2 / gemm_wgmma_e5m2_split,
    gemm_wgmma_e5m2_n192 / gemm_wgmma_e5m2_n192_split,
    gemm_wgmma_e5m2_n128 / gemm_wgmma_e5m2_n128_split,
    gemm_wgmma_e5m2_m64 / gemm_wgmma_e5m2_m64_split,
    CUBLAS_COMPUTE_32F,
    fn sum_error(k: usize, splits: usize) -> f64 {
        fp8_sum_error(k, splits)
    }
);

/// FP8's accumulation error: the tensor core adds each instruction's 32
/// products into D keeping about 14 significant bits of the running sum
/// (DeepSeek-V3's measurement on Hopper, which is why CUTLASS and
/// DeepSeek move partial sums into `f32` registers every few
/// instructions). Modelled as `2^-13 S` per `k32` instruction, plus `f32`
/// roundings for the split sums and the epilogue. The emulator sums in
/// `f64` and meets the `f32` bound; this one is what the hardware needs.
fn fp8_sum_error(k: usize, splits: usize) -> f64 {
    k.div_ceil(32) as f64 * f64::powi(2.0, -13) + (splits + 2) as f64 * f64::powi(2.0, -23)
}

impl Precision for F32 {
    const OPERAND: Option<gpu::dev::Input> = None;
    type Input = f32;
    fn kernel<O: Element>(_: TileShape) -> Option<&'static Kernel> {
        None
    }
    unsafe fn launch<O: Element>(_: &Gpu, _: Dim3, _: WgmmaBuffers<'_, O>, _: WgmmaScalars) -> Result<()> {
        unreachable!("f32 has no tensor-core kernel: `kernel()` is None")
    }
    fn cublas_compute() -> cublasComputeType_t {
        cublasComputeType_t::CUBLAS_COMPUTE_32F_PEDANTIC
    }
}

/// `x` as a buffer of `T`, where its element type is `T` (a precision's
/// generic input seen as the concrete type a kernel takes).
pub(crate) fn buffer_of<T: 'static, I: 'static>(x: &DeviceBuffer<I>) -> Option<&DeviceBuffer<T>> {
    (x as &dyn std::any::Any).downcast_ref::<DeviceBuffer<T>>()
}
