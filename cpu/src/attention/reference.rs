//! The `f64` reference, each element's error bound, and the
//! verification of a step's outputs.
//!
//! # The error bound
//!
//! The reference computes, in `f64` from the same (rounded) inputs, `s_ij
//! = q_i . k_j`, `z = scale s`, `m_i = max_j z_ij`, `p = e^(z - m)`, `l =
//! sum_j p`, `w = p / l`, `o_i = sum_j w_ij v_j`, `lse_i = m_i + ln l_i`
//! over the keys row `i` sees. A kernel differs by:
//!
//! - **The scores**: `|ŝ - s| <= e_ij = γ_d sum_k |q_ik k_jk|`, `γ_k =
//!   (k + splits + 2) 2^-23` (one `f32` ulp per addition into the
//!   accumulator, products exact; `splits <= k / 64`, the GEMM library's
//!   k-splits: [`crate::gemm::Precision::sum_error`]).
//! - **The exponent's argument**, `(s - m) scale log2 e` in `f32`: the
//!   rounding of `c = scale log2 e`, of the product or the fused
//!   multiply-add, of the reference point `m c` and of a rescale's
//!   argument, each at most `2^-24` of a quantity below `c (|s| + S)`, `S =
//!   max_j |s_ij|`; at most `2^-21 c (|s_ij| + S)` in all. The reference
//!   point's own error cancels (softmax is invariant to it), so per score
//!   the argument errs by `δ_ij = scale (e_ij + 2^-21 (|s_ij| + S))` in
//!   natural units, and `p` by a factor `e^δ`.
//! - **`ex2.approx`**: `2^-22` relative per call ([`EX2_ERROR`]), for `p`
//!   and for every rescale factor (step 2: `alpha`, applied alike to O and
//!   `l`, so its error perturbs a whole tile's weights, once per later
//!   tile; step 1: a lane's running sum, once per larger key, and the five
//!   merges across lanes), and `2^-24` per rescaling multiplication: at
//!   most `tiles + 7` of each, `tiles = ceil(s_k / 32)` (the smallest key
//!   tile, and a lane's keys in step 1; 16 for decode's chunks), so `(tiles + 7) (2^-22 + 2^-23)`.
//! - **`l`**: a sum of positive `f32` terms, relative error `γ_{s_k}`.
//!
//! So each weight's numerator and denominator carry relative errors within
//! `B = max_j (e^δ_ij - 1) + (tiles + 7) (2^-22 + 2^-23) + γ_{s_k}`; P
//! rounded to the input type adds `u` (bf16 `2^-8`, f16 `2^-11`:
//! [`Input::ROUNDING`]) to the numerator's, and step 1's normalization
//! before that rounding (`1 / l` and the product) `2^-23`: `A = B + u (1 +
//! B) + 2^-23`, and an
//! absolute `τ` (the input type's smallest subnormal, at least `2^-126`,
//! `ex2`'s flush to zero) to each weight. With `o' = sum w (1 + a) v / sum
//! w (1 + b)`, `|o' - o| <= (A W + B |o|) / (1 - B)` where `W_c = sum_j w_j
//! |v_jc|`. The `P V` product adds `γ_{s_k} (1 + A) W / (1 - B)` (its `f32`
//! accumulation, with `ceil(s_k / 32)` rescales or splits), the
//! absolute floor `τ sum_j |v_jc| / (1 - B)`, and the final division and
//! rounding to the output type `(2^-23 + u) (|o| + err) + τ`. (Where P is
//! rounded before its normalization, as in the FP8 step, `τ` is an error
//! of `p <= 1` beside the row's maximum `p = 1`, so of `τ / l <= τ` on a
//! weight.)
//!
//! **FP8** ([`Arithmetic::fp8`]): the products `Q Kᵀ` and `P V` accumulate
//! as FP8 `wgmma` does, about 14 significant bits per 32 products
//! (`crate::gemm::Precision::sum_error` of E4M3) in place of `γ`; P is
//! rounded to E4M3 (`u = 2^-4`, and below its smallest normal `2^-6` an
//! absolute `τ = 2^-10`, half its subnormal step), O to its own output
//! type. The inputs are the dequantized values (E4M3 times its
//! descale, exact in `f64`); the descales of Q and K join `scale`, one
//! rounding more in the exponent's argument, within the `2^-21` above.
//!
//! LSE: `ln sum e^ẑ` differs from `ln sum e^z` by at most `max δ`, and the
//! sums' errors by `-ln(1 - B)`; `lg2.approx` adds `2^-22 (1 + log2 l)
//! ln 2` ([`LG2_ERROR`]) and the last roundings `2^-21 (|m| + |lse|)`.
//!
//! A row that sees no key must be exactly 0 with `lse = +inf`.

