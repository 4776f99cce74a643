//! The tensor-core GEMM as one library call: `D = act(alpha op(A) op(B) +
//! beta C + bias)` in `f32`, tf32, bf16, f16 or FP8 (E4M3, E5M2, with
//! per-tensor scales), with `f32`, bf16 or f16 output, any shape, layout, leading dimension and strided batch.
//!
//! - [`precision`]: the precision axis, once: element types and what each
//!   precision multiplies, with which kernel and which error;
//! - [`call`]: a call ([`Call`]) and its checks;
//! - [`run`]: [`TensorGemm`], which packs, plans and launches;
//! - [`decode`](mod@decode): `m` or `n` at most 16, the weight read once in place;
//! - [`grouped`]: a mixture of experts' products in one launch ([`GroupedGemm`]);
//! - [`blockscaled`]: FP8 scaled per 1 x 128 of A and 128 x 128 of B, DeepSeek-V3's recipe;
//! - [`reference`](mod@reference): the `f64` reference and each element's error bound;
//! - [`sweep`]: the public sweep's shapes and groups;
//! - [`random`]: shapes drawn from the ranges users run, by seed;
//!
//! ```ignore
//! let call = Call::new(Gemm::new(Layout::Col, Op::T, Op::N, m, n, k).scaled(0.5, 1.0));
//! TensorGemm::new().run::<Bf16, f32>(&gpu, &call, &a, &b, &mut c, None)?;
//! ```

/// The module of the library's kernels (`gpu/src/gemm.rs`).
pub const KERNELS: &str = "gpu::gemm";

pub mod blockscaled;
pub mod call;
pub mod decode;
pub mod grouped;
pub mod plan;
pub mod precision;
pub mod random;
pub mod reference;
pub mod run;
pub mod sweep;
pub mod tile;
pub mod verify;

pub use call::{Act, Call, EMULATOR_ELEMENTS, EMULATOR_MULTIPLY_ADDS};
pub use grouped::{Grouped, GroupedGemm, GroupedPrecision, Rows};
pub use plan::{Plan, PlanKey};
pub use precision::{Bf16, E4m3, E5m2, Element, F16, F32, Input, Precision, Tf32};
pub use run::{Route, TensorGemm};
pub use tile::TileShape;
