//! Plain-text tables with aligned columns.

/// A table: a header row and data rows of already formatted cells.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as text: first column left-aligned, the others right-aligned.
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, cell) in cells.iter().enumerate().take(columns) {
                let pad = widths[i] - cell.chars().count();
                if i > 0 {
                    out.push_str("  ");
                }
                if i == 0 {
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad));
                } else {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                }
            }
            out.trim_end().to_string()
        };
        let mut text = line(&self.header);
        text.push('\n');
        text.push_str(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        for row in &self.rows {
            text.push('\n');
            text.push_str(&line(row));
        }
        text.push('\n');
        text
    }
}

/// The table of a memory-bound family: a row for the in-run copy ceiling,
/// then per kernel its median time, effective bandwidth (`bytes` per run
/// over the median), percent of the copy's bandwidth, and verification.
pub fn bandwidth_table<'a>(
    copy: crate::bench::Timing,
    copy_gb_per_s: f64,
    rows: impl Iterator<Item = (&'a str, Option<crate::bench::Timing>, usize, &'a Result<(), String>)>,
) -> Table {
    let mut table = Table::new(["kernel", "median us", "GB/s", "% of copy", "verified"]);
    table.row([
        "device-to-device copy".to_string(),
        format!("{:.1}", copy.median_ms * 1e3),
        format!("{copy_gb_per_s:.0}"),
        "100.0".to_string(),
        "-".to_string(),
    ]);
    for (name, timing, bytes, verified) in rows {
        let (time, gbps, pct) = match timing {
            Some(t) => {
                let gbps = t.gb_per_s(bytes);
                (
                    format!("{:.1}", t.median_ms * 1e3),
                    format!("{gbps:.0}"),
                    format!("{:.1}", 100.0 * gbps / copy_gb_per_s),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        table.row([
            name.to_string(),
            time,
            gbps,
            pct,
            if verified.is_ok() { "yes" } else { "NO" }.to_string(),
        ]);
    }
    table
}

/// The items of `all` whose `name` is in `names` (all of them when `names`
/// is empty), in the order given; an unknown name is an error listing the
/// accepted ones.
pub fn select<T: Copy>(
    names: &[String],
    all: &[T],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> crate::Result<Vec<T>> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|wanted| {
            all.iter().find(|item| name(item) == wanted.as_str()).copied().ok_or_else(|| {
                let accepted: Vec<&str> = all.iter().map(&name).collect();
                crate::Error::InvalidInput(format!(
                    "unknown {what} '{wanted}'; accepted: {}",
                    accepted.join(", ")
                ))
            })
        })
        .collect()
}