use gpu::attention::visible_keys;
use gpu::dev::math::{EX2_ERROR, LG2_ERROR};
use rayon::prelude::*;

use crate::gemm::Input;
use crate::measure::data;

use super::problem::Problem;

/// The reference of some rows: O (`d` a row) and lse, each with its bound.
pub struct Reference {
    /// The rows (of `b h s_q`) checked.
    pub rows: Vec<usize>,
    pub o: Vec<f64>,
    pub o_bound: Vec<f64>,
    pub lse: Vec<f64>,
    pub lse_bound: Vec<f64>,
}

/// How a kernel computes, as far as its error bound is concerned.
#[derive(Clone, Copy, Debug)]
pub struct Arithmetic {
    /// P's rounding before `P V`: relative, and the absolute floor.
    pub p_rounding: (f64, f64),
    /// O's rounding to the output type: relative, and the absolute floor.
    pub out_rounding: (f64, f64),
    /// The keys between two rescales (the smallest key tile).
    pub key_tile: usize,
    /// The products accumulate as FP8 `wgmma` does, not in `f32`.
    pub fp8_sums: bool,
    /// P is rounded before it is normalized (`p <= 1`, the row's maximum
    /// 1): its floor is `tiny / l` on a weight.
    pub p_unnormalized: bool,
}

impl Arithmetic {
    /// A 16-bit kernel (or any with `f32` products) whose P and O round
    /// with relative `u` and absolute floor `tiny`, rescaling every
    /// `key_tile` keys.
    pub fn f32_sums((u, tiny): (f64, f64), key_tile: usize) -> Self {
        Arithmetic {
            p_rounding: (u, tiny),
            out_rounding: (u, tiny),
            key_tile,
            fp8_sums: false,
            p_unnormalized: false,
        }
    }

    /// The FP8 step: E4M3 products and P, O rounded as `out` says (its
    /// output type's `ROUNDING` and `TINY`), key tiles of `key_tile`.
    pub fn fp8(out: (f64, f64), key_tile: usize) -> Self {
        let two = |e: i32| f64::powi(2.0, e);
        Arithmetic {
            p_rounding: (two(-4), two(-10)),
            out_rounding: out,
            key_tile,
            fp8_sums: true,
            p_unnormalized: true,
        }
    }

    /// The relative error of a sum of `k` products (against the sum of
    /// their magnitudes).
    fn sum_error(self, k: usize) -> f64 {
        use crate::gemm::Precision;
        if self.fp8_sums { crate::gemm::E4m3::sum_error(k, 0) } else { gamma(k) }
    }
}

/// `γ_k`: the relative error of a sum of `k` terms in `f32` with up to
/// `k / 32` rescales or splits between them (see the module).
fn gamma(k: usize) -> f64 {
    (k + k.div_ceil(32) + 2) as f64 * f64::powi(2.0, -23)
}

/// The `f64` reference of rows `rows` of `problem` from the inputs' values,
/// with the bounds the module documentation derives, for elements with
/// relative rounding `u` and absolute floor `tiny`.
pub fn reference(
    p: &Problem,
    (q, k, v): (&[f64], &[f64], &[f64]),
    rows: &[usize],
    (u, tiny): (f64, f64),
) -> Reference {
    reference_tiled(p, (q, k, v), rows, (u, tiny), 32)
}

