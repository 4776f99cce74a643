//! The emulator's launch, scheduler and the hooks the device-support layer
//! calls.

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::analysis::{Analysis, Recorder};
use super::memory::{GlobalWords, Hazard, SharedWord, word_value};
use super::order::{Access, Kind, Knowledge, Observer, Release, WarpSyncs};
use super::proxy::{self, Proxy};
use super::report::{Actor, EmuError, Race, who};

/// What to launch: the kernel's name (for error messages), its block and
/// grid, the bytes of launch-sized shared memory per block, and the device
/// buffers it may touch.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub name: &'a str,
    pub block: [u32; 3],
    pub grid: [u32; 3],
    /// Blocks per thread-block cluster (`[1, 1, 1]`: none). The blocks of a
    /// cluster run together, each with its own shared memory.
    pub cluster: [u32; 3],
    pub shared_bytes: usize,
    /// Every buffer passed to the launch: the only global memory the
    /// kernel may touch.
    pub buffers: &'a [Buffer<'a>],
    /// Record accesses for the bank-conflict and coalescing analysis
    /// (slower); races, bounds and barriers are always checked.
    pub analyze: bool,
}

/// A device buffer passed to a launch, named as the kernel's parameter.
#[derive(Clone, Copy, Debug)]
pub struct Buffer<'a> {
    pub name: &'a str,
    pub addr: usize,
    pub bytes: usize,
}

/// Which memory an access is to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    Shared,
    Global,
}

impl Space {
    fn name(self) -> &'static str {
        match self {
            Space::Shared => "shared",
            Space::Global => "global",
        }
    }
}

/// What an access does.
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    Read,
    /// A read the kernel declares may see a word nobody wrote (no
    /// uninitialized-read report).
    ReadMaybeUninit,
    /// A write of these bytes.
    Write(&'a [u8]),
    /// A write whose bytes the hook does not see (through a `&mut`).
    WriteUnknown,
    /// An atomic load (`write: false`), store or read-modify-write.
    Atomic {
        write: bool,
        order: Ordering,
    },
}

/// The shuffle a lane asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflOp {
    /// Lane `i` gets lane `i + delta` (its own past the warp).
    Down(u32),
    /// Lane `i` gets lane `i - delta` (its own below lane 0).
    Up(u32),
    /// Lane `i` gets lane `i ^ mask`.
    Xor(u32),
    /// Every lane gets lane `src`.
    Idx(u32),
    /// `shfl.sync.{mode}.b32 d|p, a, b, c, mask` exactly as the PTX ISA
    /// defines it (`mode`: 0 up, 1 down, 2 bfly, 3 idx; `c` packs the
    /// clamp and the segment mask): the lane receives the 32-bit value
    /// with the predicate in bit 32.
    Sync { mode: u32, b: u32, c: u32 },
    /// `vote.sync.ballot.b32`: every lane receives the mask of lanes whose
    /// value (bit 0) is 1.
    Ballot,
}

/// Where in the kernel source a device operation is.
pub type Site = &'static Location<'static>;

/// Why a thread's coroutine handed control back.
enum Event {
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
}

/// One CUDA thread.
struct ThreadCtx {
    idx: [u32; 3],
    linear: u32,
    yielder: Cell<*const Yielder<u64, Event>>,
    /// Per-lane counters of shared/global loads/stores: the k of "the k-th
    /// access" that groups lanes into warp requests.
    counters: [Cell<u32>; 4],
    /// `cp.async` copies issued and not yet landed: those since the last
    /// commit, then the committed groups, oldest first.
    copies: RefCell<AsyncCopies>,
    /// Fences and atomics so far ([`Access::seq`]).
    seq: Cell<u32>,
    /// The release point of this thread's last fence.
    last_fence: Cell<Option<Release>>,
    /// What this thread has acquired (shared with its block after a
    /// barrier).
    knowledge: RefCell<Rc<Knowledge>>,
    /// Learned by relaxed atomics, acquired at the next fence.
    pending: RefCell<Knowledge>,
    /// The lanes of its warp that had exited when this thread last
    /// converged with the others (a barrier, `sync_warp` or shuffle it took
    /// part in): what `activemask` leaves out.
    exited_at_sync: Cell<u32>,
}

/// One `cp.async`: `len` bytes (source bytes, then zeros) for shared
/// memory at `dst`.
struct PendingCopy {
    dst: usize,
    data: [u8; 16],
    len: usize,
    site: Site,
}

#[derive(Default)]
struct AsyncCopies {
    open: Vec<PendingCopy>,
    groups: std::collections::VecDeque<Vec<PendingCopy>>,
}

impl AsyncCopies {
    fn in_flight(&self) -> usize {
        self.open.len() + self.groups.iter().map(Vec::len).sum::<usize>()
    }
}

/// What a launch remembers across its blocks.
struct LaunchState {
    global: RefCell<GlobalWords>,
    /// What releases through each atomic word have published, keyed by
    /// the word's address and, for a shared word, its block (shared
    /// addresses repeat between blocks).
    published: RefCell<std::collections::HashMap<(Option<u32>, usize), Knowledge>>,
}

