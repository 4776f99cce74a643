//! SVG plots: what each family asks to draw from a run with timings
//! ([`crate::families::Family::plots`]), and, from a run without a GPU, what
//! the emulator measured: bank-conflict ways and sectors per request, per
//! kernel.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::suite::RunReport;
use crate::families::{FAMILIES, Plot};
use crate::measure::Record;
use crate::runtime::{Error, Result};

/// Draws every plot of `report` as SVG text, each with its path in `dir`:
/// the families' own where the run has timings, the emulator's analysis
/// where it has only that. The caller writes them.
pub fn draw(report: &RunReport, dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut written = Vec::new();
    for family in FAMILIES {
        let records = report.of(family.name());
        if records.is_empty() {
            continue;
        }
        let plots = if records.iter().any(|r| r.value.is_some()) {
            family.plots(&records, &report.title())
        } else {
            analysis_plot(family.name(), &records, &report.title()).into_iter().collect()
        };
        for plot in plots {
            written.extend(draw_one(&plot, dir)?);
        }
    }
    Ok(written)
}

/// Draws one plot as SVG text with its path in `dir` (`None` when it has
/// nothing to draw).
pub fn draw_one(plot: &Plot, dir: &Path) -> Result<Option<(PathBuf, String)>> {
    let path = dir.join(format!("{}.svg", plot.file));
    let mut svg = String::new();
    let drawn = match &plot.categories {
        Some(categories) => bars(&mut svg, &path, plot, categories)?,
        None => lines(&mut svg, &path, plot)?,
    };
    Ok(drawn.then_some((path, svg)))
}

/// What the emulator measured for each kernel of a family, as bars: the
/// shared-memory ways of loads and stores (1 is conflict-free) and the
/// sectors per request of global loads and stores (4 is a coalesced warp),
/// one group per kernel. Drawn from a run without timings.
fn analysis_plot(family: &str, records: &[&Record], title: &str) -> Option<Plot> {
    type Column = fn(&crate::measure::AnalysisColumns) -> Option<f64>;
    let columns: [(&str, Column); 4] = [
        ("shared load ways", |a| a.shared_load_ways),
        ("shared store ways", |a| a.shared_store_ways),
        ("global load sectors/request", |a| a.global_load_sectors),
        ("global store sectors/request", |a| a.global_store_sectors),
    ];
    let analysed: Vec<&&Record> = records.iter().filter(|r| r.analysis.is_some()).collect();
    if analysed.is_empty() {
        return None;
    }
    let series = columns
        .iter()
        .map(|(name, column)| crate::families::Series {
            name: name.to_string(),
            points: analysed
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r.analysis.as_ref().and_then(column).unwrap_or(0.0)))
                .collect(),
            ceiling: false,
        })
        .collect();
    Some(Plot {
        file: format!("{family}_emulator"),
        title: format!("{family}: the emulator's bank-conflict ways and sectors per request - {title}"),
        x_label: String::new(),
        y_label: "ways (1 = conflict-free) / sectors per request (4 = coalesced)".into(),
        log_x: false,
        categories: Some(analysed.iter().map(|r| r.kernel.clone()).collect()),
        series,
    })
}

fn fail(path: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::InvalidInput(format!("could not draw {}: {e}", path.display()))
}

/// Draws `plot` as lines over a (log) x axis; `false` when it has no points.
fn lines(svg: &mut String, path: &Path, plot: &Plot) -> Result<bool> {
    let points: Vec<(f64, f64)> = plot.series.iter().flat_map(|s| s.points.iter().copied()).collect();
    if points.is_empty() {
        return Ok(false);
    }
    let (x0, x1) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let y1 = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.1;
    let root = SVGBackend::with_string(svg, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(path, &e))?;
    let mut builder = ChartBuilder::on(&root);
    builder.caption(&plot.title, ("sans-serif", 20)).margin(16).x_label_area_size(48).y_label_area_size(64);
    // The same drawing for a log or a linear x axis (different chart types).
    macro_rules! draw {
        ($x_range:expr) => {{
            let mut chart =
                builder.build_cartesian_2d($x_range, 0.0..y1.max(1e-9)).map_err(|e| fail(path, &e))?;
            chart
                .configure_mesh()
                .x_desc(&plot.x_label)
                .y_desc(&plot.y_label)
                .x_label_formatter(&|x| format_size(*x))
                .draw()
                .map_err(|e| fail(path, &e))?;
            for (i, series) in plot.series.iter().enumerate() {
                let color = if series.ceiling { BLACK.to_rgba() } else { Palette99::pick(i).to_rgba() };
                let style =
                    ShapeStyle { color, filled: false, stroke_width: if series.ceiling { 3 } else { 2 } };
                chart
                    .draw_series(LineSeries::new(series.points.clone(), style))
                    .map_err(|e| fail(path, &e))?
                    .label(series.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                chart
                    .draw_series(series.points.iter().map(|p| Circle::new(*p, 3, style.filled())))
                    .map_err(|e| fail(path, &e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| fail(path, &e))?;
        }};
    }
    if plot.log_x {
        draw!((x0 * 0.9..x1 * 1.1).log_scale());
    } else {
        draw!(x0 - 1.0..x1 + 1.0);
    }
    root.present().map_err(|e| fail(path, &e))?;
    Ok(true)
}

/// Draws `plot` as groups of horizontal bars, one group per category (a
/// point's x is its category's index), one bar per series.
fn bars(svg: &mut String, path: &Path, plot: &Plot, kernels: &[String]) -> Result<bool> {
    if kernels.is_empty() {
        return Ok(false);
    }
    let y1 = plot.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.15;
    let height = 200 + 26 * kernels.len() as u32 * plot.series.len().min(2) as u32;
    let root = SVGBackend::with_string(svg, (1000, height.max(400))).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(path, &e))?;
    let n = kernels.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(&plot.title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(220)
        .build_cartesian_2d(0.0..y1, -0.5..n - 0.5)
        .map_err(|e| fail(path, &e))?;
    chart
        .configure_mesh()
        .x_desc(&plot.y_label)
        .y_labels(kernels.len())
        .y_label_formatter(&|y| {
            // The first category at the top: it sits at n - 1.
            let i = (n - 1.0 - y).round();
            if (n - 1.0 - y - i).abs() < 1e-6 && i >= 0.0 {
                kernels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .disable_y_mesh()
        .draw()
        .map_err(|e| fail(path, &e))?;
    let width = 0.8 / plot.series.len().max(1) as f64;
    for (s, series) in plot.series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        let offset = -0.4 + width * s as f64;
        chart
            .draw_series(series.points.iter().map(|&(i, v)| {
                let y = n - 1.0 - i;
                Rectangle::new([(0.0, y - offset), (v, y - offset - width * 0.9)], color.filled())
            }))
            .map_err(|e| fail(path, &e))?
            .label(series.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(path, &e))?;
    root.present().map_err(|e| fail(path, &e))?;
    Ok(true)
}

fn format_size(x: f64) -> String {
    let x = x.round() as u64;
    if x >= 1 << 20 && x.is_power_of_two() { format!("2^{}", x.trailing_zeros()) } else { x.to_string() }
}
