//! The family at `MxNxK` sizes: the BLAS-semantics `sgemm` (its
//! dispatcher's plan, and any plans asked for) against cuBLAS on the same
//! call, in each layout and pair of ops asked for.

use std::cell::RefCell;

use super::{Candidates, Launch, Sgemm, percent_of_cublas, rows_to_check};
use crate::peers::Cublas;
use crate::blas::reference::{self, Matrices, THRESHOLD};
use crate::blas::{self, Gemm, Layout, Op, Plan};
use crate::families::{Plot, Run, Series, Target};
use crate::measure::{Rate, Record, Shape};
use crate::runtime::{Error, Result};

/// A layout and the ops of A and B.
pub type Form = (Layout, Op, Op);

/// Every form: 2 layouts x 4 pairs of ops.
pub fn all_forms() -> Vec<Form> {
    let ops = [Op::N, Op::T];
    [Layout::Row, Layout::Col]
        .into_iter()
        .flat_map(|l| ops.into_iter().flat_map(move |a| ops.into_iter().map(move |b| (l, a, b))))
        .collect()
}

/// The suite's sweep (row-major, no transposes): squares from 512 to 8192,
/// powers of two and not, k-long, k-short and m- or n-skinny shapes.
pub const SWEEP: &[&str] = &[
    "512x512x512",
    "1024x1024x1024",
    "1536x1536x1536",
    "2048x2048x2048",
    "3072x3072x3072",
    "4000x4000x4000",
    "4096x4096x4096",
    "6144x6144x6144",
    "8192x8192x8192",
    "1024x1024x8192",
    "256x256x16384",
    "128x8192x8192",
    "8192x128x8192",
    "8192x8192x256",
    "1000x9000x1000",
    "2000x3000x1500",
];

/// The sweep's shapes the suite also runs in every form.
pub const FORM_SHAPES: &[&str] = &["2048x2048x2048", "1024x1024x8192"];

/// The forms `family` runs at `shape`.
fn forms_at(family: &Sgemm, (m, n, k): (usize, usize, usize)) -> Vec<Form> {
    match &family.forms {
        Some(forms) => forms.clone(),
        None if FORM_SHAPES.contains(&format!("{m}x{n}x{k}").as_str()) => all_forms(),
        None => vec![(Layout::Row, Op::N, Op::N)],
    }
}

/// Checks every call the family would make at `shape`; the bytes it needs.
pub fn check(family: &Sgemm, (m, n, k): (usize, usize, usize)) -> Result<usize> {
    let mut bytes = 0;
    for (layout, op_a, op_b) in forms_at(family, (m, n, k)) {
        let g = Gemm::new(layout, op_a, op_b, m, n, k);
        g.check()?;
        // The operands with their tails, a copy of C, and a split-K workspace
        // for the plans asked for and the dispatcher's (on 132 SMs, the
        // H100's and H200's count: a larger GPU may split more).
        let chosen = blas::plan::choose(&g.row_major(), 132).splits;
        let most_splits = family.plans.iter().map(|p| p.2).max().unwrap_or(1).max(chosen);
        let elements = [blas::Operand::A, blas::Operand::B, blas::Operand::C].map(|x| g.elements(x) + reference::TAIL);
        bytes = bytes.max(4 * (elements.iter().sum::<usize>() + elements[2] + most_splits * m * n));
    }
    Ok(bytes)
}

/// The most multiply-adds (`m n k`) of a shape the emulator runs when
/// there is no GPU (a few seconds per plan); larger ones are left to the GPU.
pub const EMULATED_WORK: usize = 1 << 22;

/// `"MxNxK row NN"`: the record's shape.
fn shape_label(g: &Gemm) -> String {
    format!("{}x{}x{} {}", g.m, g.n, g.k, g.form())
}

/// Records of `MxNxK` sizes have a shape with three dimensions.
pub fn is_shaped(r: &Record) -> bool {
    r.shape.split(' ').next().is_some_and(|dims| dims.matches('x').count() == 2)
}

