//! Decode: a few queries per sequence against its KV cache, each sequence
//! its own length, the cache contiguous or paged
//! (`gpu::attention::decode`).
//!
//! - this module: a decode problem ([`Decode`]) and its checks;
//! - [`cache`]: the cache as the kernels read it, built on the host, and
//!   a token appended;
//! - [`mod@plan`]: how the keys are split across blocks, and why;
//! - [`mod@launch`]: the buffers and the launches (decode, then the merge
//!   of a split);
//! - [`run`]: a call's inputs (the cache in the queries' type or in FP8
//!   with descales), verified against the `f64` reference, then timed
//!   beside the device's copy.

pub mod cache;
pub mod launch;
pub mod plan;
pub mod run;

use crate::runtime::{Error, Result};

use super::problem::{HEAD_DIMS, Problem};

pub use cache::Cache;
pub use launch::{DecodeBuffers, launch};
pub use plan::{Plan, plan};
pub use run::{DecodeInputs, DecodeOutcome, run_decode};

/// The decode sweep's text: `bench/attention-decode-sweep.txt`, embedded
/// when the binary is built.
pub const SWEEP: &str = include_str!("../../../../bench/attention-decode-sweep.txt");

/// The decode sweep's calls, in file order: per line batch, query heads,
/// K/V heads, queries, keys a sequence, head dimension, `causal` or
/// `full`, tokens a page (0: contiguous only; else the paged cache), and
/// `e4m3` for an FP8 cache.
pub fn sweep() -> Vec<Decode> {
    let file = "bench/attention-decode-sweep.txt";
    SWEEP
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let n = |i: usize| w.get(i).and_then(|x| x.parse::<usize>().ok());
            match (n(0), n(1), n(2), n(3), n(4), n(5), w.get(6), n(7)) {
                (
                    Some(b),
                    Some(h),
                    Some(kv),
                    Some(s_q),
                    Some(len),
                    Some(d),
                    Some(&mask @ ("causal" | "full")),
                    Some(page),
                ) => {
                    let mut p = Decode::new(b, (h, kv), s_q, len, d);
                    p.causal = mask == "causal";
                    p.page_size = (page > 0).then_some(page);
                    p.fp8 = match w.get(8) {
                        None => false,
                        Some(&"e4m3") => true,
                        Some(x) => {
                            panic!("{file}: the cache's type is e4m3 or left out, not '{x}' in '{line}'")
                        }
                    };
                    p
                }
                _ => panic!("{file}: a line is `b h kv s_q len d causal|full page`, not '{line}'"),
            }
        })
        .collect()
}

/// The page sizes a paged cache takes (tokens a page): powers of two.
pub const PAGE_SIZES: std::ops::RangeInclusive<usize> = 16..=256;

/// One decode call: `s_q` queries per query head of each of `batch`
/// sequences, sequence `b` against its `lens[b]` keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Decode {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub s_q: usize,
    /// Keys per sequence (`batch` of them).
    pub lens: Vec<usize>,
    pub d: usize,
    pub causal: bool,
    pub scale: f32,
    /// Tokens per page of a paged cache; `None`: contiguous.
    pub page_size: Option<usize>,
    /// The cache in FP8 E4M3 with a descale per K/V head (of K and of V);
    /// else in the queries' type.
    pub fp8: bool,
    /// Packed variable-length queries: sequence `b` has `q_lens[b]`
    /// queries (`s_q` is the most), and Q and O are `[tokens, heads, d]`,
    /// the sequences' tokens back to back (FlashAttention's and vLLM's
    /// `cu_seqlens` layout), lse `[tokens, heads]`. `None`: every sequence
    /// `s_q` queries, Q `[b, heads, s_q, d]`.
    pub q_lens: Option<Vec<usize>>,
}

impl Decode {
    /// A call where every sequence has `kv_len` keys, the cache
    /// contiguous, the usual scale `1 / sqrt(d)`.
    pub fn new(batch: usize, (heads, kv_heads): (usize, usize), s_q: usize, kv_len: usize, d: usize) -> Self {
        Decode {
            batch,
            heads,
            kv_heads,
            s_q,
            lens: vec![kv_len; batch],
            d,
            causal: false,
            scale: 1.0 / (d as f32).sqrt(),
            page_size: None,
            fp8: false,
            q_lens: None,
        }
    }

    /// A packed variable-length call: sequence `b` has `q_lens[b]` queries
    /// and `kv_lens[b]` keys (as many as its queries, for a prefill), the
    /// queries packed ([`Decode::q_lens`]).
    pub fn packed(heads: (usize, usize), q_lens: Vec<usize>, kv_lens: Vec<usize>, d: usize) -> Self {
        let s_q = q_lens.iter().copied().max().unwrap_or(0);
        let mut p = Decode::new(q_lens.len(), heads, s_q, 0, d);
        (p.lens, p.q_lens) = (kv_lens, Some(q_lens));
        p
    }

    /// Sequence `b`'s queries.
    pub fn queries(&self, b: usize) -> usize {
        self.q_lens.as_ref().map_or(self.s_q, |q| q[b])
    }

    /// Q's rows of sequence `b`, in the order of its reference (head by
    /// head, query by query): `[b, heads, s_q]`'s, or packed Q's `(first +
    /// t) heads + h`.
    pub fn sequence_rows(&self, b: usize) -> Vec<usize> {
        let s_q = self.queries(b);
        match &self.q_lens {
            None => ((b * self.heads * s_q)..((b + 1) * self.heads * s_q)).collect(),
            Some(q) => {
                let first: usize = q[..b].iter().sum();
                (0..self.heads).flat_map(|h| (0..s_q).map(move |t| (first + t) * self.heads + h)).collect()
            }
        }
    }

