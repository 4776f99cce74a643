//! The emulated thread and block: their state, the thread-locals that name
//! the running ones, and the errors a hook raises on their behalf.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Mutex;

use corosensei::Yielder;

use super::abi::{Buffer, ShflOp, Site, Space};
use super::analysis::Recorder;
use super::memory::{GlobalShadow, SharedWord};
use super::order::{Access, Knowledge, Release, WarpSyncs};
use super::proxy::{self, Proxy};
use super::report::{Actor, EmuError};

/// Why a thread's coroutine handed control back.
pub(crate) enum Event {
    Barrier(Site),
    WarpSync {
        mask: u32,
        site: Site,
    },
    Shuffle {
        mask: u32,
        op: ShflOp,
        bits: u64,
        site: Site,
    },
    /// Waiting on the mbarrier at this shared offset for the phase of this
    /// parity to complete.
    MbarrierWait {
        addr: usize,
        parity: u32,
        site: Site,
    },
    /// `barrier.cluster.arrive` and `.wait`.
    ClusterBarrier(Site),
    /// The kernel's body returned: the thread has exited, and its
    /// coroutine waits to run the next thread given it.
    Exited,
}

/// One CUDA thread.
pub(crate) struct ThreadCtx {
    pub(crate) idx: [u32; 3],
    pub(crate) linear: u32,
    pub(crate) yielder: Cell<*const Yielder<u64, Event>>,
    /// Per-lane counters of shared/global loads/stores: the k of "the k-th
    /// access" that groups lanes into warp requests.
    pub(crate) counters: [Cell<u32>; 4],
    /// `cp.async` copies issued and not yet landed: those since the last
    /// commit, then the committed groups, oldest first.
    pub(crate) copies: RefCell<AsyncCopies>,
    /// Fences and atomics so far ([`Access::seq`]).
    pub(crate) seq: Cell<u32>,
    /// The release point of this thread's last fence.
    pub(crate) last_fence: Cell<Option<Release>>,
    /// What this thread has acquired (shared with its block after a
    /// barrier).
    pub(crate) knowledge: RefCell<Rc<Knowledge>>,
    /// Learned by relaxed atomics, acquired at the next fence.
    pub(crate) pending: RefCell<Knowledge>,
    /// The lanes of its warp that had exited when this thread last
    /// converged with the others (a barrier, `sync_warp` or shuffle it took
    /// part in): what `activemask` leaves out.
    pub(crate) exited_at_sync: Cell<u32>,
    /// Past `griddepcontrol.wait`: the grids before it have finished.
    pub(crate) waited: Cell<bool>,
    /// The word this thread's accesses have been atomic reads of, one
    /// after another with no suspension between, and how many: a poll
    /// that may never end
    /// ([`crate::hooks::SPIN_LIMIT`]).
    pub(crate) polls: Cell<(usize, u32)>,
}

/// One `cp.async`: `len` bytes (source bytes, then zeros) for shared
/// memory at `dst`.
pub(crate) struct PendingCopy {
    pub(crate) dst: usize,
    pub(crate) data: [u8; 16],
    pub(crate) len: usize,
    pub(crate) site: Site,
}

/// One TMA store (`cp.async.bulk.tensor` to global): the box of `map` at
/// `xy`, from shared memory at `src`. Its shared bytes are read, and its
/// global ones written, when a bulk wait of the issuing thread completes
/// its group: the latest the hardware may read them, so that a buffer
/// rewritten before that wait shows as a race or as wrong results.
pub(crate) struct PendingStore {
    pub(crate) map: crate::tma::Map,
    pub(crate) xyz: (i64, i64, i64),
    /// A reduction (`cp.reduce.async.bulk.tensor .add`, `f32`): each
    /// element added to the matrix's, atomically, rather than stored.
    pub(crate) add: bool,
    pub(crate) src: usize,
    pub(crate) site: Site,
}

/// Asynchronous work of one kind a thread has issued and not waited for,
/// in PTX's commit groups: what was issued since the last commit, then
/// the committed groups, oldest first.
pub(crate) struct Groups<T> {
    open: Vec<T>,
    committed: std::collections::VecDeque<Vec<T>>,
}