pub fn run(family: &Sgemm, run: &Run, (m, n, k): (usize, usize, usize)) -> Result<Vec<Record>> {
    let Run { gpu, size, runs, progress, .. } = *run;
    let timed = runs.is_some() && !gpu.is_emulator();
    let cublas = if timed { Some(Cublas::new(gpu)?) } else { None };
    let mut records = Vec::new();
    let seed = 0x5eed;
    for (layout, op_a, op_b) in forms_at(family, (m, n, k)) {
        let g = Gemm::new(layout, op_a, op_b, m, n, k);
        let label = shape_label(&g);
        progress(&format!("sgemm {label}: inputs and reference"));
        let x = Matrices::random(&g, seed);
        let rows = rows_to_check(m, 256, seed);
        // Poisoned C, C not read; then C0 read and scaled.
        let cases = [g.scaled(1.5, 0.0), g.scaled(0.75, -0.5)];
        let references: Vec<_> = cases.iter().map(|c| reference::reference_rows(c, &x, rows.clone())).collect();
        let (a, b, c0) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?, gpu.upload(&x.c)?);
        let mut c = gpu.alloc::<f32>(x.c.len())?;
        let judge = |name: &str, i: usize, c: &[f32]| {
            let call = &cases[i];
            let ratio = reference::test_ratio(call, &references[i], c);
            if ratio < THRESHOLD {
                return Ok(ratio);
            }
            Err(format!(
                "{name} {label} alpha={} beta={}: test ratio {ratio:.2} (must be below {THRESHOLD})",
                call.alpha, call.beta
            ))
        };
        let candidates = Candidates { gpu, runs: runs.filter(|_| timed), cases: &cases, c0: &c0, timed: &g, judge: &judge };
        let mut measure = |name: &str, launch: Launch<Gemm>| -> Result<Record> {
            progress(&format!("sgemm {label}: {name}"));
            let (measured, worst) = candidates.measure(&mut c, name, launch)?;
            let rate = Rate::Flops { flops: g.flops(), peer: "cublas", peer_tflops: None };
            let mut record = Record::of_trial("sgemm", name, "f32", size, &measured, rate);
            record.shape = label.clone();
            record.relative_error = Some(worst * f32::EPSILON as f64);
            Ok(record)
        };

        let mut records_here = Vec::new();
        if let Some(cublas) = &cublas {
            records_here.push(measure("cublas", &|g, c| cublas.run(g, &a, &b, c))?);
        }
        let sgemm = RefCell::new(blas::Sgemm::new());
        let chosen = blas::Sgemm::plan(gpu, &g);
        // The operands sgemm packs first (`blas::run`), named beside the plan.
        let packs = match sgemm.borrow().packs(&g) {
            (false, false) => "",
            (true, false) => ", A packed",
            (false, true) => ", B packed",
            (true, true) => ", A and B packed",
        };
        let name = format!("sgemm ({}{packs})", chosen.label());
        records_here.push(measure(&name, &|g, c| sgemm.borrow_mut().run(gpu, g, &a, &b, c))?);
        for &(bm, bn, splits) in &family.plans {
            let plan = Plan::new((bm, bn), splits, k);
            let name = format!("plan {}{packs}", plan.label());
            records_here.push(measure(&name, &|g, c| sgemm.borrow_mut().run_with(gpu, g, Some(plan), &a, &b, c))?);
        }
        percent_of_cublas(&mut records_here);
        records.extend(records_here);
    }
    Ok(records)
}

/// The dispatcher's record (`sgemm (128x128)`) among a shape's records.
fn is_dispatcher(r: &Record) -> bool {
    r.kernel.starts_with("sgemm (")
}

