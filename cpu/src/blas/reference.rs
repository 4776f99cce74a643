//! The reference BLAS's test criteria for `sgemm` (netlib's `sblat3`,
//! routine `SMMCH`): an `f64` product, and per element of C the *test
//! ratio* `|C - C_ref| / (eps (|alpha| sum_p |op(A)_ip| |op(B)_pj| + |beta|
//! |C0_ij|))`, which passes below 16. Where that gauge is 0 the result must
//! be exact. Also: operands filled around with a poison the call must not
//! touch, and exact results for integer inputs.

use rayon::prelude::*;

use super::gemm::{Gemm, Operand};

/// What fills the leading-dimension padding and the space after each
/// matrix: a NaN with its own payload, compared bit for bit.
pub const PAD_BITS: u32 = 0x7fc0_0bad;

/// The threshold netlib's test uses.
pub const THRESHOLD: f64 = 16.0;

/// A call's three host matrices, stored as the call describes them.
#[derive(Clone, Debug)]
pub struct Matrices {
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c: Vec<f32>,
}

/// Elements every buffer has after its matrix (more poison to keep).
pub const TAIL: usize = 5;

impl Matrices {
    /// Buffers for `g`, each element of each matrix `fill(operand)`, the rest
    /// [`PAD_BITS`].
    pub fn new(g: &Gemm, mut fill: impl FnMut(Operand) -> f32) -> Matrices {
        let mut make = |x: Operand| {
            let mut v = vec![f32::from_bits(PAD_BITS); g.elements(x) + TAIL];
            let (rows, cols) = logical(g, x);
            for i in 0..rows {
                for j in 0..cols {
                    v[g.index(x, i, j)] = fill(x);
                }
            }
            v
        };
        Matrices { a: make(Operand::A), b: make(Operand::B), c: make(Operand::C) }
    }
}

impl Matrices {
    /// Random operands in [-1, 1) from `seed` (filled in parallel, for
    /// large problems), the padding and tails [`PAD_BITS`].
    pub fn random(g: &Gemm, seed: u64) -> Matrices {
        let make = |x: Operand, seed: u64| {
            let mut v = crate::measure::data::uniform_f32(g.elements(x) + TAIL, seed);
            let (lines, length) = g.stored(x);
            let ld = g.ld(x);
            for line in 0..lines {
                let end = if line + 1 == lines { v.len() } else { (line + 1) * ld };
                v[line * ld + length..end].fill(f32::from_bits(PAD_BITS));
            }
            if lines == 0 || length == 0 {
                v.fill(f32::from_bits(PAD_BITS));
            }
            v
        };
        Matrices { a: make(Operand::A, seed), b: make(Operand::B, seed + 1), c: make(Operand::C, seed + 2) }
    }
}

/// `(rows, columns)` of `op(A)` (`m x k`), `op(B)` (`k x n`) or C.
fn logical(g: &Gemm, x: Operand) -> (usize, usize) {
    match x {
        Operand::A => (g.m, g.k),
        Operand::B => (g.k, g.n),
        Operand::C => (g.m, g.n),
    }
}

/// `alpha op(A) op(B) + beta C0` in `f64` on some rows of the `m x n`
/// result, with each element's gauge. `beta = 0` ignores C0 (it may be NaN).
pub struct Reference {
    /// The rows computed, in order.
    pub rows: Vec<usize>,
    /// `rows.len() x n`.
    pub value: Vec<f64>,
    pub gauge: Vec<f64>,
}

/// The reference on every row.
pub fn reference(g: &Gemm, x: &Matrices) -> Reference {
    reference_rows(g, x, (0..g.m).collect())
}

/// The reference on `rows` (for large problems, a sample).
pub fn reference_rows(g: &Gemm, x: &Matrices, rows: Vec<usize>) -> Reference {
    let (n, k) = (g.n, g.k);
    let mut value = vec![0.0f64; rows.len() * n];
    let mut gauge = vec![0.0f64; rows.len() * n];
    let (alpha, beta) = (g.alpha as f64, g.beta as f64);
    value.par_chunks_mut(n.max(1)).zip(gauge.par_chunks_mut(n.max(1))).zip(&rows).for_each(
        |((value, gauge), &i)| {
            for j in 0..n {
                let (mut dot, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let t = x.a[g.index(Operand::A, i, p)] as f64 * x.b[g.index(Operand::B, p, j)] as f64;
                    dot += t;
                    mag += t.abs();
                }
                let c0 = if beta == 0.0 { 0.0 } else { x.c[g.index(Operand::C, i, j)] as f64 };
                value[j] = alpha * dot + beta * c0;
                gauge[j] = alpha.abs() * mag + beta.abs() * c0.abs();
            }
        },
    );
    Reference { rows, value, gauge }
}

