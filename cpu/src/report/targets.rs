//! The targets `BENCHMARKS.md` judges the H100 runs against, and the
//! causes of the misses: `bench/targets.toml`, embedded when the binary is
//! built.

use serde::Deserialize;

/// The file's text.
pub const TARGETS: &str = include_str!("../../../bench/targets.toml");

/// The whole file.
#[derive(Deserialize)]
pub struct Targets {
    pub gemm: Vec<GemmTarget>,
    pub gemm_why: Vec<GemmWhy>,
    pub attention: Vec<AttentionTarget>,
    /// The backward's, on its sweep (`step` names a backward step, as
    /// `attention --backward` prints it; `backend` a peer's backward).
    pub attention_backward: Vec<AttentionTarget>,
    /// Decode's, on its sweep.
    pub attention_decode: Vec<DecodeTarget>,
}

/// One decode target: a ratio over the decode sweep's calls with at
/// least `min_len` keys a sequence (and at most `max_batch` sequences,
/// where given). `kind`: `torch` (torch's best time over ours, the
/// contiguous 16-bit cache), `copy` (our TB/s over the copy's), `paged`
/// (the contiguous cache's time over the paged one's), `fp8` (the 16-bit
/// cache's time over the FP8 one's: tokens a second).
#[derive(Deserialize)]
pub struct DecodeTarget {
    pub what: String,
    pub kind: String,
    #[serde(default)]
    pub min_len: usize,
    pub max_batch: Option<usize>,
    pub least: f64,
    /// The cause where it is missed.
    pub why: String,
}

/// One input precision's targets on the GEMM sweep, each a ratio to the
/// in-run peer unless said otherwise.
#[derive(Deserialize)]
pub struct GemmTarget {
    /// The sweep's name before any `-`.
    pub precision: String,
    pub geomean: f64,
    /// The lowest ratio where the peer reaches half its own best.
    pub lowest: f64,
    /// Every odd shape at least this many times the peer (absent: the
    /// ratios are reported, not targeted).
    pub odd: Option<f64>,
    /// At 8192^3: at least this ratio to the peer.
    pub square_ratio: Option<f64>,
    /// At 8192^3: at least this many TFLOP/s.
    pub square_tflops: Option<f64>,
}

/// Why a GEMM target is missed.
#[derive(Deserialize)]
pub struct GemmWhy {
    /// `geomean`, `lowest`, `odd` or `8192`.
    pub kind: String,
    /// Where the target is lowest (empty: anywhere).
    pub shape: String,
    pub precisions: Vec<String>,
    pub why: String,
}

/// One attention target: a step against a backend (or, with `tflops`,
/// against a rate), over the problems of head dimension `d` (any, where
/// absent) with at least `min_seq` queries (and as many keys, where
/// `equal_lengths`; causal or not, where `causal` says), in the runs of
/// `precisions` (bf16 and f16 where absent).
#[derive(Deserialize)]
pub struct AttentionTarget {
    pub what: String,
    pub step: String,
    pub backend: String,
    pub d: Option<usize>,
    #[serde(default)]
    pub min_seq: usize,
    #[serde(default)]
    pub equal_lengths: bool,
    pub causal: Option<bool>,
    /// The runs' precisions it judges.
    #[serde(default = "sixteen_bit")]
    pub precisions: Vec<String>,
    /// A rate in TFLOP/s that stands for the backend (the ratio is then
    /// ours over it).
    pub tflops: Option<f64>,
    pub least: f64,
    /// The cause where it is missed.
    pub why: String,
}

fn sixteen_bit() -> Vec<String> {
    vec!["bf16".into(), "f16".into()]
}

impl AttentionTarget {
    /// Whether the target covers a problem of head dimension `d`, lengths
    /// `(s_q, s_k)` and mask `causal`.
    pub fn applies(&self, d: usize, (s_q, s_k): (usize, usize), causal: bool) -> bool {
        self.d.is_none_or(|x| x == d)
            && s_q >= self.min_seq
            && (!self.equal_lengths || s_q == s_k)
            && self.causal.is_none_or(|c| c == causal)
    }
}

/// The targets, parsed (the file is part of the build: a test holds it
/// well-formed).
pub fn targets() -> Targets {
    toml::from_str(TARGETS).unwrap_or_else(|e| panic!("bench/targets.toml: {e}"))
}
