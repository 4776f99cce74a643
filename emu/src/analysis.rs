//! Bank conflicts and coalescing, measured on the emulator.
//!
//! Each lane's k-th shared load (and k-th shared store, global load, global
//! store) forms, with the k-th of the other lanes of its warp, one warp
//! request. Lanes that skip an access (a guard) shift their later ones, so
//! under divergence the grouping is an approximation.
//!
//! - Shared memory: 32 banks of 4-byte words, bank = word index mod 32. A
//!   request is served in phases: all 32 lanes at once for 4-byte
//!   accesses, 16 lanes at a time for 8-byte, 8 for 16-byte. A phase costs
//!   as many wavefronts as the largest number of *distinct* words any bank
//!   holds among its lanes (several lanes reading one word are served by a
//!   broadcast). "Ways" is wavefronts per request: 1 is conflict-free, 32 is
//!   every lane in one bank.
//! - Global memory: a request touches the distinct 32-byte sectors its
//!   lanes' bytes fall in; the least it could touch is its distinct bytes
//!   / 32, rounded up. Sectors per request and that ratio (efficiency) are
//!   reported.

use std::collections::BTreeMap;

use crate::abi::Space;

/// Totals for one kind of access (say, shared loads) over a launch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AccessStats {
    /// Warp requests.
    pub requests: u64,
    /// Shared: wavefronts. Global: 32-byte sectors touched.
    pub cost: u64,
    /// The least `cost` could be for the same bytes.
    pub ideal: u64,
}

impl AccessStats {
    /// Shared: average ways. Global: sectors per request.
    pub fn per_request(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.cost as f64 / self.requests as f64 }
    }

    /// `ideal / cost`: 1.0 when every request is as cheap as it can be.
    pub fn efficiency(&self) -> f64 {
        if self.cost == 0 { 1.0 } else { self.ideal as f64 / self.cost as f64 }
    }

    fn add(&mut self, other: &AccessStats) {
        self.requests += other.requests;
        self.cost += other.cost;
        self.ideal += other.ideal;
    }
}

/// What one emulated launch measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Analysis {
    pub shared_loads: AccessStats,
    pub shared_stores: AccessStats,
    pub global_loads: AccessStats,
    pub global_stores: AccessStats,
}

impl Analysis {
    /// Adds another launch's counts to these.
    pub fn add(&mut self, other: &Analysis) {
        self.shared_loads.add(&other.shared_loads);
        self.shared_stores.add(&other.shared_stores);
        self.global_loads.add(&other.global_loads);
        self.global_stores.add(&other.global_stores);
    }
}

/// One warp request: (space, store?, warp, k).
type RequestKey = (Space, bool, u32, u32);
/// Its lanes' accesses: (lane, address, bytes).
type LaneAccesses = Vec<(u32, usize, usize)>;

/// The accesses of one block, grouped into warp requests.
#[derive(Default)]
pub(crate) struct Recorder {
    requests: BTreeMap<RequestKey, LaneAccesses>,
}

impl Recorder {
    pub(crate) fn record(
        &mut self,
        space: Space,
        write: bool,
        thread: u32,
        k: u32,
        addr: usize,
        bytes: usize,
    ) {
        self.requests.entry((space, write, thread / 32, k)).or_default().push((thread % 32, addr, bytes));
    }

    pub(crate) fn finish(self) -> Analysis {
        let mut a = Analysis::default();
        for ((space, write, _, _), lanes) in self.requests {
            let (cost, ideal) = match space {
                Space::Shared => shared_cost(&lanes),
                Space::Global => global_cost(&lanes),
            };
            let stats = match (space, write) {
                (Space::Shared, false) => &mut a.shared_loads,
                (Space::Shared, true) => &mut a.shared_stores,
                (Space::Global, false) => &mut a.global_loads,
                (Space::Global, true) => &mut a.global_stores,
            };
            stats.requests += 1;
            stats.cost += cost;
            stats.ideal += ideal;
        }
        a
    }
}

/// Wavefronts of one shared-memory warp request, and the least possible.
pub(crate) fn shared_cost(lanes: &[(u32, usize, usize)]) -> (u64, u64) {
    let width = lanes.iter().map(|l| l.2).max().unwrap_or(4).clamp(4, 16);
    let per_phase = (128 / width) as u32;
    let (mut cost, mut ideal) = (0u64, 0u64);
    for phase in 0..32 / per_phase {
        let mut words: Vec<usize> = lanes
            .iter()
            .filter(|l| l.0 / per_phase == phase)
            .flat_map(|&(_, addr, bytes)| addr / 4..(addr + bytes).div_ceil(4))
            .collect();
        if words.is_empty() {
            continue;
        }
        words.sort_unstable();
        words.dedup();
        let mut per_bank = [0u64; 32];
        for w in &words {
            per_bank[w % 32] += 1;
        }
        cost += per_bank.iter().copied().max().unwrap_or(0);
        ideal += (words.len() as u64).div_ceil(32);
    }
    (cost, ideal)
}

/// Sectors one global warp request touches, and the least possible.
pub(crate) fn global_cost(lanes: &[(u32, usize, usize)]) -> (u64, u64) {
    let mut ranges: Vec<(usize, usize)> = lanes.iter().map(|&(_, a, b)| (a, a + b)).collect();
    ranges.sort_unstable();
    let (mut bytes, mut sectors) = (0usize, Vec::new());
    let mut current: Option<(usize, usize)> = None;
    for (s, e) in ranges {
        sectors.extend(s / 32..e.div_ceil(32));
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                bytes += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        bytes += ce - cs;
    }
    sectors.sort_unstable();
    sectors.dedup();
    (sectors.len() as u64, (bytes as u64).div_ceil(32))
}
