//! The labelled hazard suite (`gpu::hazards`): each kernel's label, the
//! verdict the emulator gives it, and (from a GPU run) what
//! compute-sanitizer's tools say of the same kernel.
//!
//! A kernel's label is its module: `gpu::hazards::race_shared::*` are
//! shared-memory races, and so on ([`Verdict::of_module`]). Nothing else
//! lists them: a kernel added to a module is in the suite.

pub mod kernels;
pub mod speed;
pub mod table;

use gpu::dev::Out;
use gpu::hazards::{BLOCKS, WORDS};
use gpu::launch::{Kernel, registry};

use crate::runtime::{Error, Gpu, Result};

/// What a checker says of a kernel (or what its label says it should).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Clean,
    SharedRace,
    GlobalRace,
    Divergent,
    Uninitialized,
    /// Any other failure (out of bounds, deadlock, panic).
    Other,
}

impl Verdict {
    /// The verdict a module of `gpu::hazards` labels its kernels with.
    /// `benign` is clean: same-value writes are not reported.
    pub fn of_module(module: &str) -> Option<Verdict> {
        Some(match module.strip_prefix("gpu::hazards::")? {
            "race_shared" => Verdict::SharedRace,
            "race_global" => Verdict::GlobalRace,
            "benign" | "clean" => Verdict::Clean,
            "divergent" => Verdict::Divergent,
            "uninit" => Verdict::Uninitialized,
            _ => return None,
        })
    }

    /// The emulator's verdict on a launch's outcome.
    pub fn of(result: &std::result::Result<(), emu::EmuError>) -> Verdict {
        use emu::EmuError as E;
        match result {
            Ok(()) => Verdict::Clean,
            Err(E::Race(r)) if r.space == "shared" => Verdict::SharedRace,
            Err(E::Race(_)) => Verdict::GlobalRace,
            Err(E::DivergentBarrier { .. } | E::IllegalWarpSync { .. }) => Verdict::Divergent,
            Err(E::Uninitialized { .. }) => Verdict::Uninitialized,
            Err(_) => Verdict::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::SharedRace => "shared race",
            Verdict::GlobalRace => "global race",
            Verdict::Divergent => "divergent barrier",
            Verdict::Uninitialized => "uninitialized read",
            Verdict::Other => "other error",
        }
    }
}

/// A kernel of the suite and its label.
#[derive(Clone, Copy, Debug)]
pub struct Hazard {
    pub kernel: &'static Kernel,
    pub label: Verdict,
    /// Its module's last segment (`benign`, `race_shared`, ...).
    pub group: &'static str,
}

/// Every kernel of `gpu::hazards`, by label, then in declaration order.
pub fn suite() -> Vec<Hazard> {
    let mut all: Vec<Hazard> = registry::all()
        .iter()
        .filter_map(|&kernel| {
            let label = Verdict::of_module(kernel.module())?;
            let group = kernel.module().rsplit("::").next().unwrap_or_default();
            Some(Hazard { kernel, label, group })
        })
        .collect();
    all.sort_by_key(|h| (h.label, h.group, h.kernel.file, h.kernel.line));
    all
}

/// The suite's kernel called `name`; an unknown name is an error listing
/// them.
pub fn find(name: &str) -> Result<Hazard> {
    let all = suite();
    all.iter().copied().find(|h| h.kernel.name == name).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|h| h.kernel.name).collect();
        Error::InvalidInput(format!("unknown hazard kernel '{name}'; accepted: {}", names.join(", ")))
    })
}

/// Launches one kernel of the suite as the module documents: two buffers
/// of `WORDS` words, `a[i] = i` and `b` zero, `BLOCKS` blocks.
pub fn launch(gpu: &Gpu, hazard: &Hazard) -> Result<()> {
    let k = hazard.kernel.typed::<(Out<u32>, Out<u32>)>().map_err(Error::InvalidInput)?;
    let mut a = gpu.upload(&(0..WORDS as u32).collect::<Vec<_>>())?;
    let mut b = gpu.upload(&vec![0u32; WORDS])?;
    // SAFETY: every kernel of the suite stays within two buffers of WORDS
    // words in a grid of BLOCKS blocks (the module's contract); the
    // emulator checks it.
    unsafe { k.launch(gpu, BLOCKS, (&mut a, &mut b)) }?;
    gpu.sync()
}

/// The emulator's verdict on one kernel, with its report (every check
/// on).
pub fn emulate(hazard: &Hazard) -> (Verdict, Option<String>) {
    let gpu = Gpu::emulator();
    // The suite is the checks' own test: on whatever the environment says.
    gpu.set_checks(true);
    let result = match launch(&gpu, hazard) {
        Ok(()) => Ok(()),
        Err(Error::Emulator(e)) => Err(e),
        Err(other) => return (Verdict::Other, Some(other.to_string())),
    };
    (Verdict::of(&result), result.err().map(|e| e.to_string()))
}
