//! The attention family's section of `BENCHMARKS.md`, from the tables a
//! GPU run printed (kept in `results/attention/`): `attention --sweep`'s
//! (`sweep-<precision>[-<device>].md`: each step's TFLOP/s per problem)
//! and `scripts/torch-sdpa.py`'s, run in the same device call
//! (`torch-sdpa-<precision>[-<device>].md`: torch's FLASH and CUDNN
//! backends on the same problems; a causal mask torch aligns top-left
//! where ours is bottom-right is left out). Per precision: a table of every step
//! beside both peers with the best step's ratio to each, and a plot of
//! TFLOP/s by problem, ours beside FLASH and CUDNN. FP8 (`e4m3`), which
//! torch's SDPA refuses, is set beside torch's bf16 backends (timed in the
//! FP8 run's call, `torch-sdpa-e4m3-*.md`), and its table is followed by
//! the accuracy table the run printed after it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::table::Table;
use crate::families::{Plot, Series};
use crate::runtime::{Error, Result};

/// A problem as both tables name it: batch, heads, K/V heads, query and
/// key lengths, head dimension, causal.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) b: usize,
    pub(super) h: usize,
    pub(super) kv: usize,
    pub(super) s_q: usize,
    pub(super) s_k: usize,
    pub(super) d: usize,
    pub(super) causal: bool,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}·{}", self.b, self.h)?;
        if self.kv != self.h {
            write!(f, "/{}", self.kv)?;
        }
        write!(f, "·{}", self.s_q)?;
        if self.s_k != self.s_q {
            write!(f, "x{}", self.s_k)?;
        }
        write!(f, "·{}{}", self.d, if self.causal { " causal" } else { "" })
    }
}

/// One step's time on one problem.
#[derive(Clone, Debug)]
pub(super) struct Timed {
    pub step: String,
    pub tflops: f64,
    pub ms: f64,
}

/// One precision's run: ours per step, the peers per backend.
pub struct Run {
    precision: String,
    device: String,
    /// Problems in the sweep's order, each with its steps in order.
    ours: Ours,
    peers: Peers,
    peer_device: String,
    /// The accuracy table after the sweep's (FP8's: O's RMSE beside bf16's).
    accuracy: Vec<Vec<String>>,
}

/// Every `sweep-*.md` in `dir` with the `torch-sdpa-*.md` beside it.
pub fn read(dir: &Path) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (rest, path) in tables(dir, "sweep-")? {
        let precision = precision_of(&rest);
        // torch refuses FP8: its bf16 backends stand beside e4m3, from the
        // FP8 run's own call (`torch-sdpa-e4m3-*`, bf16 inside), or else
        // from the bf16 run's.
        let mut peer = dir.join(format!("torch-sdpa-{rest}"));
        if precision == FP8 && !peer.exists() {
            peer = dir.join(format!("torch-sdpa-{}", rest.replacen(FP8, "bf16", 1)));
        }
        let (device, ours) = parse_ours(&path)?;
        let (peer_device, peers) =
            if peer.exists() { parse_peers(&peer)? } else { (String::new(), BTreeMap::new()) };
        let accuracy = table(&crate::files::read_file(&path)?, 1).collect();
        runs.push(Run { precision, device, ours, peers, peer_device, accuracy });
    }
    if runs.is_empty() {
        return Err(Error::InvalidInput(format!("--attention {}: no sweep-*.md tables", dir.display())));
    }
    Ok(runs)
}

/// The tables `<prefix><rest>.md` in `dir`, in name order: each `rest`
/// (`bf16-h100.md`: the precision, then the device) and its path.
pub(super) fn tables(dir: &Path, prefix: &str) -> Result<Vec<(String, PathBuf)>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::InvalidInput(format!("--attention {}: {e}", dir.display())))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".md"))
        .collect();
    names.sort();
    Ok(names.into_iter().map(|n| (n[prefix.len()..].to_string(), dir.join(&n))).collect())
}

/// The precision a table's `rest` names first (`bf16-h100.md`: `bf16`).
pub(super) fn precision_of(rest: &str) -> String {
    rest.trim_end_matches(".md").split('-').next().unwrap_or_default().to_string()
}

/// The first table's rows as cells (header and rule left out).
pub(super) fn rows(text: &str) -> impl Iterator<Item = Vec<String>> + '_ {
    table(text, 0)
}

/// The rows of table `n` (counted from 0; tables are parted by an empty
/// line, and within one the lines that do not start with `|`, such as a
/// run's progress, are passed over), as cells, header and rule left out.
pub(super) fn table(text: &str, n: usize) -> impl Iterator<Item = Vec<String>> + '_ {
    let mut index = 0;
    let mut seen = false;
    text.lines()
        .filter(move |l| {
            let row = l.starts_with('|');
            if seen && l.trim().is_empty() {
                index += 1;
                seen = false;
            }
            seen |= row;
            row && index == n
        })
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .skip(2)
}

