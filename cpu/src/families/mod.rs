//! The families layer: one host file per kernel family, each behind the
//! [`Family`] trait. The suite, the JSON, `BENCHMARKS.md`, the plots and
//! the per-family binaries take any family through it: nothing above this
//! layer names a family.
//!
//! A family's kernels are the `#[kernel]`s declared in the `gpu` module of
//! its name (`gpu::transpose` for `transpose`), found in the registry; its
//! host file holds the host reference, the verification and the timing.

use gpu::launch::{Kernel, registry};

use crate::measure::{Record, Runs, Shape};
use crate::runtime::{Gpu, Result};

/// Declares each family's module and lists the family in [`FAMILIES`]: one
/// line per family, `module::Type`.
macro_rules! families {
    ($($module:ident::$family:ident),* $(,)?) => {
        // `$module::$family` is a unit struct or a constant: the family as
        // the suite runs it.
        $(pub mod $module;)*
        /// Every family, in the order the suite runs them.
        pub const FAMILIES: &[&dyn Family] = &[$(&$module::$family),*];
    };
}

families! {
    transpose::Transpose,
    reduce::Reduce,
    sgemm::SUITE,
    tensor::Tensor,
    lab::Lab,
    scale::Scale,
    attention::Attention,
}

/// The elements one size may have on the emulator by default: about a
/// million, a few seconds for the families' kernels.
pub const EMULATOR_ELEMENTS: usize = 1 << 20;

/// One run of a family: where, at what size, which kernels, how often.
pub struct Run<'a> {
    pub gpu: &'a Gpu,
    pub size: &'a Shape,
    /// The kernels chosen, in declaration order.
    pub kernels: &'a [&'static Kernel],
    /// Timed runs after verification; `None` verifies only (and on the
    /// emulator, analyses).
    pub runs: Option<Runs>,
    /// Says what is under way.
    pub progress: &'a dyn Fn(&str),
}

impl<'a> Run<'a> {
    /// A run of every kernel of `family` at `size`, verified only: what the
    /// tests and the emulator do.
    pub fn verify(gpu: &'a Gpu, size: &'a Shape, kernels: &'a [&'static Kernel]) -> Self {
        Run { gpu, size, kernels, runs: None, progress: &|_| {} }
    }
}

/// What a family is, in constants.
pub struct About {
    /// The name `--only` takes, and the `gpu` module of its kernels.
    pub name: &'static str,
    /// What one size means (`an n x n f32 matrix, or NXxNY`).
    pub size_meaning: &'static str,
    /// Sizes run when none are given; the last is the headline.
    pub default_sizes: &'static [usize],
    /// The size the emulator verifies and analyses every kernel at.
    pub emulator_size: usize,
    /// How the family verifies and what its ceiling is, for the report.
    pub method: &'static str,
}

/// A kernel family: what it measures and how.
pub trait Family: Sync {
    /// Its name, sizes and method.
    fn about(&self) -> &'static About;

    /// The bytes of device memory `size` needs at most, after checking,
    /// before anything runs, that the kernels can take it (an error if not).
    fn device_bytes(&self, size: &Shape) -> Result<usize>;

    /// Checks before anything runs that the family can run `kernel` (its
    /// parameters are the family's): a selected kernel it cannot run is an
    /// error, never skipped or replaced.
    fn runs(&self, _kernel: &'static Kernel) -> Result<()> {
        Ok(())
    }

    /// Verifies each kernel of `run` at its size against the host reference
    /// (outputs poisoned first), then times it against the family's in-run
    /// ceiling when `run.runs` is given (a GPU), or takes the emulator's
    /// analysis of the verification run (the emulator). A kernel that fails
    /// is a record with `verified: false`, not an error.
    fn run(&self, run: &Run) -> Result<Vec<Record>>;