    /// What the kernels' `lens` holds: each sequence's keys, then (packed)
    /// each sequence's first token and the tokens' count.
    pub fn lens_words(&self) -> Vec<u32> {
        let mut words: Vec<u32> = self.lens.iter().map(|&l| l as u32).collect();
        if let Some(q) = &self.q_lens {
            words.extend(q.iter().scan(0u32, |first, &n| Some(std::mem::replace(first, *first + n as u32))));
            words.push(q.iter().sum::<usize>() as u32);
        }
        words
    }

    /// Checks what the kernels take: sizes at least 1, a length per
    /// sequence, `d` 64, 128 or 256, `kv_heads` dividing `heads`, a page
    /// size a power of two in [`PAGE_SIZES`], counts in range.
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("decode {self}: {m}")));
        if [self.batch, self.heads, self.kv_heads, self.s_q, self.d].contains(&0) {
            return bad("every size must be at least 1".into());
        }
        if self.lens.len() != self.batch {
            return bad(format!("{} key lengths for {} sequences", self.lens.len(), self.batch));
        }
        if self.lens.contains(&0) {
            return bad("every sequence needs at least one key".into());
        }
        if let Some(q) = &self.q_lens {
            if q.len() != self.batch || q.contains(&0) {
                return bad(format!(
                    "{} query lengths for {} sequences, each at least 1",
                    q.len(),
                    self.batch
                ));
            }
            if q.iter().max() != Some(&self.s_q) {
                return bad("s_q is not the longest sequence's queries".into());
            }
        }
        if !HEAD_DIMS.contains(&self.d) {
            return bad(format!("head dim {} is not supported (64, 128 or 256)", self.d));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return bad(format!("kv-heads {} does not divide heads {}", self.kv_heads, self.heads));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return bad(format!("the scale must be finite and positive, not {}", self.scale));
        }
        if let Some(p) = self.page_size
            && !(p.is_power_of_two() && PAGE_SIZES.contains(&p))
        {
            return bad(format!("a page holds a power of two of tokens from 16 to 256, not {p}"));
        }
        if self.batch * self.kv_heads > 65535 {
            return bad("batch x kv-heads must be at most 65535 (the grid's y)".into());
        }
        // Rows, keys and table entries go to the kernels as u32; the cache's
        // elements as 64-bit offsets.
        let rows = self.batch.checked_mul(self.heads).and_then(|x| x.checked_mul(self.s_q.max(self.rows())));
        let cache = self.max_len().checked_mul(self.batch * self.kv_heads * self.d);
        if rows.is_none_or(|r| r > i32::MAX as usize) || cache.is_none() || self.max_len() > i32::MAX as usize
        {
            return bad("too large (rows and keys must fit in 31 bits)".into());
        }
        Ok(())
    }

    /// The longest sequence's keys.
    pub fn max_len(&self) -> usize {
        self.lens.iter().copied().max().unwrap_or(0)
    }

    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads.max(1)
    }

    /// Rows of Q (and O, lse): every sequence's queries of every head.
    pub fn rows(&self) -> usize {
        self.heads * self.q_lens.as_ref().map_or(self.batch * self.s_q, |q| q.iter().sum())
    }

    /// Elements of Q (and O).
    pub fn q_len(&self) -> usize {
        self.rows() * self.d
    }

    /// Keys in all sequences.
    pub fn keys(&self) -> usize {
        self.lens.iter().sum()
    }

    /// Bytes of a cache element: 1 in FP8, else 2.
    pub fn cache_bytes(&self) -> usize {
        if self.fp8 { 1 } else { 2 }
    }

    /// Bytes a call must move at least: every sequence's K and V once, Q
    /// and O once (16-bit), lse.
    pub fn bytes(&self) -> usize {
        2 * self.cache_bytes() * self.keys() * self.kv_heads * self.d + 2 * 2 * self.q_len() + 4 * self.rows()
    }

    /// FLOPs: `4 heads d` per key a query sees (every key of its sequence,
    /// or causally those up to its limit).
    pub fn flops(&self) -> f64 {
        // Each query's visible keys (all, or causally up to its limit).
        let seen: usize = (0..self.batch)
            .map(|b| {
                let (s_q, len) = (self.queries(b), self.lens[b]);
                (0..s_q).map(|t| gpu::attention::visible_keys(t, s_q, len, self.causal)).sum::<usize>()
            })
            .sum();
        4.0 * (self.heads * self.d) as f64 * seen as f64
    }

    /// Sequence `b` as a forward problem of one sequence (what its
    /// reference computes).
    pub fn sequence(&self, b: usize) -> Problem {
        let mut p =
            Problem::new(1, self.heads, self.kv_heads, (self.queries(b), self.lens[b]), self.d, self.causal);
        p.scale = self.scale;
        p
    }
}

impl std::fmt::Display for Decode {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "b{} h{}/{} ", self.batch, self.heads, self.kv_heads)?;
        match &self.q_lens {
            None => write!(f, "s{} ", self.s_q)?,
            Some(q) => write!(f, "s{}..{} packed ", q.iter().min().unwrap_or(&0), self.s_q)?,
        }
        let (lo, hi) = (self.lens.iter().min().copied().unwrap_or(0), self.max_len());
        if lo == hi {
            write!(f, "kv{hi}")?
        } else {
            write!(f, "kv{lo}..{hi}")?
        }
        write!(f, " d{}{}", self.d, if self.causal { " causal" } else { "" })?;
        write!(f, "{}", if self.fp8 { " e4m3-cache" } else { "" })?;
        match self.page_size {
            Some(p) => write!(f, " paged{p}"),
            None => Ok(()),
        }
    }
}