/// The largest test ratio over C (`f64::INFINITY` for a non-finite
/// element, or an inexact one whose gauge is 0).
pub fn test_ratio(g: &Gemm, r: &Reference, c: &[f32]) -> f64 {
    let eps = f32::EPSILON as f64;
    let mut worst = 0.0f64;
    for (at, &i) in r.rows.iter().enumerate() {
        for j in 0..g.n {
            let got = c[g.index(Operand::C, i, j)] as f64;
            let (want, gauge) = (r.value[at * g.n + j], r.gauge[at * g.n + j]);
            let err = (got - want).abs();
            let ratio = if !got.is_finite() {
                f64::INFINITY
            } else if gauge == 0.0 {
                if err == 0.0 { 0.0 } else { f64::INFINITY }
            } else {
                err / (eps * gauge)
            };
            worst = worst.max(ratio);
        }
    }
    worst
}

/// Every element of C equal to the reference (for inputs whose products and
/// sums f32 represents exactly): `Err` names the first that is not.
pub fn exact(g: &Gemm, r: &Reference, c: &[f32]) -> Result<(), String> {
    for (at, &i) in r.rows.iter().enumerate() {
        for j in 0..g.n {
            let got = c[g.index(Operand::C, i, j)];
            let want = r.value[at * g.n + j];
            if got as f64 != want {
                return Err(format!("{g}: C[{i}][{j}] = {got}, exactly {want} expected"));
            }
        }
    }
    Ok(())
}

/// Every element of `after` outside the matrix `x` (padding, tail) has the
/// bits it had `before`, and, when `inside` too, every element of the
/// matrix as well (A and B are inputs).
pub fn untouched(g: &Gemm, x: Operand, before: &[f32], after: &[f32], inside: bool) -> Result<(), String> {
    let mut in_matrix = vec![false; before.len()];
    let (rows, cols) = logical(g, x);
    for i in 0..rows {
        for j in 0..cols {
            in_matrix[g.index(x, i, j)] = true;
        }
    }
    match (0..before.len()).find(|&e| (inside || !in_matrix[e]) && before[e].to_bits() != after[e].to_bits())
    {
        None => Ok(()),
        Some(e) => Err(format!(
            "{g}: {x:?}[{e}] ({}) changed from {:#x} to {:#x}",
            if in_matrix[e] { "an input element" } else { "padding" },
            before[e].to_bits(),
            after[e].to_bits()
        )),
    }
}

/// How one call compared: its worst test ratio (0 when exact).
#[derive(Clone, Copy, Debug)]
pub struct Verdict {
    pub ratio: f64,
}

/// Runs `g` once on `gpu` (with `plan`, or the dispatcher's) on `x`, then
/// checks everything the criteria ask: the test ratio below
/// [`THRESHOLD`] (or, with `exact`, every element equal to the reference),
/// C's padding and tail untouched, A and B unchanged.
pub fn verify(
    gpu: &crate::runtime::Gpu,
    sgemm: &mut super::Sgemm,
    g: &Gemm,
    plan: Option<super::Plan>,
    x: &Matrices,
    exact_result: bool,
) -> Result<Verdict, String> {
    let error = |e: crate::runtime::Error| format!("{g}: {e}");
    let (a, b) = (gpu.upload(&x.a).map_err(error)?, gpu.upload(&x.b).map_err(error)?);
    let mut c = gpu.upload(&x.c).map_err(error)?;
    sgemm.run_with(gpu, g, plan, &a, &b, &mut c).and_then(|()| gpu.sync()).map_err(error)?;
    let c_after = gpu.download(&c).map_err(error)?;
    untouched(g, Operand::C, &x.c, &c_after, false)?;
    untouched(g, Operand::A, &x.a, &gpu.download(&a).map_err(error)?, true)?;
    untouched(g, Operand::B, &x.b, &gpu.download(&b).map_err(error)?, true)?;
    let r = reference(g, x);
    if exact_result {
        exact(g, &r, &c_after)?;
    }
    let ratio = test_ratio(g, &r, &c_after);
    if ratio < THRESHOLD {
        Ok(Verdict { ratio })
    } else {
        Err(format!(
            "{g} alpha={} beta={}: test ratio {ratio:.2} (must be below {THRESHOLD})",
            g.alpha, g.beta
        ))
    }
}

