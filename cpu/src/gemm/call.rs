//! One library call, as cuBLASLt's matmul takes it: BLAS's `D = alpha
//! op(A) op(B) + beta C` (layout, ops, leading dimensions: the
//! [`Gemm`] of `sgemm`), a strided batch, and an
//! optional epilogue (a bias per row of `D`, then ReLU or GELU). `C` and
//! `D` are one buffer, as in BLAS: `D` overwrites `C`.

use std::fmt;

use crate::blas::{Gemm, Operand};
use crate::runtime::{Error, Result};

/// The activation of the epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    None,
    Relu,
    /// GELU in its tanh form, as cuBLASLt's `CUBLASLT_EPILOGUE_GELU`.
    Gelu,
}

impl Act {
    /// The epilogue kernel's code for it.
    pub fn code(self) -> u32 {
        use gpu::gemm::epilogue::{ACT_GELU, ACT_NONE, ACT_RELU};
        match self {
            Act::None => ACT_NONE,
            Act::Relu => ACT_RELU,
            Act::Gelu => ACT_GELU,
        }
    }

    /// `x` through it, in `f64` (the reference's).
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Act::None => x,
            Act::Relu => x.max(0.0),
            Act::Gelu => {
                0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
            }
        }
    }
}

impl std::str::FromStr for Act {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Act, String> {
        match s {
            "none" => Ok(Act::None),
            "relu" => Ok(Act::Relu),
            "gelu" => Ok(Act::Gelu),
            _ => Err(format!("unknown activation '{s}'; accepted: none, relu, gelu")),
        }
    }
}

/// A call: the BLAS call of one matrix of the batch, the batch's count
/// and the strides (elements) between consecutive matrices of A, B and
/// C; whether a bias (`m` values, one per row of `D`, as cuBLASLt's
/// `BIAS` epilogue, shared by the batch) is added; the activation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Call {
    pub gemm: Gemm,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
    pub bias: bool,
    pub act: Act,
    /// Per-tensor scale factors of A and B (FP8 inputs only; 1 otherwise):
    /// the product is `alpha scale_a scale_b op(A) op(B)`.
    pub scales: (f32, f32),
}

/// The largest dimension or leading dimension: the kernels index in 32
/// bits within a matrix.
pub const MAX_DIM: usize = i32::MAX as usize;

/// The most multiply-adds one call may take on the emulator: a 1024^3
/// product, which it runs in about 20 s (bf16) to 45 s (FP8) on one core.
pub const EMULATOR_MULTIPLY_ADDS: usize = 1 << 30;

/// The most elements of A, B and C together one call may have on the
/// emulator: its buffers, their shadow state and the reference take about
/// 250 bytes an element, 2 GiB at this bound.
pub const EMULATOR_ELEMENTS: usize = 1 << 23;

impl Call {
    /// One matrix, no epilogue, packed strides.
    pub fn new(gemm: Gemm) -> Call {
        Call {
            gemm,
            batch: 1,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            bias: false,
            act: Act::None,
            scales: (1.0, 1.0),
        }
        .packed(1)
    }

    /// `batch` matrices, each right after the last.
    pub fn packed(self, batch: usize) -> Call {
        let g = &self.gemm;
        Call {
            batch,
            stride_a: g.elements(Operand::A),
            stride_b: g.elements(Operand::B),
            stride_c: g.elements(Operand::C),
            ..self
        }
    }

    pub fn with_epilogue(self, bias: bool, act: Act) -> Call {
        Call { bias, act, ..self }
    }

    /// With per-tensor scale factors for A and B (FP8).
    pub fn with_scales(self, scale_a: f32, scale_b: f32) -> Call {
        Call { scales: (scale_a, scale_b), ..self }
    }

    /// `alpha scale_a scale_b`: what multiplies the product.
    pub fn product_scale(&self) -> f32 {
        self.gemm.alpha * self.scales.0 * self.scales.1
    }

    /// Whether anything follows the product (bias or activation).
    pub fn has_epilogue(&self) -> bool {
        self.bias || self.act != Act::None
    }

    /// `2 m n k batch`.
    pub fn flops(&self) -> f64 {
        self.gemm.flops() * self.batch as f64
    }

    /// Multiply-adds: `m n k` per matrix of the batch (saturating).
    pub fn multiply_adds(&self) -> usize {
        let g = &self.gemm;
        [g.m, g.n, g.k, self.batch].iter().fold(1usize, |a, &x| a.saturating_mul(x))
    }

