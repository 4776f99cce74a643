//! The backward's `f64` reference, each gradient element's error bound,
//! and the verification of a step's dQ, dK and dV.
//!
//! # The reference
//!
//! The backward is a function of Q, K, V, O, dO and lse (the forward's
//! outputs are its inputs, as in a training step). The reference
//! evaluates that function exactly (in `f64`, from the same rounded
//! values): `P_ij = e^(scale s_ij - lse_i)` over the keys row `i` sees,
//! `dP_ij = dO_i . v_j`, `D_i = dO_i . O_i`, `dS = P (dP - D)`, `dQ_i =
//! scale sum_j dS_ij k_j`, `dK_j = scale sum_i dS_ij q_i`, `dV_j = sum_i
//! P_ij dO_i` (with grouped heads, `i` runs over every query head of `j`'s
//! K/V head). When O and lse are the exact forward's, these are the
//! gradients of `sum O ∘ dO`; [`gradient_check`] holds that against
//! central differences.
//!
//! # The error bound
//!
//! Per pair `(i, j)`, with `γ_k = (k + ceil(k / 32) + 2) 2^-23` (one `f32`
//! ulp per addition, splits and tiles included; products of two 16-bit
//! values are exact):
//! - **S**: `|ŝ - s| <= e = γ_d sum |q k|`.
//! - **P** before rounding, `2^(ŝ c - lse log2 e)` by `ex2.approx`: the
//!   argument errs by `δ = scale e (1 + 2^-23) + 2^-22 (scale |s| + |lse|)`
//!   in natural units (the roundings of `c = scale log2 e`, of `lse log2
//!   e` and of the fused multiply-add, each `2^-24` of its magnitude), the
//!   power by `2^-22` ([`EX2_ERROR`]): `|P̂ - P| <= ρ P`, `ρ = e^δ (1 +
//!   2^-22) - 1`.
//! - **dP** and **D**: `f = γ_d sum |dO v|`, `g = γ_d sum |dO O|`.
//! - **dS** `= P̂ (dP̂ - D̂)` in `f32`: with `φ = (f + g) (1 + 2^-24) +
//!   2^-24 |dP - D|`, `|dŜ - dS| <= ε = P ((ρ + (2^-23 + u) (1 + ρ)) |dP -
//!   D| + (1 + ρ) (1 + 2^-23) φ)`, where `u` covers a step that multiplies
//!   P as rounded to the input type (the Hopper step's: `u` below).
//! - **Rounded** to the input type for the products (relative `u`,
//!   [`Input::ROUNDING`]; absolute `τ`, its smallest subnormal and at least
//!   `2^-126`, `ex2`'s flush to zero): `π = ρ P + u (1 + ρ) P + τ` for P,
//!   `σ = ε + u (|dS| + ε) + τ` for dS.
//!
//! Each gradient element `x = sum_t a_t b_t` (dV: `a = P`, `b = dO`; dK:
//! `a = dS`, `b = q`; dQ: `a = dS`, `b = k`, the last two then times
//! `scale`) errs by `E = sum_t α_t |b_t| + γ_n sum_t (|a_t| + α_t) |b_t| +
//! n 2^-126` (`α` the term's `π` or `σ`; `n` terms; the last, products
//! flushed to zero), then `2^-24` for the scale, and the rounding to the
//! output type: `|x̂ - x| <= E (1 + 2^-23) + (2^-23 + u) (|x| + E) + τ`.

use gpu::attention::visible_keys;
use gpu::dev::math::EX2_ERROR;
use rayon::prelude::*;

use crate::attention::Problem;
use crate::attention::reference::sample_rows;
use crate::gemm::Input;

/// The inputs in `f64`: Q, K, V, O, dO (element values) and lse.
pub struct Inputs {
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    pub o: Vec<f64>,
    pub d_o: Vec<f64>,
    pub lse: Vec<f64>,
}

impl Inputs {
    /// The inputs of elements `T` (and lse in `f32`) as `f64`.
    pub fn of<T: Input>((q, k, v): (&[T], &[T], &[T]), (o, d_o): (&[T], &[T]), lse: &[f32]) -> Inputs {
        let f = |x: &[T]| -> Vec<f64> { x.par_iter().map(|&x| x.to_f64()).collect() };
        Inputs {
            q: f(q),
            k: f(k),
            v: f(v),
            o: f(o),
            d_o: f(d_o),
            lse: lse.iter().map(|&x| x as f64).collect(),
        }
    }
}

