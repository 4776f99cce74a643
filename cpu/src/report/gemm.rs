//! The tensor-core GEMM library's section of `BENCHMARKS.md`, from the
//! tables `gemm --sweep` printed on a GPU (one `sweep-<precision>[-<out>]
//! ...md` file per run, kept in `results/gemm/`): per sweep, each shape's
//! TFLOP/s against the in-run peer (cuBLAS, or cuBLASLt for FP8), the
//! geometric mean, the lowest ratio where the peer reaches half its own
//! best, the odd shapes, and a plot of the ratio by shape.

use super::targets::{GemmWhy, Targets};
use std::path::{Path, PathBuf};

use super::table::Table;
use crate::families::{Plot, Series};
use crate::gemm::sweep;
use crate::runtime::{Error, Result};

/// One `gemm --sweep` run.
pub struct Sweep {
    /// What the file name says after `sweep-`: `bf16`, `e4m3-bf16`, ...
    pub name: String,
    /// The binary's device line (device, driver, date).
    pub device: String,
    /// The git revision the binary was built from (its `git` line), where
    /// the table records it.
    pub revision: Option<String>,
    /// `gemm --random`'s seed, where the table is a random draw's.
    pub seed: Option<u64>,
    pub rows: Vec<Row>,
    /// The table's column names, which name each row's [`Row::cells`].
    pub header: Vec<String>,
}

impl Sweep {
    /// Row `r`'s cell in column `name`, where the table has one.
    pub fn cell<'a>(&self, r: &'a Row, name: &str) -> Option<&'a str> {
        let i = self.header.iter().position(|h| h == name)?;
        r.cells.get(i).map(String::as_str)
    }
}

/// One call of a sweep.
pub struct Row {
    /// `MxNxK`.
    pub shape: String,
    pub ours: f64,
    pub peer: Option<f64>,
    pub peer_name: String,
    pub route: String,
    /// The table's own ratio (from the times, not the rounded TFLOP/s),
    /// where it has one.
    pub ratio: Option<f64>,
    /// Every cell, as printed ([`Sweep::cell`]).
    pub cells: Vec<String>,
}

impl Row {
    pub fn ratio(&self) -> Option<f64> {
        let peer = self.peer?;
        Some(self.ratio.unwrap_or(self.ours / peer))
    }
}

/// Every `sweep-*.md` in `dir`, by name.
pub fn read(dir: &Path) -> Result<Vec<Sweep>> {
    read_tables(dir, "sweep-")
}

/// Every `<prefix>*.md` table `gemm` printed in `dir`, by name.
pub(super) fn read_tables(dir: &Path, prefix: &str) -> Result<Vec<Sweep>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::InvalidInput(format!("--gemm {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".md"))
        })
        .collect();
    files.sort();
    files.iter().map(|p| parse(p, prefix)).collect()
}

fn parse(path: &Path, prefix: &str) -> Result<Sweep> {
    let text = crate::files::read_file(path)?;
    let bad = |why: &str| Error::InvalidInput(format!("{}: {why}", path.display()));
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let name = stem.trim_start_matches(prefix).trim_end_matches("-h100").to_string();
    // The device line: the first, after `--random`'s line naming its seed.
    let device = text.lines().find(|l| !l.starts_with("random shapes:")).unwrap_or_default().to_string();
    let revision = text.lines().find_map(|l| l.strip_prefix("git ")).map(|r| r.trim().to_string());
    let seed =
        text.lines().next().and_then(|l| l.strip_prefix("random shapes: ")?.rsplit(' ').next()?.parse().ok());
    let mut header: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    // The first table only (`gemm` prints its decode calls' bandwidth in
    // a second one, after the summary line).
    let table = text.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    for line in table {
        let cells: Vec<String> = line.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
        if header.is_empty() {
            header = cells;
            continue;
        }
        if cells.iter().all(|c| c.starts_with("---")) {
            continue;
        }
        let at = |names: &[&str]| header.iter().position(|h| names.contains(&h.as_str()));
        let cell = |names: &[&str]| at(names).and_then(|i| cells.get(i)).cloned().unwrap_or_default();
        let number = |s: String| s.parse::<f64>().ok();
        let call = cell(&["call"]);
        rows.push(Row {
            shape: call.split_whitespace().next().unwrap_or_default().to_string(),
            ours: number(cell(&["ours TFLOP/s"])).ok_or_else(|| bad("a row without our TFLOP/s"))?,
            peer: number(cell(&["peer TFLOP/s", "cuBLAS TFLOP/s", "cuBLASLt block-scaled TFLOP/s"])),
            peer_name: if at(&["peer"]).is_some() { cell(&["peer"]) } else { "cuBLAS".into() },
            route: cell(&["route"]),
            ratio: cell(&["ratio", "ours / cuBLASLt block-scaled"])
                .strip_suffix('%')
                .and_then(|x| x.parse::<f64>().ok())
                .map(|x| x / 100.0),
            cells,
        });
    }
    if rows.is_empty() {
        return Err(bad("no table rows"));
    }
    Ok(Sweep { name, device, revision, seed, rows, header })
}

