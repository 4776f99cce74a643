//! Attention's backward pass as a library call: from Q, K, V, the
//! forward's O and lse, and dO, the gradients dQ, dK and dV in the input
//! precision (bf16, f16), accumulated in `f32`; causal or not,
//! grouped-query heads (a K/V head's gradients summed over its query
//! heads), any lengths. The arithmetic is `gpu::attention::backward`'s.
//!
//! - [`mod@launch`]: the steps' launches (the unfused baseline through
//!   the GEMM library, the fused `mma.sync` kernel, the Hopper kernel) on
//!   device [`Gradients`];
//! - [`reference`](mod@reference): the `f64` reference, each element's
//!   error bound, the verification, and the reference's own check by
//!   central differences;
//! - [`run`]: a call's steps verified, then timed ([`run_steps`]).
//!
//! FLOPs: `10 b h s_q s_k d` (five products), halved when causal
//! ([`flops`]).

pub mod launch;
pub mod reference;
pub mod run;

pub use launch::{FUSED_HEAD_DIMS, Gradients, device_bytes, host_bytes, kernel, launch};
pub use reference::{Inputs, Reference, gradient_check, key_rows_to_check, reference, verify};
pub use run::{Tensors, gradients, output_gradient, run_steps};

use super::problem::Problem;

/// The FLOPs a backward's rate counts: two and a half times the
/// forward's ([`Problem::flops`]), `10 b h s_q s_k d`, halved when causal.
pub fn flops(p: &Problem) -> f64 {
    2.5 * p.flops()
}

/// Bytes of global memory the unfused step moves per score (`b h s_q
/// s_k` of them, causal or not: its products are dense): S and dP written
/// in `f32` by the GEMMs (8), read by the elementwise kernel (8), which
/// writes P and dS in 16 bits (4); then P read by `dV = Pᵀ dO` and dS by
/// `dK = dSᵀ Q` and by `dQ = dS K` (6). Q, K, V, O, dO and the gradients
/// add `O((s_q + s_k) d)` a head beside it. Its time is these bytes over
/// the device's bandwidth, whatever the tensor cores' speed: the point of
/// fusing.
pub const UNFUSED_BYTES_PER_SCORE: f64 = 26.0;