    fn name(&self) -> &'static str {
        self.about().name
    }

    fn size_meaning(&self) -> &'static str {
        self.about().size_meaning
    }

    fn default_sizes(&self) -> Vec<Shape> {
        self.about().default_sizes.iter().copied().map(Shape::n).collect()
    }

    fn emulator_size(&self) -> Shape {
        Shape::n(self.about().emulator_size)
    }

    /// The sizes the emulator verifies when the user gave none, given the
    /// run's default `sizes`: by default the family's emulator size alone
    /// (the defaults are GPU-sized). Sizes the user gives are run as given
    /// (see [`Family::emulator_limit`]).
    fn emulator_sizes(&self, _sizes: &[Shape]) -> Vec<Shape> {
        vec![self.emulator_size()]
    }

    /// The emulator's work at `size`, in the unit of
    /// [`Family::emulator_limit`]: by default its elements, the product of
    /// its dimensions.
    fn emulator_work(&self, size: &Shape) -> usize {
        size.dims().iter().product()
    }

    /// The most work one size may take on the emulator, which runs every
    /// thread of a launch one after another (about a microsecond per thread
    /// step): by default [`EMULATOR_ELEMENTS`] elements. A size given with
    /// `--sizes` beyond it is refused before a run without a GPU (exit 2),
    /// and left out of the emulator's analysis beside a GPU run.
    fn emulator_limit(&self) -> usize {
        EMULATOR_ELEMENTS
    }

    fn method(&self) -> &'static str {
        self.about().method
    }

    /// The family's kernels, in declaration order.
    fn kernels(&self) -> Vec<&'static Kernel> {
        registry::module(&format!("gpu::{}", self.name()))
    }

    /// The family's targets, checked against a run's records.
    fn targets(&self, _records: &[&Record]) -> Vec<Target> {
        Vec::new()
    }

    /// What to draw from a run's records: by default the rate of every
    /// kernel against the size, with the ceiling drawn as a thick line.
    fn plots(&self, records: &[&Record], title: &str) -> Vec<Plot> {
        default_plots(self, records, title)
    }

    /// The tables a family binary prints (title, rows); by default one.
    fn tables<'a>(&self, records: &'a [&'a Record]) -> Vec<(String, Vec<&'a Record>)> {
        vec![(self.name().to_string(), records.to_vec())]
    }

    /// The record a profiler's kernel label (`name#k`, the k-th launch of
    /// `name` under ncu) stands for; by default the kernel itself.
    fn profiled_kernel(&self, label: &str) -> String {
        label.split_once('#').map_or(label, |(name, _)| name).to_string()
    }

    /// Paragraphs BENCHMARKS.md shows under the family's heading (how to
    /// read its figures), with its plots.
    fn notes(&self) -> &'static str {
        ""
    }
}

/// One plot of the rate of every kernel in `records` against the size, the
/// ceiling drawn as a thick line: what [`Family::plots`] draws by default.
pub fn default_plots<F: Family + ?Sized>(family: &F, records: &[&Record], title: &str) -> Vec<Plot> {
    let Some(first) = records.iter().find(|r| r.value.is_some()) else { return Vec::new() };
    let mut series: Vec<Series> = Vec::new();
    for r in records {
        let Some(value) = r.value else { continue };
        let name =
            if r.kernel == r.ceiling { format!("{} ({})", r.kernel, r.element) } else { r.kernel.clone() };
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((r.size as f64, value)),
            None => series.push(Series {
                name,
                points: vec![(r.size as f64, value)],
                ceiling: r.kernel == r.ceiling,
            }),
        }
    }
    vec![Plot {
        file: family.name().to_string(),
        title: format!(
            "{}: {} against size, with the in-run {} - {title}",
            family.name(),
            first.unit,
            first.ceiling
        ),
        x_label: format!("size: {}", family.size_meaning()),
        y_label: first.unit.clone(),
        log_x: true,
        categories: None,
        series,
    }]
}

/// A target of a family, checked against a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub what: String,
    pub measured: String,
    pub met: bool,
}

/// One drawing: lines of points, one per series.
#[derive(Clone, Debug)]
pub struct Plot {
    /// The SVG's file name, without `.svg`.
    pub file: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    /// `Some`: groups of bars, one per category, a point's x its index.
    pub categories: Option<Vec<String>>,
    pub series: Vec<Series>,
}

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn thick and black: the ceiling the others are measured against.
    pub ceiling: bool,
}

