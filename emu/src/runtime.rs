//! The emulator's launch, scheduler and the hooks the device-support layer
//! calls.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::analysis::{Analysis, Recorder, Space};

/// What to launch: the kernel's name (for error messages), its block and
/// grid, the bytes of launch-sized shared memory per block, and the device
/// buffers it may touch.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub name: &'a str,
    pub block: [u32; 3],
    pub grid: [u32; 3],
    pub shared_bytes: usize,
    /// `(address, bytes)` of every buffer passed to the launch: the only
    /// global memory the kernel may touch.
    pub buffers: &'a [(usize, usize)],
    /// Record accesses for the bank-conflict and coalescing analysis
    /// (slower); races and bounds are always checked.
    pub analyze: bool,
}

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq)]
pub enum EmuError {
    BadLaunch(String),
    OutOfBounds { kernel: String, block: [u32; 3], thread: [u32; 3], space: &'static str, detail: String },
    Race { kernel: String, block: [u32; 3], byte_offset: usize, first: u32, second: u32, kind: &'static str },
    DivergentBarrier { kernel: String, block: [u32; 3], sites: String },
    Deadlock { kernel: String, block: [u32; 3], detail: String },
    Panic { kernel: String, block: [u32; 3], thread: [u32; 3], message: String },
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::BadLaunch(m) => write!(f, "bad launch: {m}"),
            EmuError::OutOfBounds { kernel, block, thread, space, detail } => {
                write!(
                    f,
                    "{kernel}: block {block:?} thread {thread:?}: {space} access out of bounds: {detail}"
                )
            }
            EmuError::Race { kernel, block, byte_offset, first, second, kind } => write!(
                f,
                "{kernel}: block {block:?}: shared-memory race ({kind}) on the word at byte {byte_offset} \
                 between threads {first} and {second} with no barrier between"
            ),
            EmuError::DivergentBarrier { kernel, block, sites } => {
                write!(f, "{kernel}: block {block:?}: threads wait at different barriers: {sites}")
            }
            EmuError::Deadlock { kernel, block, detail } => {
                write!(f, "{kernel}: block {block:?}: deadlock: {detail}")
            }
            EmuError::Panic { kernel, block, thread, message } => {
                write!(f, "{kernel}: block {block:?} thread {thread:?} panicked: {message}")
            }
        }
    }
}

impl std::error::Error for EmuError {}

/// The shuffle a lane asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflOp {
    /// Lane `i` gets lane `i + delta` (its own past the warp).
    Down(u32),
    /// Lane `i` gets lane `i ^ mask`.
    Xor(u32),
}

/// Why a thread's coroutine handed control back.
enum Event {
    Barrier(&'static Location<'static>),
    Shuffle { mask: u32, op: ShflOp, bits: u64 },
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
}

/// One `cp.async`: `len` bytes (source bytes, then zeros) for shared
/// memory at `dst`.
struct PendingCopy {
    dst: usize,
    data: [u8; 16],
    len: usize,
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

/// One block being run.
struct BlockCtx<'a> {
    kernel: &'a str,
    block: [u32; 3],
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
    shared: *mut u8,
    shared_len: usize,
    buffers: Vec<(usize, usize)>,
    /// Barrier epochs passed: accesses in different epochs never race.
    epoch: Cell<u32>,
    words: RefCell<Vec<WordState>>,
    recorder: Option<RefCell<Recorder>>,
}

/// Who touched a shared word in the current epoch.
#[derive(Clone, Copy)]
struct WordState {
    epoch: u32,
    writer: u32,
    /// The first two different readers (enough to name a conflicting one).
    reader: u32,
    reader2: u32,
}

const NONE: u32 = u32::MAX;

