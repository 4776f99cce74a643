//! The decode section of `BENCHMARKS.md`, from the tables a GPU run
//! printed (kept in `results/attention/`): `attention --decode --sweep`'s
//! (`decode-sweep-<precision>[-<device>].md`: each call with the contiguous
//! cache, the paged one where the line names a page size, the device's
//! copy beside each) and `scripts/torch-sdpa-decode.py`'s, run in the same
//! device call (`torch-sdpa-decode-<precision>[-<device>].md`: each torch
//! backend, then the best). Per precision: each call beside torch's best
//! and the copy, the paged cache against the contiguous one, an FP8 cache
//! against the same call's 16-bit one, the targets, and a plot of TB/s by
//! call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::attention::{Key, peer_key, precision_of, rows, tables, verdict};
use super::table::Table;
use crate::families::{Plot, Series};
use crate::runtime::{Error, Result};

/// One of our rows: the call, its cache's type and layout, its time and
/// rates.
#[derive(Clone, Debug)]
struct Ours {
    key: Key,
    fp8: bool,
    paged: bool,
    ms: f64,
    tb_per_s: f64,
    copy_tb_per_s: f64,
}

/// torch's best per call: backend, ms, TB/s.
type Peers = BTreeMap<Key, (String, f64, f64)>;

/// One precision's run: our rows, torch's best per call.
pub struct Run {
    precision: String,
    device: String,
    ours: Vec<Ours>,
    peers: Peers,
    peer_device: String,
}

/// `b64 h32/8 s1 kv4096 d128 causal e4m3-cache`, as `attention --decode`
/// prints a call (every sequence of one length), as the attention
/// section's [`Key`] (keys as `s_k`) and whether the cache is FP8. torch's
/// tables name it as the prefill's do (`64 32/8 1x4096 128`: `peer_key`).
fn our_key(s: &str) -> Option<(Key, bool)> {
    let mut words = s.split_whitespace();
    let b = words.next()?.strip_prefix('b')?.parse().ok()?;
    let (h, kv) = words.next()?.strip_prefix('h')?.split_once('/')?;
    let s_q = words.next()?.strip_prefix('s')?.parse().ok()?;
    let len = words.next()?.strip_prefix("kv")?.parse().ok()?;
    let d = words.next()?.strip_prefix('d')?.parse().ok()?;
    let rest: Vec<&str> = words.collect();
    let key = Key {
        b,
        h: h.parse().ok()?,
        kv: kv.parse().ok()?,
        s_q,
        s_k: len,
        d,
        causal: rest.contains(&"causal"),
    };
    Some((key, rest.contains(&"e4m3-cache")))
}

/// Every `decode-sweep-*.md` in `dir` with the `torch-sdpa-decode-*.md`
/// beside it; none is no section.
pub fn read(dir: &Path) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (rest, path) in tables(dir, "decode-sweep-")? {
        let (device, ours) = parse_ours(&path)?;
        let peer = dir.join(format!("torch-sdpa-decode-{rest}"));
        let (peer_device, peers) =
            if peer.exists() { parse_peers(&peer)? } else { (String::new(), BTreeMap::new()) };
        runs.push(Run { precision: precision_of(&rest), device, ours, peers, peer_device });
    }
    Ok(runs)
}

fn parse_ours(path: &Path) -> Result<(String, Vec<Ours>)> {
    let text = crate::files::read_file(path)?;
    let bad = |why: String| Error::InvalidInput(format!("{}: {why}", path.display()));
    let mut ours = Vec::new();
    // | precision | problem | cache | splits x keys | worst error / bound | ms | TB/s | copy TB/s | of copy |
    for cells in rows(&text) {
        let [_, problem, cache, _, _, ms, tbs, copy, _] = &cells[..] else {
            return Err(bad(format!("a row of {} cells, not 9", cells.len())));
        };
        let (key, fp8) = our_key(problem).ok_or_else(|| bad(format!("a call named '{problem}'")))?;
        if let (Ok(ms), Ok(tb_per_s), Ok(copy_tb_per_s)) = (ms.parse(), tbs.parse(), copy.parse()) {
            ours.push(Ours { key, fp8, paged: cache.starts_with("paged"), ms, tb_per_s, copy_tb_per_s });
        }
    }
    let device =
        text.lines().find(|l| !l.starts_with('|') && !l.starts_with("Decode rows")).unwrap_or_default();
    Ok((device.to_string(), ours))
}

