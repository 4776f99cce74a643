//! The asynchronous proxy on the emulator: `mbarrier`s, the TMA copies
//! that complete transactions on them, and the shared-memory reads of
//! `wgmma`.
//!
//! An mbarrier (PTX ISA, "Parallel Synchronization and Communication
//! Instructions: mbarrier") counts a phase's pending arrivals, from the
//! count it was initialized with down to zero, and its transaction bytes
//! (tx-count): `expect_tx` adds, a TMA copy's completion subtracts. The
//! phase completes when both are zero; the barrier then starts the next
//! phase with the full count. A wait names a phase by its parity and
//! returns once that phase has completed.
//!
//! A TMA copy's bytes are read from global memory when it is issued and
//! land in shared memory when a thread's wait observes the completion of
//! the phase they were counted in: reading them earlier (a missing wait)
//! is an error naming the copy, never stale data passed as right. The
//! model does not order a TMA write after earlier reads of the same bytes
//! (a stage refilled while still being read): that needs the mbarriers in
//! the happens-before relation, which the race checker does not have.

use std::collections::HashMap;

use super::report::EmuError;

type Site = &'static std::panic::Location<'static>;

/// One copy waiting to land: its bytes for shared memory at `dst`.
struct Landing {
    dst: usize,
    data: Vec<u8>,
}

/// One mbarrier's state.
struct Mbarrier {
    count: u32,
    arrivals_left: u32,
    tx: i64,
    phase: u32,
    /// Copies counted in the current phase.
    open: Vec<Landing>,
    /// Copies of completed phases, landing at the next observed wait.
    completed: Vec<Landing>,
}

/// Every mbarrier of a block, by shared-memory offset (every address
/// here is one), and the shared bytes copies have yet to land in.
#[derive(Default)]
pub(crate) struct Proxy {
    barriers: HashMap<usize, Mbarrier>,
    /// `(start, end, site)` of bytes a TMA copy will write.
    pending: Vec<(usize, usize, Site)>,
}

/// What went wrong, for the caller to turn into an [`EmuError`].
pub(crate) type Misuse = String;

impl Proxy {
    fn barrier(&mut self, addr: usize) -> Result<&mut Mbarrier, Misuse> {
        self.barriers
            .get_mut(&addr)
            .ok_or_else(|| format!("uses an mbarrier at {} that was never initialized", at(addr)))
    }

    /// `mbarrier.init`: `count` arrivals per phase, phase 0.
    pub(crate) fn init(&mut self, addr: usize, count: u32) -> Result<(), Misuse> {
        if count == 0 || count >= 1 << 20 {
            return Err(format!("initializes the mbarrier at {} with count {count} (1..2^20)", at(addr)));
        }
        let b = Mbarrier {
            count,
            arrivals_left: count,
            tx: 0,
            phase: 0,
            open: Vec::new(),
            completed: Vec::new(),
        };
        self.barriers.insert(addr, b);
        Ok(())
    }

    /// `mbarrier.arrive` (with `expect_tx` of `tx` bytes first).
    pub(crate) fn arrive(&mut self, addr: usize, tx: u32) -> Result<(), Misuse> {
        let b = self.barrier(addr)?;
        if b.arrivals_left == 0 {
            return Err(format!("arrives at the mbarrier at {} beyond its count {}", at(addr), b.count));
        }
        b.tx += i64::from(tx);
        b.arrivals_left -= 1;
        b.try_complete();
        Ok(())
    }

    /// A TMA copy of `data` to shared `dst`, counted on the mbarrier at
    /// `addr` (its `complete_tx`).
    pub(crate) fn copy(&mut self, addr: usize, dst: usize, data: Vec<u8>, site: Site) -> Result<(), Misuse> {
        if let Some(&(s, e, other)) = self.pending.iter().find(|&&(s, e, _)| dst < e && s < dst + data.len())
        {
            return Err(format!(
                "issues a TMA copy to shared bytes {}..{} while the one issued at {other} to {}..{} has not landed",
                dst,
                dst + data.len(),
                s,
                e
            ));
        }
        let b = self.barrier(addr)?;
        b.tx -= data.len() as i64;
        self.pending.push((dst, dst + data.len(), site));
        let b = self.barrier(addr)?;
        b.open.push(Landing { dst, data });
        b.try_complete();
        Ok(())
    }

    /// Whether the phase of parity `parity` has completed (`try_wait.parity`
    /// succeeds): the current phase has the other parity.
    pub(crate) fn completed(&mut self, addr: usize, parity: u32) -> Result<bool, Misuse> {
        Ok(self.barrier(addr)?.phase % 2 != parity % 2)
    }

    /// A wait on the mbarrier at `addr` succeeded: its completed phases'
    /// copies land. Returns them, `(dst, bytes)`, for the caller to write.
    pub(crate) fn land(&mut self, addr: usize) -> Result<Vec<(usize, Vec<u8>)>, Misuse> {
        let landed = std::mem::take(&mut self.barrier(addr)?.completed);
        self.pending.retain(|&(s, _, _)| !landed.iter().any(|l| l.dst == s));
        Ok(landed.into_iter().map(|l| (l.dst, l.data)).collect())
    }

    /// Why an access to shared bytes `addr..addr + bytes` would meet a
    /// copy that has not landed, if it would.
    pub(crate) fn read_before_landing(&self, addr: usize, bytes: usize) -> Option<String> {
        self.pending.iter().find(|&&(s, e, _)| addr < e && s < addr + bytes).map(|&(s, e, site)| {
            format!(
                "touches shared bytes that the TMA copy issued at {site} (to {s}..{e}) fills, before a wait on \
                 its mbarrier observed the copy complete"
            )
        })
    }

    /// Why a thread waiting on `addr` for parity `parity` can never go on.
    pub(crate) fn stuck(&self, addr: usize, parity: u32) -> String {
        match self.barriers.get(&addr) {
            Some(b) => format!(
                "waits on the mbarrier at {} for phase parity {parity}, which needs {} more arrivals and {} more \
                 transaction bytes",
                at(addr),
                b.arrivals_left,
                b.tx
            ),
            None => format!("waits on an mbarrier at {} that was never initialized", at(addr)),
        }
    }

    /// Every copy issued and never waited for, as an error.
    pub(crate) fn unfinished(&self) -> Option<String> {
        self.pending.first().map(|&(s, e, site)| {
            format!("exits with the TMA copy issued at {site} (to shared bytes {s}..{e}) never waited for")
        })
    }
}

impl Mbarrier {
    fn try_complete(&mut self) {
        if self.arrivals_left == 0 && self.tx == 0 {
            self.completed.append(&mut self.open);
            self.phase += 1;
            self.arrivals_left = self.count;
        }
    }
}

/// A shared-memory offset as reports name it.
fn at(addr: usize) -> String {
    format!("shared byte {addr}")
}

/// An [`EmuError`] for a misuse by the running thread.
pub(crate) fn error(kernel: &str, block: [u32; 3], thread: [u32; 3], detail: Misuse, site: Site) -> EmuError {
    EmuError::Async { kernel: kernel.to_string(), block, thread, detail, site: site.to_string() }
}
