//! The hooks the device layer calls for thread indices, barriers,
//! `sync_warp`, shuffles, memory accesses, atomics and fences, each acting
//! on the emulated thread that is running.

use std::panic::Location;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use super::abi::{Op, ShflOp, Site, Space};
use super::context::{BlockCtx, Event, async_misuse, block, lock, out_of_bounds, suspend, thread};
use super::memory::{Hazard, word_value};
use super::order::{Access, Kind, Observer, Release};
use super::report::{EmuError, Race};

/// (threadIdx, blockIdx, blockDim, gridDim) of the running thread.
pub fn index() -> ([u32; 3], [u32; 3], [u32; 3], [u32; 3]) {
    let (b, t) = (block(), thread());
    (t.idx, b.block, b.block_dim, b.grid_dim)
}

/// The running block's rank in its cluster (`%cluster_ctarank`) and the
/// cluster's shape (`%cluster_nctaid`).
pub fn cluster() -> (u32, [u32; 3]) {
    let b = block();
    (b.rank, b.cluster_dim)
}

/// `barrier.cluster.arrive.release` then `.wait.acquire`: every thread of
/// every block of the cluster.
pub fn cluster_barrier(site: Site) {
    suspend(Event::ClusterBarrier(site));
}

/// `__syncthreads()`.
pub fn barrier(site: Site) {
    suspend(Event::Barrier(site));
}

/// `__syncwarp(mask)`.
pub fn warp_sync(mask: u32, site: Site) {
    suspend(Event::WarpSync { mask, site });
}

/// A shuffle: returns the bits this lane receives.
#[track_caller]
pub fn shuffle(mask: u32, op: ShflOp, bits: u64) -> u64 {
    suspend(Event::Shuffle { mask, op, bits, site: Location::caller() })
}

/// The block's launch-sized shared memory.
pub fn shared_base() -> *mut u8 {
    block().shared
}

/// Its size in bytes (`%dynamic_smem_size`).
pub fn shared_len() -> usize {
    block().shared_len
}

/// The lanes of the running thread's warp that have not exited
/// (`activemask`: lanes run one at a time here, so "active" means "still
/// running").
pub fn active_mask() -> u32 {
    let (b, t) = (block(), thread());
    let n = b.block_dim.iter().product::<u32>();
    let warp = t.linear / 32;
    let lanes = (n - warp * 32).min(32);
    let all = if lanes == 32 { u32::MAX } else { (1u32 << lanes) - 1 };
    all & !t.exited_at_sync.get()
}

pub(crate) fn check_bounds(space: Space, addr: usize, bytes: usize, site: Site) {
    let b = block();
    match space {
        Space::Shared => {
            let base = b.shared as usize;
            if addr < base || addr + bytes > base + b.shared_len {
                let start = addr as isize - base as isize;
                out_of_bounds(
                    space,
                    format!(
                        "bytes {start}..{} of a {}-byte launch-sized shared memory",
                        start + bytes as isize,
                        b.shared_len
                    ),
                    site,
                );
            }
        }
        Space::Global => {
            check_waited(site);
            if !b.buffers.iter().any(|x| addr >= x.addr && addr + bytes <= x.addr + x.bytes) {
                let buffers = b
                    .buffers
                    .iter()
                    .map(|x| format!("`{}` {:#x}..{:#x}", x.name, x.addr, x.addr + x.bytes))
                    .collect::<Vec<_>>()
                    .join(", ");
                out_of_bounds(
                    space,
                    format!(
                        "bytes {addr:#x}..{:#x} are in no buffer passed to the launch ({buffers})",
                        addr + bytes
                    ),
                    site,
                );
            }
        }
    }
}