/// The reference BLAS's sweep: every `(m, n, k)` from `sizes`, in each of
/// `forms`, with every `alpha` and `beta` of `scalars`, on random inputs in
/// [-1, 1) with every leading dimension padded by 1 to 3 elements of
/// poison. The product `op(A) op(B)` is computed once per shape and form
/// (in f64, parallel over rows); each `(alpha, beta)` is then a launch and
/// a check of the test ratio, of C's padding, and (once per shape) of A
/// and B. Returns the number of calls and the worst ratio; `Err` names the
/// first failing call.
pub fn netlib_sweep(
    gpu: &crate::runtime::Gpu,
    sizes: &[usize],
    forms: &[(super::Layout, super::Op, super::Op)],
    scalars: &[(f32, f32)],
    seed: u64,
) -> Result<(usize, f64), String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut sgemm = super::Sgemm::new();
    let (mut calls, mut worst) = (0, 0.0f64);
    fn error(g: &Gemm) -> impl Fn(crate::runtime::Error) -> String + '_ {
        move |e| format!("{g}: {e}")
    }
    for &(layout, op_a, op_b) in forms {
        for (&m, &n, &k) in
            sizes.iter().flat_map(|m| sizes.iter().flat_map(move |n| sizes.iter().map(move |k| (m, n, k))))
        {
            let mut g = Gemm::new(layout, op_a, op_b, m, n, k);
            g.lda += 1 + (m + k) % 3;
            g.ldb += 1 + (n + k) % 3;
            g.ldc += 1 + (m + n) % 3;
            let x = Matrices::new(&g, |_| rng.random_range(-1.0..1.0));
            // alpha = 1, beta = 0: the product and its magnitude.
            let product = reference(&g, &x);
            let (a, b) = (gpu.upload(&x.a).map_err(error(&g))?, gpu.upload(&x.b).map_err(error(&g))?);
            for &(alpha, beta) in scalars {
                let call = g.scaled(alpha, beta);
                let mut c = gpu.upload(&x.c).map_err(error(&call))?;
                sgemm.run(gpu, &call, &a, &b, &mut c).and_then(|()| gpu.sync()).map_err(error(&call))?;
                let after = gpu.download(&c).map_err(error(&call))?;
                untouched(&call, Operand::C, &x.c, &after, false)?;
                // The call's reference from the product: alpha P + beta C0.
                let (a64, b64) = (alpha as f64, beta as f64);
                let c0 = |at: usize| {
                    if beta == 0.0 { 0.0 } else { x.c[g.index(Operand::C, at / n, at % n)] as f64 }
                };
                let r = Reference {
                    rows: product.rows.clone(),
                    value: (0..m * n).map(|at| a64 * product.value[at] + b64 * c0(at)).collect(),
                    gauge: (0..m * n)
                        .map(|at| a64.abs() * product.gauge[at] + b64.abs() * c0(at).abs())
                        .collect(),
                };
                let ratio = test_ratio(&call, &r, &after);
                if ratio >= THRESHOLD {
                    return Err(format!(
                        "{call} alpha={alpha} beta={beta}: test ratio {ratio:.2} (must be below {THRESHOLD})"
                    ));
                }
                worst = worst.max(ratio);
                calls += 1;
            }
            untouched(&g, Operand::A, &x.a, &gpu.download(&a).map_err(error(&g))?, true)?;
            untouched(&g, Operand::B, &x.b, &gpu.download(&b).map_err(error(&g))?, true)?;
        }
    }
    Ok((calls, worst))
}

/// The reference BLAS's sizes and scalars for `sgemm`.
pub const NETLIB_SIZES: [usize; 11] = [0, 1, 2, 3, 5, 9, 31, 33, 127, 129, 509];
pub const NETLIB_ALPHAS: [f32; 3] = [0.0, 1.0, 0.7];
pub const NETLIB_BETAS: [f32; 3] = [0.0, 1.0, 1.3];

/// Every `(alpha, beta)` of the reference BLAS's values.
pub fn netlib_scalars() -> Vec<(f32, f32)> {
    NETLIB_ALPHAS.iter().flat_map(|&a| NETLIB_BETAS.iter().map(move |&b| (a, b))).collect()
}