/// One gradient's reference rows: values and bounds, `d` a row.
pub struct Rows {
    /// The rows checked (of Q's rows for dQ, of K's for dK and dV).
    pub rows: Vec<usize>,
    pub value: Vec<f64>,
    pub bound: Vec<f64>,
}

/// The reference of the rows checked: dQ's, dK's and dV's.
pub struct Reference {
    pub dq: Rows,
    pub dk: Rows,
    pub dv: Rows,
}

/// What a pair `(i, j)` contributes, and its errors: P, its error once
/// rounded (`π`), dS and its (`σ`).
struct Pair {
    p: f64,
    pi: f64,
    ds: f64,
    sigma: f64,
}

/// The arithmetic's constants: relative rounding `u`, floor `τ`, the
/// problem's scale.
#[derive(Clone, Copy)]
struct Arith {
    u: f64,
    tau: f64,
    scale: f64,
    d: usize,
}

fn two(e: i32) -> f64 {
    f64::powi(2.0, e)
}

/// `γ_k`, the module's.
fn gamma(k: usize) -> f64 {
    (k + k.div_ceil(32) + 2) as f64 * two(-23)
}

/// Row `row`'s D and its error `g`.
fn delta(x: &Inputs, a: Arith, row: usize) -> (f64, f64) {
    let (o, d_o) = (&x.o[row * a.d..(row + 1) * a.d], &x.d_o[row * a.d..(row + 1) * a.d]);
    let dot = o.iter().zip(d_o).map(|(a, b)| a * b).sum::<f64>();
    let abs = o.iter().zip(d_o).map(|(a, b)| (a * b).abs()).sum::<f64>();
    (dot, gamma(a.d) * abs)
}

/// Pair (query row `qi`, key row `kj`), with `qi`'s D and its error.
fn pair(x: &Inputs, a: Arith, (qi, kj): (usize, usize), (dd, g): (f64, f64)) -> Pair {
    let d = a.d;
    let (q, k) = (&x.q[qi * d..(qi + 1) * d], &x.k[kj * d..(kj + 1) * d]);
    let (d_o, v) = (&x.d_o[qi * d..(qi + 1) * d], &x.v[kj * d..(kj + 1) * d]);
    let s = q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>();
    let e = gamma(d) * q.iter().zip(k).map(|(a, b)| (a * b).abs()).sum::<f64>();
    let dp = d_o.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    let f = gamma(d) * d_o.iter().zip(v).map(|(a, b)| (a * b).abs()).sum::<f64>();
    let lse = x.lse[qi];
    let p = (a.scale * s - lse).exp();
    let delta = a.scale * e * (1.0 + two(-23)) + two(-22) * (a.scale * s.abs() + lse.abs());
    let rho = delta.exp() * (1.0 + EX2_ERROR) - 1.0;
    let diff = dp - dd;
    let phi = (f + g) * (1.0 + two(-24)) + two(-24) * diff.abs();
    let eps =
        p * ((rho + (two(-23) + a.u) * (1.0 + rho)) * diff.abs() + (1.0 + rho) * (1.0 + two(-23)) * phi);
    let ds = p * diff;
    Pair { p, pi: rho * p + a.u * (1.0 + rho) * p + a.tau, ds, sigma: eps + a.u * (ds.abs() + eps) + a.tau }
}

/// Sums `x = sum a_t b_t` with their error terms: `x`, `sum α |b|`, `sum
/// (|a| + α) |b|`, per column.
struct Sums {
    x: Vec<f64>,
    err: Vec<f64>,
    abs: Vec<f64>,
    n: usize,
}

impl Sums {
    fn new(d: usize) -> Sums {
        Sums { x: vec![0.0; d], err: vec![0.0; d], abs: vec![0.0; d], n: 0 }
    }

