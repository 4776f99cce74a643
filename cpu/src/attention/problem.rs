//! An attention problem, its checks, and the sweep's problems.

use crate::runtime::{Error, Result};

/// The head dimensions the kernels take.
pub const HEAD_DIMS: [usize; 3] = [64, 128, 256];

/// One attention problem. `scale` multiplies the scores (by default `1 /
/// sqrt(d)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Problem {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub s_q: usize,
    pub s_k: usize,
    pub d: usize,
    pub causal: bool,
    pub scale: f32,
    /// The Hopper step's consumers take turns (`gpu::attention::hopper::PING_PONG`).
    pub ping_pong: bool,
    /// The backward sums dQ in a fixed order, the same bits every run
    /// (`gpu::attention::backward::flash::DETERMINISTIC`).
    pub deterministic: bool,
    /// The Hopper step splits its last round where that pays
    /// (`gpu::attention::hopper::SPLIT`, [`super::launch::hopper_split`]).
    pub split: bool,
    /// FP8 inputs quantized per K/V head of each batch rather than per
    /// tensor (`gpu::attention::hopper::HEAD_DESCALES`; the FP8 step only).
    pub head_descales: bool,
}

/// The most multiply-adds of one product (`b h s_q s_k d`) a problem may
/// take on the emulator, which runs the three steps of such a problem in
/// about 25 s on one core.
pub const EMULATOR_MULTIPLY_ADDS: usize = 1 << 26;

/// The sweep's text: `bench/attention-sweep.txt`, embedded when the binary
/// is built.
pub const SWEEP: &str = include_str!("../../../bench/attention-sweep.txt");

/// The backward's sweep: `bench/attention-backward-sweep.txt`.
pub const BACKWARD_SWEEP: &str = include_str!("../../../bench/attention-backward-sweep.txt");

/// The sweep's problems, in file order.
pub fn sweep() -> Vec<Problem> {
    parse_sweep(SWEEP, "bench/attention-sweep.txt")
}

/// The backward sweep's problems, in file order.
pub fn backward_sweep() -> Vec<Problem> {
    parse_sweep(BACKWARD_SWEEP, "bench/attention-backward-sweep.txt")
}

/// The problems of a sweep's text (of `file`), in order: per line batch,
/// query heads, K/V heads, query length, key length, head dimension,
/// `causal` or `full`; `#` starts a comment line.
pub fn parse_sweep(text: &str, file: &str) -> Vec<Problem> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let n = |i: usize| w.get(i).and_then(|x| x.parse().ok());
            match (n(0), n(1), n(2), n(3), n(4), n(5), w.get(6)) {
                (
                    Some(b),
                    Some(h),
                    Some(kv),
                    Some(s_q),
                    Some(s_k),
                    Some(d),
                    Some(&mask @ ("causal" | "full")),
                ) => Problem::new(b, h, kv, (s_q, s_k), d, mask == "causal"),
                _ => panic!("{file}: a line is `b h kv s_q s_k d causal|full`, not '{line}'"),
            }
        })
        .collect()
}

impl Problem {
    /// A problem with the usual scale `1 / sqrt(d)`.
    pub fn new(
        batch: usize,
        heads: usize,
        kv_heads: usize,
        (s_q, s_k): (usize, usize),
        d: usize,
        causal: bool,
    ) -> Self {
        let scale = 1.0 / (d as f32).sqrt();
        Problem {
            batch,
            heads,
            kv_heads,
            s_q,
            s_k,
            d,
            causal,
            scale,
            ping_pong: false,
            deterministic: false,
            split: true,
            head_descales: false,
        }
    }

    /// Checks what the kernels take: every size at least 1, `d` 64, 128 or
    /// 256, `kv_heads` dividing `heads`, a finite positive scale, and
    /// element counts and grids in range.
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("attention {self}: {m}")));
        let Problem { batch, heads, kv_heads, s_q, s_k, d, .. } = *self;
        if [batch, heads, kv_heads, s_q, s_k, d].contains(&0) {
            return bad("every size must be at least 1".into());
        }
        if !HEAD_DIMS.contains(&d) {
            return bad(format!("head dim {d} is not supported (64, 128 or 256)"));
        }
        if !heads.is_multiple_of(kv_heads) {
            return bad(format!("kv-heads {kv_heads} does not divide heads {heads}"));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return bad(format!("the scale must be finite and positive, not {}", self.scale));
        }
        if batch * heads > 65535 {
            return bad("batch x heads must be at most 65535 (the grid's y)".into());
        }
        // Rows go to the kernels as u32; elements (the baseline's scores
        // too) are 64-bit indices, and their bytes must not overflow.
        let rows = batch.checked_mul(heads).and_then(|x| x.checked_mul(s_q.max(s_k)));
        let elements = rows.and_then(|r| r.checked_mul(d.max(s_k))).and_then(|e| e.checked_mul(8));
        if rows.is_none_or(|r| r > u32::MAX as usize) || elements.is_none() {
            return bad("too large (rows must fit in 32 bits)".into());
        }
        Ok(())
    }

    /// The sizes (what the Hopper step's tensor maps depend on).
    pub fn shape(&self) -> [usize; 6] {
        [self.batch, self.heads, self.kv_heads, self.s_q, self.s_k, self.d]
    }

    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }

    /// Elements of Q (and O), and of K (and V).
    pub fn q_len(&self) -> usize {
        self.batch * self.heads * self.s_q * self.d
    }
    pub fn kv_len(&self) -> usize {
        self.batch * self.kv_heads * self.s_k * self.d
    }
    /// Rows of scores: `b h s_q`.
    pub fn rows(&self) -> usize {
        self.batch * self.heads * self.s_q
    }

    /// The FLOPs rates count: `4 b h s_q s_k d`, halved when causal.
    pub fn flops(&self) -> f64 {
        let all = 4.0 * (self.batch * self.heads) as f64 * self.s_q as f64 * self.s_k as f64 * self.d as f64;
        if self.causal { all / 2.0 } else { all }
    }

    /// Multiply-adds of one of its two products, `b h s_q s_k d` (the
    /// causal mask skips about half; saturating).
    pub fn multiply_adds(&self) -> usize {
        [self.batch, self.heads, self.s_q, self.s_k, self.d].iter().fold(1usize, |a, &x| a.saturating_mul(x))
    }

    /// Host bytes of a verified run, at most: Q, K and V drawn in `f32`
    /// and rounded (8 bytes an element), O read back and its reference in
    /// `f64` (12), lse likewise (12 a row).
    pub fn host_bytes(&self) -> usize {
        8 * (self.q_len() + 2 * self.kv_len()) + 12 * self.q_len() + 12 * self.rows()
    }

    /// Device bytes of one precision's run of both steps: Q, K, V, O
    /// (2 bytes), lse (4), and the baseline's S (4) and P (2).
    pub fn device_bytes(&self) -> usize {
        let scores = self.rows() * self.s_k;
        2 * (2 * self.q_len() + 2 * self.kv_len()) + 4 * self.rows() + 6 * scores
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "b{} h{}/{} s{}", self.batch, self.heads, self.kv_heads, self.s_q)?;
        if self.s_k != self.s_q {
            write!(f, "x{}", self.s_k)?;
        }
        write!(f, " d{}{}", self.d, if self.causal { " causal" } else { "" })?;
        write!(f, "{}", if self.ping_pong { " ping-pong" } else { "" })?;
        write!(f, "{}", if self.deterministic { " deterministic" } else { "" })
    }
}