/// The FP8 precision's name.
const FP8: &str = "e4m3";

/// The word a deterministic backward's problem ends with, and its steps'
/// names in the report.
pub(super) const DETERMINISTIC: &str = "deterministic";

/// `b4 h16/4 s1000x4097 d128 causal`, as `attention` prints a problem.
fn our_key(s: &str) -> Option<Key> {
    let mut words = s.split_whitespace();
    let b = words.next()?.strip_prefix('b')?.parse().ok()?;
    let (h, kv) = words.next()?.strip_prefix('h')?.split_once('/')?;
    let lengths = words.next()?.strip_prefix('s')?;
    let (s_q, s_k) = lengths.split_once('x').unwrap_or((lengths, lengths));
    let d = words.next()?.strip_prefix('d')?.parse().ok()?;
    Some(Key {
        b,
        h: h.parse().ok()?,
        kv: kv.parse().ok()?,
        s_q: s_q.parse().ok()?,
        s_k: s_k.parse().ok()?,
        d,
        causal: words.next() == Some("causal"),
    })
}

/// `4 16/4 1000x4097 128` and `yes`/`no`, as the torch script prints them.
pub(super) fn peer_key(problem: &str, causal: &str) -> Option<Key> {
    let w: Vec<&str> = problem.split_whitespace().collect();
    let (h, kv) = w.get(1)?.split_once('/')?;
    let (s_q, s_k) = w.get(2)?.split_once('x')?;
    Some(Key {
        b: w.first()?.parse().ok()?,
        h: h.parse().ok()?,
        kv: kv.parse().ok()?,
        s_q: s_q.parse().ok()?,
        s_k: s_k.parse().ok()?,
        d: w.get(3)?.parse().ok()?,
        causal: causal.starts_with("yes"),
    })
}

pub(super) type Ours = Vec<(Key, Vec<Timed>)>;

/// (problem, backend) to TFLOP/s; `None` where the backend refused.
type Peers = BTreeMap<(Key, String), Option<f64>>;

pub(super) fn parse_ours(path: &Path) -> Result<(String, Ours)> {
    let text = crate::files::read_file(path)?;
    let bad = |why: String| Error::InvalidInput(format!("{}: {why}", path.display()));
    let mut ours: Ours = Vec::new();
    // | precision | problem | step | worst error / bound | ms | TFLOP/s |
    for cells in rows(&text) {
        let [_, problem, step, _, ms, tflops] = &cells[..] else {
            return Err(bad(format!("a row of {} cells, not 6", cells.len())));
        };
        let key = our_key(problem).ok_or_else(|| bad(format!("a problem named '{problem}'")))?;
        let (Ok(tflops), Ok(ms)) = (tflops.parse::<f64>(), ms.parse::<f64>()) else { continue };
        // A backward's deterministic mode is a step of its own beside the
        // default (the problem's name says which ran).
        let step = if problem.split_whitespace().any(|w| w == DETERMINISTIC) {
            format!("{step} {DETERMINISTIC}")
        } else {
            step.clone()
        };
        let timed = Timed { step, tflops, ms };
        match ours.iter_mut().find(|(k, _)| *k == key) {
            Some((_, steps)) => steps.push(timed),
            None => ours.push((key, vec![timed])),
        }
    }
    if ours.is_empty() {
        return Err(bad("no timed rows".into()));
    }
    Ok((text.lines().next().unwrap_or_default().to_string(), ours))
}

fn parse_peers(path: &Path) -> Result<(String, Peers)> {
    let text = crate::files::read_file(path)?;
    let bad = |why: String| Error::InvalidInput(format!("{}: {why}", path.display()));
    let mut peers = BTreeMap::new();
    // | b h/kv s_q x s_k d | causal | backend | ms | TFLOP/s |
    for cells in rows(&text) {
        let [problem, causal, backend, ms, tflops] = &cells[..] else {
            return Err(bad(format!("a row of {} cells, not 5", cells.len())));
        };
        let key = peer_key(problem, causal).ok_or_else(|| bad(format!("a problem named '{problem}'")))?;
        if causal.contains("top-left") {
            // torch's causal mask for s_q != s_k, not ours: not a peer.
            continue;
        }
        let value = if ms == "refused" { None } else { tflops.parse::<f64>().ok() };
        peers.insert((key, backend.clone()), value);
    }
    Ok((text.lines().next().unwrap_or_default().to_string(), peers))
}

