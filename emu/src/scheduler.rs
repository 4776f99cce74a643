//! The scheduler: [`launch`] runs a grid cluster by cluster, every thread
//! a coroutine resumed until it waits or ends.

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::abi::LaunchSpec;
use super::analysis::{Analysis, Recorder};
use super::context::{BLOCK, BlockCtx, CLUSTER, Event, LaunchState, State, THREAD, ThreadCtx};
use super::memory::SharedWord;
use super::order::Knowledge;
use super::proxy;
use super::report::EmuError;
use super::resolve::{release_a_barrier, resolve_mbarrier_waits, resolve_shuffles, resolve_warp_syncs};

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

/// The OS threads a launch's clusters run on: what [`set_threads`] last
/// set, else `KERNEL_LAB_EMU_THREADS`, else one per core of the machine.
pub fn threads() -> usize {
    static FROM_ENV: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    match SET_THREADS.load(Relaxed) {
        0 => *FROM_ENV.get_or_init(|| {
            std::env::var("KERNEL_LAB_EMU_THREADS")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        }),
        n => n,
    }
}

static SET_THREADS: AtomicUsize = AtomicUsize::new(0);

/// The OS threads the process's launches are running on now.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// OS threads a launch runs on, counted in [`BUSY`] until it ends:
/// launches that run at once (a test harness's threads, say) share
/// [`threads`] between them, at least one each, rather than each taking
/// every core. (Two tests each running two workers on two cores ran
/// slower than with one each: the workers contend, and a parallel run a
/// poll stops is run again.) A count [`set_threads`] gave is taken as
/// given. A launch's report does not depend on how many it gets.
struct Reserved(usize);

impl Reserved {
    fn take(want: usize) -> Reserved {
        if SET_THREADS.load(Relaxed) != 0 {
            BUSY.fetch_add(want, Relaxed);
            return Reserved(want);
        }
        let cores = threads();
        let mut busy = BUSY.load(Relaxed);
        loop {
            let n = want.min(cores.saturating_sub(busy)).max(1);
            match BUSY.compare_exchange_weak(busy, busy + n, Relaxed, Relaxed) {
                Ok(_) => return Reserved(n),
                Err(now) => busy = now,
            }
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        BUSY.fetch_sub(self.0, Relaxed);
    }
}

/// Runs later launches on `n` OS threads (`None`: as [`threads`] finds
/// them), for the whole process: a benchmark of the emulator's scaling.
pub fn set_threads(n: Option<usize>) {
    SET_THREADS.store(n.unwrap_or(0), Relaxed);
}

/// Runs a kernel on the emulator: every block of `spec.grid`, cluster by
/// cluster (a block is a cluster of one without `spec.cluster`), each
/// thread running `body`. Returns the access analysis (empty unless
/// `spec.analyze`).
///
/// The clusters run on [`threads`] OS threads at once, each taking the
/// next cluster in grid order, as a GPU's SMs take blocks. A clean run is
/// the launch's result. A run that finds anything is not the report: which
/// block meets a cross-block race first, or which one a ticket makes last,
/// depends on the threads' timing. The launch's buffers (and whatever it
/// wrote through tensor maps) are put back as they were, and the grid
/// runs again on one thread, cluster after cluster, whose report is the
/// same on every run. A sequential run that finds nothing reports what the
/// parallel one found.
pub fn launch(spec: &LaunchSpec, body: &(dyn Fn() + Sync)) -> Result<Analysis, EmuError> {
    quiet_kernel_panics();
    let clusters = clusters(spec)?;
    let reserved = Reserved::take(threads().min(clusters.len()));
    let workers = reserved.0;
    if workers > 1 {
        let state = LaunchState::new(spec, true);
        match run_clusters(spec, body, &clusters, &state, workers) {
            Ok(analysis) => return Ok(analysis),
            Err(found) => {
                state.restore();
                let again = LaunchState::new(spec, false);
                let sequential = run_clusters(spec, body, &clusters, &again, 1);
                if state.polled_out.load(Relaxed) {
                    return sequential;
                }
                return sequential.and(Err(found));
            }
        }
    }
    run_clusters(spec, body, &clusters, &LaunchState::new(spec, false), 1)
}

/// The first block of each cluster of the grid, in grid order (x fastest),
/// or why the launch's shape is not one.
fn clusters(spec: &LaunchSpec) -> Result<Vec<[u32; 3]>, EmuError> {
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
    let mut origins = Vec::new();
    for z0 in (0..gz).step_by(cz as usize) {
        for y0 in (0..gy).step_by(cy as usize) {
            for x0 in (0..gx).step_by(cx as usize) {
                origins.push([x0, y0, z0]);
            }
        }
    }
    Ok(origins)
}

/// Runs the clusters at `origins` on `workers` OS threads, each taking the
/// next cluster in order; the analysis is added up in grid order. With
/// one worker, the clusters run in order on this thread and the first
/// error ends the launch; with more, the first error stops every worker
/// at its next cluster, and the error of the earliest cluster that failed
/// is returned.
fn run_clusters(
    spec: &LaunchSpec,
    body: &(dyn Fn() + Sync),
    origins: &[[u32; 3]],
    state: &LaunchState,
    workers: usize,
) -> Result<Analysis, EmuError> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let work = || {
        let mut worker = Worker::new(spec);
        let mut done: Vec<(usize, Result<Analysis, EmuError>)> = Vec::new();
        while !failed.load(Relaxed) {
            let i = next.fetch_add(1, Relaxed);
            let Some(&origin) = origins.get(i) else { break };
            let result = worker.run(spec, body, origin, state);
            if result.is_err() {
                failed.store(true, Relaxed);
            }
            done.push((i, result));
        }
        done
    };
    let mut done = if workers == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            // A worker's panics are the kernel's, caught as errors: a
            // panic here is the emulator's own, passed on.
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    done.sort_by_key(|(i, _)| *i);
    let mut analysis = Analysis::default();
    for (_, result) in done {
        analysis.add(&result?);
    }
    Ok(analysis)
}

