//! The `f64` reference of a call and the error bound of each element of
//! `D`, derived from the arithmetic:
//!
//! - **Products.** bf16 and f16 inputs multiply exactly in `f32`; tf32
//!   truncates each `f32` input to 10 mantissa bits, so a product is off
//!   by less than `2^-9` relative ([`Precision::PRODUCT_ERROR`]); FP8
//!   inputs multiply exactly.
//! - **Sums.** Each of the `k` additions into an `f32` accumulator, and
//!   each of the `splits` partial sums the epilogue adds, errs by at most
//!   one ulp of the running sum, which is at most `S = sum_p |a_ip b_pj|`
//!   in magnitude: `(k + splits + 2) 2^-23 S` in all (the ISA fixes
//!   neither the order nor the rounding of the tensor cores' additions).
//!   FP8's tensor cores keep fewer bits of the running sum
//!   ([`Precision::sum_error`]).
//! - **Epilogue.** `alpha W + beta C + bias` is three `f32` roundings of
//!   values bounded by `|alpha| S + |beta c| + |bias|`; ReLU passes an
//!   error through unchanged, GELU multiplies it by at most 1.13 (its
//!   slope's largest magnitude) and adds its own: `|z| / 2` times
//!   `tanh.approx.f32`'s relative error (at most `2^-10.9`, PTX ISA),
//!   plus a few `f32` roundings (`2^-21 |z|`).
//! - **Output.** Rounding to the output type: half an ulp, `2^-24`,
//!   `2^-8` or `2^-11` relative, plus the type's smallest subnormal.
//!
//! `beta = 0` reads no `C`: the reference does not either, so NaN in `C`
//! must not reach `D`. Every element of the output buffer that is not
//! part of `D` (the gaps a leading dimension or a batch stride leaves)
//! must come back bit for bit as it was.

use rayon::prelude::*;

use super::call::{Act, Call};
use super::precision::{Element, Input, Precision};
use crate::blas::Operand;

/// What a check found: the worst error as a fraction of its bound.
pub type Checked = std::result::Result<f64, String>;

/// Checks `got` (the output buffer after the call) against the reference
/// of `call` on `a`, `b`, `c0` (the output buffer before it), `bias`:
/// rows `rows` of every matrix of the batch (all rows if `None`) within
/// their bounds, and every element outside `D` unchanged.
#[allow(clippy::too_many_arguments)]
pub fn check<P: Precision, O: Element>(
    call: &Call,
    a: &[P::Input],
    b: &[P::Input],
    c0: &[O],
    bias: Option<&[f32]>,
    got: &[O],
    splits: usize,
    rows: Option<&[usize]>,
) -> Checked {
    let g = &call.gemm;
    // Outside D: unchanged, bit for bit (where a leading dimension or a
    // batch stride leaves gaps, or the buffer is longer than the call).
    let (lines, length) = g.stored(Operand::C);
    let gaps = g.ldc > length
        || (call.batch > 1 && call.stride_c > g.elements(Operand::C))
        || got.len() > call.elements(Operand::C);
    if gaps && lines > 0 && length > 0 {
        let mut inside = vec![false; got.len()];
        for z in 0..call.batch {
            for line in 0..lines {
                let start = z * call.stride_c + line * g.ldc;
                inside[start..start + length].iter_mut().for_each(|x| *x = true);
            }
        }
        if let Some(at) = (0..got.len()).find(|&at| !inside[at] && got[at].bits() != c0[at].bits()) {
            return Err(format!("element {at} of the output buffer lies outside D and was changed"));
        }
    }
    let all: Vec<usize> = (0..g.m).collect();
    let rows = rows.unwrap_or(&all);
    let unit = P::sum_error(g.k, splits) + P::PRODUCT_ERROR;
    let work: Vec<(usize, usize)> = (0..call.batch).flat_map(|z| rows.iter().map(move |&i| (z, i))).collect();
    // op(B) of each matrix converted once, as its transpose (`n x k`, a
    // column of op(B) a row), where that takes at most 256 MB: every
    // input is an `f32` value, so `f32` holds it exactly. (Converted at
    // each use, it was most of a test's time on the emulator.)
    let (n, k) = (g.n, g.k);
    let b_t: Option<Vec<f32>> = (call.batch.saturating_mul(n).saturating_mul(k) <= 1 << 26).then(|| {
        (0..call.batch * n)
            .into_par_iter()
            .flat_map_iter(|zj| {
                let (z, j) = (zj / n, zj % n);
                (0..k).map(move |p| b[z * call.stride_b + g.index(Operand::B, p, j)].to_f64() as f32)
            })
            .collect()
    });
    let worst = work
        .par_iter()
        .map(|&(z, i)| -> Checked {
            let mut worst = 0.0f64;
            let a_row: Vec<f64> = (0..k).map(|p| a[z * call.stride_a + g.index(Operand::A, i, p)].to_f64()).collect();
            for j in 0..n {
                let (mut dot, mut abs) = (0.0f64, 0.0f64);
                let b_col = b_t.as_ref().map(|t| &t[(z * n + j) * k..(z * n + j + 1) * k]);
                for (p, &x) in a_row.iter().enumerate() {
                    let y = match b_col {
                        Some(col) => col[p] as f64,
                        None => b[z * call.stride_b + g.index(Operand::B, p, j)].to_f64(),
                    };
                    dot += x * y;
                    abs += (x * y).abs();
                }
                let at = z * call.stride_c + g.index(Operand::C, i, j);
                let (alpha, beta) = (call.product_scale() as f64, g.beta as f64);
                let c = if g.beta == 0.0 { 0.0 } else { beta * c0[at].to_f64() };
                let bias = bias.map_or(0.0, |v| v[i] as f64);
                let (want, bound) = expected::<O>(unit, call.act, alpha, (dot, abs), (c, bias));
                let value = got[at].to_f64();
                let err = (value - want).abs();
                if !value.is_finite() || err > bound {
                    return Err(format!(
                        "D[{i}][{j}] of matrix {z} = {value}, want {want} within {bound:.3e} (off by {err:.3e})"
                    ));
                }
                worst = worst.max(err / bound);
            }
            Ok(worst)
        })
        .collect::<std::result::Result<Vec<f64>, String>>()?;
    Ok(worst.into_iter().fold(0.0, f64::max))
}