/// `ours / peer` as a percentage; a dash without a peer or where it
/// rounds to zero TFLOP/s (a problem of one row).
pub(super) fn ratio(ours: f64, peer: Option<f64>) -> String {
    match peer {
        Some(p) if p > 0.0 => format!("{:.1}%", 100.0 * ours / p),
        _ => "-".into(),
    }
}

pub(super) const BACKENDS: [&str; 2] = ["FLASH", "CUDNN"];

/// The targets' table for one run in `precision`: each of its targets'
/// lowest ratio over the problems it covers (where the step and the
/// backend both ran; a target's own rate stands for the backend where it
/// names one).
pub(super) fn targets(
    targets: &[super::targets::AttentionTarget],
    (ours, precision): (&Ours, &str),
    peer: impl Fn(&Key, &str) -> Option<f64>,
) -> String {
    let mut t = Table::new(vec!["target", "lowest", "met", "why (where missed)"]);
    for target in targets.iter().filter(|t| t.precisions.iter().any(|p| p == precision)) {
        let lowest = ours
            .iter()
            .filter(|(k, _)| target.applies(k.d, (k.s_q, k.s_k), k.causal))
            .filter_map(|(k, row)| {
                let ours = row.iter().find(|x| x.step == target.step)?.tflops;
                Some((ours / target.tflops.or_else(|| peer(k, &target.backend))?, k))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0));
        t.row(verdict(&target.what, lowest, (target.least, &target.why)));
    }
    t.markdown()
}

/// A target's row: what, its lowest ratio and where, whether it is met
/// (`least`), and why not (`why`, where missed).
pub(super) fn verdict(what: &str, lowest: Option<(f64, &Key)>, (least, why): (f64, &str)) -> Vec<String> {
    let (lowest, met, why) = match lowest {
        Some((r, k)) if r >= least => (format!("{:.1}% at {k}", 100.0 * r), "yes", ""),
        Some((r, k)) => (format!("{:.1}% at {k}", 100.0 * r), "**no**", why),
        None => ("-".into(), "-", ""),
    };
    vec![what.to_string(), lowest, met.into(), why.into()]
}

/// The section's markdown, and (with `plots`) one plot per precision as
/// SVG text with its path there.
pub fn section(runs: &[Run], plots: Option<&Path>) -> Result<(String, Vec<(PathBuf, String)>)> {
    let mut md = String::from(
        "## Attention (`attention`)\n\n\
         `attention --sweep`: each step verified against the `f64` reference, then timed (CUDA events, \
         median); torch's `scaled_dot_product_attention` with its FLASH (FlashAttention-2) and CUDNN \
         backends forced one at a time, on the same problems in the same device call \
         (`scripts/torch-sdpa.py`). TFLOP/s count `4 b h s_q s_k d`, halved when causal. A problem is \
         `batch·heads[/kv heads]·length[x key length]·head dim`. Regenerated from the tables in \
         `results/attention/` by `kernel-lab report ... --attention results/attention`.\n\n",
    );
    let mut drawn = Vec::new();
    for run in runs {
        md += &format!("### {}\n\n{}\n\n", run.precision, run.device);
        if !run.peer_device.is_empty() {
            let bf16 = if run.precision == FP8 { " (bf16: torch's SDPA refuses FP8)" } else { "" };
            md += &format!("Peers{bf16}: {}\n\n", run.peer_device);
        }
        if run.precision == FP8 {
            md += "FP8: Q, K and V in E4M3 with one descale per tensor, O in bf16 (`attention --precision \
                   e4m3`); `hopper` is the kernel alone, `hopper+vt` adds the pass that transposes V \
                   (FP8 `wgmma` reads V K-major only), once per V.\n\n";
        }
        let steps = step_names(&run.ours);
        let mut header = vec!["problem".to_string()];
        header.extend(steps.iter().map(|s| format!("{s} TFLOP/s")));
        header.extend(BACKENDS.iter().map(|b| format!("{b} TFLOP/s")));
        header.extend(BACKENDS.iter().map(|b| format!("best / {b}")));
        let mut t = Table::new(header);
        let peer = |k: &Key, b: &str| run.peers.get(&(k.clone(), b.to_string())).copied().flatten();
        for (key, row) in &run.ours {
            let of = |step: &String| row.iter().find(|x| x.step == *step).map(|x| x.tflops);
            let best = row.iter().map(|x| x.tflops).fold(0.0, f64::max);
            let mut cells = vec![key.to_string()];
            cells.extend(steps.iter().map(|s| of(s).map_or("-".into(), |x| format!("{x:.1}"))));
            cells.extend(BACKENDS.iter().map(|b| peer(key, b).map_or("-".into(), |x| format!("{x:.1}"))));
            cells.extend(BACKENDS.iter().map(|b| ratio(best, peer(key, b))));
            t.row(cells);
        }
        md += &t.markdown();
        md += "\n";
        if !run.accuracy.is_empty() {
            md += &accuracy(run);
        }
        md += &format!("Targets, {}:\n\n", run.precision);
        md += &targets(&super::targets::targets().attention, (&run.ours, &run.precision), peer);
        md += "\nWhat bounds each step, and what was tried: `docs/notes.md`, \"Attention, step 2\" and \
               \"Attention, step 3\" (ncu's stall samples by instruction, A/B runs).\n\n";
        if let Some(dir) = plots {
            let file = format!("attention_{}", run.precision);
            let title = format!(
                "attention {}: TFLOP/s by problem (sequence length), ours beside torch",
                run.precision
            );
            if let Some(svg) = plot(&run.ours, peer, (&file, &title), dir)? {
                md += &format!("![{title}](docs/plots/{file}.svg)\n\n");
                drawn.push(svg);
            }
        }
    }
    Ok((md, drawn))
}