fn parse_peers(path: &Path) -> Result<(String, Peers)> {
    let text = crate::files::read_file(path)?;
    let bad = |why: String| Error::InvalidInput(format!("{}: {why}", path.display()));
    let mut best = BTreeMap::new();
    // | b h/kv s_q x len d | causal | backend | ms | TB/s |
    for cells in rows(&text) {
        let [problem, causal, backend, ms, tbs] = &cells[..] else {
            return Err(bad(format!("a row of {} cells, not 5", cells.len())));
        };
        let Some(backend) = backend.strip_prefix("best: ") else { continue };
        let key = peer_key(problem, causal).ok_or_else(|| bad(format!("a call named '{problem}'")))?;
        if let (Ok(ms), Ok(tbs)) = (ms.parse(), tbs.parse()) {
            best.insert(key, (backend.to_string(), ms, tbs));
        }
    }
    Ok((text.lines().next().unwrap_or_default().to_string(), best))
}

impl Run {
    /// Our row of `key` with the cache so.
    fn ours(&self, key: &Key, fp8: bool, paged: bool) -> Option<&Ours> {
        self.ours.iter().find(|x| x.key == *key && x.fp8 == fp8 && x.paged == paged)
    }

    /// The ratio a target judges on `row`, where it applies and both
    /// sides ran: torch's best time over ours (`torch`), our rate over the
    /// copy's (`copy`), the contiguous cache's time over the paged one's
    /// (`paged`), the 16-bit cache's time over the FP8 one's (`fp8`).
    fn ratio(&self, kind: &str, row: &Ours) -> Option<f64> {
        match kind {
            "torch" if !row.fp8 && !row.paged => Some(self.peers.get(&row.key)?.1 / row.ms),
            "copy" if !row.fp8 && !row.paged => Some(row.tb_per_s / row.copy_tb_per_s),
            "paged" if row.paged => Some(self.ours(&row.key, row.fp8, false)?.ms / row.ms),
            "fp8" if row.fp8 && !row.paged => Some(self.ours(&row.key, false, false)?.ms / row.ms),
            _ => None,
        }
    }
}

/// The section's markdown, and (with `plots`) one plot per precision.
pub fn section(runs: &[Run], plots: Option<&Path>) -> Result<(String, Vec<(PathBuf, String)>)> {
    let mut md = String::from(
        "## Attention decode (`attention --decode`)\n\n\
         `attention --decode --sweep` (`bench/attention-decode-sweep.txt`): a few queries per sequence \
         against its KV cache, each call verified against the `f64` reference, then timed (CUDA events, \
         median), with the contiguous cache and, where the line names a page size, the paged one (its \
         pages dealt in shuffled order). TB/s count the bytes a call must read (every sequence's K and V, \
         Q, O and lse) over its time; the copy is the device's copy of as many bytes as the cache, read \
         and written, in the same run. torch's SDPA on the same calls (`scripts/torch-sdpa-decode.py`: \
         every backend that runs the call, its best shown; contiguous, no FP8). Regenerated from the \
         tables in `results/attention/`.\n\n",
    );
    let mut drawn = Vec::new();
    for run in runs {
        md += &format!("### {}\n\n{}\n\n", run.precision, run.device);
        if !run.peer_device.is_empty() {
            md += &format!("Peers: {}\n\n", run.peer_device);
        }
        let mut t = Table::new(vec![
            "call",
            "cache",
            "ms",
            "TB/s",
            "of copy",
            "torch's best",
            "torch TB/s",
            "speed / torch",
            "paged / contiguous",
            "FP8 / 16-bit",
        ]);
        let pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
        for row in &run.ours {
            let peer = run.peers.get(&row.key).filter(|_| !row.fp8 && !row.paged);
            let cache = match (row.fp8, row.paged) {
                (false, false) => "contiguous",
                (false, true) => "paged",
                (true, false) => "e4m3 contiguous",
                (true, true) => "e4m3 paged",
            };
            t.row(vec![
                row.key.to_string(),
                cache.into(),
                format!("{:.4}", row.ms),
                format!("{:.2}", row.tb_per_s),
                pct(Some(row.tb_per_s / row.copy_tb_per_s)),
                peer.map_or("-".into(), |p| p.0.clone()),
                peer.map_or("-".into(), |p| format!("{:.2}", p.2)),
                pct(run.ratio("torch", row)),
                pct(run.ratio("paged", row)),
                run.ratio("fp8", row).map_or("-".into(), |x| format!("{x:.2}x")),
            ]);
        }
        md += &t.markdown();
        md += &format!("\nTargets, {}:\n\n", run.precision);
        md += &targets(run);
        md += "\n";
        if let Some(dir) = plots {
            let file = format!("attention_decode_{}", run.precision);
            let title = format!(
                "attention decode {}: TB/s by call, ours beside torch's best and the copy",
                run.precision
            );
            if let Some(svg) = plot(run, (&file, &title), dir)? {
                md += &format!("![{title}](docs/plots/{file}.svg)\n\n");
                drawn.push(svg);
            }
        }
    }
    Ok((md, drawn))
}

