//! The attention backward's section of `BENCHMARKS.md`, from the tables a
//! GPU run printed (kept in `results/attention/`): `attention --backward
//! --sweep`'s (`backward-sweep-<precision>[-<device>].md`: each forward
//! and backward step per problem) and `scripts/torch-sdpa-backward.py`'s,
//! run in the same device call (`torch-sdpa-backward-<precision>[-<device>].md`:
//! torch's FLASH and CUDNN backends, forward and backward timed apart).
//! Per precision: the backward steps beside both peers' backward with the
//! best step's ratio to each, a training step (our fastest forward and
//! backward against cuDNN's), the targets, and a plot of TFLOP/s by
//! problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::attention::{
    BACKENDS, DETERMINISTIC, Key, Ours, parse_ours, peer_key, plot, precision_of, ratio, rows, step_names,
    tables, targets,
};
use super::table::Table;
use crate::runtime::{Error, Result};

/// A peer's forward and backward on a problem: (forward ms, backward ms,
/// backward TFLOP/s); `None` where the backend refused.
type Peers = BTreeMap<(Key, String), Option<(f64, f64, f64)>>;

/// One precision's run.
pub struct Run {
    precision: String,
    device: String,
    ours: Ours,
    peers: Peers,
    peer_device: String,
}

/// Our steps' names in the table end so.
const BACKWARD: &str = " backward";

/// Every `backward-sweep-*.md` in `dir` with the
/// `torch-sdpa-backward-*.md` beside it; none is no section.
pub fn read(dir: &Path) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (rest, path) in tables(dir, "backward-sweep-")? {
        let peer = dir.join(format!("torch-sdpa-backward-{rest}"));
        let (device, ours) = parse_ours(&path)?;
        let (peer_device, peers) =
            if peer.exists() { parse_peers(&peer)? } else { (String::new(), BTreeMap::new()) };
        runs.push(Run { precision: precision_of(&rest), device, ours, peers, peer_device });
    }
    Ok(runs)
}

fn parse_peers(path: &Path) -> Result<(String, Peers)> {
    let text = crate::files::read_file(path)?;
    let bad = |why: String| Error::InvalidInput(format!("{}: {why}", path.display()));
    let mut peers = BTreeMap::new();
    // | b h/kv s_q x s_k d | causal | backend | forward ms | forward TFLOP/s | backward ms | backward TFLOP/s |
    for cells in rows(&text) {
        let [problem, causal, backend, fwd_ms, _, bwd_ms, bwd] = &cells[..] else {
            return Err(bad(format!("a row of {} cells, not 7", cells.len())));
        };
        let key = peer_key(problem, causal).ok_or_else(|| bad(format!("a problem named '{problem}'")))?;
        if causal.contains("top-left") {
            // torch's causal mask for s_q != s_k, not ours: not a peer.
            continue;
        }
        let value = match (fwd_ms.parse::<f64>(), bwd_ms.parse::<f64>(), bwd.parse::<f64>()) {
            (Ok(f), Ok(b), Ok(t)) => Some((f, b, t)),
            _ => None,
        };
        peers.insert((key, backend.clone()), value);
    }
    Ok((text.lines().next().unwrap_or_default().to_string(), peers))
}

/// The deterministic mode's cost, where the sweep ran it: each step's
/// time in that mode over its default time, per problem; nothing where
/// it did not.
fn deterministic(ours: &Ours) -> String {
    let mut t = Table::new(vec!["problem", "step", "default ms", "deterministic ms", "cost"]);
    let mut any = false;
    for (key, row) in ours {
        for det in row.iter().filter(|x| x.step.ends_with(DETERMINISTIC)) {
            let step = det.step.trim_end_matches(DETERMINISTIC).trim_end();
            let Some(default) = row.iter().find(|x| x.step == step) else { continue };
            t.row(vec![
                key.to_string(),
                step.to_string(),
                format!("{:.4}", default.ms),
                format!("{:.4}", det.ms),
                format!("{:+.1}%", 100.0 * (det.ms / default.ms - 1.0)),
            ]);
            any = true;
        }
    }
    if !any {
        return String::new();
    }
    format!(
        "The deterministic mode (`--deterministic`: dQ summed in a fixed order, the same bits every run) \
         against the default, on the same problems in the same run:\n\n{}\n",
        t.markdown()
    )
}

/// The unfused step's traffic, where the sweep ran it: the bytes it must
/// move ([`crate::attention::backward::UNFUSED_BYTES_PER_SCORE`] a score)
/// over its time; nothing where it did not run.
fn unfused(ours: &Ours) -> String {
    use crate::attention::backward::UNFUSED_BYTES_PER_SCORE;
    let mut t = Table::new(vec!["problem", "unfused backward ms", "GB through global memory", "TB/s"]);
    let mut any = false;
    for (key, row) in ours {
        let Some(x) = row.iter().find(|x| x.step == "unfused backward") else { continue };
        let bytes = UNFUSED_BYTES_PER_SCORE * (key.b * key.h * key.s_q * key.s_k) as f64;
        t.row(vec![
            key.to_string(),
            format!("{:.4}", x.ms),
            format!("{:.1}", bytes / 1e9),
            format!("{:.2}", bytes / (x.ms * 1e-3) / 1e12),
        ]);
        any = true;
    }
    if !any {
        return String::new();
    }
    format!(
        "The unfused step's traffic: S and dP through global memory in `f32`, P and dS in 16 bits, \
         {UNFUSED_BYTES_PER_SCORE} bytes a score in all, over its time:\n\n{}\n",
        t.markdown()
    )
}