/// One block being run.
struct BlockCtx<'a> {
    kernel: &'a str,
    block: [u32; 3],
    linear: u32,
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
    /// Its rank in its cluster (`%cluster_ctarank`) and the cluster's shape.
    rank: u32,
    cluster_dim: [u32; 3],
    shared: *mut u8,
    shared_len: usize,
    buffers: &'a [Buffer<'a>],
    /// Barriers passed: accesses in different epochs never race.
    epoch: Cell<u32>,
    words: RefCell<Vec<SharedWord>>,
    warps: RefCell<Vec<Option<Box<WarpSyncs>>>>,
    /// Per warp, the lanes that have exited.
    exited: RefCell<Vec<u32>>,
    /// The first read of a shared word nothing wrote, in this epoch.
    uninitialized: RefCell<Option<EmuError>>,
    launch: &'a LaunchState,
    recorder: Option<RefCell<Recorder>>,
    /// mbarriers and TMA copies.
    proxy: RefCell<Proxy>,
}

impl BlockCtx<'_> {
    fn thread_index(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.block_dim;
        [linear % bx, linear / bx % by, linear / (bx * by)]
    }

    fn block_index(&self, linear: u32) -> [u32; 3] {
        let [gx, gy, _] = self.grid_dim;
        [linear % gx, linear / gx % gy, linear / (gx * gy)]
    }

    fn actor(&self, a: &Access) -> Actor {
        Actor {
            block: self.block_index(a.block),
            thread: self.thread_index(a.thread),
            access: a.kind.name(),
            site: a.site.to_string(),
        }
    }

    /// The word at `addr`, named for a report.
    fn word_name(&self, space: Space, addr: usize) -> String {
        match space {
            Space::Shared => format!("the word at byte {} of shared memory", addr - self.shared as usize),
            Space::Global => match self.buffers.iter().find(|b| addr >= b.addr && addr < b.addr + b.bytes) {
                Some(b) => format!("the word at byte {} of `{}`", addr - b.addr, b.name),
                None => format!("the word at {addr:#x}"),
            },
        }
    }
}