/// [`reference()`] for a kernel whose smallest key tile (the keys between
/// two rescales) is `key_tile` keys, not 32.
pub fn reference_tiled(
    p: &Problem,
    (q, k, v): (&[f64], &[f64], &[f64]),
    rows: &[usize],
    (u, tiny): (f64, f64),
    key_tile: usize,
) -> Reference {
    reference_with(p, (q, k, v), rows, Arithmetic::f32_sums((u, tiny), key_tile))
}

/// [`reference()`] for a kernel that computes as `arithmetic` says.
pub fn reference_with(
    p: &Problem,
    (q, k, v): (&[f64], &[f64], &[f64]),
    rows: &[usize],
    arithmetic: Arithmetic,
) -> Reference {
    let d = p.d;
    let two = |e: i32| f64::powi(2.0, e);
    // `γ` of the `f32` sums (`l`) and of the products.
    let product = |k: usize| arithmetic.sum_error(k);
    let (u, tiny) = arithmetic.p_rounding;
    let (u_out, tiny_out) = arithmetic.out_rounding;
    let scale = p.scale as f64;
    let tiles = p.s_k.div_ceil(arithmetic.key_tile.max(1)) as f64;
    let tau = tiny.max(two(-126));
    let per_row: Vec<(Vec<f64>, Vec<f64>, f64, f64)> = rows
        .par_iter()
        .map(|&row| {
            let (bh, i) = (row / p.s_q, row % p.s_q);
            let (b, h) = (bh / p.heads, bh % p.heads);
            let kv = (b * p.kv_heads + h / p.group()) * p.s_k;
            let keys = visible_keys(i, p.s_q, p.s_k, p.causal);
            if keys == 0 {
                return (vec![0.0; d], vec![0.0; d], f64::INFINITY, 0.0);
            }
            let qi = &q[row * d..(row + 1) * d];
            let (mut s, mut e) = (vec![0.0; keys], vec![0.0; keys]);
            for j in 0..keys {
                let kj = &k[(kv + j) * d..(kv + j + 1) * d];
                s[j] = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>();
                e[j] = product(d) * qi.iter().zip(kj).map(|(a, b)| (a * b).abs()).sum::<f64>();
            }
            let top = s.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let big = s.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
            let m = scale * top;
            let w: Vec<f64> = s.iter().map(|&x| (scale * x - m).exp()).collect();
            let l: f64 = w.iter().sum();
            let w: Vec<f64> = w.iter().map(|x| x / l).collect();
            let delta: Vec<f64> = (0..keys).map(|j| scale * (e[j] + two(-21) * (s[j].abs() + big))).collect();
            let dmax = delta.iter().fold(0.0f64, |a, &b| a.max(b));
            let bb = dmax.exp_m1() + (tiles + 7.0) * (EX2_ERROR + two(-23)) + gamma(p.s_k);
            let aa = bb + u * (1.0 + bb) + two(-23);
            // P's floor on a weight.
            let floor = if arithmetic.p_unnormalized { tau / l } else { tau };
            let (mut o, mut bound) = (vec![0.0; d], vec![0.0; d]);
            for c in 0..d {
                let (mut oc, mut wc, mut vc) = (0.0, 0.0, 0.0);
                for j in 0..keys {
                    let x = v[(kv + j) * d + c];
                    oc += w[j] * x;
                    wc += w[j] * x.abs();
                    vc += x.abs();
                }
                let err = (aa * wc + bb * oc.abs()) / (1.0 - bb)
                    + product(p.s_k) * (1.0 + aa) / (1.0 - bb) * wc
                    + floor * vc / (1.0 - bb);
                o[c] = oc;
                bound[c] =
                    err + (two(-23) + u_out) * (oc.abs() + err) + tiny_out.max(two(-126)) + f64::MIN_POSITIVE;
            }
            let lse = m + l.ln();
            let lse_bound = dmax - (1.0 - bb).ln()
                + LG2_ERROR * (1.0 + l.log2()) * std::f64::consts::LN_2
                + two(-21) * (m.abs() + lse.abs())
                + f64::MIN_POSITIVE;
            (o, bound, lse, lse_bound)
        })
        .collect();
    let mut r = Reference { rows: rows.to_vec(), o: vec![], o_bound: vec![], lse: vec![], lse_bound: vec![] };
    for (o, bound, lse, lse_bound) in per_row {
        r.o.extend(o);
        r.o_bound.extend(bound);
        r.lse.push(lse);
        r.lse_bound.push(lse_bound);
    }
    r
}