std::thread_local! {
    static BLOCK: Cell<*const BlockCtx<'static>> = const { Cell::new(std::ptr::null()) };
    static THREAD: Cell<*const ThreadCtx> = const { Cell::new(std::ptr::null()) };
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

fn suspend(event: Event) -> u64 {
    let y = thread().yielder.get();
    // SAFETY: the yielder of the coroutine this thread runs in.
    unsafe { (*y).suspend(event) }
}

/// `__syncthreads()`.
pub fn barrier(site: &'static Location<'static>) {
    suspend(Event::Barrier(site));
}

/// A shuffle: returns the bits this lane receives.
pub fn shuffle(mask: u32, op: ShflOp, bits: u64) -> u64 {
    suspend(Event::Shuffle { mask, op, bits })
}

/// The block's launch-sized shared memory.
pub fn shared_base() -> *mut u8 {
    block().shared
}

fn fail(space: &'static str, detail: String) -> ! {
    let (b, t) = (block(), thread());
    std::panic::panic_any(EmuError::OutOfBounds {
        kernel: b.kernel.to_string(),
        block: b.block,
        thread: t.idx,
        space,
        detail,
    })
}

/// Checks and records a shared-memory access of `bytes` at `addr`.
pub fn shared_access(addr: usize, bytes: usize, write: bool) {
    check_shared(addr, bytes, write);
    let (b, t) = (block(), thread());
    if let Some(r) = &b.recorder {
        let k = &t.counters[usize::from(write)];
        r.borrow_mut().record(Space::Shared, write, t.linear, k.get(), addr, bytes);
        k.set(k.get() + 1);
    }
}

/// `cp.async` of `size` bytes from global `src` (of which `src_bytes` are
/// read, the rest zero) to shared `dst`: the global read and the bounds,
/// race and bank checks happen now, the bytes land at [`copy_wait`].
pub fn copy_async(dst: usize, src: usize, size: usize, src_bytes: usize) {
    let mut data = [0u8; 16];
    if src_bytes > 0 {
        global_access(src, src_bytes, false);
        // SAFETY: `global_access` checked that the bytes lie in a buffer of the launch.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, data.as_mut_ptr(), src_bytes.min(size)) };
    }
    shared_access(dst, size, true);
    thread().copies.borrow_mut().open.push(PendingCopy { dst, data, len: size });
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
            check_shared(c.dst, c.len, true);
            // SAFETY: checked to lie within the block's shared memory.
            unsafe { std::ptr::copy_nonoverlapping(c.data.as_ptr(), c.dst as *mut u8, c.len) };
        }
    }
}

/// Bounds and race checks of a shared-memory access.
fn check_shared(addr: usize, bytes: usize, write: bool) {
    let b = block();
    let base = b.shared as usize;
    if addr < base || addr + bytes > base + b.shared_len {
        fail(
            "shared",
            format!(
                "bytes {}..{} of a {}-byte launch-sized shared memory",
                addr as isize - base as isize,
                addr as isize - base as isize + bytes as isize,
                b.shared_len
            ),
        );
    }
    let offset = addr - base;
    let t = thread();
    let epoch = b.epoch.get();
    let mut words = b.words.borrow_mut();
    for w in offset / 4..(offset + bytes).div_ceil(4) {
        let s = &mut words[w];
        if s.epoch != epoch {
            *s = WordState { epoch, writer: NONE, reader: NONE, reader2: NONE };
        }
        let me = t.linear;
        let race = |other: u32, kind: &'static str| -> ! {
            std::panic::panic_any(EmuError::Race {
                kernel: b.kernel.to_string(),
                block: b.block,
                byte_offset: w * 4,
                first: other,
                second: me,
                kind,
            })
        };
        if s.writer != NONE && s.writer != me {
            race(s.writer, if write { "write after write" } else { "read after write" });
        }
        if write {
            for other in [s.reader, s.reader2] {
                if other != NONE && other != me {
                    race(other, "write after read");
                }
            }
            s.writer = me;
        } else if s.reader == NONE {
            s.reader = me;
        } else if s.reader != me && s.reader2 == NONE {
            s.reader2 = me;
        }
    }
}

/// Checks and records a global-memory access of `bytes` at `addr`.
pub fn global_access(addr: usize, bytes: usize, write: bool) {
    let b = block();
    if !b.buffers.iter().any(|&(base, len)| addr >= base && addr + bytes <= base + len) {
        let nearest = b
            .buffers
            .iter()
            .map(|&(base, len)| format!("{:#x}..{:#x}", base, base + len))
            .collect::<Vec<_>>()
            .join(", ");
        fail(
            "global",
            format!(
                "bytes {:#x}..{:#x} are in no buffer passed to the launch ({nearest})",
                addr,
                addr + bytes
            ),
        );
    }
    if let Some(r) = &b.recorder {
        let t = thread();
        let k = &t.counters[2 + usize::from(write)];
        r.borrow_mut().record(Space::Global, write, t.linear, k.get(), addr, bytes);
        k.set(k.get() + 1);
    }
}