impl<T> Default for Groups<T> {
    fn default() -> Self {
        Groups { open: Vec::new(), committed: Default::default() }
    }
}

impl<T> Groups<T> {
    pub(crate) fn issue(&mut self, x: T) {
        self.open.push(x);
    }

    /// `commit_group`: what was issued since the last commit is a group.
    pub(crate) fn commit(&mut self) {
        let group = std::mem::take(&mut self.open);
        self.committed.push_back(group);
    }

    /// For `wait_group n`: the oldest committed group while more than `n`
    /// are, else `None`.
    pub(crate) fn retire(&mut self, n: usize) -> Option<Vec<T>> {
        if self.committed.len() <= n { None } else { self.committed.pop_front() }
    }

    /// Everything not waited for, oldest first.
    fn pending(&self) -> impl Iterator<Item = &T> {
        self.committed.iter().flatten().chain(&self.open)
    }
}

/// The asynchronous work a thread has in flight.
#[derive(Default)]
pub(crate) struct AsyncCopies {
    /// `cp.async` copies.
    pub(crate) copies: Groups<PendingCopy>,
    /// TMA stores (bulk groups).
    pub(crate) bulk: Groups<PendingStore>,
    /// The shared operands of `wgmma`s: `(address, bytes, site)`.
    pub(crate) wgmma: Groups<(usize, usize, Site)>,
}

impl AsyncCopies {
    /// What a thread exiting now would leave in flight: `cp.async` copies,
    /// TMA stores or `wgmma`s it never waited for, as the error's message.
    pub(crate) fn left_over(&self) -> Option<String> {
        if let Some(first) = self.copies.pending().next() {
            return Some(format!(
                "exited with {} cp.async copies never waited for, the first issued at {}",
                self.copies.pending().count(),
                first.site
            ));
        }
        if let Some(first) = self.bulk.pending().next() {
            return Some(format!(
                "exited with TMA stores never waited for (cp.async.bulk.wait_group), the first issued at {}",
                first.site
            ));
        }
        let first = self.wgmma.pending().next()?;
        Some(format!(
            "exited with wgmma operands in shared memory never waited for (wgmma.wait_group), the first \
             issued at {}",
            first.2
        ))
    }
}

/// What a launch remembers across its blocks, which the OS threads
/// running its clusters share.
pub(crate) struct LaunchState {
    pub(crate) global: GlobalShadow,
    /// What releases through each atomic word have published, keyed by
    /// the word's address and, for a shared word, its block (shared
    /// addresses repeat between blocks).
    pub(crate) published: Mutex<std::collections::HashMap<(Option<u32>, usize), Knowledge>>,
    /// A dependent launch ([`crate::LaunchSpec::dependent`]).
    pub(crate) dependent: bool,
    /// Races and uninitialized reads are checked ([`crate::LaunchSpec::checks`]).
    pub(crate) checks: bool,
    /// For a run whose report may be thrown away (a parallel one): the
    /// bytes the launch may write, as they were before it, by address.
    saved: Option<Mutex<Vec<Saved>>>,
    /// A parallel run stopped because a thread polled a word past the
    /// limit: the launch's outcome is the sequential run's, whatever it
    /// finds (the word may have been waiting on a block running beside).
    pub(crate) polled_out: std::sync::atomic::AtomicBool,
}

/// Bytes of device memory as they were before a launch, and where.
type Saved = (usize, Vec<u8>);

impl LaunchState {
    /// A launch's state; with `save`, the launch's buffers are copied
    /// first, so that [`LaunchState::restore`] can put them back.
    pub(crate) fn new(spec: &crate::LaunchSpec, save: bool) -> LaunchState {
        let saved = save.then(|| {
            // SAFETY: each buffer is device memory of the launch, this
            // many bytes long, which no kernel is running on yet.
            let copy =
                |b: &Buffer| unsafe { std::slice::from_raw_parts(b.addr as *const u8, b.bytes) }.to_vec();
            Mutex::new(spec.buffers.iter().map(|b| (b.addr, copy(b))).collect())
        });
        LaunchState {
            global: GlobalShadow::new(spec.buffers.iter().map(|b| (b.addr, b.bytes))),
            published: Default::default(),
            dependent: spec.dependent,
            checks: spec.checks,
            saved,
            polled_out: Default::default(),
        }
    }