/// The bounds of the copy engine's access to global memory through a
/// tensor map: inside a buffer of the launch or another live allocation
/// (the map names its matrix by address; [`crate::allocations`]).
pub(crate) fn check_map_bounds(addr: usize, bytes: usize, site: Site) {
    check_waited(site);
    let in_launch = block().buffers.iter().any(|x| addr >= x.addr && addr + bytes <= x.addr + x.bytes);
    if !in_launch && crate::allocations::containing(addr, bytes).is_none() {
        out_of_bounds(
            Space::Global,
            format!(
                "bytes {addr:#x}..{:#x}, read or written through a tensor map, are in no live allocation (freed since the map was encoded?)",
                addr + bytes
            ),
            site,
        );
    }
}

/// Checks, records and orders one access of `bytes` at `addr`: bounds,
/// uninitialized shared reads, races; for atomics, the release and
/// acquire they make.
pub fn access(space: Space, addr: usize, bytes: usize, op: Op, site: Site) {
    let t = thread();
    match op {
        Op::Atomic { write: false, .. } => {
            let (word, n) = t.polls.get();
            let n = if word == addr { n + 1 } else { 1 };
            t.polls.set((addr, n));
            if n >= SPIN_LIMIT || (n >= 2 && block().launch.parallel()) {
                polled_out(space, addr, bytes, site);
            }
        }
        _ => t.polls.set((0, 0)),
    }
    let kind = checked_access(space, addr, bytes, op, site);
    if space == Space::Shared && kind.writes() {
        mark_written(addr, bytes);
    }
    // The emulator reuses one shared buffer for every block, so a shared
    // word's releases are kept per block: it orders the threads of its own
    // block only.
    if let Op::Atomic { order, .. } = op {
        let block = (space == Space::Shared).then(|| block().linear);
        atomic_order((block, addr), order);
    }
}

/// Atomic reads of one word in a row, with no other access and no
/// suspension (a barrier, a warp collective, an mbarrier wait) between
/// them, past which a thread is taken to wait for a write that cannot
/// come. It
/// runs alone: the emulator switches threads only at a barrier, a warp
/// collective or an mbarrier wait, and runs a grid's blocks one at a
/// time, so only a block before it in the grid can have written the
/// word, and those have finished.
pub(crate) const SPIN_LIMIT: u32 = 1 << 16;