    fn add(&mut self, (a, alpha): (f64, f64), b: &[f64]) {
        for (c, &bc) in b.iter().enumerate() {
            self.x[c] += a * bc;
            self.err[c] += alpha * bc.abs();
            self.abs[c] += (a.abs() + alpha) * bc.abs();
        }
        self.n += 1;
    }

    /// Values (times `factor`) and bounds, the module's last line.
    fn finish(&self, a: Arith, factor: f64, (value, bound): (&mut Vec<f64>, &mut Vec<f64>)) {
        for c in 0..self.x.len() {
            let x = factor * self.x[c];
            let e = factor * (self.err[c] + gamma(self.n) * self.abs[c]) + (self.n + 1) as f64 * two(-126);
            let e = e * (1.0 + two(-23));
            value.push(x);
            bound.push(e + (two(-23) + a.u) * (x.abs() + e) + a.tau + f64::MIN_POSITIVE);
        }
    }
}

/// The reference of query rows `q_rows` (dQ) and key rows `k_rows` (dK,
/// dV) of `p`, for elements with relative rounding `u` and floor `tiny`.
pub fn reference(
    p: &Problem,
    x: &Inputs,
    (q_rows, k_rows): (&[usize], &[usize]),
    (u, tiny): (f64, f64),
) -> Reference {
    let a = Arith { u, tau: tiny.max(two(-126)), scale: p.scale as f64, d: p.d };
    let d = p.d;
    let dq: Vec<(Vec<f64>, Vec<f64>)> = q_rows
        .par_iter()
        .map(|&row| {
            let (bh, i) = (row / p.s_q, row % p.s_q);
            let (b, h) = (bh / p.heads, bh % p.heads);
            let kv = (b * p.kv_heads + h / p.group()) * p.s_k;
            let dd = delta(x, a, row);
            let mut sums = Sums::new(d);
            for j in 0..visible_keys(i, p.s_q, p.s_k, p.causal) {
                let t = pair(x, a, (row, kv + j), dd);
                sums.add((t.ds, t.sigma), &x.k[(kv + j) * d..(kv + j + 1) * d]);
            }
            let (mut value, mut bound) = (vec![], vec![]);
            sums.finish(a, a.scale, (&mut value, &mut bound));
            (value, bound)
        })
        .collect();
    let dkv: Vec<[(Vec<f64>, Vec<f64>); 2]> = k_rows
        .par_iter()
        .map(|&row| {
            let (bkv, j) = (row / p.s_k, row % p.s_k);
            let (b, kvh) = (bkv / p.kv_heads, bkv % p.kv_heads);
            let (mut dk, mut dv) = (Sums::new(d), Sums::new(d));
            for h in kvh * p.group()..(kvh + 1) * p.group() {
                let first = (b * p.heads + h) * p.s_q;
                for i in (0..p.s_q).filter(|&i| j < visible_keys(i, p.s_q, p.s_k, p.causal)) {
                    let qi = first + i;
                    let t = pair(x, a, (qi, row), delta(x, a, qi));
                    dk.add((t.ds, t.sigma), &x.q[qi * d..(qi + 1) * d]);
                    dv.add((t.p, t.pi), &x.d_o[qi * d..(qi + 1) * d]);
                }
            }
            let (mut k, mut v) = ((vec![], vec![]), (vec![], vec![]));
            dk.finish(a, a.scale, (&mut k.0, &mut k.1));
            dv.finish(a, 1.0, (&mut v.0, &mut v.1));
            [k, v]
        })
        .collect();
    let gather = |rows: &[usize], parts: Vec<(Vec<f64>, Vec<f64>)>| {
        let mut r = Rows { rows: rows.to_vec(), value: vec![], bound: vec![] };
        for (value, bound) in parts {
            r.value.extend(value);
            r.bound.extend(bound);
        }
        r
    };
    let (dk, dv): (Vec<_>, Vec<_>) = dkv.into_iter().map(|[k, v]| (k, v)).unzip();
    Reference { dq: gather(q_rows, dq), dk: gather(k_rows, dk), dv: gather(k_rows, dv) }
}

/// The key rows a run checks: all of them up to 4096, else a sample of
/// about 256 ([`sample_rows`]).
pub fn key_rows_to_check(p: &Problem) -> Vec<usize> {
    sample_rows(p.batch * p.kv_heads * p.s_k, p.s_k)
}

