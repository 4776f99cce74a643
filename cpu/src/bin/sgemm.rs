//! `cargo run --release --bin sgemm [-- --sizes 1024,4096]`: every SGEMM
//! kernel of the ladder verified against an f64 reference and timed
//! against cuBLAS (FP32, no TF32) in the same run; with `--shape MxNxK`,
//! the BLAS-semantics `sgemm` and its dispatcher at that shape, in the
//! layout and ops asked for, against cuBLAS on the same call.

use clap::Args;
use kernel_lab::blas::{Layout, Op};
use kernel_lab::families::Family;
use kernel_lab::families::sgemm::{Sgemm, shapes};
use kernel_lab::runtime::{Error, Result};

#[derive(Args)]
struct Options {
    /// A problem `MxNxK` for `sgemm` (repeatable; commas too): C is m x n,
    /// op(A) m x k, op(B) k x n.
    #[arg(long, value_delimiter = ',')]
    shape: Vec<String>,
    /// Storage of A, B and C at `--shape`s: `row` or `col` (BLAS's own), or
    /// `all` for both layouts with every pair of ops.
    #[arg(long, default_value = "row")]
    layout: String,
    /// op(A) = Aᵀ.
    #[arg(long)]
    trans_a: bool,
    /// op(B) = Bᵀ.
    #[arg(long)]
    trans_b: bool,
    /// Also time these block tiles (`128x64`), each with every `--splits`,
    /// beside the dispatcher's own choice.
    #[arg(long, value_delimiter = ',')]
    tile: Vec<String>,
    /// k-splits of the `--tile` plans (default 1).
    #[arg(long, value_delimiter = ',')]
    splits: Vec<usize>,
}

fn build(o: Options, common: &mut kernel_lab::cli::Common) -> Result<Box<dyn Family>> {
    let bad = |m: String| Error::InvalidInput(m);
    let forms = match o.layout.as_str() {
        "all" if o.trans_a || o.trans_b => {
            return Err(bad("--layout all runs every pair of ops; drop --trans-a/--trans-b".into()));
        }
        "all" => shapes::all_forms(),
        "row" | "col" => {
            let layout = if o.layout == "row" { Layout::Row } else { Layout::Col };
            vec![(layout, Op::transposed(o.trans_a), Op::transposed(o.trans_b))]
        }
        other => return Err(bad(format!("--layout is row, col or all, not '{other}'"))),
    };
    if o.shape.is_empty() && (o.layout != "row" || o.trans_a || o.trans_b || !o.tile.is_empty()) {
        return Err(bad("--layout, --trans-a, --trans-b and --tile apply to --shape MxNxK problems".into()));
    }
    let mut plans = Vec::new();
    for tile in &o.tile {
        let parsed = tile.split_once('x').and_then(|(m, n)| Some((m.parse().ok()?, n.parse().ok()?)));
        let (bm, bn) = parsed.ok_or_else(|| bad(format!("--tile '{tile}' is not BMxBN, e.g. 128x64")))?;
        let offered = kernel_lab::blas::plan::tiles();
        if !offered.iter().any(|t| (t.bm, t.bn) == (bm, bn)) {
            let names: Vec<String> = offered.iter().map(|t| format!("{}x{}", t.bm, t.bn)).collect();
            return Err(bad(format!("no {bm}x{bn} block tile; the kernels offer {}", names.join(", "))));
        }
        for &splits in if o.splits.is_empty() { &[1][..] } else { &o.splits } {
            plans.push((bm, bn, splits));
        }
    }
    if o.splits.contains(&0) {
        return Err(bad("--splits must be at least 1".into()));
    }
    if o.tile.is_empty() && !o.splits.is_empty() {
        return Err(bad("--splits needs --tile".into()));
    }
    for shape in shapes::parse_shapes(&o.shape)? {
        common.sizes.push(shape.to_string());
    }
    Ok(Box::new(Sgemm { forms: Some(forms), plans }))
}

fn main() -> std::process::ExitCode {
    kernel_lab::cli::family_main_with(
        "sgemm",
        "SGEMM from naive to double-buffered and warp-tiled, and the BLAS-semantics sgemm with its dispatcher, against cuBLAS.",
        build,
    )
}