    /// Whether this run's report may be thrown away (a parallel run).
    pub(crate) fn parallel(&self) -> bool {
        self.saved.is_some()
    }

    /// Before the copy engine writes global memory at `addr` through a
    /// tensor map (in any live allocation, not only the launch's
    /// buffers): the allocation's bytes are kept, the first time, when
    /// the launch is saving.
    pub(crate) fn before_map_write(&self, addr: usize) {
        let Some(saved) = &self.saved else { return };
        let Some((base, bytes)) = crate::allocations::containing(addr, 1) else { return };
        let mut saved = lock(saved);
        if !saved.iter().any(|(at, copy)| (*at..at + copy.len()).contains(&addr)) {
            // SAFETY: a live allocation of `bytes`; the launch's writes to
            // it all come here first, under this lock, so none has yet.
            saved.push((base, unsafe { std::slice::from_raw_parts(base as *const u8, bytes) }.to_vec()));
        }
    }

    /// Puts back what [`LaunchState::new`] and
    /// [`LaunchState::before_map_write`] kept (the run has ended).
    pub(crate) fn restore(&self) {
        if let Some(saved) = &self.saved {
            for (at, copy) in lock(saved).iter() {
                // SAFETY: the memory the copy was taken from, still live
                // (the launch's caller holds it), and no kernel runs on it.
                unsafe { std::ptr::copy_nonoverlapping(copy.as_ptr(), *at as *mut u8, copy.len()) };
            }
        }
    }
}

/// A lock of the launch's state; a kernel's panic, caught as its error,
/// leaves no half-made change behind one.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One block being run.
pub(crate) struct BlockCtx<'a> {
    pub(crate) kernel: &'a str,
    pub(crate) block: [u32; 3],
    pub(crate) linear: u32,
    pub(crate) block_dim: [u32; 3],
    pub(crate) grid_dim: [u32; 3],
    /// Its rank in its cluster (`%cluster_ctarank`) and the cluster's shape.
    pub(crate) rank: u32,
    pub(crate) cluster_dim: [u32; 3],
    pub(crate) shared: *mut u8,
    pub(crate) shared_len: usize,
    pub(crate) buffers: &'a [Buffer<'a>],
    /// Barriers passed: accesses in different epochs never race.
    pub(crate) epoch: Cell<u32>,
    pub(crate) words: RefCell<Vec<SharedWord>>,
    pub(crate) warps: RefCell<Vec<Option<Box<WarpSyncs>>>>,
    /// Per warp, the lanes that have exited.
    pub(crate) exited: RefCell<Vec<u32>>,
    /// The first read of a shared word nothing wrote, in this epoch.
    pub(crate) uninitialized: RefCell<Option<EmuError>>,
    pub(crate) launch: &'a LaunchState,
    pub(crate) recorder: Option<RefCell<Recorder>>,
    /// mbarriers and TMA copies.
    pub(crate) proxy: RefCell<Proxy>,
}

