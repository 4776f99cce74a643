//! The public sweep (`bench/gemm-sweep.txt`): shapes in groups, as the
//! file's comment lines name them ("squares", "LLM shapes", "skinny and
//! small m", "odd"). The `gemm` binary runs it and the report groups its
//! results by it, so the groups live in one file.

/// The sweep file's text.
pub const SWEEP: &str = include_str!("../../../bench/gemm-sweep.txt");

/// The group "odd": shapes no multiple of the tiles (the "at least 2x
/// cuBLAS" target's set).
pub const ODD: &str = "odd";

/// Every shape of the sweep `(m, n, k)` with its group, in file order.
pub fn shapes() -> Vec<(&'static str, (usize, usize, usize))> {
    let mut group = "";
    let mut out = Vec::new();
    for line in SWEEP.lines().map(str::trim) {
        if let Some(comment) = line.strip_prefix('#') {
            // A group's heading is a one-line comment of a few words.
            let words = comment.trim();
            if !words.is_empty() && words.split_whitespace().count() <= 4 && !words.contains(':') {
                group = words;
            }
            continue;
        }
        let d: Vec<usize> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if d.len() == 3 {
            out.push((group, (d[0], d[1], d[2])));
        }
    }
    out
}