/// What one OS thread keeps between the clusters it runs: the blocks'
/// shared memory, and a coroutine for each thread of a cluster, which
/// runs that thread of every cluster in turn ([`slot`]).
struct Worker {
    shared: Vec<Vec<u128>>,
    /// Stacks for slots not yet made.
    stacks: Vec<DefaultStack>,
    /// Thread `g` of each cluster runs on `slots[g]`; `None` until first
    /// needed, or after its coroutine ended in a panic or was dropped in
    /// the middle of a thread.
    slots: Vec<Option<Thread>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        for co in self.slots.iter_mut().filter_map(Option::take) {
            if let Some(stack) = finish(co) {
                self.stacks.push(stack);
            }
        }
        let mut kept = STACKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let room = KEPT_STACKS.saturating_sub(kept.len());
        let n = self.stacks.len().min(room);
        kept.extend(self.stacks.drain(..n));
    }
}

/// Coroutine stacks that launches have finished with, for the next ones
/// (each is an `mmap`, and unmapping takes a lock every OS thread of the
/// process contends for).
static STACKS: std::sync::Mutex<Vec<DefaultStack>> = std::sync::Mutex::new(Vec::new());

/// The most stacks kept between launches: a few full clusters' worth.
const KEPT_STACKS: usize = 4 * 8 * 1024;

impl Worker {
    fn new(spec: &LaunchSpec) -> Worker {
        let [cx, cy, cz] = spec.cluster;
        let size = (cx * cy * cz) as usize;
        // Launch-sized shared memory per block of a cluster, 16-byte
        // aligned like the device's.
        let shared = (0..size).map(|_| std::vec![0u128; spec.shared_bytes.div_ceil(16).max(1)]).collect();
        let threads = size * spec.block.iter().product::<u32>() as usize;
        let stacks = {
            let mut kept = STACKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let at = kept.len().saturating_sub(threads);
            kept.split_off(at)
        };
        Worker { shared, stacks, slots: Vec::new() }
    }

