//! One BLAS `sgemm` call, `C = alpha op(A) op(B) + beta C`, described and
//! checked as BLAS does, and reduced to the row-major problem the
//! `gpu::gemm::ffma` kernels compute.

use std::fmt;

use crate::runtime::{Error, Result};

/// How a matrix is stored: rows contiguous (C's order) or columns
/// (Fortran's, BLAS's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Row,
    Col,
}

/// `op(X)`: `X` itself or its transpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    N,
    T,
}

impl Op {
    pub fn transposed(t: bool) -> Op {
        if t { Op::T } else { Op::N }
    }
}

/// A call: `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is `m x n`, each
/// stored in `layout` with its leading dimension (the distance between
/// consecutive rows, or columns in column-major storage).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    pub layout: Layout,
    pub op_a: Op,
    pub op_b: Op,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
}

/// Which operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
    C,
}

/// The problem as the kernels take it: row-major `C` (`m x n`, `ldc`),
/// operands stored row-major with ops `a_t`/`b_t`. A column-major call
/// becomes `Cᵀ = op(B)ᵀ op(A)ᵀ`: `m` and `n` swap, and so do the operands
/// (`swapped`), their ops and leading dimensions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowMajor {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a_t: bool,
    pub b_t: bool,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    /// The kernels' A is the caller's B (and B the caller's A).
    pub swapped: bool,
}

/// The largest leading dimension the kernels take: they step through an
/// operand 8 rows at a time, up to 128 rows apart, in 32-bit offsets.
pub const MAX_LD: usize = (u32::MAX as usize) / 128;

impl Gemm {
    /// A call with the least leading dimensions, `alpha = 1`, `beta = 0`.
    pub fn new(layout: Layout, op_a: Op, op_b: Op, m: usize, n: usize, k: usize) -> Gemm {
        let mut g = Gemm { layout, op_a, op_b, m, n, k, alpha: 1.0, beta: 0.0, lda: 0, ldb: 0, ldc: 0 };
        (g.lda, g.ldb, g.ldc) = (g.min_ld(Operand::A), g.min_ld(Operand::B), g.min_ld(Operand::C));
        g
    }

    /// A row-major `m x n x k` call without transposes.
    pub fn row(m: usize, n: usize, k: usize) -> Gemm {
        Gemm::new(Layout::Row, Op::N, Op::N, m, n, k)
    }

    pub fn scaled(self, alpha: f32, beta: f32) -> Gemm {
        Gemm { alpha, beta, ..self }
    }

    /// `2 m n k`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// How `x` is stored: `(lines, length)`, lines of `length` contiguous
    /// elements (rows in row-major storage, columns in column-major).
    pub fn stored(&self, x: Operand) -> (usize, usize) {
        let (Gemm { m, n, k, .. }, row) = (*self, self.layout == Layout::Row);
        // The stored matrix's (rows, columns): A is m x k or, transposed,
        // k x m; B is k x n or n x k.
        let (rows, cols) = match x {
            Operand::A if self.op_a == Op::N => (m, k),
            Operand::A => (k, m),
            Operand::B if self.op_b == Op::N => (k, n),
            Operand::B => (n, k),
            Operand::C => (m, n),
        };
        if row { (rows, cols) } else { (cols, rows) }
    }

    /// The least leading dimension BLAS accepts for `x`: `max(1, length)`.
    pub fn min_ld(&self, x: Operand) -> usize {
        self.stored(x).1.max(1)
    }

    pub fn ld(&self, x: Operand) -> usize {
        match x {
            Operand::A => self.lda,
            Operand::B => self.ldb,
            Operand::C => self.ldc,
        }
    }

    /// Elements a buffer must hold for `x`: `(lines - 1) ld + length`, 0
    /// when it is empty.
    pub fn elements(&self, x: Operand) -> usize {
        let (lines, length) = self.stored(x);
        if lines == 0 || length == 0 { 0 } else { (lines - 1) * self.ld(x) + length }
    }

    /// Where element `(i, j)` of the stored-as-described matrix `x` lies:
    /// `op(A)[i][p]` for A, `op(B)[p][j]` for B, `C[i][j]` for C.
    pub fn index(&self, x: Operand, i: usize, j: usize) -> usize {
        let transposed = match x {
            Operand::A => self.op_a == Op::T,
            Operand::B => self.op_b == Op::T,
            Operand::C => false,
        };
        // (row, column) of the stored matrix.
        let (r, c) = if transposed { (j, i) } else { (i, j) };
        match self.layout {
            Layout::Row => r * self.ld(x) + c,
            Layout::Col => c * self.ld(x) + r,
        }
    }