/// The rows a run checks: all of them up to 4096, else a sample of about
/// 256 (the first and last of every head among them).
pub fn rows_to_check(p: &Problem) -> Vec<usize> {
    sample_rows(p.rows(), p.s_q)
}

/// Of `rows` rows in heads of `per_head`: all up to 4096, else about 256
/// spread evenly, with the first head's last row and the last head's
/// first.
pub fn sample_rows(rows: usize, per_head: usize) -> Vec<usize> {
    if rows <= 4096 {
        return (0..rows).collect();
    }
    let mut r: Vec<usize> = (0..256).map(|i| i * (rows - 1) / 255).collect();
    r.extend([per_head - 1, rows - per_head]);
    r.sort_unstable();
    r.dedup();
    r
}

/// Compares O and lse with the reference: `Err` names the first element
/// out of its bound; `Ok` the worst error relative to its bound.
pub fn verify<T: Input>(
    name: &str,
    p: &Problem,
    o: &[T],
    lse: &[f32],
    want: &Reference,
) -> std::result::Result<f64, String> {
    let d = p.d;
    let mut worst = 0.0f64;
    for (n, &row) in want.rows.iter().enumerate() {
        let (l, wl, bl) = (lse[row] as f64, want.lse[n], want.lse_bound[n]);
        let ok = if wl.is_infinite() { l == wl } else { l.is_finite() && (l - wl).abs() <= bl };
        if !ok {
            return Err(format!("{name} {p}: lse[{row}] = {l}, want {wl} within {bl:.3e}"));
        }
        if wl.is_finite() {
            worst = worst.max((l - wl).abs() / bl);
        }
        for c in 0..d {
            let (got, want_c, bound) = (o[row * d + c].to_f64(), want.o[n * d + c], want.o_bound[n * d + c]);
            let err = (got - want_c).abs();
            if !got.is_finite() || err > bound {
                return Err(format!("{name} {p}: O[{row}][{c}] = {got}, want {want_c} within {bound:.3e}"));
            }
            worst = worst.max(err / bound);
        }
    }
    Ok(worst)
}

/// Random inputs of `p` in `P`'s element type: uniform in [-1, 1) for K
/// and V, [-2, 2) for Q (scores spread enough that the softmax is not
/// flat), rounded to the type.
pub fn inputs<T: Input>(p: &Problem, seed: u64) -> (Vec<T>, Vec<T>, Vec<T>) {
    let round = |x: Vec<f32>, by: f32| -> Vec<T> { x.into_iter().map(|x| T::round_f32(by * x)).collect() };
    (
        round(data::uniform_f32(p.q_len(), seed), 2.0),
        round(data::uniform_f32(p.kv_len(), seed + 1), 1.0),
        round(data::uniform_f32(p.kv_len(), seed + 2), 1.0),
    )
}

/// The reference of `rows` for inputs in `T`.
pub fn reference_of<T: Input>(p: &Problem, (q, k, v): (&[T], &[T], &[T]), rows: &[usize]) -> Reference {
    let f = |x: &[T]| -> Vec<f64> { x.par_iter().map(|&x| x.to_f64()).collect() };
    reference(p, (&f(q), &f(k), &f(v)), rows, (T::ROUNDING, T::TINY))
}
