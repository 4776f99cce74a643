//! The report layer: what a run measured, written for people.
//!
//! - [`suite`]: the families run together, and the [`suite::RunReport`]
//!   (JSON) of one run;
//! - [`table`]: plain-text tables;
//! - [`markdown`], which writes `BENCHMARKS.md`;
//! - [`gemm`]: its GEMM library section, from `gemm --sweep`'s tables;
//! - [`random`]: the same library on random shapes, from `gemm --random`'s;
//! - [`blockscaled`]: block-scaled FP8, from `gemm --block-scaled`'s;
//! - [`attention`]: its attention section, from `attention --sweep`'s
//!   tables and torch's;
//! - [`attention_backward`]: the backward's, from `attention --backward
//!   --sweep`'s and torch's;
//! - [`attention_decode`]: decode's, from `attention --decode --sweep`'s
//!   and torch's;
//! - [`targets`]: the targets both sections judge, and the causes of the
//!   misses (`bench/targets.toml`);
//! - [`plots`], which draws the SVG plots.

pub mod attention;
pub mod attention_backward;
pub mod attention_decode;
pub mod blockscaled;
pub mod gemm;
pub mod markdown;
pub mod plots;
pub mod random;
pub mod suite;
pub mod table;
pub mod targets;

pub use suite::{Job, Progress, RunReport};
pub use table::Table;