/// The targets' table: each target's lowest ratio over the rows it covers.
fn targets(run: &Run) -> String {
    let mut t = Table::new(vec!["target", "lowest", "met", "why (where missed)"]);
    for target in &super::targets::targets().attention_decode {
        let lowest = run
            .ours
            .iter()
            .filter(|r| r.key.s_k >= target.min_len && target.max_batch.is_none_or(|b| r.key.b <= b))
            .filter_map(|r| Some((run.ratio(&target.kind, r)?, &r.key)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        t.row(verdict(&target.what, lowest, (target.least, &target.why)));
    }
    t.markdown()
}

/// TB/s by call (contiguous 16-bit rows): ours, paged, torch's best and
/// the copy.
fn plot(run: &Run, (file, title): (&str, &str), dir: &Path) -> Result<Option<(PathBuf, String)>> {
    let calls: Vec<&Ours> = run.ours.iter().filter(|r| !r.fp8 && !r.paged).collect();
    let points = |f: &dyn Fn(&Ours) -> Option<f64>| -> Vec<(f64, f64)> {
        calls.iter().enumerate().filter_map(|(i, r)| f(r).map(|y| (i as f64, y))).collect()
    };
    let series = |name: &str, f: &dyn Fn(&Ours) -> Option<f64>| Series {
        name: name.into(),
        points: points(f),
        ceiling: false,
    };
    let plot = Plot {
        file: file.into(),
        title: title.into(),
        x_label: String::new(),
        y_label: "TB/s".into(),
        log_x: false,
        categories: Some(calls.iter().map(|r| r.key.to_string()).collect()),
        series: vec![
            series("ours, contiguous", &|r| Some(r.tb_per_s)),
            series("ours, paged", &|r| run.ours(&r.key, false, true).map(|p| p.tb_per_s)),
            series("torch's best", &|r| run.peers.get(&r.key).map(|p| p.2)),
            Series { ceiling: true, ..series("the device's copy", &|r| Some(r.copy_tb_per_s)) },
        ],
    };
    super::plots::draw_one(&plot, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tables_name_a_call_alike() {
        let (ours, fp8) = our_key("b8 h32/4 s4 kv8192 d128 causal e4m3-cache").unwrap();
        assert!(fp8);
        assert_eq!(Some(ours.clone()), peer_key("8 32/4 4x8192 128", "yes (run unmasked)"));
        let (plain, fp8) = our_key("b64 h32/8 s1 kv4096 d128").unwrap();
        assert!(!fp8);
        assert_eq!(Some(plain), peer_key("64 32/8 1x4096 128", "no"));
        assert_eq!(ours.to_string(), "8·32/4·4x8192·128 causal");
    }

    /// The two tables as the binary and the script print them, read back
    /// into the ratios the targets judge.
    #[test]
    fn the_ratios_come_from_both_tables() {
        let dir = std::env::temp_dir().join(format!("decode-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ours = "NVIDIA H100 (device 0)\nDecode rows: ...\n\
            | precision | problem | cache | splits x keys | worst error / bound | ms | TB/s | copy TB/s | of copy |\n\
            | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n\
            | bf16 | b64 h32/8 s1 kv4096 d128 | contiguous | 1 x 4096 | 0.2 | 0.2000 | 2.70 | 3.00 | 90.0% |\n\
            | bf16 | b64 h32/8 s1 kv4096 d128 | paged 64 | 1 x 4096 | 0.2 | 0.2100 | 2.57 | 3.00 | 85.7% |\n\
            | bf16 | b64 h32/8 s1 kv4096 d128 e4m3-cache | contiguous | 1 x 4096 | 0.2 | 0.1000 | 2.70 | 3.00 | 90.0% |\n";
        let peers = "torch 2.11\n| b h/kv s_q x len d | causal | backend | ms | TB/s |\n| --- | --- | --- | --- | --- |\n\
            | 64 32/8 1x4096 128 | no | CUDNN | 0.2500 | 2.16 |\n| 64 32/8 1x4096 128 | no | best: CUDNN | 0.2500 | 2.16 |\n";
        std::fs::write(dir.join("decode-sweep-bf16-h100.md"), ours).unwrap();
        std::fs::write(dir.join("torch-sdpa-decode-bf16-h100.md"), peers).unwrap();
        let runs = read(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let run = &runs[0];
        assert_eq!((run.precision.as_str(), run.ours.len()), ("bf16", 3));
        let ratio = |kind, i: usize| run.ratio(kind, &run.ours[i]).unwrap();
        assert!((ratio("torch", 0) - 1.25).abs() < 1e-9);
        assert!((ratio("copy", 0) - 0.9).abs() < 1e-9);
        assert!((ratio("paged", 1) - 0.2 / 0.21).abs() < 1e-9);
        assert!((ratio("fp8", 2) - 2.0).abs() < 1e-9);
        assert!(run.ratio("torch", &run.ours[1]).is_none());
        let (md, _) = section(&runs, None).unwrap();
        assert!(md.contains("125.0%") && md.contains("2.00x"), "{md}");
    }
}