/// Where a thread is.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Runnable,
    Barrier(&'static Location<'static>),
    Shuffle { mask: u32, op: ShflOp, bits: u64 },
    Exited,
}

/// The payload of a panic raised in a kernel, as an error.
fn panic_error(payload: Box<dyn std::any::Any + Send>, b: &BlockCtx, t: [u32; 3]) -> EmuError {
    match payload.downcast::<EmuError>() {
        Ok(e) => *e,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            EmuError::Panic { kernel: b.kernel.to_string(), block: b.block, thread: t, message }
        }
    }
}

std::thread_local! {
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
}

/// Panics inside emulated kernels are errors the launch returns; keep the
/// default hook from printing them.
fn quiet_kernel_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_KERNEL.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

const STACK_BYTES: usize = 256 * 1024;

/// Runs a kernel on the emulator: every block of `spec.grid`, one after
/// another, each thread running `body`. Returns the access analysis (empty
/// unless `spec.analyze`).
pub fn launch(spec: &Launch, body: &dyn Fn()) -> Result<Analysis, EmuError> {
    quiet_kernel_panics();
    let [bx, by, bz] = spec.block;
    let threads = bx as usize * by as usize * bz as usize;
    if threads == 0 || threads > 1024 {
        return Err(EmuError::BadLaunch(format!("{}: {threads} threads per block", spec.name)));
    }
    // Launch-sized shared memory, 16-byte aligned like the device's.
    let mut shared = std::vec![0u128; spec.shared_bytes.div_ceil(16).max(1)];
    let mut stacks: Vec<DefaultStack> = Vec::new();
    let mut analysis = Analysis::default();
    let [gx, gy, gz] = spec.grid;
    for z in 0..gz {
        for y in 0..gy {
            for x in 0..gx {
                // Fresh shared memory content per block is not guaranteed
                // on a GPU; fill it with a non-zero pattern so kernels that
                // read before writing are caught by the comparison.
                for w in shared.iter_mut() {
                    *w = 0x7fc0_dead_7fc0_dead_7fc0_dead_7fc0_dead;
                }
                let ctx = BlockCtx {
                    kernel: spec.name,
                    block: [x, y, z],
                    block_dim: spec.block,
                    grid_dim: spec.grid,
                    shared: shared.as_mut_ptr() as *mut u8,
                    shared_len: spec.shared_bytes,
                    buffers: spec.buffers.to_vec(),
                    epoch: Cell::new(0),
                    words: RefCell::new(std::vec![
                        WordState { epoch: u32::MAX, writer: NONE, reader: NONE, reader2: NONE };
                        spec.shared_bytes.div_ceil(4)
                    ]),
                    recorder: spec.analyze.then(|| RefCell::new(Recorder::default())),
                };
                run_block(&ctx, body, &mut stacks)?;
                if let Some(r) = ctx.recorder {
                    analysis.add(&r.into_inner().finish());
                }
            }
        }
    }
    Ok(analysis)
}

type Thread = Coroutine<u64, Event, (), DefaultStack>;