/// One element of D as the reference expects it, and its error bound:
/// `act(alpha dot + c + bias)` from the exact sum `dot` of its products,
/// `abs` the sum of their magnitudes, `c` the scaled C term, and `unit`
/// the precision's relative error of the sum ([`Precision::sum_error`]
/// plus its product error).
pub(crate) fn expected<O: Element>(
    unit: f64,
    act: Act,
    alpha: f64,
    (dot, abs): (f64, f64),
    (c, bias): (f64, f64),
) -> (f64, f64) {
    let f32_round = f64::powi(2.0, -24);
    let zval = alpha * dot + c + bias;
    let magnitude = alpha.abs() * abs + c.abs() + bias.abs();
    let ez = alpha.abs() * abs * unit + 3.0 * f32_round * magnitude;
    let (want, e) = match act {
        Act::Gelu => {
            let tanh_error = 0.5 * f64::powf(2.0, -10.9) + f64::powi(2.0, -21);
            (Act::Gelu.apply(zval), 1.13 * ez + tanh_error * zval.abs())
        }
        act => (act.apply(zval), ez),
    };
    (want, e + O::ROUNDING * (want.abs() + e) + O::TINY)
}

/// Host inputs of a call: A, B, C (the output buffer as it starts), bias.
pub struct Inputs<P: Precision, O: Element> {
    pub a: Vec<P::Input>,
    pub b: Vec<P::Input>,
    pub c: Vec<O>,
    pub bias: Option<Vec<f32>>,
}

impl<P: Precision, O: Element> Inputs<P, O> {
    /// Random inputs in `[-1, 1)` from `seed`, rounded to their types;
    /// with `beta = 0`, C is all NaN (BLAS never reads it then).
    pub fn random(call: &Call, seed: u64) -> Inputs<P, O> {
        use crate::measure::data::uniform_f32;
        let g = &call.gemm;
        let of = |n: usize, s: u64| -> Vec<P::Input> {
            uniform_f32(n, seed ^ s).into_iter().map(P::Input::round_f32).collect()
        };
        let c_len = call.elements(Operand::C);
        let c = if g.beta == 0.0 {
            vec![O::of_f32(f32::NAN); c_len]
        } else {
            uniform_f32(c_len, seed ^ 3).into_iter().map(O::of_f32).collect()
        };
        Inputs {
            a: of(call.elements(Operand::A), 1),
            b: of(call.elements(Operand::B), 2),
            c,
            bias: call.bias.then(|| uniform_f32(g.m, seed ^ 4)),
        }
    }
}