/// A thread polled the word at `addr`. In a parallel run, at the second
/// read in a row: a block running beside may write it, or not, as the
/// threads' timing falls, so the launch runs again on one thread, and
/// that run's outcome is its own, the same on every run. On one thread,
/// [`SPIN_LIMIT`] reads: a wait that cannot end, reported with the word,
/// its value and the line.
fn polled_out(space: Space, addr: usize, bytes: usize, site: Site) -> ! {
    let (b, t) = (block(), thread());
    if b.launch.parallel() {
        b.launch.polled_out.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let word = match space {
        Space::Shared => format!("shared byte {}", addr - b.shared as usize),
        Space::Global => match b.buffers.iter().find(|x| (x.addr..x.addr + x.bytes).contains(&addr)) {
            Some(x) => format!("byte {} of `{}`", addr - x.addr, x.name),
            None => format!("{addr:#x}"),
        },
    };
    let mut value = [0u8; 8];
    let n = bytes.min(8);
    // SAFETY: the access's bounds were checked at its first poll.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, value.as_mut_ptr(), n) };
    let value = u64::from_le_bytes(value);
    std::panic::panic_any(EmuError::Deadlock {
        kernel: b.kernel.to_string(),
        block: b.block,
        detail: format!(
            "thread {:?} polls {word} (holding {value:#x}) {SPIN_LIMIT} times at {site} with nothing else \
             running: the emulator runs one block at a time, in grid order, and a thread gives way only at \
             a barrier, a warp collective or an mbarrier wait, so only an earlier block could have written \
             it. It waits on a later block, on its own block, or on a write that never comes (a GPU need \
             not run a later block either while this one waits)",
            t.idx
        ),
    })
}

/// [`access`] without its effects: bounds, analysis and word checks.
pub(crate) fn checked_access(space: Space, addr: usize, bytes: usize, op: Op, site: Site) -> Kind {
    check_bounds(space, addr, bytes, site);
    recorded_access(space, addr, bytes, op, site)
}

/// [`checked_access`] after its bounds check: analysis and word checks.
pub(crate) fn recorded_access(space: Space, addr: usize, bytes: usize, op: Op, site: Site) -> Kind {
    if space == Space::Shared {
        let offset = addr - block().shared as usize;
        if let Some(why) = block().proxy.borrow().read_before_landing(offset, bytes) {
            async_misuse(why, site);
        }
    }
    let (b, t) = (block(), thread());
    let (kind, data) = match op {
        Op::Read | Op::ReadMaybeUninit => (Kind::Read, None),
        Op::Write(d) => (Kind::Write, Some(d)),
        Op::WriteUnknown => (Kind::Write, None),
        Op::Atomic { write, .. } => (Kind::Atomic { write }, None),
    };
    if let (Some(r), Kind::Read | Kind::Write) = (&b.recorder, kind) {
        let write = kind == Kind::Write;
        let k = &t.counters[2 * usize::from(space == Space::Global) + usize::from(write)];
        r.borrow_mut().record(space, write, t.linear, k.get(), addr, bytes);
        k.set(k.get() + 1);
    }
    check_words(space, addr, bytes, kind, data, !matches!(op, Op::Read), site);
    kind
}

/// Race (and, for shared reads, initialization) checks of every word an
/// access touches.
pub(crate) fn check_words(
    space: Space,
    addr: usize,
    bytes: usize,
    kind: Kind,
    data: Option<&[u8]>,
    may_be_uninit: bool,
    site: Site,
) {
    let (b, t) = (block(), thread());
    if !b.launch.checks {
        return;
    }
    let me = Access {
        block: b.linear,
        thread: t.linear,
        epoch: b.epoch.get(),
        warp_gen: warp_generation(b, t.linear),
        seq: t.seq.get(),
        kind,
        bytes: 0xf,
        site,
    };
    let warps = b.warps.borrow();
    let knowledge = t.knowledge.borrow();
    let order = Observer { warps: &warps, knowledge: &knowledge };
    for word in (addr & !3..addr + bytes).step_by(4) {
        let value = data.and_then(|d| word_value(addr, d, word));
        let (first, last) = (addr.max(word) - word, (addr + bytes).min(word + 4) - word);
        let me = Access { bytes: ((1u16 << last) - (1u16 << first)) as u8, ..me };
        let result = match space {
            Space::Shared => {
                let mut words = b.words.borrow_mut();
                let w = &mut words[(word - b.shared as usize) / 4];
                // Reported when the epoch ends, unless a race on the word
                // (a write the schedule ran later) is found first.
                if kind == Kind::Read && !w.written && !may_be_uninit && b.uninitialized.borrow().is_none() {
                    *b.uninitialized.borrow_mut() = Some(EmuError::Uninitialized {
                        kernel: b.kernel.to_string(),
                        block: b.block,
                        thread: t.idx,
                        word: b.word_name(space, word),
                        site: site.to_string(),
                    });
                }
                // A cp.async marks its words written when it lands.
                w.log_at(me.epoch).access(me, value, &order)
            }
            Space::Global => b.launch.global.with(word, |log| log.access(me, value, &order)),
        };
        if let Err(Hazard { earlier, name }) = result {
            std::panic::panic_any(EmuError::Race(Box::new(Race {
                kernel: b.kernel.to_string(),
                space: space.name(),
                word: b.word_name(space, word),
                hazard: name,
                first: b.actor(&earlier),
                second: b.actor(&me),
            })));
        }
    }
}

/// Marks shared words written (a store, or a `cp.async` landing).
pub(crate) fn mark_written(addr: usize, bytes: usize) {
    let b = block();
    if !b.launch.checks {
        return;
    }
    let mut words = b.words.borrow_mut();
    let base = b.shared as usize;
    for word in (addr & !3..addr + bytes).step_by(4) {
        words[(word - base) / 4].written = true;
    }
}

pub(crate) fn warp_generation(b: &BlockCtx, thread: u32) -> u32 {
    b.warps.borrow().get((thread / 32) as usize).and_then(Option::as_ref).map_or(0, |w| w.generation)
}

/// The release and acquire an atomic on `word` (its block for a shared
/// word, and its address) makes.
pub(crate) fn atomic_order(word: (Option<u32>, usize), order: Ordering) {
    let (b, t) = (block(), thread());
    if !b.launch.checks {
        return;
    }
    let releases = matches!(order, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst);
    let acquires = matches!(order, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst);
    let release =
        if releases { Some(Release { epoch: b.epoch.get(), seq: t.seq.get() }) } else { t.last_fence.get() };
    let mut published = lock(&b.launch.published);
    let slot = published.entry(word).or_default();
    if let Some(r) = release {
        slot.insert(b.linear, t.linear, r);
        slot.merge(&t.knowledge.borrow());
    }
    if !slot.is_empty() {
        if acquires {
            Rc::make_mut(&mut t.knowledge.borrow_mut()).merge(slot);
        } else {
            t.pending.borrow_mut().merge(slot);
        }
    }
    t.seq.set(t.seq.get() + 1);
}

/// An mbarrier arrival (`.release` at the block's scope, as PTX has it):
/// publishes on the mbarrier's word what this thread did and learned.
pub(crate) fn mbarrier_release(addr: usize) {
    atomic_order((Some(block().linear), addr), Ordering::Release);
}

/// [`mbarrier_release`] on the mbarrier at shared offset `offset` of
/// `peer`, a block of this one's cluster (a remote arrival).
pub(crate) fn mbarrier_release_in(peer: &BlockCtx, offset: usize) {
    atomic_order((Some(peer.linear), peer.shared as usize + offset), Ordering::Release);
}

/// A completed mbarrier wait (`.acquire`): learns what every arrival on
/// the mbarrier so far published (an arrival is a read-modify-write of
/// the mbarrier, so a wait that sees one phase complete synchronizes
/// with every arrival before it).
pub(crate) fn mbarrier_acquire(addr: usize) {
    let (b, t) = (block(), thread());
    if !b.launch.checks {
        return;
    }
    if let Some(slot) = lock(&b.launch.published).get(&(Some(b.linear), addr))
        && !slot.is_empty()
    {
        Rc::make_mut(&mut t.knowledge.borrow_mut()).merge(slot);
    }
}

/// `griddepcontrol.wait`: the grids ahead of a dependent launch have
/// finished and their writes are visible; the thread may touch global
/// memory. (The emulator runs launches one after another: nothing to
/// wait for.)
pub fn grid_dependency_wait() {
    thread().waited.set(true);
}

/// In a dependent launch, global memory before `griddepcontrol.wait` is
/// an error: the kernel ahead may still be writing it, or reading what
/// this one would write.
fn check_waited(site: Site) {
    if block().launch.dependent && !thread().waited.get() {
        async_misuse(
            "touches global memory before `griddepcontrol.wait`, in a launch that may start while the kernel ahead of it is running (a dependent launch)"
                .to_string(),
            site,
        );
    }
}

/// A fence (`__threadfence`): releases what came before it to this
/// thread's later atomics, and acquires what its earlier relaxed atomics
/// learned.
pub fn fence() {
    let (b, t) = (block(), thread());
    if !b.launch.checks {
        return;
    }
    t.last_fence.set(Some(Release { epoch: b.epoch.get(), seq: t.seq.get() }));
    t.seq.set(t.seq.get() + 1);
    let pending = std::mem::take(&mut *t.pending.borrow_mut());
    if !pending.is_empty() {
        Rc::make_mut(&mut t.knowledge.borrow_mut()).merge(&pending);
    }
}
