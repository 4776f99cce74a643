//! Block-scaled FP8 (DeepSeek-V3's recipe: a scale per 1 x 128 of the
//! activations and per 128 x 128 of the weights): the tables `gemm
//! --block-scaled` printed on a GPU (`blockscaled-<precision>-<out>-<gpu>
//! .md` in `results/gemm/`), each call against cuBLASLt's own block-scaled
//! mode in the same run, with both per-tensor FP8 products beside.

use std::path::Path;

use super::gemm::{Sweep, geomean, percent, read_tables};
use super::table::Table;
use crate::runtime::Result;

/// Every `blockscaled-*.md` in `dir`, by name.
pub fn read(dir: &Path) -> Result<Vec<Sweep>> {
    read_tables(dir, "blockscaled-")
}

/// The section's markdown (empty without tables).
pub fn section(runs: &[Sweep]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "### Block-scaled FP8 (`gemm --block-scaled`)\n\n\
         A scale per 1 x 128 of A (the activations) and per 128 x 128 of B (the weights), applied to \
         each 128-deep stage's sums in `f32` (`gpu/src/gemm/blockscaled.rs`). The peer is cuBLASLt's \
         block-scaled mode on the same operands and scales, its result checked against the same \
         reference; the last columns are the per-tensor FP8 products (ours and cuBLASLt's) on the \
         same shape, the ceiling the scaling costs against.\n\n",
    );
    for s in runs {
        let device = s.device.split(" (").next().unwrap_or_default().to_string();
        let date = s.device.rsplit(", ").next().unwrap_or_default();
        let git = s.revision.as_ref().map(|r| format!(", git `{r}`")).unwrap_or_default();
        md += &format!("`{}` on {device}, {date}{git}:\n\n", s.name);
        let mut t = Table::new([
            "call",
            "ours TFLOP/s",
            "cuBLASLt block-scaled TFLOP/s",
            "ours / cuBLASLt",
            "per-tensor FP8, ours / cuBLASLt's TFLOP/s",
        ]);
        for r in &s.rows {
            t.row([
                r.shape.clone(),
                format!("{:.1}", r.ours),
                r.peer.map_or("-".into(), |p| format!("{p:.1}")),
                percent(r.ratio()),
                format!(
                    "{} / {}",
                    s.cell(r, "per-tensor (ours) TFLOP/s").unwrap_or("-"),
                    s.cell(r, "cuBLASLt per-tensor TFLOP/s").unwrap_or("-")
                ),
            ]);
        }
        md += &t.markdown();
        let ratios: Vec<f64> = s.rows.iter().filter_map(|r| r.ratio()).collect();
        md += &format!("\nGeomean against cuBLASLt's block-scaled mode: {}.\n\n", percent(geomean(&ratios)));
    }
    md
}