/// The best verified kernel's percentage of the ceiling among `records`
/// at `size` (the `element` ones), as a target of at least `at_least`%.
pub fn percent_target(
    records: &[&Record],
    element: &str,
    size: usize,
    label: &str,
    at_least: f64,
) -> Option<Target> {
    let best = records
        .iter()
        .filter(|r| r.element == element && r.size == size && r.verified && r.kernel != r.ceiling)
        .filter(|r| r.percent.is_some())
        .max_by(|a, b| a.percent.unwrap_or(0.0).total_cmp(&b.percent.unwrap_or(0.0)))?;
    let p = best.percent.unwrap_or(0.0);
    let of = if best.ceiling == "copy" {
        "the in-run copy".to_string()
    } else {
        format!("{} in the same run", best.ceiling)
    };
    Some(Target {
        what: format!("{label}: at least {at_least}% of {of}"),
        measured: format!("{} {p:.1}%", best.kernel),
        met: p >= at_least,
    })
}

/// That `kernels` (the `element` records at `size`) each run faster than
/// the one before.
pub fn order_target(
    records: &[&Record],
    label: &str,
    kernels: &[&str],
    element: &str,
    size: usize,
) -> Option<Target> {
    let rates: Vec<(f64, &str)> = kernels
        .iter()
        .map(|k| {
            records
                .iter()
                .find(|r| r.kernel == *k && r.size == size && r.element == element)
                .and_then(|r| r.value.map(|v| (v, r.unit.as_str())))
        })
        .collect::<Option<_>>()?;
    let unit = rates.first().map_or("", |r| r.1);
    let digits = if unit == "GB/s" { 0 } else { 1 };
    let shown: Vec<String> = rates.iter().map(|r| format!("{:.digits$}", r.0)).collect();
    Some(Target {
        what: label.into(),
        measured: format!("{} {unit}", shown.join(" < ")),
        met: rates.windows(2).all(|w| w[0].0 < w[1].0),
    })
}

/// The kernels of each of `families` that `names` select: every kernel
/// whose PTX name or function is a name given, with or without its
/// family's prefix (`fast`, `transpose_fast`; `reduce_fast` selects all its
/// instances). All of a family's kernels when `names` is empty. Every name
/// must select a kernel of some family; an unknown one is an error listing
/// the names each family accepts.
pub fn select(families: &[&dyn Family], names: &[String]) -> Result<Vec<Vec<&'static Kernel>>> {
    // A family's kernel names without its prefix (`fast` for `transpose_fast`).
    let short = |family: &dyn Family, name: &'static str| -> &'static str {
        name.strip_prefix(family.name()).and_then(|rest| rest.strip_prefix('_')).unwrap_or(name)
    };
    let mut used = vec![false; names.len()];
    let mut chosen = Vec::new();
    for &family in families {
        let all = family.kernels();
        if names.is_empty() {
            chosen.push(all);
            continue;
        }
        // In the order the names are given, each kernel once.
        let mut kernels: Vec<&'static Kernel> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            for k in &all {
                let forms = [k.name, k.function, short(family, k.name), short(family, k.function)];
                if forms.contains(&name.as_str()) {
                    used[i] = true;
                    if !kernels.contains(k) {
                        kernels.push(k);
                    }
                }
            }
        }
        chosen.push(kernels);
    }
    let Some(unknown) = names.iter().zip(&used).find(|(_, used)| !**used).map(|(n, _)| n) else {
        return Ok(chosen);
    };
    let accepted = |family: &dyn Family| {
        let mut functions: Vec<&str> = family.kernels().iter().map(|k| short(family, k.function)).collect();
        functions.dedup();
        functions.join(", ")
    };
    let message = match families {
        [family] => format!("unknown {} kernel '{unknown}'; accepted: {}", family.name(), accepted(*family)),
        _ => format!(
            "unknown kernel '{unknown}'; accepted: {}",
            families.iter().map(|f| format!("{}: {}", f.name(), accepted(*f))).collect::<Vec<_>>().join("; ")
        ),
    };
    Err(crate::runtime::Error::InvalidInput(message))
}
