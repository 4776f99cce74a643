//! The GEMM library judged on shapes nobody picked: the tables `gemm
//! --random N --seed S` printed on a GPU (`random-<precision>-<out>-<seed>
//! .md` in `results/gemm/`, the seed `fresh` where the run drew its own),
//! each run's geomean against the in-run peer, its lowest call, its lowest
//! where the peer reaches half its best, and the same split by how the
//! call ran: the tile kernel reading its operands in place, or packed
//! first (a copy of an operand whose rows are not on 16 bytes, or the
//! wrong way round), or the decode kernel (`m` or `n` at most 16).

use std::path::Path;

use super::gemm::{Row, Sweep, geomean, lowest, percent, read_tables};
use super::table::Table;
use crate::runtime::Result;

/// Every `random-*.md` in `dir`, by name.
pub fn read(dir: &Path) -> Result<Vec<Sweep>> {
    read_tables(dir, "random-")
}

/// The ratios of the rows that `keep` keeps: their geomean and count.
fn judged(rows: &[Row], keep: impl Fn(&Row) -> bool) -> String {
    let ratios: Vec<f64> = rows.iter().filter(|r| keep(r)).filter_map(Row::ratio).collect();
    if ratios.is_empty() {
        return "-".into();
    }
    format!("{} ({})", percent(geomean(&ratios)), ratios.len())
}

/// The section's markdown (empty without tables).
pub fn section(runs: &[Sweep]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "### Random shapes (`gemm --random`)\n\n\
         Shapes drawn from the ranges users run (`cpu/src/gemm/random.rs`: m, n and k log-uniform on \
         1..16384, with shares aligned to 8-128, odd, skinny and decode), in each precision's native \
         layout, timed as the sweep is. Seed 1 is kept from run to run; `fresh` is a seed each run drew \
         (its table's first line names it). The last columns split the calls by how they ran: the tile \
         kernel reading A and B in place, the tile kernel after packing one or both, or the decode kernel \
         (m or n at most 16: the weight read once, in place).\n\n",
    );
    let mut t = Table::new([
        "run",
        "device",
        "geomean vs peer (calls)",
        "lowest",
        "lowest where the peer reaches half its best",
        "read in place",
        "packed first",
        "decode kernel",
    ]);
    for s in runs {
        let packed = |r: &Row| r.route.contains("pack A") || r.route.contains("pack B");
        let decode = |r: &Row| r.route.starts_with("decode");
        let all_lowest = s
            .rows
            .iter()
            .filter_map(|r| r.ratio().map(|x| (x, r.shape.as_str())))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        t.row([
            format!("{} (seed {})", s.name, s.seed.map_or("-".into(), |x| x.to_string())),
            s.device.split(" (").next().unwrap_or_default().to_string()
                + s.device.rsplit(", ").next().map(|d| format!(", {d}")).as_deref().unwrap_or("")
                + s.revision.as_ref().map(|r| format!(", git {r}")).as_deref().unwrap_or(""),
            judged(&s.rows, |_| true),
            all_lowest.map_or("-".into(), |(x, shape)| format!("{} at {shape}", percent(Some(x)))),
            lowest(s).map_or("-".into(), |(x, shape)| format!("{} at {shape}", percent(Some(x)))),
            judged(&s.rows, |r| !packed(r) && !decode(r)),
            judged(&s.rows, packed),
            judged(&s.rows, decode),
        ]);
    }
    md += &t.markdown();
    md += "\nThe calls that pack lose most: each pack is a launch of its own ahead of the product (2.5-3 us \
           under ncu at 4 x 28 x 1 on an H200, beside the product kernel's 7 us and cuBLAS's whole call's \
           3-4 us; the packs' launches overlap the kernel ahead of them), and for large operands a copy of \
           every element (`docs/notes.md`, \"Random shapes\").\n\n";
    md
}
