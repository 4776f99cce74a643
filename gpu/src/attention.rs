//! Attention: `O = softmax(scale Q Kᵀ + mask) V`, forward, one step per
//! file, and its gradients ([`backward`]).
//!
//! Layout (row-major): Q is `[batch, heads, s_q, d]`, K and V are `[batch,
//! kv_heads, s_k, d]`, O is Q's shape, and the log-sum-exp of each row of
//! scores, `lse = ln sum_j e^(scale s_ij)` (what a backward pass needs), is
//! `[batch, heads, s_q]` in `f32`. Grouped-query attention: `kv_heads`
//! divides `heads`, and query head `h` reads K/V head `h / (heads /
//! kv_heads)`. Inputs and O are bf16 or f16 (a 16-bit [`crate::dev::Element`]); the Hopper
//! step also takes E4M3 inputs (FP8, O in bf16 or f16). Scores, sums and the accumulators are `f32`.
//!
//! Causal masking with `s_q != s_k` aligns the diagonal bottom-right, as
//! FlashAttention-2 does: query `i` sees keys `j <= i + s_k - s_q`, so the
//! last query sees every key. With `s_q > s_k` the first `s_q - s_k`
//! queries see no key at all: their row of O is 0 and their `lse` is
//! `+inf` (FlashAttention's convention, so that a backward pass's `e^(s -
//! lse)` is 0 there).
//!
//! FLOPs: `4 b h s_q s_k d` (two products of `2 s_q s_k d` each), about
//! half of that when causal (the kernels count what they skip, the rates
//! count `2 b h s_q s_k d`).
//!
//! The steps:
//! 1. [`softmax`]: the unfused baseline's middle kernel. `S = Q Kᵀ` and `P
//!    V` are the GEMM library's calls (`kernel_lab::gemm`); S and P go
//!    through global memory.
//! 2. [`flash`]: FlashAttention-2 on `mma.sync`: S and P never leave
//!    registers.
//! 3. [`hopper`]: FlashAttention-3 on Hopper (sm_90a): TMA, mbarriers,
//!    `wgmma` with P from registers, a producer warp and two consumer
//!    warpgroups taking turns, persistent blocks.
//!
//! For serving: [`decode`], a few queries against a long KV cache
//! (contiguous or paged), its keys split across blocks and merged.

pub mod backward;
pub mod decode;
pub mod flash;
pub mod hopper;
pub mod softmax;

/// `log2 e`: scores are scaled by `scale log2 e` so that `e^x` is one
/// `ex2.approx` ([`crate::dev::math::ex2_approx`]).
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

/// A row's log-sum-exp, natural log, from its reference `reference` in
/// log2 units (the exponentials' `m c`) and its sum `l` of `2^(s c -
/// reference)`: `(reference + log2 l) ln 2`, or `+inf` for a row that saw
/// no key (`l = 0`). Every step stores it so.
#[inline(always)]
pub(crate) fn log_sum_exp(reference: f32, l: f32) -> f32 {
    if l > 0.0 {
        (reference + crate::dev::math::lg2_approx(l)) * core::f32::consts::LN_2
    } else {
        f32::INFINITY
    }
}

/// `op` over 32 values as a tree of depth 5, where a loop makes a chain
/// of 31 dependent instructions: a softmax's row maximum and row sum
/// waited on that chain's latency (ncu: `FMNMX` behind its predecessor,
/// with one or two warps a scheduler to hide it). Unused places hold the
/// identity (`-inf` for `max`, `-0.0` for `+`), which LLVM folds away.
#[inline(always)]
// `seq!` substitutes 0 into `16 >> L` and `J + w`.
#[allow(clippy::identity_op)]
pub(crate) fn tree32(mut v: [f32; 32], op: impl Fn(f32, f32) -> f32) -> f32 {
    seq_macro::seq!(L in 0..5 {{
        let w = 16 >> L;
        seq_macro::seq!(J in 0..16 {
            if J < w {
                v[J] = op(v[J], v[J + w]);
            }
        });
    }});
    v[0]
}

/// How many keys query `row` (of `s_q`) may see: all `s_k`, or causally
/// (bottom-right) `row + s_k - s_q + 1`, clamped to `0..=s_k`.
#[inline(always)]
pub fn visible_keys(row: usize, s_q: usize, s_k: usize, causal: bool) -> usize {
    if causal { (row + s_k + 1).saturating_sub(s_q).min(s_k) } else { s_k }
}