/// The SGEMM targets over the row NN shapes of a run: the geometric mean
/// at least 95% of cuBLAS over at least 15 shapes, none below 80%, and the
/// stretch: at least 100% at 4096^3 and 8192^3.
pub fn targets(records: &[&Record]) -> Vec<Target> {
    let row_nn: Vec<&&Record> =
        records.iter().filter(|r| is_shaped(r) && is_dispatcher(r) && r.shape.ends_with(" row NN")).collect();
    let percents: Vec<(String, f64)> =
        row_nn.iter().filter_map(|r| r.percent.map(|p| (r.shape.clone(), p))).collect();
    if percents.is_empty() {
        return Vec::new();
    }
    let geomean = (percents.iter().map(|(_, p)| p.ln()).sum::<f64>() / percents.len() as f64).exp();
    let (worst_shape, worst) =
        percents.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, p)| (s.clone(), *p)).expect("not empty");
    let mut targets = vec![
        Target {
            what: "sgemm (dispatcher), row NN: geometric mean at least 95% of cuBLAS over at least 15 shapes"
                .into(),
            measured: format!("{geomean:.1}% over {} shapes", percents.len()),
            met: geomean >= 95.0 && percents.len() >= 15,
        },
        Target {
            what: "sgemm (dispatcher), row NN: no shape below 80% of cuBLAS".into(),
            measured: format!("lowest {worst:.1}% at {worst_shape}"),
            met: worst >= 80.0,
        },
    ];
    for shape in ["4096x4096x4096 row NN", "8192x8192x8192 row NN"] {
        if let Some((_, p)) = percents.iter().find(|(s, _)| s == shape) {
            targets.push(Target {
                what: format!("sgemm (dispatcher) {shape}: at least 100% of cuBLAS (stretch)"),
                measured: format!("{p:.1}%"),
                met: *p >= 100.0,
            });
        }
    }
    let others: Vec<f64> = records
        .iter()
        .filter(|r| is_shaped(r) && is_dispatcher(r) && !r.shape.ends_with(" row NN"))
        .filter_map(|r| r.percent)
        .collect();
    if let Some(low) = others.iter().copied().min_by(f64::total_cmp) {
        targets.push(Target {
            what: "sgemm (dispatcher), the other layouts and ops: none below 80% of cuBLAS on the same call".into(),
            measured: format!("lowest {low:.1}% over {} calls", others.len()),
            met: low >= 80.0,
        });
    }
    targets
}

/// Bars of the dispatcher's percentage of cuBLAS per shape (row NN), and
/// per form at the shapes run in every form.
pub fn plots(records: &[&Record], title: &str) -> Vec<Plot> {
    let bars = |file: &str, what: &str, pick: &dyn Fn(&Record) -> bool| -> Option<Plot> {
        let chosen: Vec<&&Record> = records.iter().filter(|r| is_dispatcher(r) && pick(r)).collect();
        if chosen.iter().all(|r| r.percent.is_none()) {
            return None;
        }
        let categories: Vec<String> = chosen.iter().map(|r| r.shape.clone()).collect();
        let points = chosen.iter().enumerate().filter_map(|(i, r)| r.percent.map(|p| (i as f64, p))).collect();
        Some(Plot {
            file: file.into(),
            title: format!("sgemm (dispatcher) as % of cuBLAS FP32 on the same call, {what} - {title}"),
            x_label: "shape (m x n x k, layout, ops)".into(),
            y_label: "% of cuBLAS".into(),
            log_x: false,
            categories: Some(categories),
            series: vec![
                Series { name: "sgemm (dispatcher)".into(), points, ceiling: false },
                Series {
                    name: "cuBLAS".into(),
                    points: (0..chosen.len()).map(|i| (i as f64, 100.0)).collect(),
                    ceiling: true,
                },
            ],
        })
    };
    [
        bars("sgemm_shapes", "row-major, no transposes", &|r| r.shape.ends_with(" row NN")),
        bars("sgemm_forms", "every layout and ops", &|r| {
            FORM_SHAPES.iter().any(|s| r.shape.starts_with(&format!("{s} ")))
        }),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The shapes of a `--shape` list, as sizes.
pub fn parse_shapes(shapes: &[String]) -> Result<Vec<Shape>> {
    shapes
        .iter()
        .map(|s| {
            let (m, n, k) = blas::gemm::parse_shape(s).map_err(Error::InvalidInput)?;
            Ok(format!("{m}x{n}x{k}").parse::<Shape>().expect("three positive dimensions"))
        })
        .collect()
}
