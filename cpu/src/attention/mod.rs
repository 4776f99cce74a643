//! Attention as a library call: `O = softmax(scale Q Kᵀ) V` and the rows'
//! log-sum-exp, for bf16 and f16, head dimensions 64, 128 and 256, causal
//! or not, grouped-query heads, any lengths.
//!
//! - [`problem`]: a problem ([`Problem`]) and its checks, and the sweep's
//!   problems (`bench/attention-sweep.txt`);
//! - [`mod@launch`]: the steps ([`Step`]: unfused through the GEMM library,
//!   the fused `mma.sync` kernel, the Hopper kernel) and their launches on
//!   device [`Buffers`];
//! - [`reference`](mod@reference): the `f64` reference and each element's
//!   error bound, and the verification;
//! - [`run`]: a call's steps verified, then timed ([`run_steps`]);
//! - [`fp8`]: the Hopper step on E4M3 inputs (per-tensor descales, Vᵀ
//!   from a pass of its own), its bound and its accuracy beside bf16's;
//! - [`backward`]: the gradients dQ, dK, dV, their steps and reference;
//! - [`decode`]: a few queries per sequence against a KV cache,
//!   contiguous or paged, the keys split across blocks.
//!
//! The benchmark family that runs them is `families::attention`.

pub mod backward;
pub mod decode;
pub mod fp8;
pub mod launch;
pub mod problem;
pub mod reference;
pub mod run;

pub use launch::{
    Buffers, Element, HopperState, Step, deal_group, hopper_maps, hopper_split, launch, launch_hopper,
};
pub use problem::{BACKWARD_SWEEP, EMULATOR_MULTIPLY_ADDS, HEAD_DIMS, Problem, SWEEP, backward_sweep, sweep};
pub use reference::{
    Arithmetic, Reference, inputs, reference, reference_of, reference_tiled, reference_with, rows_to_check,
    verify,
};
pub use run::{Outcome, run_steps};