fn run_block(ctx: &BlockCtx, body: &dyn Fn(), stacks: &mut Vec<DefaultStack>) -> Result<(), EmuError> {
    let [bx, by, _] = ctx.block_dim;
    let n = ctx.block_dim.iter().product::<u32>() as usize;
    // SAFETY: `ctx` outlives every use through BLOCK: it is cleared below
    // before `ctx` goes out of scope, on every path.
    BLOCK.with(|c| c.set(std::ptr::from_ref(ctx).cast::<BlockCtx<'static>>()));
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            BLOCK.with(|c| c.set(std::ptr::null()));
            THREAD.with(|c| c.set(std::ptr::null()));
            IN_KERNEL.with(|c| c.set(false));
        }
    }
    let _clear = Clear;

    let threads: Vec<Box<ThreadCtx>> = (0..n as u32)
        .map(|linear| {
            Box::new(ThreadCtx {
                idx: [linear % bx, linear / bx % by, linear / (bx * by)],
                linear,
                yielder: Cell::new(std::ptr::null()),
                counters: Default::default(),
                copies: Default::default(),
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
                // `run_block` drives to completion or drops before returning.
                unsafe { (*tp).yielder.set(y) };
                unsafe { (*body_ptr)() };
            }))
        })
        .collect();
    let mut state = std::vec![State::Runnable; n];
    let mut input = std::vec![0u64; n];

    loop {
        let mut ran = false;
        for i in 0..n {
            if state[i] != State::Runnable {
                continue;
            }
            ran = true;
            THREAD.with(|c| c.set(&*threads[i]));
            IN_KERNEL.with(|c| c.set(true));
            let co = coroutines[i].as_mut().unwrap();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.resume(input[i])));
            IN_KERNEL.with(|c| c.set(false));
            match result {
                Ok(CoroutineResult::Yield(Event::Barrier(site))) => state[i] = State::Barrier(site),
                Ok(CoroutineResult::Yield(Event::Shuffle { mask, op, bits })) => {
                    state[i] = State::Shuffle { mask, op, bits }
                }
                Ok(CoroutineResult::Return(())) => {
                    let in_flight = threads[i].copies.borrow().in_flight();
                    if in_flight > 0 {
                        return Err(EmuError::Panic {
                            kernel: ctx.kernel.to_string(),
                            block: ctx.block,
                            thread: threads[i].idx,
                            message: format!("exited with {in_flight} cp.async copies never waited for"),
                        });
                    }
                    state[i] = State::Exited;
                    if let Some(co) = coroutines[i].take() {
                        stacks.push(co.into_stack());
                    }
                }
                Err(payload) => {
                    // The panicking coroutine is finished; drop it without
                    // reusing its stack.
                    coroutines[i] = None;
                    return Err(panic_error(payload, ctx, threads[i].idx));
                }
            }
        }
        if state.iter().all(|s| *s == State::Exited) {
            return Ok(());
        }
        if resolve_shuffles(ctx, &mut state, &mut input)? || ran {
            continue;
        }
        // Nobody can run and no shuffle completes: a barrier must.
        let at_barrier: Vec<(usize, &'static Location<'static>)> = state
            .iter()
            .enumerate()
            .filter_map(|(i, s)| if let State::Barrier(l) = s { Some((i, *l)) } else { None })
            .collect();
        let shuffling = state.iter().filter(|s| matches!(s, State::Shuffle { .. })).count();
        if shuffling > 0 || at_barrier.is_empty() {
            return Err(EmuError::Deadlock {
                kernel: ctx.kernel.to_string(),
                block: ctx.block,
                detail: format!(
                    "{} threads wait at a barrier while {shuffling} wait in shuffles whose lanes will not arrive",
                    at_barrier.len()
                ),
            });
        }
        let first = at_barrier[0].1;
        if let Some(&(j, other)) = at_barrier.iter().find(|(_, l)| *l != first) {
            return Err(EmuError::DivergentBarrier {
                kernel: ctx.kernel.to_string(),
                block: ctx.block,
                sites: format!("thread {} at {first}, thread {j} at {other}", at_barrier[0].0),
            });
        }
        for (i, _) in at_barrier {
            state[i] = State::Runnable;
        }
        ctx.epoch.set(ctx.epoch.get() + 1);
    }
}

/// Completes every shuffle whose mask lanes have all arrived. Returns
/// whether any did.
fn resolve_shuffles(ctx: &BlockCtx, state: &mut [State], input: &mut [u64]) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    for warp in 0..n.div_ceil(32) {
        let lanes = warp * 32..(warp * 32 + 32).min(n);
        let Some(State::Shuffle { mask, .. }) =
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
                    "a shuffle with mask {mask:#010x} names a lane of warp {warp} that has exited"
                ),
            });
        }
        if !members.iter().all(|&i| matches!(state[i], State::Shuffle { .. })) {
            continue;
        }
        let bits: Vec<u64> = lanes
            .clone()
            .map(|i| if let State::Shuffle { bits, .. } = state[i] { bits } else { 0 })
            .collect();
        for &i in &members {
            let State::Shuffle { op, bits: own, .. } = state[i] else { unreachable!() };
            let lane = (i - warp * 32) as u32;
            let src = match op {
                ShflOp::Down(d) => lane + d,
                ShflOp::Xor(m) => lane ^ m,
            };
            let src_in_mask = src < 32 && mask & (1 << src) != 0 && (warp * 32 + src as usize) < n;
            input[i] = if src_in_mask { bits[src as usize] } else { own };
            state[i] = State::Runnable;
        }
        progressed = true;
    }
    Ok(progressed)
}