    /// Elements of A, B and C together (saturating).
    pub fn all_elements(&self) -> usize {
        [Operand::A, Operand::B, Operand::C].iter().fold(0usize, |a, &x| a.saturating_add(self.elements(x)))
    }

    /// Host bytes of a verified run, at most: A and B drawn in `f32` then
    /// rounded (8 bytes an element), C drawn, its copy and the result read
    /// back (16). The emulator's device buffers and their shadows come on
    /// top ([`EMULATOR_ELEMENTS`] bounds them).
    pub fn host_bytes(&self) -> usize {
        let (a, b, c) = (self.elements(Operand::A), self.elements(Operand::B), self.elements(Operand::C));
        a.saturating_add(b).saturating_mul(8).saturating_add(c.saturating_mul(16))
    }

    /// Device bytes of a run in `input` bytes an element and `output`
    /// bytes an element of D, in `splits` k-splits, at most: A and B and a
    /// packed copy of each, D, and the splits' f32 partial sums of D.
    pub fn device_bytes(&self, input: usize, output: usize, splits: usize) -> usize {
        let (a, b, c) = (self.elements(Operand::A), self.elements(Operand::B), self.elements(Operand::C));
        let sums = if splits > 1 { splits * 4 } else { 0 };
        a.saturating_add(b).saturating_mul(2 * input).saturating_add(c.saturating_mul(output + sums))
    }

    /// Elements the buffer of `x` must hold: the last matrix's start plus
    /// one matrix.
    pub fn elements(&self, x: Operand) -> usize {
        let one = self.gemm.elements(x);
        if self.batch == 0 || one == 0 {
            return 0;
        }
        (self.batch - 1) * self.stride(x) + one
    }

    pub fn stride(&self, x: Operand) -> usize {
        match x {
            Operand::A => self.stride_a,
            Operand::B => self.stride_b,
            Operand::C => self.stride_c,
        }
    }

    /// BLAS's argument checks and the kernels' limits, then that buffers
    /// of `a`, `b`, `c` elements (and a bias of `bias` values) hold the
    /// call: one line naming the first problem, before anything runs.
    pub fn check(&self, a: usize, b: usize, c: usize, bias: usize) -> Result<()> {
        let g = &self.gemm;
        let bad = |why: String| Err(Error::InvalidInput(format!("gemm {self}: {why}")));
        for (name, x) in [("lda", Operand::A), ("ldb", Operand::B), ("ldc", Operand::C)] {
            let (ld, min) = (g.ld(x), g.min_ld(x));
            if ld < min {
                return bad(format!("{name} = {ld} is below its minimum {min} (max(1, {}))", g.stored(x).1));
            }
            if ld > MAX_DIM {
                return bad(format!("{name} = {ld} is above the kernels' limit {MAX_DIM}"));
            }
        }
        if [g.m, g.n, g.k].iter().any(|&d| d > MAX_DIM) {
            return bad(format!("dimensions above {MAX_DIM}"));
        }
        if !(self.scales.0.is_finite() && self.scales.1.is_finite()) {
            return bad(format!("scale factors must be finite, not {:?}", self.scales));
        }
        if self.batch > 65_535 {
            return bad(format!("a batch of {} (at most 65535)", self.batch));
        }
        if self.batch > 1 && self.stride_c < g.elements(Operand::C) {
            return bad(format!(
                "stride_c = {} is below one C ({} elements): the batch's outputs would overlap",
                self.stride_c,
                g.elements(Operand::C)
            ));
        }
        for (name, x, len) in [("A", Operand::A, a), ("B", Operand::B, b), ("C", Operand::C, c)] {
            let need = self.elements(x);
            if need.checked_mul(4).is_none() {
                return bad(format!("{name} overflows the address space"));
            }
            if len < need {
                let (lines, length) = g.stored(x);
                return bad(format!(
                    "{name} needs {need} elements ({} of {lines} lines of {length} at ld {}, {} apart), the buffer has {len}",
                    self.batch,
                    g.ld(x),
                    self.stride(x)
                ));
            }
        }
        if self.bias && bias < g.m {
            return bad(format!("the bias needs {} values (one per row of D), it has {bias}", g.m));
        }
        Ok(())
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.gemm)?;
        if self.batch != 1 {
            write!(f, " batch {}", self.batch)?;
        }
        if self.bias {
            write!(f, " +bias")?;
        }
        if self.act != Act::None {
            write!(f, " {:?}", self.act)?;
        }
        if self.scales != (1.0, 1.0) {
            write!(f, " scales {}x{}", self.scales.0, self.scales.1)?;
        }
        Ok(())
    }
}