std::thread_local! {
    static BLOCK: Cell<*const BlockCtx<'static>> = const { Cell::new(std::ptr::null()) };
    static THREAD: Cell<*const ThreadCtx> = const { Cell::new(std::ptr::null()) };
    /// The blocks of the running cluster, by rank.
    static CLUSTER: Cell<(*const BlockCtx<'static>, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

fn block() -> &'static BlockCtx<'static> {
    let p = BLOCK.with(Cell::get);
    assert!(!p.is_null(), "a device function was called outside an emulated launch");
    // SAFETY: set by `run_block` for the duration of the block.
    unsafe { &*p }
}

fn thread() -> &'static ThreadCtx {
    let p = THREAD.with(Cell::get);
    assert!(!p.is_null(), "a device function was called outside an emulated thread");
    // SAFETY: set by the scheduler before every resume of this thread.
    unsafe { &*p }
}

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

/// Block `rank` of the running thread's cluster, for `what` it does there
/// (an error if there is no such block, or if it has exited: its shared
/// memory is gone).
fn peer(rank: u32, what: &str, site: Site) -> &'static BlockCtx<'static> {
    let (first, len) = CLUSTER.with(Cell::get);
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

fn suspend(event: Event) -> u64 {
    let y = thread().yielder.get();
    // SAFETY: the yielder of the coroutine this thread runs in.
    unsafe { (*y).suspend(event) }
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

fn out_of_bounds(space: Space, detail: String, site: Site) -> ! {
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

fn check_bounds(space: Space, addr: usize, bytes: usize, site: Site) {
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

/// Checks, records and orders one access of `bytes` at `addr`: bounds,
/// uninitialized shared reads, races; for atomics, the release and
/// acquire they make.
pub fn access(space: Space, addr: usize, bytes: usize, op: Op, site: Site) {
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

/// [`access`] without its effects: bounds, analysis and word checks.
fn checked_access(space: Space, addr: usize, bytes: usize, op: Op, site: Site) -> Kind {
    check_bounds(space, addr, bytes, site);
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
fn check_words(
    space: Space,
    addr: usize,
    bytes: usize,
    kind: Kind,
    data: Option<&[u8]>,
    may_be_uninit: bool,
    site: Site,
) {
    let (b, t) = (block(), thread());
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
            Space::Global => b.launch.global.borrow_mut().entry(word).or_default().access(me, value, &order),
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
fn mark_written(addr: usize, bytes: usize) {
    let b = block();
    let mut words = b.words.borrow_mut();
    let base = b.shared as usize;
    for word in (addr & !3..addr + bytes).step_by(4) {
        words[(word - base) / 4].written = true;
    }
}

fn warp_generation(b: &BlockCtx, thread: u32) -> u32 {
    b.warps.borrow().get((thread / 32) as usize).and_then(Option::as_ref).map_or(0, |w| w.generation)
}

/// The release and acquire an atomic on `addr` makes.
fn atomic_order(word: (Option<u32>, usize), order: Ordering) {
    let (b, t) = (block(), thread());
    let releases = matches!(order, Ordering::Release | Ordering::AcqRel | Ordering::SeqCst);
    let acquires = matches!(order, Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst);
    let release =
        if releases { Some(Release { epoch: b.epoch.get(), seq: t.seq.get() }) } else { t.last_fence.get() };
    let mut published = b.launch.published.borrow_mut();
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

/// A fence (`__threadfence`): releases what came before it to this
/// thread's later atomics, and acquires what its earlier relaxed atomics
/// learned.
pub fn fence() {
    let (b, t) = (block(), thread());
    t.last_fence.set(Some(Release { epoch: b.epoch.get(), seq: t.seq.get() }));
    t.seq.set(t.seq.get() + 1);
    let pending = std::mem::take(&mut *t.pending.borrow_mut());
    if !pending.is_empty() {
        Rc::make_mut(&mut t.knowledge.borrow_mut()).merge(&pending);
    }
}

/// `cp.async` of `size` bytes from global `src` (of which `src_bytes` are
/// read, the rest zero) to shared `dst`: the global read and the bounds,
/// race and bank checks happen now, the bytes land at [`copy_wait`].
pub fn copy_async(dst: usize, src: usize, size: usize, src_bytes: usize, site: Site) {
    let mut data = [0u8; 16];
    if src_bytes > 0 {
        checked_access(Space::Global, src, src_bytes, Op::Read, site);
        // SAFETY: `access` checked that the bytes lie in a buffer of the launch.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, data.as_mut_ptr(), src_bytes.min(size)) };
    }
    // Race-checked now; the words count as written when the copy lands.
    checked_access(Space::Shared, dst, size, Op::Write(&data[..size]), site);
    thread().copies.borrow_mut().open.push(PendingCopy { dst, data, len: size, site });
}

/// `cp.async.commit_group`.
pub fn copy_commit() {
    let mut copies = thread().copies.borrow_mut();
    let group = std::mem::take(&mut copies.open);
    copies.groups.push_back(group);
}

/// `cp.async.wait_group n`: the copies of all but the `n` newest groups
/// land (and are race-checked again: the write may happen any time from
/// the copy to the wait).
pub fn copy_wait(n: usize) {
    let t = thread();
    loop {
        let group = {
            let mut copies = t.copies.borrow_mut();
            if copies.groups.len() <= n {
                return;
            }
            copies.groups.pop_front().unwrap()
        };
        for c in group {
            check_bounds(Space::Shared, c.dst, c.len, c.site);
            check_words(Space::Shared, c.dst, c.len, Kind::Write, Some(&c.data[..c.len]), true, c.site);
            mark_written(c.dst, c.len);
            // SAFETY: checked to lie within the block's shared memory.
            unsafe { std::ptr::copy_nonoverlapping(c.data.as_ptr(), c.dst as *mut u8, c.len) };
        }
    }
}

/// A misuse of the asynchronous proxy by the running thread, raised.
fn async_misuse(detail: proxy::Misuse, site: Site) -> ! {
    let (b, t) = (block(), thread());
    std::panic::panic_any(proxy::error(b.kernel, b.block, t.idx, detail, site))
}

/// The offset in the block's shared memory of an mbarrier at `addr`,
/// checked in bounds and 8-byte aligned.
fn mbarrier_offset(addr: usize, site: Site) -> usize {
    check_bounds(Space::Shared, addr, 8, site);
    let offset = addr - block().shared as usize;
    if !offset.is_multiple_of(8) {
        async_misuse(format!("uses an mbarrier at shared byte {offset}, not on 8 bytes"), site);
    }
    offset
}

/// `mbarrier.init.shared::cta.b64 [addr], count`.
pub fn mbarrier_init(addr: usize, count: u32, site: Site) {
    let offset = mbarrier_offset(addr, site);
    block().proxy.borrow_mut().init(offset, count).unwrap_or_else(|e| async_misuse(e, site));
}

/// `mbarrier.arrive` on the barrier at `addr`, after `expect_tx` of `tx`
/// bytes (0: a plain arrive).
pub fn mbarrier_arrive(addr: usize, tx: u32, site: Site) {
    let offset = mbarrier_offset(addr, site);
    block().proxy.borrow_mut().arrive(offset, tx).unwrap_or_else(|e| async_misuse(e, site));
}

/// Waits until the phase of parity `parity` of the mbarrier at `addr` has
/// completed (`mbarrier.try_wait.parity` in a loop); the copies it counted
/// land now.
pub fn mbarrier_wait(addr: usize, parity: u32, site: Site) {
    let offset = mbarrier_offset(addr, site);
    let done = |p: &mut Proxy| p.completed(offset, parity).unwrap_or_else(|e| async_misuse(e, site));
    if !done(&mut block().proxy.borrow_mut()) {
        suspend(Event::MbarrierWait { addr: offset, parity, site });
    }
    let landed = block().proxy.borrow_mut().land(offset).unwrap_or_else(|e| async_misuse(e, site));
    let base = block().shared as usize;
    for (dst, data) in landed {
        mark_written(base + dst, data.len());
        // SAFETY: checked to lie within the block's shared memory when the
        // copy was issued.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), (base + dst) as *mut u8, data.len()) };
    }
}

/// `mbarrier.arrive.shared::cluster` on the mbarrier at
/// the offset of `addr` in the shared memory of block `rank` of the
/// cluster (`mapa`).
pub fn mbarrier_arrive_peer(addr: usize, rank: u32, site: Site) {
    let offset = mbarrier_offset(addr, site);
    let to = peer(rank, "arrives on an mbarrier of", site);
    to.proxy
        .borrow_mut()
        .arrive(offset, 0)
        .unwrap_or_else(|e| async_misuse(format!("{e}, in block {rank} of its cluster"), site));
}

/// A TMA multicast: `data` to shared `dst` in every block of the cluster
/// whose rank is a bit of `mask`, each counting the bytes on its mbarrier
/// at the offset of `bar`.
pub fn tma_copy_multicast(bar: usize, dst: usize, data: Vec<u8>, mask: u16, site: Site) {
    let offset = mbarrier_offset(bar, site);
    check_bounds(Space::Shared, dst, data.len(), site);
    let dst = dst - block().shared as usize;
    if mask == 0 {
        async_misuse("multicasts a TMA copy to no block (mask 0)".into(), site);
    }
    for rank in (0..16).filter(|r| mask & (1 << r) != 0) {
        let to = peer(rank, "multicasts a TMA copy to", site);
        to.proxy
            .borrow_mut()
            .copy(offset, dst, data.clone(), site)
            .unwrap_or_else(|e| async_misuse(format!("{e}, in block {rank} of its cluster"), site));
    }
}

/// A TMA copy of `data` (read from global memory by the caller, through
/// [`async_read`]) to shared `dst`, completing `data.len()`
/// transaction bytes on the mbarrier at `bar`.
pub fn tma_copy(bar: usize, dst: usize, data: Vec<u8>, site: Site) {
    let offset = mbarrier_offset(bar, site);
    check_bounds(Space::Shared, dst, data.len(), site);
    let dst = dst - block().shared as usize;
    block().proxy.borrow_mut().copy(offset, dst, data, site).unwrap_or_else(|e| async_misuse(e, site));
}

/// A read by the asynchronous proxy (a TMA copy's source in global memory,
/// a `wgmma` operand in shared memory): bounds, races with the block's
/// writes, and for shared memory, bytes a copy has not landed in and
/// words nothing wrote; not counted in the access analysis.
pub fn async_read(space: Space, addr: usize, bytes: usize, site: Site) {
    check_bounds(space, addr, bytes, site);
    if space == Space::Shared {
        let offset = addr - block().shared as usize;
        if let Some(why) = block().proxy.borrow().read_before_landing(offset, bytes) {
            async_misuse(why, site);
        }
    }
    check_words(space, addr, bytes, Kind::Read, None, false, site);
}

/// Where a thread is.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Runnable,
    Barrier(Site),
    WarpSync { mask: u32, site: Site },
    Shuffle { mask: u32, op: ShflOp, bits: u64, site: Site },
    MbarrierWait { addr: usize, parity: u32, site: Site },
    ClusterBarrier(Site),
    Exited,
}

/// The payload of a panic raised in a kernel, as an error.
fn panic_error(payload: Box<dyn std::any::Any + Send>, b: &BlockCtx, t: [u32; 3]) -> EmuError {
    match payload.downcast::<EmuError>() {
        Ok(e) => *e,
        Err(payload) => {
            let mut message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            if let Some(site) = PANIC_SITE.with(|s| s.borrow_mut().take()) {
                message = format!("{message} (at {site})");
            }
            EmuError::Panic { kernel: b.kernel.to_string(), block: b.block, thread: t, message }
        }
    }
}

std::thread_local! {
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic inside a kernel was raised.
    static PANIC_SITE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics inside emulated kernels are errors the launch returns; keep the
/// default hook from printing them.
fn quiet_kernel_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_KERNEL.with(Cell::get) {
                PANIC_SITE.with(|s| *s.borrow_mut() = info.location().map(|l| l.to_string()));
            } else {
                previous(info);
            }
        }));
    });
}

const STACK_BYTES: usize = 256 * 1024;

/// Runs a kernel on the emulator: every block of `spec.grid`, one cluster
/// after another (a block is a cluster of one without `spec.cluster`), each
/// thread running `body`. Returns the access analysis (empty unless
/// `spec.analyze`).
pub fn launch(spec: &Launch, body: &dyn Fn()) -> Result<Analysis, EmuError> {
    quiet_kernel_panics();
    let [bx, by, bz] = spec.block;
    let threads = bx as usize * by as usize * bz as usize;
    if threads == 0 || threads > 1024 {
        return Err(EmuError::BadLaunch(format!("{}: {threads} threads per block", spec.name)));
    }
    let [cx, cy, cz] = spec.cluster;
    let size = cx as usize * cy as usize * cz as usize;
    if size == 0 || size > 8 {
        return Err(EmuError::BadLaunch(format!("{}: {size} blocks per cluster (1 to 8)", spec.name)));
    }
    let [gx, gy, gz] = spec.grid;
    if gx % cx != 0 || gy % cy != 0 || gz % cz != 0 {
        return Err(EmuError::BadLaunch(format!(
            "{}: grid {gx}x{gy}x{gz} is not a whole number of {cx}x{cy}x{cz} clusters",
            spec.name
        )));
    }
    // Launch-sized shared memory per block of a cluster, 16-byte aligned
    // like the device's.
    let mut shared: Vec<Vec<u128>> =
        (0..size).map(|_| std::vec![0u128; spec.shared_bytes.div_ceil(16).max(1)]).collect();
    let mut stacks: Vec<DefaultStack> = Vec::new();
    let mut analysis = Analysis::default();
    let state = LaunchState { global: Default::default(), published: Default::default() };
    for z0 in (0..gz).step_by(cz as usize) {
        for y0 in (0..gy).step_by(cy as usize) {
            for x0 in (0..gx).step_by(cx as usize) {
                let ctxs: Vec<BlockCtx> = shared
                    .iter_mut()
                    .enumerate()
                    .map(|(rank, memory)| {
                        // Fresh shared memory content per block is not
                        // guaranteed on a GPU; fill it with a NaN pattern, so
                        // that a read the kernel opted out of checking still
                        // shows in its output.
                        for w in memory.iter_mut() {
                            *w = 0x7fc0_dead_7fc0_dead_7fc0_dead_7fc0_dead;
                        }
                        let r = rank as u32;
                        let (x, y, z) = (x0 + r % cx, y0 + r / cx % cy, z0 + r / (cx * cy));
                        BlockCtx {
                            kernel: spec.name,
                            block: [x, y, z],
                            linear: (z * gy + y) * gx + x,
                            block_dim: spec.block,
                            grid_dim: spec.grid,
                            rank: r,
                            cluster_dim: spec.cluster,
                            shared: memory.as_mut_ptr() as *mut u8,
                            shared_len: spec.shared_bytes,
                            buffers: spec.buffers,
                            epoch: Cell::new(0),
                            words: RefCell::new(std::vec![
                                SharedWord { epoch: u32::MAX, ..Default::default() };
                                spec.shared_bytes.div_ceil(4)
                            ]),
                            warps: RefCell::new(Vec::new()),
                            uninitialized: RefCell::new(None),
                            exited: RefCell::new(std::vec![0; threads.div_ceil(32)]),
                            launch: &state,
                            recorder: spec.analyze.then(|| RefCell::new(Recorder::default())),
                            proxy: Default::default(),
                        }
                    })
                    .collect();
                run_cluster(&ctxs, body, &mut stacks)?;
                for ctx in ctxs {
                    if let Some(r) = ctx.recorder {
                        analysis.add(&r.into_inner().finish());
                    }
                }
            }
        }
    }
    Ok(analysis)
}

type Thread = Coroutine<u64, Event, (), DefaultStack>;

/// Runs the blocks of one cluster to their end: every thread of each is a
/// coroutine, `n` per block, thread `i` of block `b` at `b n + i`.
fn run_cluster(ctxs: &[BlockCtx], body: &dyn Fn(), stacks: &mut Vec<DefaultStack>) -> Result<(), EmuError> {
    let n = ctxs[0].block_dim.iter().product::<u32>() as usize;
    let all = ctxs.len() * n;
    // SAFETY: `ctxs` outlives every use through CLUSTER and BLOCK: they are
    // cleared below before `ctxs` goes out of scope, on every path.
    CLUSTER.with(|c| c.set((ctxs.as_ptr().cast::<BlockCtx<'static>>(), ctxs.len())));
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            BLOCK.with(|c| c.set(std::ptr::null()));
            THREAD.with(|c| c.set(std::ptr::null()));
            CLUSTER.with(|c| c.set((std::ptr::null(), 0)));
            IN_KERNEL.with(|c| c.set(false));
        }
    }
    let _clear = Clear;

    let threads: Vec<Box<ThreadCtx>> = (0..all)
        .map(|g| {
            let linear = (g % n) as u32;
            Box::new(ThreadCtx {
                idx: ctxs[g / n].thread_index(linear),
                linear,
                yielder: Cell::new(std::ptr::null()),
                counters: Default::default(),
                copies: Default::default(),
                seq: Cell::new(0),
                last_fence: Cell::new(None),
                knowledge: Default::default(),
                pending: Default::default(),
                exited_at_sync: Cell::new(0),
            })
        })
        .collect();
    // The coroutines must be 'static: they get the body as a raw pointer.
    let body_ptr: *const (dyn Fn() + '_) = body;
    // SAFETY: only erases the lifetime; see the use below.
    let body_ptr: *const (dyn Fn() + 'static) = unsafe { std::mem::transmute(body_ptr) };
    let mut coroutines: Vec<Option<Thread>> = threads
        .iter()
        .map(|t| {
            let stack =
                stacks.pop().unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("a coroutine stack"));
            let tp: *const ThreadCtx = &**t;
            Some(Coroutine::with_stack(stack, move |y: &Yielder<u64, Event>, _: u64| {
                // SAFETY: `tp` and `body_ptr` outlive the coroutine, which
                // `run_cluster` drives to completion or drops before
                // returning.
                unsafe { (*tp).yielder.set(y) };
                unsafe { (*body_ptr)() };
            }))
        })
        .collect();
    let mut state = std::vec![State::Runnable; all];
    let mut input = std::vec![0u64; all];

    loop {
        let mut ran = false;
        for g in 0..all {
            if state[g] != State::Runnable {
                continue;
            }
            ran = true;
            let (ctx, i) = (&ctxs[g / n], g % n);
            BLOCK.with(|c| c.set(std::ptr::from_ref(ctx).cast::<BlockCtx<'static>>()));
            THREAD.with(|c| c.set(&*threads[g]));
            IN_KERNEL.with(|c| c.set(true));
            let co = coroutines[g].as_mut().unwrap();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.resume(input[g])));
            IN_KERNEL.with(|c| c.set(false));
            match result {
                Ok(CoroutineResult::Yield(Event::Barrier(site))) => state[g] = State::Barrier(site),
                Ok(CoroutineResult::Yield(Event::ClusterBarrier(site))) => {
                    state[g] = State::ClusterBarrier(site)
                }
                Ok(CoroutineResult::Yield(Event::WarpSync { mask, site })) => {
                    state[g] = State::WarpSync { mask, site }
                }
                Ok(CoroutineResult::Yield(Event::Shuffle { mask, op, bits, site })) => {
                    state[g] = State::Shuffle { mask, op, bits, site }
                }
                Ok(CoroutineResult::Yield(Event::MbarrierWait { addr, parity, site })) => {
                    state[g] = State::MbarrierWait { addr, parity, site }
                }
                Ok(CoroutineResult::Return(())) => {
                    let copies = threads[g].copies.borrow();
                    if let Some(first) = copies.groups.iter().flatten().chain(&copies.open).next() {
                        return Err(EmuError::Panic {
                            kernel: ctx.kernel.to_string(),
                            block: ctx.block,
                            thread: threads[g].idx,
                            message: format!(
                                "exited with {} cp.async copies never waited for, the first issued at {}",
                                copies.in_flight(),
                                first.site
                            ),
                        });
                    }
                    drop(copies);
                    state[g] = State::Exited;
                    ctx.exited.borrow_mut()[i / 32] |= 1 << (i % 32);
                    if let Some(co) = coroutines[g].take() {
                        stacks.push(co.into_stack());
                    }
                }
                Err(payload) => {
                    // The panicking coroutine is finished; drop it without
                    // reusing its stack.
                    coroutines[g] = None;
                    return Err(panic_error(payload, ctx, threads[g].idx));
                }
            }
        }
        if state.iter().all(|s| *s == State::Exited) {
            for ctx in ctxs {
                if let Some(detail) = ctx.proxy.borrow().unfinished() {
                    let site = Location::caller();
                    return Err(proxy::error(ctx.kernel, ctx.block, [0, 0, 0], detail, site));
                }
                if let Some(e) = ctx.uninitialized.take() {
                    return Err(e);
                }
            }
            return Ok(());
        }
        let waiting: Vec<bool> = state.iter().map(|s| *s != State::Runnable && *s != State::Exited).collect();
        let mut progressed = ran;
        for (b, ctx) in ctxs.iter().enumerate() {
            let range = b * n..(b + 1) * n;
            progressed |= resolve_shuffles(ctx, &mut state[range.clone()], &mut input[range.clone()])?;
            progressed |= resolve_warp_syncs(ctx, &mut state[range.clone()])?;
            progressed |= resolve_mbarrier_waits(ctx, &mut state[range]);
        }
        if !progressed {
            release_a_barrier(ctxs, &threads, &mut state)?;
        }
        // The threads just released converged with their warp now.
        for (g, t) in threads.iter().enumerate() {
            if waiting[g] && state[g] == State::Runnable {
                t.exited_at_sync.set(ctxs[g / n].exited.borrow()[g % n / 32]);
            }
        }
    }
}

/// Nobody in the cluster can run and no shuffle, `sync_warp` or mbarrier
/// wait completes: a block's barrier or the cluster's must release. A
/// block whose threads all wait at a barrier (or have exited) releases it
/// or reports a divergent barrier; else the cluster's barrier releases
/// with every thread of the cluster at the same one; else it is a
/// deadlock, reported by the first block with a thread waiting elsewhere.
fn release_a_barrier(
    ctxs: &[BlockCtx],
    threads: &[Box<ThreadCtx>],
    state: &mut [State],
) -> Result<(), EmuError> {
    let n = state.len() / ctxs.len();
    for (b, ctx) in ctxs.iter().enumerate() {
        let s = &state[b * n..(b + 1) * n];
        if s.iter().all(|x| matches!(x, State::Barrier(_) | State::Exited))
            && s.iter().any(|x| matches!(x, State::Barrier(_)))
        {
            return release_barrier(ctx, &threads[b * n..(b + 1) * n], &mut state[b * n..(b + 1) * n]);
        }
    }
    if let Some(State::ClusterBarrier(first)) = state.iter().find(|s| **s != State::Exited).copied()
        && state.iter().all(|x| matches!(x, State::ClusterBarrier(_) | State::Exited))
    {
        let divergent = |b: usize, detail| EmuError::DivergentBarrier {
            kernel: ctxs[b].kernel.to_string(),
            block: ctxs[b].block,
            detail,
        };
        if let Some(g) = state.iter().position(|x| *x != State::ClusterBarrier(first)) {
            let (b, i) = (g / n, (g % n) as u32);
            let what = match state[g] {
                State::ClusterBarrier(site) => format!("waited at the cluster barrier at {site}"),
                _ => "exited".into(),
            };
            return Err(divergent(
                b,
                format!(
                    "{} {what}, while threads of the cluster waited at the cluster barrier at {first} (every \
                     thread of every block of the cluster must reach the same one)",
                    who(&[i])
                ),
            ));
        }
        // Every thread learns what any thread of the cluster acquired.
        let mut all = Knowledge::default();
        for t in threads {
            all.merge(&t.knowledge.borrow());
        }
        let all = Rc::new(all);
        for t in threads {
            *t.knowledge.borrow_mut() = Rc::clone(&all);
        }
        state.fill(State::Runnable);
        for ctx in ctxs {
            ctx.epoch.set(ctx.epoch.get() + 1);
        }
        return Ok(());
    }
    let stuck = |x: &State| !matches!(x, State::Exited | State::ClusterBarrier(_));
    let b = (0..ctxs.len())
        .find(|&b| state[b * n..(b + 1) * n].iter().any(stuck))
        .or_else(|| (0..ctxs.len()).find(|&b| state[b * n..(b + 1) * n].iter().any(|x| *x != State::Exited)))
        .unwrap_or(0);
    release_barrier(&ctxs[b], &threads[b * n..(b + 1) * n], &mut state[b * n..(b + 1) * n])
}

/// Nobody can run and no shuffle or `sync_warp` completes: a barrier must
/// release, with every thread of the block at it.
fn release_barrier(ctx: &BlockCtx, threads: &[Box<ThreadCtx>], state: &mut [State]) -> Result<(), EmuError> {
    if let Some(e) = ctx.uninitialized.take() {
        return Err(e);
    }
    let of = |pick: &dyn Fn(&State) -> bool| -> Vec<u32> {
        state.iter().enumerate().filter(|(_, s)| pick(s)).map(|(i, _)| i as u32).collect()
    };
    let at_barrier = of(&|s| matches!(s, State::Barrier(_)));
    let elsewhere = of(&|s| {
        matches!(
            s,
            State::Shuffle { .. }
                | State::WarpSync { .. }
                | State::MbarrierWait { .. }
                | State::ClusterBarrier(_)
        )
    });
    let error =
        |detail: String| EmuError::Deadlock { kernel: ctx.kernel.to_string(), block: ctx.block, detail };
    if !elsewhere.is_empty() || at_barrier.is_empty() {
        let mut sites: Vec<String> = elsewhere
            .iter()
            .filter_map(|&i| match state[i as usize] {
                State::Shuffle { site, .. } | State::WarpSync { site, .. } => Some(site.to_string()),
                State::MbarrierWait { addr, parity, site } => {
                    Some(format!("{site}, which {}", ctx.proxy.borrow().stuck(addr, parity)))
                }
                State::ClusterBarrier(site) => Some(format!("the cluster barrier at {site}")),
                _ => None,
            })
            .collect();
        sites.dedup();
        let barrier = at_barrier
            .first()
            .and_then(|&i| {
                if let State::Barrier(site) = state[i as usize] { Some(format!(" at {site}")) } else { None }
            })
            .unwrap_or_default();
        return Err(error(format!(
            "{} waited at a barrier{barrier} while {} waited in shuffles, sync_warps, mbarrier waits or cluster \
             barriers (at {}) that cannot complete",
            who(&at_barrier),
            who(&elsewhere),
            sites.join(", ")
        )));
    }
    let State::Barrier(first) = state[at_barrier[0] as usize] else { unreachable!() };
    let divergent =
        |detail| EmuError::DivergentBarrier { kernel: ctx.kernel.to_string(), block: ctx.block, detail };
    if at_barrier.iter().any(|&i| state[i as usize] != State::Barrier(first)) {
        let mut sites: Vec<(Site, Vec<u32>)> = Vec::new();
        for &i in &at_barrier {
            let State::Barrier(site) = state[i as usize] else { unreachable!() };
            match sites.iter_mut().find(|(s, _)| *s == site) {
                Some((_, ids)) => ids.push(i),
                None => sites.push((site, vec![i])),
            }
        }
        let detail = sites
            .iter()
            .map(|(site, ids)| format!("{} waited at {site}", who(ids)))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(divergent(detail));
    }
    let exited = of(&|s| *s == State::Exited);
    if !exited.is_empty() {
        return Err(divergent(format!(
            "{} waited at the barrier at {first}, which {} skipped by exiting (a barrier must be reached by \
             every thread of the block, or by none)",
            who(&at_barrier),
            who(&exited)
        )));
    }
    // Every thread learns what any thread of the block acquired.
    if threads.iter().any(|t| !t.knowledge.borrow().is_empty()) {
        let mut all = Knowledge::default();
        for t in threads {
            all.merge(&t.knowledge.borrow());
        }
        let all = Rc::new(all);
        for t in threads {
            *t.knowledge.borrow_mut() = Rc::clone(&all);
        }
    }
    for s in state.iter_mut() {
        *s = State::Runnable;
    }
    ctx.epoch.set(ctx.epoch.get() + 1);
    Ok(())
}

/// Lets every thread whose mbarrier phase has completed go on. Returns
/// whether any did.
fn resolve_mbarrier_waits(ctx: &BlockCtx, state: &mut [State]) -> bool {
    let mut progressed = false;
    for s in state.iter_mut() {
        if let State::MbarrierWait { addr, parity, .. } = *s
            && ctx.proxy.borrow_mut().completed(addr, parity).unwrap_or(false)
        {
            *s = State::Runnable;
            progressed = true;
        }
    }
    progressed
}

/// Completes every `sync_warp` whose mask lanes have all arrived. Returns
/// whether any did.
fn resolve_warp_syncs(ctx: &BlockCtx, state: &mut [State]) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    let error =
        |detail| EmuError::IllegalWarpSync { kernel: ctx.kernel.to_string(), block: ctx.block, detail };
    for warp in 0..n.div_ceil(32) {
        let lanes = warp * 32..(warp * 32 + 32).min(n);
        let Some((first, mask, site)) = lanes.clone().find_map(|i| match state[i] {
            State::WarpSync { mask, site } => Some((i, mask, site)),
            _ => None,
        }) else {
            continue;
        };
        let lane = (first - warp * 32) as u32;
        if mask & (1 << lane) == 0 {
            return Err(error(format!(
                "thread {first} (lane {lane} of warp {warp}) calls sync_warp({mask:#010x}) at {site}, a mask \
                 that does not name it"
            )));
        }
        let mut members = Vec::new();
        for l in (0..32).filter(|l| mask & (1 << l) != 0) {
            let i = warp * 32 + l;
            if i >= n || state[i] == State::Exited {
                let why = if i >= n { "does not exist" } else { "has exited" };
                return Err(error(format!(
                    "sync_warp({mask:#010x}) at {site} names lane {l} of warp {warp}, which {why}"
                )));
            }
            members.push(i);
        }
        if let Some(&j) =
            members.iter().find(|&&j| matches!(state[j], State::WarpSync { mask: m, .. } if m != mask))
        {
            let State::WarpSync { mask: other, site: other_site } = state[j] else { unreachable!() };
            return Err(error(format!(
                "threads {first} and {j} of warp {warp} wait in sync_warp with different masks: {mask:#010x} at \
                 {site}, {other:#010x} at {other_site}"
            )));
        }
        if !members.iter().all(|&j| matches!(state[j], State::WarpSync { .. })) {
            continue;
        }
        let mut warps = ctx.warps.borrow_mut();
        if warps.len() <= warp {
            warps.resize_with(warp + 1, || None);
        }
        warps[warp].get_or_insert_with(WarpSyncs::new).sync(mask);
        for j in members {
            state[j] = State::Runnable;
        }
        progressed = true;
    }
    Ok(progressed)
}

/// The lane `shfl.sync` reads for `lane`, and its predicate, by the PTX
/// ISA's pseudocode: `c[4:0]` is the clamp, `c[12:8]` the segment mask; a
/// source outside the lane's segment gives the lane its own value and a
/// false predicate.
pub(crate) fn ptx_shuffle_source(lane: u32, mode: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, cval, segmask) = (b & 31, c & 31, (c >> 8) & 31);
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, ok) = match mode {
        0 => {
            let j = lane as i64 - bval as i64;
            (j, j >= max_lane as i64)
        }
        1 => {
            let j = (lane + bval) as i64;
            (j, j <= max_lane as i64)
        }
        2 => {
            let j = (lane ^ bval) as i64;
            (j, j <= max_lane as i64)
        }
        _ => {
            let j = (min_lane | (bval & !segmask)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    if ok { (j as u32, true) } else { (lane, false) }
}

/// Completes every shuffle whose mask lanes have all arrived. Returns
/// whether any did.
fn resolve_shuffles(ctx: &BlockCtx, state: &mut [State], input: &mut [u64]) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    for warp in 0..n.div_ceil(32) {
        let lanes = warp * 32..(warp * 32 + 32).min(n);
        let Some(State::Shuffle { mask, site, .. }) =
            lanes.clone().map(|i| state[i]).find(|s| matches!(s, State::Shuffle { .. }))
        else {
            continue;
        };
        let members: Vec<usize> = lanes.clone().filter(|i| mask & (1 << (i - warp * 32)) != 0).collect();
        if members.iter().any(|&i| state[i] == State::Exited) {
            return Err(EmuError::Deadlock {
                kernel: ctx.kernel.to_string(),
                block: ctx.block,
                detail: format!(
                    "a shuffle at {site} with mask {mask:#010x} names a lane of warp {warp} that has exited"
                ),
            });
        }
        if !members.iter().all(|&i| matches!(state[i], State::Shuffle { .. })) {
            continue;
        }
        // Every lane of the mask must execute the same shuffle with the same
        // mask (the PTX ISA leaves anything else undefined).
        let kind = |op: ShflOp| match op {
            ShflOp::Sync { mode, .. } => mode,
            ShflOp::Ballot => 10,
            ShflOp::Down(_) => 11,
            ShflOp::Up(_) => 12,
            ShflOp::Xor(_) => 13,
            ShflOp::Idx(_) => 14,
        };
        let State::Shuffle { op: first_op, site: first_site, .. } = state[members[0]] else { unreachable!() };
        if let Some(&j) = members.iter().find(|&&j| {
            matches!(state[j], State::Shuffle { mask: m, op, .. } if m != mask || kind(op) != kind(first_op))
        }) {
            let State::Shuffle { mask: other, op, site: other_site, .. } = state[j] else { unreachable!() };
            return Err(EmuError::Deadlock {
                kernel: ctx.kernel.to_string(),
                block: ctx.block,
                detail: format!(
                    "lanes of warp {warp} wait in different warp operations: thread {} in {first_op:?} with mask \
                     {mask:#010x} at {first_site}, thread {j} in {op:?} with mask {other:#010x} at {other_site}",
                    members[0]
                ),
            });
        }
        let bits: Vec<u64> = lanes
            .clone()
            .map(|i| if let State::Shuffle { bits, .. } = state[i] { bits } else { 0 })
            .collect();
        let ballot = members
            .iter()
            .filter(|&&i| bits[i - warp * 32] & 1 == 1)
            .fold(0u64, |m, &i| m | 1 << (i - warp * 32));
        for &i in &members {
            let State::Shuffle { op, bits: own, .. } = state[i] else { unreachable!() };
            let lane = (i - warp * 32) as u32;
            if op == ShflOp::Ballot {
                input[i] = ballot;
                state[i] = State::Runnable;
                continue;
            }
            if let ShflOp::Sync { mode, b, c } = op {
                let (j, ok) = ptx_shuffle_source(lane, mode, b, c);
                let from = warp * 32 + j as usize;
                if from >= n || mask & (1 << j) == 0 {
                    return Err(EmuError::Deadlock {
                        kernel: ctx.kernel.to_string(),
                        block: ctx.block,
                        detail: format!(
                            "lane {lane} of warp {warp} shuffles from lane {j}, which is not in the mask \
                             {mask:#010x} (the PTX ISA leaves the value undefined)"
                        ),
                    });
                }
                input[i] = (bits[j as usize] & 0xffff_ffff) | (u64::from(ok) << 32);
                state[i] = State::Runnable;
                continue;
            }
            let src = match op {
                ShflOp::Down(d) => lane + d,
                ShflOp::Up(d) => lane.checked_sub(d).unwrap_or(u32::MAX),
                ShflOp::Xor(m) => lane ^ m,
                ShflOp::Idx(s) => s % 32,
                ShflOp::Sync { .. } | ShflOp::Ballot => unreachable!("handled above"),
            };
            let src_in_mask = src < 32 && mask & (1 << src) != 0 && (warp * 32 + src as usize) < n;
            input[i] = if src_in_mask { bits[src as usize] } else { own };
            state[i] = State::Runnable;
        }
        progressed = true;
    }
    Ok(progressed)
}