/// The section's markdown, and (with `plots`) one plot per precision.
pub fn section(runs: &[Run], plots: Option<&Path>) -> Result<(String, Vec<(PathBuf, String)>)> {
    let mut md = String::from(
        "## Attention backward (`attention --backward`)\n\n\
         `attention --backward --sweep` (`bench/attention-backward-sweep.txt`): dQ, dK and dV from the \
         forward's O and lse, each step verified element by element against the `f64` reference, then \
         timed apart from the forward (CUDA events, median); torch's SDPA backward with its FLASH and \
         CUDNN backends forced one at a time, on the same problems in the same device call \
         (`scripts/torch-sdpa-backward.py`). Backward TFLOP/s count `10 b h s_q s_k d` (2.5 times the \
         forward's), halved when causal. The training step is our fastest forward plus our fastest \
         backward against cuDNN's forward plus backward (its speed: cuDNN's time over ours). \
         Regenerated from the tables in `results/attention/`.\n\n",
    );
    let mut drawn = Vec::new();
    for run in runs {
        md += &format!("### {}\n\n{}\n\n", run.precision, run.device);
        if !run.peer_device.is_empty() {
            md += &format!("Peers: {}\n\n", run.peer_device);
        }
        // Our backward steps alone, named as the table names them.
        let backward: Ours = run
            .ours
            .iter()
            .map(|(k, row)| (k.clone(), row.iter().filter(|x| x.step.ends_with(BACKWARD)).cloned().collect()))
            .filter(|(_, row): &(Key, Vec<_>)| !row.is_empty())
            .collect();
        let steps = step_names(&backward);
        let mut header = vec!["problem".to_string()];
        header.extend(steps.iter().map(|s| format!("{s} TFLOP/s")));
        header.extend(BACKENDS.iter().map(|b| format!("{b} TFLOP/s")));
        header.extend(BACKENDS.iter().map(|b| format!("best / {b}")));
        header.extend(["training step ms".into(), "CUDNN's ms".into(), "speed / CUDNN".into()]);
        let mut t = Table::new(header);
        let peer = |k: &Key, b: &str| run.peers.get(&(k.clone(), b.to_string())).copied().flatten();
        for (key, row) in &backward {
            let best = row.iter().map(|x| x.tflops).fold(0.0, f64::max);
            let mut cells = vec![key.to_string()];
            cells.extend(steps.iter().map(|s| {
                row.iter().find(|x| x.step == *s).map_or("-".into(), |x| format!("{:.1}", x.tflops))
            }));
            cells.extend(BACKENDS.iter().map(|b| peer(key, b).map_or("-".into(), |x| format!("{:.1}", x.2))));
            cells.extend(BACKENDS.iter().map(|b| ratio(best, peer(key, b).map(|x| x.2))));
            // The training step: the fastest forward and backward of ours.
            let all = &run.ours.iter().find(|(k, _)| k == key).expect("from ours").1;
            let fastest = |backward: bool| {
                all.iter().filter(|x| x.step.ends_with(BACKWARD) == backward).map(|x| x.ms).reduce(f64::min)
            };
            let ours = fastest(false).zip(fastest(true)).map(|(f, b)| f + b);
            let cudnn = peer(key, "CUDNN").map(|(f, b, _)| f + b);
            cells.push(ours.map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(cudnn.map_or("-".into(), |x| format!("{x:.3}")));
            cells.push(match (ours, cudnn) {
                (Some(o), Some(c)) if o > 0.0 => format!("{:.1}%", 100.0 * c / o),
                _ => "-".into(),
            });
            t.row(cells);
        }
        md += &t.markdown();
        md += "\n";
        md += &deterministic(&run.ours);
        md += &unfused(&run.ours);
        md += &format!("Targets, {}:\n\n", run.precision);
        let tflops = |k: &Key, b: &str| peer(k, b).map(|x| x.2);
        // A target's `backend` is a peer's backward, or one of our steps
        // (the deterministic mode against the default).
        let tflops_or_ours = |k: &Key, b: &str| {
            tflops(k, b).or_else(|| {
                let row = &run.ours.iter().find(|(key, _)| key == k)?.1;
                row.iter().find(|x| x.step == b).map(|x| x.tflops)
            })
        };
        md += &targets(
            &super::targets::targets().attention_backward,
            (&run.ours, &run.precision),
            tflops_or_ours,
        );
        md += "\n";
        if let Some(dir) = plots {
            let file = format!("attention_backward_{}", run.precision);
            let title =
                format!("attention backward {}: TFLOP/s by problem, ours beside torch", run.precision);
            if let Some(svg) = plot(&backward, tflops, (&file, &title), dir)? {
                md += &format!("![{title}](docs/plots/{file}.svg)\n\n");
                drawn.push(svg);
            }
        }
    }
    Ok((md, drawn))
}
