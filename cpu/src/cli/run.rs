//! The run every binary makes: the plan (every option checked before any
//! work), the GPU or the emulator, then the tables and the outputs.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Common;
use super::provenance::{device_line, git_revision, today};
use crate::families::{self, Family};
use crate::files::{check_file_destination, check_folder_destination, read_file, write_file};
use crate::measure::{Runs, Shape};
use crate::report::{self, Job, Progress, RunReport, suite};
use crate::runtime::{Error, Gpu, Result};

/// What a run is to do, every part checked before anything runs.
fn plan(families: &[&'static dyn Family], common: &Common) -> Result<Vec<Job>> {
    if let Some(path) = &common.json {
        check_file_destination("--json", path)?;
    }
    if let Some(dir) = &common.plots {
        check_folder_destination("--plots", dir)?;
    }
    let given: Vec<Shape> = common
        .sizes
        .iter()
        .map(|s| s.parse::<Shape>().map_err(Error::InvalidInput))
        .collect::<Result<_>>()?;
    let mut jobs = Vec::new();
    for (&family, mut kernels) in families.iter().zip(families::select(families, &common.kernels)?) {
        kernels.retain(|k| {
            common.types.is_empty() || k.instance.is_none_or(|t| common.types.iter().any(|w| w == t))
        });
        if kernels.is_empty() && !common.kernels.is_empty() {
            // The names chosen are other families'.
            continue;
        }
        for &kernel in &kernels {
            family.runs(kernel)?;
        }
        let sizes = if common.sizes.is_empty() { family.default_sizes() } else { given.clone() };
        let needs = sizes.iter().map(|size| family.device_bytes(size)).collect::<Result<Vec<_>>>()?;
        let (small, too_large_to_emulate): (Vec<Shape>, Vec<Shape>) = if common.sizes.is_empty() {
            (family.emulator_sizes(&sizes), Vec::new())
        } else {
            sizes.iter().cloned().partition(|s| family.emulator_work(s) <= family.emulator_limit())
        };
        // Beside a GPU run, sizes too large to emulate leave the analysis
        // to the family's own emulator sizes.
        let emulated = if small.is_empty() { family.emulator_sizes(&sizes) } else { small };
        let needs = needs.into_iter().max().unwrap_or(0);
        jobs.push(Job { family, sizes, kernels, emulated, too_large_to_emulate, needs });
    }
    let instances: Vec<&str> =
        jobs.iter().flat_map(|j| j.family.kernels()).filter_map(|k| k.instance).collect();
    if let Some(unknown) = common.types.iter().find(|t| !instances.contains(&t.as_str())) {
        let mut accepted = instances.clone();
        accepted.sort_unstable();
        accepted.dedup();
        return Err(Error::InvalidInput(format!(
            "no kernel here has a '{unknown}' instance; accepted: {}",
            if accepted.is_empty() { "none (no generic kernels)".into() } else { accepted.join(", ") }
        )));
    }
    Ok(jobs)
}

/// The run every binary makes.
pub(super) fn run(families: &[&'static dyn Family], common: &Common) -> Result<bool> {
    let jobs = plan(families, common)?;
    let (gpu, no_gpu) = crate::runtime::open_or_emulate(common.device)?;
    if let Some(e) = no_gpu {
        emulable(&jobs)?;
        if let Some(path) = &common.json {
            super::table::keeps_gpu_results(path)?;
        }
        eprintln!(
            "{e}: running every kernel on the CPU emulator at small sizes instead (verification and analysis, no timings)"
        );
        let bar = progress_bar(jobs.len(), common.quiet);
        let (message, tick) = (|what: &str| bar.set_message(what.to_string()), || bar.inc(1));
        let records = suite::emulate(&jobs, &Progress { message: &message, tick: &tick })?;
        bar.finish_and_clear();
        return finish(common, &jobs, report_of(&gpu, common, &jobs, records));
    }
    for job in &jobs {
        gpu.check_fits(job.needs)?;
    }
    println!("{}", device_line(&gpu));
    let bar = progress_bar(jobs.iter().map(|j| j.sizes.len() + 1).sum(), common.quiet);
    let (message, tick) = (|what: &str| bar.set_message(what.to_string()), || bar.inc(1));
    let progress = Progress { message: &message, tick: &tick };
    let runs = (common.iters > 0).then_some(Runs { warmup: common.warmup, timed: common.iters });
    let mut records = suite::run(&gpu, &jobs, runs, &progress)?;
    // The emulator's analysis of every kernel, beside the timings.
    let emulated = suite::emulate(&jobs, &progress)?;
    bar.finish_and_clear();
    suite::attach_analysis(&mut records, &emulated);
    finish(common, &jobs, report_of(&gpu, common, &jobs, records))
}

pub(super) fn progress_bar(steps: usize, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn report_of(gpu: &Gpu, common: &Common, jobs: &[Job], records: Vec<crate::measure::Record>) -> RunReport {
    let info = &gpu.info;
    RunReport {
        device: info.name.clone(),
        compute_capability: format!("{}.{}", info.major, info.minor),
        multiprocessors: info.multiprocessors,
        memory_bytes: info.total_memory,
        driver: format!("{}.{}", info.driver_version / 1000, info.driver_version % 1000 / 10),
        ptx: info.ptx_arch.to_string(),
        date: today(),
        git_revision: git_revision(),
        families: jobs.iter().map(|j| j.family.name().to_string()).collect(),
        sizes: jobs
            .iter()
            .map(|j| {
                // The sizes that ran: the emulator's own where it ran alone.
                let sizes = if gpu.is_emulator() { &j.emulated } else { &j.sizes };
                (j.family.name().to_string(), sizes.iter().map(Shape::to_string).collect())
            })
            .collect(),
        iters: common.iters,
        records,
    }
}

/// Prints the tables, writes the JSON and plots, reports failures.
fn finish(common: &Common, jobs: &[Job], report: RunReport) -> Result<bool> {
    if let [job] = jobs {
        let records = report.of(job.family.name());
        for (title, rows) in job.family.tables(&records) {
            println!("\n{title}");
            print!("{}", suite::table(rows).render());
        }
    } else {
        print!("{}", suite::table(&report.records).render());
    }
    if let Some(path) = &common.json {
        let text = serde_json::to_string_pretty(&report).expect("records serialise");
        write_file(path, &text)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &common.plots {
        write_plots(&report, dir)?;
    }
    for r in report.records.iter().filter(|r| !r.verified) {
        eprintln!(
            "error: {} {} {} {}: {}",
            r.family,
            r.kernel,
            r.element,
            r.shape,
            r.error.as_deref().unwrap_or("failed")
        );
    }
    Ok(report.all_verified())
}

/// The page `report` writes when no `--out` is given.
const BENCHMARKS: &str = "BENCHMARKS.md";

/// The folders of sweep tables whose sections `report` adds.
pub(super) struct Sections<'a> {
    pub gemm: Option<&'a Path>,
    pub attention: Option<&'a Path>,
}

/// `kernel-lab report`: BENCHMARKS.md (and the plots) from a run's JSON.
/// An emulator run's page replaces a GPU run's `BENCHMARKS.md` only when
/// asked: `--force`, or the path given with `--out`.
pub(super) fn write_report(
    json: &Path,
    out: Option<&Path>,
    force: bool,
    checks: Option<&PathBuf>,
    plots: Option<&PathBuf>,
    sections: Sections,
) -> Result<bool> {
    let run: RunReport = serde_json::from_str(&read_file(json)?).map_err(|e| {
        Error::InvalidInput(format!("{} is not a kernel-lab --json file: {e}", json.display()))
    })?;
    let out = out.unwrap_or(Path::new(BENCHMARKS));
    if run.emulated() && !force && out == Path::new(BENCHMARKS) {
        let existing = std::fs::read_to_string(out).unwrap_or_default();
        if report::markdown::is_gpu_page(&existing) {
            return Err(Error::InvalidInput(format!(
                "{} is an emulator run, and {BENCHMARKS} holds a GPU run's figures: give --out FILE, or --force to replace it",
                json.display()
            )));
        }
    }
    check_file_destination("--out", out)?;
    if let Some(dir) = plots {
        check_folder_destination("--plots", dir)?;
    }
    let checks = checks.map(|c| read_file(c)).transpose()?;
    let mut page = report::markdown::markdown(&run, checks.as_deref());
    let mut section_plots = Vec::new();
    let plots_dir = plots.map(PathBuf::as_path);
    if let Some(dir) = sections.gemm {
        let (section, drawn) = report::gemm::section(&report::gemm::read(dir)?, plots_dir)?;
        page += "\n";
        page += &section;
        page += &report::random::section(&report::random::read(dir)?);
        page += &report::blockscaled::section(&report::blockscaled::read(dir)?);
        section_plots.extend(drawn);
    }
    if let Some(dir) = sections.attention {
        // The forward's section, then the backward's and decode's where
        // their tables are.
        let mut add = |(section, drawn): (String, Vec<(PathBuf, String)>)| {
            page += "\n";
            page += &section;
            section_plots.extend(drawn);
        };
        add(report::attention::section(&report::attention::read(dir)?, plots_dir)?);
        let backward = report::attention_backward::read(dir)?;
        if !backward.is_empty() {
            add(report::attention_backward::section(&backward, plots_dir)?);
        }
        let decode = report::attention_decode::read(dir)?;
        if !decode.is_empty() {
            add(report::attention_decode::section(&decode, plots_dir)?);
        }
    }
    write_file(out, &page)?;
    println!("wrote {}", out.display());
    for (path, svg) in section_plots {
        write_file(&path, &svg)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = plots {
        write_plots(&run, dir)?;
    }
    Ok(true)
}

/// Draws `report`'s plots and writes each into `dir`.
fn write_plots(report: &RunReport, dir: &Path) -> Result<()> {
    for (path, svg) in report::plots::draw(report, dir)? {
        write_file(&path, &svg)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// That every size given can run on the emulator, where there is no GPU.
fn emulable(jobs: &[Job]) -> Result<()> {
    for job in jobs {
        if let Some(size) = job.too_large_to_emulate.first() {
            let family = job.family;
            return Err(Error::InvalidInput(format!(
                "no GPU found, and {} {size} is too large for the emulator (work {}, at most {}: {}); run it on a GPU",
                family.name(),
                family.emulator_work(size),
                family.emulator_limit(),
                family.size_meaning()
            )));
        }
    }
    Ok(())
}
