//! The kernels behind the tensor-core GEMM library call
//! (`kernel_lab::gemm`): `D = act(alpha op(A) op(B) + beta C + bias)` for
//! any shape, layout, leading dimension and batch, in four kinds of
//! launch:
//!
//! - [`pack`]: an operand whose rows do not start on 16 bytes, or that
//!   lies the other way round from what `wgmma` reads, copied once into a
//!   workspace the way the copy engine can read it (a memory-bound pass
//!   over that operand alone: `m k` or `k n` elements, against the `2 m n
//!   k` FLOPs of the product);
//! - [`wgmma`]: the persistent, warp-specialized `wgmma` kernel, taking
//!   its work as (batch, k-split, tile) items; tails in `m`, `n` and `k`
//!   are the copy engine's zero fill, so no shape is refused;
//! - [`decode`]: `m` or `n` at most 16, a few tokens against a weight:
//!   `mma.sync` over the weight read once, in place;
//! - [`grouped`]: a mixture of experts' products in one launch, each
//!   expert its own weight and its own rows, which the device holds;
//! - [`blockscaled`]: FP8 with a scale per 1 x 128 of A and per 128 x 128
//!   of B, applied in the main loop;
//! - [`epilogue`]: the k-splits' sums added in order, then `alpha`,
//!   `beta C`, the bias and the activation, rounded to the output type.
//!
//! The host side (`cpu/src/gemm/`) decides which of them a call needs: a
//! row-major, 16-byte-aligned call with `alpha = 1`, `beta = 0`, no
//! epilogue and `f32` output is one `wgmma` launch writing `D` itself.
//!
//! The Hopper engine the `wgmma` kernel is assembled from, which the
//! tensor ladder's later steps import too: [`tile`] (block tiles),
//! [`element`] (element types, B's layout, the `wgmma` form), `ring` (the
//! stages and their mbarriers), [`schedule`] (the items), [`store`] and
//! `tickets` (the epilogues).

// The sm_90a PTX's parts (`gpu/src/lib.rs`): the grouped and
// block-scaled kernels in `"moe"`, the `wgmma` instances in `"dense"` and
// `"fp8"` (each its precisions', `wgmma::instances!`), every other
// kernel in `"rest"`; the engine they share in each part that needs it.
#[cfg(any(not(ptx_parts), ptx_part = "moe"))]
pub mod blockscaled;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod decode;
pub mod element;
pub mod epilogue;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod ffma;
#[cfg(any(not(ptx_parts), ptx_part = "moe"))]
pub mod grouped;
#[cfg(any(not(ptx_parts), ptx_part = "rest"))]
pub mod pack;
pub(crate) mod ring;
pub mod schedule;
pub mod store;
mod tickets;
pub mod tile;
#[cfg(not(ptx_part = "rest"))]
pub mod wgmma;