    /// BLAS's argument checks, and the kernels' limits: one line naming
    /// the first problem.
    pub fn check(&self) -> Result<()> {
        for (name, x) in [("lda", Operand::A), ("ldb", Operand::B), ("ldc", Operand::C)] {
            let (ld, min) = (self.ld(x), self.min_ld(x));
            if ld < min {
                return Err(Error::InvalidInput(format!(
                    "sgemm {self}: {name} = {ld} is below its minimum {min} (max(1, {}))",
                    self.stored(x).1
                )));
            }
            if ld > MAX_LD {
                return Err(Error::InvalidInput(format!(
                    "sgemm {self}: {name} = {ld} is above the kernels' limit {MAX_LD}"
                )));
            }
            let (lines, _) = self.stored(x);
            if lines.checked_mul(ld).and_then(|e| e.checked_mul(4)).is_none() {
                return Err(Error::InvalidInput(format!("sgemm {self}: {x:?} overflows the address space")));
            }
        }
        let limit = u32::MAX as usize;
        if self.m > limit || self.n > limit || self.k > limit {
            return Err(Error::InvalidInput(format!("sgemm {self}: dimensions above 2^32 - 1")));
        }
        // Block rows are the grid's y (at most 65535) with 64-row tiles at least.
        let r = self.row_major();
        if r.m.div_ceil(64) > 65_535 {
            return Err(Error::InvalidInput(format!(
                "sgemm {self}: {} rows of C (as the kernels see it) need more than 65535 block rows",
                r.m
            )));
        }
        Ok(())
    }

    /// [`Gemm::check`], and that buffers of `a`, `b` and `c` elements hold
    /// the matrices.
    pub fn check_buffers(&self, a: usize, b: usize, c: usize) -> Result<()> {
        self.check()?;
        for (name, x, len) in [("A", Operand::A, a), ("B", Operand::B, b), ("C", Operand::C, c)] {
            let need = self.elements(x);
            if len < need {
                let (lines, length) = self.stored(x);
                return Err(Error::InvalidInput(format!(
                    "sgemm {self}: {name} needs {need} elements ({lines} lines of {length} at ld {}), the buffer has {len}",
                    self.ld(x)
                )));
            }
        }
        Ok(())
    }

    /// The row-major problem the kernels compute.
    pub fn row_major(&self) -> RowMajor {
        let (a_t, b_t) = (self.op_a == Op::T, self.op_b == Op::T);
        match self.layout {
            Layout::Row => RowMajor {
                m: self.m,
                n: self.n,
                k: self.k,
                a_t,
                b_t,
                lda: self.lda,
                ldb: self.ldb,
                ldc: self.ldc,
                swapped: false,
            },
            Layout::Col => RowMajor {
                m: self.n,
                n: self.m,
                k: self.k,
                a_t: b_t,
                b_t: a_t,
                lda: self.ldb,
                ldb: self.lda,
                ldc: self.ldc,
                swapped: true,
            },
        }
    }

    /// `row NN`, `col TN`: the layout and the ops.
    pub fn form(&self) -> String {
        let op = |o: Op| if o == Op::N { 'N' } else { 'T' };
        let layout = if self.layout == Layout::Row { "row" } else { "col" };
        format!("{layout} {}{}", op(self.op_a), op(self.op_b))
    }
}

impl fmt::Display for Gemm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{} {}", self.m, self.n, self.k, self.form())
    }
}

/// `MxNxK`, as `--shape` takes it: `(m, n, k)`, each at least 1.
pub fn parse_shape(text: &str) -> std::result::Result<(usize, usize, usize), String> {
    let dims: Vec<&str> = text.split('x').collect();
    let bad = || format!("'{text}' is not a shape: MxNxK, e.g. 4096x4096x4096 or 128x8192x8192");
    let [m, n, k] = dims[..] else { return Err(bad()) };
    let parse = |d: &str| d.trim().parse::<usize>().map_err(|_| bad());
    let (m, n, k) = (parse(m)?, parse(n)?, parse(k)?);
    if m == 0 || n == 0 || k == 0 {
        return Err(format!("shape {text}: dimensions must be positive"));
    }
    Ok((m, n, k))
}