/// A run's accuracy table (FP8: O's RMSE against the `f64` reference of
/// the unrounded inputs, beside the bf16 step's on the same inputs), as
/// the run printed it.
fn accuracy(run: &Run) -> String {
    let mut t = Table::new(vec!["problem", "inputs", "RMSE e4m3", "RMSE bf16", "e4m3 / bf16", "RMS of O"]);
    for cells in &run.accuracy {
        let key = our_key(&cells[0]).map_or(cells[0].clone(), |k| k.to_string());
        t.row(std::iter::once(key).chain(cells.iter().skip(1).cloned()).collect::<Vec<String>>());
    }
    format!(
        "Accuracy: O's RMSE against the `f64` reference of the inputs before any rounding, ours in \
         e4m3 beside our bf16 Hopper step on the same inputs; `outliers` is FlashAttention-3's case, \
         `N(0, 1) + N(0, 100) Bernoulli(0.001)`.\n\n{}\n",
        t.markdown()
    )
}

/// The steps of `ours`, in the order they first appear.
pub(super) fn step_names(ours: &Ours) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, row) in ours {
        for x in row {
            if !names.contains(&x.step) {
                names.push(x.step.clone());
            }
        }
    }
    names
}

/// TFLOP/s by problem, each of our steps beside each of torch's backends
/// (`peer`), drawn as `file` in `dir`: the SVG and its path.
pub(super) fn plot(
    ours: &Ours,
    peer: impl Fn(&Key, &str) -> Option<f64>,
    (file, title): (&str, &str),
    dir: &Path,
) -> Result<Option<(PathBuf, String)>> {
    let categories: Vec<String> = ours.iter().map(|(k, _)| k.to_string()).collect();
    let mut series: Vec<Series> = step_names(ours)
        .iter()
        .map(|step| Series {
            name: step.clone(),
            points: ours
                .iter()
                .enumerate()
                .filter_map(|(i, (_, row))| {
                    row.iter().find(|x| x.step == *step).map(|x| (i as f64, x.tflops))
                })
                .collect(),
            ceiling: false,
        })
        .collect();
    series.extend(BACKENDS.iter().map(|b| Series {
        name: format!("torch {b}"),
        points: ours.iter().enumerate().filter_map(|(i, (k, _))| peer(k, b).map(|x| (i as f64, x))).collect(),
        ceiling: false,
    }));
    let plot = Plot {
        file: file.into(),
        title: title.into(),
        x_label: String::new(),
        y_label: "TFLOP/s".into(),
        log_x: false,
        categories: Some(categories),
        series,
    };
    super::plots::draw_one(&plot, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_two_tables_reads_as_two() {
        let text =
            "device\n\n| a | b |\n| --- | --- |\nprogress\n| 1 | 2 |\n| 3 | 4 |\n\n| c |\n| --- |\n| 5 |\n";
        assert_eq!(rows(text).collect::<Vec<_>>(), vec![vec!["1", "2"], vec!["3", "4"]]);
        assert_eq!(table(text, 1).collect::<Vec<_>>(), vec![vec!["5"]]);
        assert_eq!(table(text, 2).count(), 0);
    }

    #[test]
    fn both_tables_name_a_problem_alike() {
        let ours = our_key("b4 h16/4 s1000x4097 d128 causal").unwrap();
        assert_eq!(Some(ours.clone()), peer_key("4 16/4 1000x4097 128", "yes (top-left)"));
        assert_eq!(our_key("b8 h16/16 s77 d128"), peer_key("8 16/16 77x77 128", "no"));
        assert_ne!(our_key("b8 h16/16 s77 d128"), peer_key("8 16/16 77x77 128", "yes"));
        assert_eq!(ours.to_string(), "4·16/4·1000x4097·128 causal");
    }
}