impl BlockCtx<'_> {
    pub(crate) fn thread_index(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.block_dim;
        [linear % bx, linear / bx % by, linear / (bx * by)]
    }

    pub(crate) fn block_index(&self, linear: u32) -> [u32; 3] {
        let [gx, gy, _] = self.grid_dim;
        [linear % gx, linear / gx % gy, linear / (gx * gy)]
    }

    pub(crate) fn actor(&self, a: &Access) -> Actor {
        Actor {
            block: self.block_index(a.block),
            thread: self.thread_index(a.thread),
            access: a.kind.name(),
            site: a.site.to_string(),
        }
    }

    /// The word at `addr`, named for a report.
    pub(crate) fn word_name(&self, space: Space, addr: usize) -> String {
        match space {
            Space::Shared => format!("the word at byte {} of shared memory", addr - self.shared as usize),
            Space::Global => match self.buffers.iter().find(|b| addr >= b.addr && addr < b.addr + b.bytes) {
                Some(b) => format!("the word at byte {} of `{}`", addr - b.addr, b.name),
                None => match crate::allocations::containing(addr, 1) {
                    Some((base, _)) => {
                        format!(
                            "the word at byte {} of the allocation at {base:#x} (through a tensor map)",
                            addr - base
                        )
                    }
                    None => format!("the word at {addr:#x}"),
                },
            },
        }
    }
}

// The running block and thread, read by every hook: plain thread-local
// statics (one `fs`-relative load each), not `thread_local!`'s accessor.
#[thread_local]
pub(crate) static BLOCK: Cell<*const BlockCtx<'static>> = Cell::new(std::ptr::null());
#[thread_local]
pub(crate) static THREAD: Cell<*const ThreadCtx> = Cell::new(std::ptr::null());
/// The blocks of the running cluster, by rank.
#[thread_local]
pub(crate) static CLUSTER: Cell<(*const BlockCtx<'static>, usize)> = Cell::new((std::ptr::null(), 0));

pub(crate) fn block() -> &'static BlockCtx<'static> {
    let p = BLOCK.get();
    assert!(!p.is_null(), "a device function was called outside an emulated launch");
    // SAFETY: set by `run_cluster` before every resume of a thread of this
    // block, and cleared before the block goes out of scope.
    unsafe { &*p }
}

pub(crate) fn thread() -> &'static ThreadCtx {
    let p = THREAD.get();
    assert!(!p.is_null(), "a device function was called outside an emulated thread");
    // SAFETY: set by the scheduler before every resume of this thread.
    unsafe { &*p }
}

/// Block `rank` of the running thread's cluster, for `what` it does there
/// (an error if there is no such block, or if it has exited: its shared
/// memory is gone).
pub(crate) fn peer(rank: u32, what: &str, site: Site) -> &'static BlockCtx<'static> {
    let (first, len) = CLUSTER.get();
    if rank as usize >= len {
        async_misuse(format!("{what} block {rank} of its cluster, which has {len} blocks"), site);
    }
    // SAFETY: `run_cluster` sets the cluster's blocks for its duration.
    let peer = unsafe { &*first.add(rank as usize) };
    let threads = peer.block_dim.iter().product::<u32>();
    if peer.exited.borrow().iter().map(|w| w.count_ones()).sum::<u32>() == threads {
        async_misuse(format!("{what} block {rank} of its cluster, which has exited"), site);
    }
    peer
}

pub(crate) fn suspend(event: Event) -> u64 {
    let t = thread();
    // Giving way ends a poll: the word may change before the next read.
    t.polls.set((0, 0));
    let y = t.yielder.get();
    // SAFETY: the yielder of the coroutine this thread runs in.
    unsafe { (*y).suspend(event) }
}

pub(crate) fn out_of_bounds(space: Space, detail: String, site: Site) -> ! {
    let (b, t) = (block(), thread());
    std::panic::panic_any(EmuError::OutOfBounds {
        kernel: b.kernel.to_string(),
        block: b.block,
        thread: t.idx,
        space: space.name(),
        detail,
        site: site.to_string(),
    })
}

/// A misuse of the asynchronous proxy by the running thread, raised.
pub(crate) fn async_misuse(detail: proxy::Misuse, site: Site) -> ! {
    let (b, t) = (block(), thread());
    std::panic::panic_any(proxy::error(b.kernel, b.block, t.idx, detail, site))
}

/// Where a thread is.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum State {
    Runnable,
    Barrier(Site),
    WarpSync { mask: u32, site: Site },
    Shuffle { mask: u32, op: ShflOp, bits: u64, site: Site },
    MbarrierWait { addr: usize, parity: u32, site: Site },
    ClusterBarrier(Site),
    Exited,
}