/// Compares dQ, dK and dV with the reference: `Err` names the first
/// element out of its bound; `Ok` the worst error relative to its bound.
pub fn verify<T: Input>(
    name: &str,
    p: &Problem,
    (dq, dk, dv): (&[T], &[T], &[T]),
    want: &Reference,
) -> std::result::Result<f64, String> {
    let mut worst = 0.0f64;
    for (what, got, rows) in [("dQ", dq, &want.dq), ("dK", dk, &want.dk), ("dV", dv, &want.dv)] {
        for (n, &row) in rows.rows.iter().enumerate() {
            for c in 0..p.d {
                let (g, w, b) =
                    (got[row * p.d + c].to_f64(), rows.value[n * p.d + c], rows.bound[n * p.d + c]);
                let err = (g - w).abs();
                if !g.is_finite() || err > b {
                    return Err(format!("{name} {p}: {what}[{row}][{c}] = {g}, want {w} within {b:.3e}"));
                }
                worst = worst.max(err / b);
            }
        }
    }
    Ok(worst)
}

/// The exact forward of every row of `p` (O and lse, `f64`) from Q, K, V.
fn forward(p: &Problem, (q, k, v): (&[f64], &[f64], &[f64])) -> (Vec<f64>, Vec<f64>) {
    let d = p.d;
    let (mut o, mut lse) = (vec![0.0; p.q_len()], vec![f64::INFINITY; p.rows()]);
    for row in 0..p.rows() {
        let (bh, i) = (row / p.s_q, row % p.s_q);
        let (b, h) = (bh / p.heads, bh % p.heads);
        let kv = (b * p.kv_heads + h / p.group()) * p.s_k;
        let keys = visible_keys(i, p.s_q, p.s_k, p.causal);
        if keys == 0 {
            continue;
        }
        let s: Vec<f64> = (0..keys)
            .map(|j| p.scale as f64 * (0..d).map(|c| q[row * d + c] * k[(kv + j) * d + c]).sum::<f64>())
            .collect();
        let m = s.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
        lse[row] = m + l.ln();
        for (j, sj) in s.iter().enumerate() {
            let w = (sj - lse[row]).exp();
            for c in 0..d {
                o[row * d + c] += w * v[(kv + j) * d + c];
            }
        }
    }
    (o, lse)
}

/// The reference's own check: on `p` (a tiny problem: any head
/// dimension), with O and lse the exact forward's, the reference's dQ, dK
/// and dV against central differences of `L = sum O ∘ dO` in each element
/// of Q, K and V (step `h`). Returns the largest difference, relative to
/// `1 + |gradient|`.
pub fn gradient_check(p: &Problem, (q, k, v, d_o): (&[f64], &[f64], &[f64], &[f64]), h: f64) -> f64 {
    let (o, lse) = forward(p, (q, k, v));
    let x = Inputs { q: q.to_vec(), k: k.to_vec(), v: v.to_vec(), o, d_o: d_o.to_vec(), lse };
    let q_rows: Vec<usize> = (0..p.rows()).collect();
    let k_rows: Vec<usize> = (0..p.batch * p.kv_heads * p.s_k).collect();
    let r = reference(p, &x, (&q_rows, &k_rows), (0.0, 0.0));
    let loss = |q: &[f64], k: &[f64], v: &[f64]| -> f64 {
        forward(p, (q, k, v)).0.iter().zip(d_o).map(|(a, b)| a * b).sum()
    };
    let mut worst = 0.0f64;
    for (which, want) in [(0, &r.dq.value), (1, &r.dk.value), (2, &r.dv.value)] {
        for (e, &w) in want.iter().enumerate() {
            let mut inputs = [q.to_vec(), k.to_vec(), v.to_vec()];
            inputs[which][e] += h;
            let up = loss(&inputs[0], &inputs[1], &inputs[2]);
            inputs[which][e] -= 2.0 * h;
            let down = loss(&inputs[0], &inputs[1], &inputs[2]);
            let numeric = (up - down) / (2.0 * h);
            worst = worst.max((numeric - w).abs() / (1.0 + w.abs()));
        }
    }
    worst
}