    /// Runs the cluster whose first block is `[x0, y0, z0]`: its analysis.
    fn run(
        &mut self,
        spec: &LaunchSpec,
        body: &(dyn Fn() + Sync),
        [x0, y0, z0]: [u32; 3],
        state: &LaunchState,
    ) -> Result<Analysis, EmuError> {
        let ([cx, cy, _], [gx, gy, _]) = (spec.cluster, spec.grid);
        let threads = spec.block.iter().product::<u32>() as usize;
        let ctxs: Vec<BlockCtx> = self
            .shared
            .iter_mut()
            .enumerate()
            .map(|(rank, memory)| {
                // Fresh shared memory content per block is not guaranteed
                // on a GPU; fill it with a NaN pattern, so that a read the
                // kernel opted out of checking still shows in its output.
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
                    // (Races and initialization unchecked: no log per word.)
                    words: RefCell::new(std::vec![
                        SharedWord { epoch: u32::MAX, ..Default::default() };
                        if spec.checks { spec.shared_bytes.div_ceil(4) } else { 0 }
                    ]),
                    warps: RefCell::new(Vec::new()),
                    uninitialized: RefCell::new(None),
                    exited: RefCell::new(std::vec![0; threads.div_ceil(32)]),
                    launch: state,
                    recorder: spec.analyze.then(|| RefCell::new(Recorder::default())),
                    proxy: Default::default(),
                }
            })
            .collect();
        run_cluster(&ctxs, body, &mut self.slots, &mut self.stacks)?;
        let mut analysis = Analysis::default();
        for ctx in ctxs {
            if let Some(r) = ctx.recorder {
                analysis.add(&r.into_inner().finish());
            }
        }
        Ok(analysis)
    }
}

type Thread = Coroutine<u64, Event, (), DefaultStack>;

/// The input that ends a slot's coroutine, parked after a thread.
const QUIT: u64 = u64::MAX;

/// The body of the launch this OS thread is running, for its slots.
#[thread_local]
static BODY: Cell<Option<std::ptr::NonNull<dyn Fn() + Sync>>> = Cell::new(None);

/// A coroutine that runs one thread after another: the running block's
/// body for the thread [`THREAD`] names when it is resumed, then
/// [`Event::Exited`]; resumed again, the next thread, until [`QUIT`].
/// Making a coroutine (its stack's first frame) and a thread's state
/// cost more than the body of many kernels' threads; a slot is made once
/// per worker.
fn slot(stack: DefaultStack) -> Thread {
    Coroutine::with_stack(stack, |y: &Yielder<u64, Event>, _: u64| {
        loop {
            let (t, body) = (THREAD.get(), BODY.get().expect("a launch's body"));
            // SAFETY: the scheduler sets THREAD and BODY before every
            // resume of a thread, to a thread context and a body that
            // outlive it (`run_cluster` drops a slot stopped in the middle
            // of a thread before either goes out of scope).
            unsafe {
                (*t).yielder.set(y);
                (*body.as_ptr())();
            }
            if y.suspend(Event::Exited) == QUIT {
                return;
            }
        }
    })
}

/// Ends a slot's coroutine parked between threads: its stack, for
/// another. (One stopped in the middle of a thread is dropped instead,
/// which unwinds it.)
fn finish(mut co: Thread) -> Option<DefaultStack> {
    if co.started() && !co.done() {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| co.resume(QUIT))) {
            Ok(CoroutineResult::Return(())) => {}
            _ => return None,
        }
    }
    Some(co.into_stack())
}

