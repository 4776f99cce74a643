//! What a measurement is written down as: one [`Record`] per kernel (or
//! ceiling) and size, the rows of the JSON a run writes.

use serde::{Deserialize, Serialize};

use super::{Shape, Trial};

/// One measurement: a kernel (or the ceiling: `copy`, `cublas`) at one size.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub family: String,
    /// The kernel's PTX name, with a parameter suffix where a study sweeps
    /// one (`lab_copy_stride*4`), or the ceiling's name.
    pub kernel: String,
    /// `f32`, `i32`, `f64`.
    pub element: String,
    /// The size's first dimension (the x axis of plots).
    pub size: usize,
    /// The whole size, `8191x8193`.
    #[serde(default)]
    pub shape: String,
    pub verified: bool,
    /// Why verification failed.
    pub error: Option<String>,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub runs: Option<usize>,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
    pub value: Option<f64>,
    /// What `percent` is of: `copy` (device-to-device copy) or `cublas`.
    pub ceiling: String,
    pub percent: Option<f64>,
    /// Relative error against the f64 reference (sgemm).
    pub relative_error: Option<f64>,
    /// The emulator's analysis of the same kernel at the family's emulator
    /// size.
    #[serde(default)]
    pub analysis: Option<AnalysisColumns>,
    /// The swept parameter (the lab's offset or stride), if any.
    #[serde(default)]
    pub param: Option<usize>,
}

/// How a timing becomes a rate, and what it is compared with.
#[derive(Clone, Copy, Debug)]
pub enum Rate {
    /// `bytes` moved per run, in GB/s, against the in-run copy's GB/s.
    Bandwidth { bytes: usize, copy: Option<f64> },
    /// `flops` per run, in TFLOP/s, against the in-run peer's TFLOP/s.
    Flops { flops: f64, peer: &'static str, peer_tflops: Option<f64> },
}

impl Record {
    /// A record of `kernel` at `size`, verified, nothing measured yet.
    pub fn new(family: &str, kernel: &str, element: &str, size: &Shape) -> Self {
        Record {
            family: family.into(),
            kernel: kernel.into(),
            element: element.into(),
            size: size.lead(),
            shape: size.to_string(),
            verified: true,
            error: None,
            median_ms: None,
            min_ms: None,
            max_ms: None,
            runs: None,
            unit: String::new(),
            value: None,
            ceiling: String::new(),
            percent: None,
            relative_error: None,
            analysis: None,
            param: None,
        }
    }

    /// The record of a verified-then-timed (or analysed) kernel.
    pub fn of_trial(
        family: &str,
        kernel: &str,
        element: &str,
        size: &Shape,
        trial: &Trial,
        rate: Rate,
    ) -> Self {
        let mut record = Record::new(family, kernel, element, size);
        record.verified = trial.verified.is_ok();
        record.error = trial.verified.clone().err();
        record.analysis = trial.analysis.as_ref().map(|a| AnalysisColumns::from(size.lead(), a));
        record.timed(trial.timing, rate)
    }

    /// Sets the timing and the rate it gives.
    pub fn timed(mut self, timing: Option<super::Timing>, rate: Rate) -> Self {
        self.median_ms = timing.map(|t| t.median_ms);
        self.min_ms = timing.map(|t| t.min_ms);
        self.max_ms = timing.map(|t| t.max_ms);
        self.runs = timing.map(|t| t.runs);
        let (unit, ceiling, value, of) = match rate {
            Rate::Bandwidth { bytes, copy } => ("GB/s", "copy", timing.map(|t| t.gb_per_s(bytes)), copy),
            Rate::Flops { flops, peer, peer_tflops } => {
                ("TFLOP/s", peer, timing.map(|t| flops / (t.median_ms * 1e-3) / 1e12), peer_tflops)
            }
        };
        self.unit = unit.into();
        self.ceiling = ceiling.into();
        self.value = value;
        self.percent = value.zip(of).map(|(v, c)| 100.0 * v / c);
        self
    }

    /// The same record with the swept parameter named in the kernel
    /// column (`lab_copy_offset+3`, `lab_copy_stride*4`).
    pub fn with_param(mut self, separator: char, param: usize) -> Self {
        self.kernel = format!("{}{separator}{param}", self.kernel);
        self.param = Some(param);
        self
    }
}

/// The emulator's figures for one kernel. Shared "ways": wavefronts over
/// the fewest the same accesses could take (1.0 conflict-free at any access
/// width, 32.0 when all 32 lanes hit one bank). Global: 32-byte sectors per
/// warp request (4.0 for 32 lanes reading 128 contiguous bytes, 32.0 when
/// each lane is in its own sector). `None` where the kernel makes no such
/// access.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct AnalysisColumns {
    pub size: usize,
    pub shared_load_ways: Option<f64>,
    /// Wavefronts per shared-load request (what ncu's
    /// `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld` / instructions is).
    #[serde(default)]
    pub shared_load_wavefronts: Option<f64>,
    pub shared_store_ways: Option<f64>,
    pub global_load_sectors: Option<f64>,
    pub global_store_sectors: Option<f64>,
    /// Least sectors over sectors touched, loads and stores together.
    pub global_efficiency: Option<f64>,
}

impl AnalysisColumns {
    pub fn from(size: usize, a: &emu::Analysis) -> Self {
        let ways = |s: emu::AccessStats| (s.requests > 0).then(|| 1.0 / s.efficiency());
        let sectors = |s: emu::AccessStats| (s.requests > 0).then(|| s.per_request());
        let mut global = a.global_loads;
        global.requests += a.global_stores.requests;
        global.cost += a.global_stores.cost;
        global.ideal += a.global_stores.ideal;
        AnalysisColumns {
            size,
            shared_load_ways: ways(a.shared_loads),
            shared_load_wavefronts: sectors(a.shared_loads),
            shared_store_ways: ways(a.shared_stores),
            global_load_sectors: sectors(a.global_loads),
            global_store_sectors: sectors(a.global_stores),
            global_efficiency: (global.requests > 0).then(|| global.efficiency()),
        }
    }

    /// `ld/st` cells of the summary.
    pub fn cells(&self) -> (String, String) {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        (
            format!("{}/{}", f(self.shared_load_ways), f(self.shared_store_ways)),
            format!("{}/{}", f(self.global_load_sectors), f(self.global_store_sectors)),
        )
    }
}