/// What two calls of the same `m x n` at two depths say about a sweep's
/// kernel: time `t(k) = a + b k`, so `b` is the main loop's rate and `a`
/// the fixed cost of the calls' tiles (prologue, epilogue, the last wave):
/// the main loop's TFLOP/s alone, and the fixed time in microseconds.
fn split_costs(s: &Sweep, (m, n): (usize, usize), (k0, k1): (usize, usize)) -> Option<(f64, f64)> {
    let time = |k: usize| {
        let r = s.rows.iter().find(|r| r.shape == format!("{m}x{n}x{k}"))?;
        Some(2.0 * (m * n * k) as f64 / (r.ours * 1e12))
    };
    let (t0, t1) = (time(k0)?, time(k1)?);
    let per_k = (t1 - t0) / (k1 - k0) as f64;
    let fixed = t0 - per_k * k0 as f64;
    Some((2.0 * (m * n) as f64 / per_k / 1e12, fixed * 1e6))
}

pub(super) fn geomean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

pub(super) fn percent(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// Why a missed target is missed, by what it measured (the target's kind
/// and the shape where it is lowest) and the precision: the cause
/// `bench/targets.toml` gives, or "not yet explained".
fn why(causes: &[GemmWhy], (kind, shape): (&str, &str), precision: &str, met: Option<bool>) -> String {
    match met {
        Some(false) => causes
            .iter()
            .find(|c| {
                c.kind == kind
                    && (c.shape.is_empty() || c.shape == shape)
                    && c.precisions.iter().any(|p| p == precision)
            })
            .map_or("not yet explained".into(), |c| c.why.clone()),
        _ => String::new(),
    }
}

/// The lowest ratio of `s` where the peer reaches half its best in the
/// sweep, and its shape.
pub(super) fn lowest(s: &Sweep) -> Option<(f64, &str)> {
    let best_peer = s.rows.iter().filter_map(|r| r.peer).fold(0.0, f64::max);
    s.rows
        .iter()
        .filter(|r| r.peer.is_some_and(|p| p >= 0.5 * best_peer))
        .filter_map(|r| r.ratio().map(|x| (x, r.shape.as_str())))
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// The GEMM targets against the H100 sweeps: one row per target and
/// sweep (target, measured, met).
fn targets(sweeps: &[Sweep], group_of: impl Fn(&str) -> &'static str) -> Table {
    let mut t = Table::new(["sweep", "target", "measured", "met", "why (where missed)"]);
    let met = |ok: bool| if ok { "yes" } else { "**no**" };
    let Targets { gemm: goals, gemm_why: causes, .. } = super::targets::targets();
    for s in sweeps.iter().filter(|s| s.device.contains("H100")) {
        let precision = s.name.split('-').next().unwrap_or_default();
        let Some(goal) = goals.iter().find(|g| g.precision == precision) else {
            continue;
        };
        let ratios: Vec<f64> = s.rows.iter().filter_map(Row::ratio).collect();
        let mut row = |(kind, shape): (&str, &str), what: String, measured: String, ok: Option<bool>| {
            t.row([
                s.name.clone(),
                what,
                measured,
                ok.map_or("-", met).to_string(),
                why(&causes, (kind, shape), precision, ok),
            ]);
        };
        let g = geomean(&ratios);
        row(
            ("geomean", ""),
            format!("geomean at least {:.0}% of the peer", 100.0 * goal.geomean),
            format!("{} over {} shapes", percent(g), ratios.len()),
            g.map(|g| g >= goal.geomean),
        );
        let low = lowest(s);
        row(
            ("lowest", low.map_or("", |(_, shape)| shape)),
            format!("lowest where the peer reaches half its best: at least {:.0}%", 100.0 * goal.lowest),
            low.map_or("-".into(), |(x, shape)| format!("{} at {shape}", percent(Some(x)))),
            low.map(|(x, _)| x >= goal.lowest),
        );
        let odd: Vec<(&Row, Option<f64>)> =
            s.rows.iter().filter(|r| group_of(&r.shape) == sweep::ODD).map(|r| (r, r.ratio())).collect();
        if !odd.is_empty() {
            let least = odd.iter().filter_map(|&(r, x)| x.map(|x| (x, r))).min_by(|a, b| a.0.total_cmp(&b.0));
            let measured = match least {
                Some((x, r)) => format!(
                    "lowest {x:.2}x at {} ({} of {} with a peer)",
                    r.shape,
                    odd.iter().filter(|o| o.1.is_some()).count(),
                    odd.len()
                ),
                None => "no peer".into(),
            };
            let at = ("odd", least.map_or("", |(_, r)| r.shape.as_str()));
            match goal.odd {
                Some(times) => row(
                    at,
                    format!("each odd shape at least {times:.0}x the peer"),
                    measured,
                    least.map(|(x, _)| x >= times),
                ),
                None => row(at, "odd shapes: reported".into(), measured, None),
            }
        }
        let square = s.rows.iter().find(|r| r.shape == "8192x8192x8192");
        if let Some(least) = goal.square_ratio {
            let x = square.and_then(Row::ratio);
            row(
                ("8192", "8192x8192x8192"),
                format!("8192^3 at least {:.0}% of the peer", 100.0 * least),
                percent(x),
                x.map(|x| x >= least),
            );
        }
        if let Some(least) = goal.square_tflops {
            let x = square.map(|r| r.ours);
            row(
                ("8192", "8192x8192x8192"),
                format!("8192^3 at least {least:.0} TFLOP/s"),
                x.map_or("-".into(), |x| format!("{x:.0} TFLOP/s")),
                x.map(|x| x >= least),
            );
        }
    }
    t
}

/// The section's markdown, and (with `plots`) one plot per sweep as SVG
/// text with its path there.
pub fn section(sweeps: &[Sweep], plots: Option<&Path>) -> Result<(String, Vec<(PathBuf, String)>)> {
    let groups: Vec<(&str, String)> =
        sweep::shapes().into_iter().map(|(group, (m, n, k))| (group, format!("{m}x{n}x{k}"))).collect();
    let group_of = |shape: &str| groups.iter().find(|(_, s)| s == shape).map_or("", |(g, _)| *g);
    let mut md = String::from(
        "## Tensor-core GEMM library (`gemm`)\n\n\
         `gemm --sweep` on the public sweep (`bench/gemm-sweep.txt`), each call verified against the `f64` \
         reference, then timed (CUDA events, median) against the peer on the same call in the same process: \
         `cublasGemmStridedBatchedEx`, or `cublasLtMatmul` for FP8 (fast accumulation, as ours). Calls shorter \
         than 200 us, ours and the peer's, are timed in batches of back-to-back calls, each event pair around \
         a batch (`bench::time_batched`); ours and the peer take turns, three rounds each, each figure the \
         median of its rounds' medians. Our product kernel is a dependent launch (sm_90, `#[kernel(dependent \
         = true)]`): it starts while the kernel ahead of it on the stream finishes, a pack of the same call or, \
         in a batch, the call before, as consecutive calls in an application would; the peers' launches do not \
         overlap. `gemm --serial-launches` times ours without it (`results/experiments/2026-11-27-gemm-ab-dependent/ab-dependent-h100.log`). \
         Regenerated \
         from the sweep tables in `results/gemm/` by `kernel-lab report ... --gemm results/gemm`.\n\n",
    );
    let mut summary = Table::new([
        "sweep",
        "device",
        "geomean vs peer",
        "lowest where the peer reaches half its best",
        "odd shapes vs peer",
        "8192 x 8192: main loop alone, fixed time",
    ]);
    let mut drawn = Vec::new();
    for s in sweeps {
        let ratios: Vec<f64> = s.rows.iter().filter_map(Row::ratio).collect();
        let lowest = lowest(s);
        let odd: Vec<String> = s
            .rows
            .iter()
            .filter(|r| group_of(&r.shape) == sweep::ODD)
            .map(|r| r.ratio().map_or("no peer".into(), |x| format!("{:.2}x", x)))
            .collect();
        summary.row([
            s.name.clone(),
            s.device.split(" (").next().unwrap_or_default().to_string()
                + s.device.rsplit(", ").next().map(|d| format!(", {d}")).as_deref().unwrap_or("")
                + s.revision.as_ref().map(|r| format!(", git {r}")).as_deref().unwrap_or(""),
            format!("{} over {} shapes", percent(geomean(&ratios)), ratios.len()),
            lowest.map_or("-".into(), |(x, shape)| format!("{} at {shape}", percent(Some(x)))),
            odd.join(", "),
            split_costs(s, (8192, 8192), (1024, 8192)).map_or("-".into(), |(rate, fixed)| {
                let peer = s.rows.iter().find(|r| r.shape == "8192x8192x8192").and_then(|r| r.peer);
                format!(
                    "{rate:.0} TFLOP/s (peer at 8192^3: {}), {fixed:.0} us",
                    peer.map_or("-".into(), |p| format!("{p:.0}"))
                )
            }),
        ]);
    }
    md += &summary.markdown();
    md += "\nThe last column fits `t(k) = a + b k` through 8192 x 8192 at k = 1024 and 8192: `b` is the \
           main loop's rate alone, `a` the time that does not grow with k (each tile's prologue and \
           epilogue, the last wave). A large fixed time means the tile's store is not overlapped with \
           the next tile's main loop: so it was before D went through shared memory and TMA stores \
           (a table's git revision, where it has one, or its date and `git log results/gemm` say which \
           kernel it measured; see `docs/notes.md`).\n\n";
    md += "The targets, on the H100 sweeps (the `f32` rows are the FFMA path through the same \
           call, against `cublasGemmStridedBatchedEx` in pedantic FP32):\n\n";
    md += &targets(sweeps, group_of).markdown();
    md += "\nThe evidence for each cause (ncu's counters, the probes' logs in `results/experiments/`): \
           `docs/notes.md`, \"The GEMM library's missed targets\".\n\n";
    for s in sweeps {
        md += &format!("### {}\n\n{}\n\n", s.name, s.device);
        let mut t =
            Table::new(["group", "shape", "ours TFLOP/s", "peer", "peer TFLOP/s", "ours / peer", "route"]);
        for r in &s.rows {
            t.row([
                group_of(&r.shape).to_string(),
                r.shape.clone(),
                format!("{:.1}", r.ours),
                r.peer_name.clone(),
                r.peer.map_or("refused".into(), |p| format!("{p:.1}")),
                percent(r.ratio()),
                r.route.clone(),
            ]);
        }
        md += &t.markdown();
        md += "\n";
        if let Some(dir) = plots {
            let file = format!("gemm_{}", s.name.replace('-', "_"));
            let shapes: Vec<String> = s.rows.iter().map(|r| r.shape.clone()).collect();
            let plot = Plot {
                file: file.clone(),
                title: format!("gemm {}: % of the in-run peer by shape", s.name),
                x_label: String::new(),
                y_label: "% of the peer (100 = parity)".into(),
                log_x: false,
                categories: Some(shapes),
                series: vec![Series {
                    name: "ours / peer".into(),
                    points: s
                        .rows
                        .iter()
                        .enumerate()
                        .filter_map(|(i, r)| r.ratio().map(|x| (i as f64, 100.0 * x)))
                        .collect(),
                    ceiling: false,
                }],
            };
            if let Some(svg) = super::plots::draw_one(&plot, dir)? {
                md += &format!("![{}](docs/plots/{file}.svg)\n\n", plot.title);
                drawn.push(svg);
            }
        }
    }
    Ok((md, drawn))
}
