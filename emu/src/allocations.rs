//! The emulator's device memory as the driver knows it: every live
//! allocation, by address.
//!
//! A kernel's plain accesses are checked against the buffers passed to
//! its launch, a stricter rule than the GPU's, which catches a pointer
//! into the wrong buffer. The copy engine is different: a tensor map names
//! its matrix by address, encoded on the host, and the kernel gets only
//! the map. Its copies are checked against these allocations instead, so
//! a kernel takes no parameter for the matrices it reads through maps,
//! and a map left pointing at a freed buffer is reported, not read.
//!
//! The runtime registers each emulator allocation when it is made and
//! removes it when it is freed. One table serves the process: allocations
//! never overlap, whichever thread made them.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Live allocations: first byte to length.
static LIVE: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn live() -> std::sync::MutexGuard<'static, BTreeMap<usize, usize>> {
    // A panic elsewhere cannot leave the map half-changed.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `bytes` of device memory at `addr` are allocated.
pub fn allocated(addr: usize, bytes: usize) {
    live().insert(addr, bytes);
}

/// The allocation at `addr` is freed.
pub fn freed(addr: usize) {
    live().remove(&addr);
}

/// The live allocation holding all of `addr..addr + bytes`: its first byte
/// and length.
pub(crate) fn containing(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    let (&base, &len) = live().range(..=addr).next_back()?;
    (addr + bytes <= base + len).then_some((base, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_lies_in_one_live_allocation_or_none() {
        // Addresses no real allocation has (the table is the process's).
        let base = usize::MAX / 2;
        allocated(base, 256);
        allocated(base + 256, 64);
        assert_eq!(containing(base + 10, 246), Some((base, 256)));
        assert_eq!(containing(base + 250, 10), None, "straddles two allocations");
        assert_eq!(containing(base + 256, 64), Some((base + 256, 64)));
        freed(base);
        assert_eq!(containing(base + 10, 4), None, "freed");
        freed(base + 256);
        assert_eq!(containing(base + 256, 4), None);
    }
}