/// Runs the blocks of one cluster to their end: every thread of each
/// runs on a slot's coroutine, `n` per block, thread `i` of block `b` on
/// slot `b n + i`.
fn run_cluster(
    ctxs: &[BlockCtx],
    body: &(dyn Fn() + Sync),
    slots: &mut Vec<Option<Thread>>,
    stacks: &mut Vec<DefaultStack>,
) -> Result<(), EmuError> {
    let n = ctxs[0].block_dim.iter().product::<u32>() as usize;
    let all = ctxs.len() * n;
    // SAFETY: `ctxs` outlives every use through CLUSTER and BLOCK: they are
    // cleared below before `ctxs` goes out of scope, on every path.
    CLUSTER.set((ctxs.as_ptr().cast::<BlockCtx<'static>>(), ctxs.len()));
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            BLOCK.set(std::ptr::null());
            THREAD.set(std::ptr::null());
            CLUSTER.set((std::ptr::null(), 0));
            BODY.set(None);
            IN_KERNEL.with(|c| c.set(false));
        }
    }
    let _clear = Clear;

    // What a thread has acquired starts empty: one shared empty set.
    let nothing = Rc::new(Knowledge::default());
    // One allocation for the cluster's threads (their addresses are fixed
    // from here on: the vector is never grown).
    let threads: Vec<ThreadCtx> = (0..all)
        .map(|g| {
            let linear = (g % n) as u32;
            ThreadCtx {
                idx: ctxs[g / n].thread_index(linear),
                linear,
                yielder: Cell::new(std::ptr::null()),
                counters: Default::default(),
                copies: Default::default(),
                seq: Cell::new(0),
                last_fence: Cell::new(None),
                knowledge: RefCell::new(Rc::clone(&nothing)),
                pending: Default::default(),
                exited_at_sync: Cell::new(0),
                waited: Cell::new(false),
                polls: Cell::new((0, 0)),
            }
        })
        .collect();
    // The slots' coroutines are 'static: they get the body as a raw
    // pointer.
    let body_ptr: *const (dyn Fn() + Sync + '_) = body;
    // SAFETY: only erases the lifetime; BODY is cleared before `body`'s
    // borrow ends (`Clear`).
    let body_ptr: *const (dyn Fn() + Sync + 'static) = unsafe { std::mem::transmute(body_ptr) };
    BODY.set(std::ptr::NonNull::new(body_ptr.cast_mut()));
    if slots.len() < all {
        slots.resize_with(all, || None);
    }
    let result = schedule(ctxs, &threads, slots, stacks);
    if result.is_err() {
        // A slot stopped in the middle of a thread refers to this
        // cluster's state: unwind it now.
        for co in &mut slots[..all] {
            if co.as_ref().is_some_and(|co| co.started() && !co.done()) {
                *co = None;
            }
        }
    }
    result
}

/// [`run_cluster`]'s loop: runs every runnable thread until it waits or
/// ends, then completes the waits that can complete, until every thread
/// has exited.
fn schedule(
    ctxs: &[BlockCtx],
    threads: &[ThreadCtx],
    slots: &mut [Option<Thread>],
    stacks: &mut Vec<DefaultStack>,
) -> Result<(), EmuError> {
    let (all, n) = (threads.len(), threads.len() / ctxs.len());
    let mut state = std::vec![State::Runnable; all];
    let mut input = std::vec![0u64; all];
    // Which threads waited before a pass's releases (one vector, refilled).
    let mut waiting: Vec<bool> = Vec::with_capacity(all);

    loop {
        let mut ran = false;
        for g in 0..all {
            if !matches!(state[g], State::Runnable) {
                continue;
            }
            ran = true;
            let (ctx, i) = (&ctxs[g / n], g % n);
            BLOCK.set(std::ptr::from_ref(ctx).cast::<BlockCtx<'static>>());
            THREAD.set(&threads[g]);
            IN_KERNEL.with(|c| c.set(true));
            let co = slots[g].get_or_insert_with(|| {
                slot(
                    stacks
                        .pop()
                        .unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("a coroutine stack")),
                )
            });
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
                Ok(CoroutineResult::Yield(Event::Exited)) => {
                    if let Some(message) = threads[g].copies.borrow().left_over() {
                        return Err(EmuError::Panic {
                            kernel: ctx.kernel.to_string(),
                            block: ctx.block,
                            thread: threads[g].idx,
                            message,
                        });
                    }
                    state[g] = State::Exited;
                    ctx.exited.borrow_mut()[i / 32] |= 1 << (i % 32);
                }
                Ok(CoroutineResult::Return(())) => unreachable!("a slot returns only when told to quit"),
                Err(payload) => {
                    // The panicking coroutine is finished; drop it without
                    // reusing its stack.
                    slots[g] = None;
                    return Err(panic_error(payload, ctx, threads[g].idx));
                }
            }
        }
        if state.iter().all(|s| matches!(*s, State::Exited)) {
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
        waiting.clear();
        waiting.extend(state.iter().map(|s| !matches!(s, State::Runnable | State::Exited)));
        let mut progressed = ran;
        for (b, ctx) in ctxs.iter().enumerate() {
            let range = b * n..(b + 1) * n;
            progressed |= resolve_shuffles(ctx, &mut state[range.clone()], &mut input[range.clone()])?;
            progressed |= resolve_warp_syncs(ctx, &mut state[range.clone()])?;
            progressed |= resolve_mbarrier_waits(ctx, &mut state[range]);
        }
        if !progressed {
            release_a_barrier(ctxs, threads, &mut state)?;
        }
        // The threads just released converged with their warp now.
        for (g, t) in threads.iter().enumerate() {
            if waiting[g] && matches!(state[g], State::Runnable) {
                t.exited_at_sync.set(ctxs[g / n].exited.borrow()[g % n / 32]);
            }
        }
    }
}
