//! The scheduler: [`launch`] runs a grid cluster by cluster, every thread
//! a coroutine resumed until it waits or ends.

use std::cell::{Cell, RefCell};
use std::panic::Location;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::abi::LaunchSpec;
use super::analysis::{Analysis, Recorder};
use super::context::{BLOCK, BlockCtx, CLUSTER, Event, LaunchState, State, THREAD, ThreadCtx};
use super::memory::SharedWord;
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

/// Runs a kernel on the emulator: every block of `spec.grid`, one cluster
/// after another (a block is a cluster of one without `spec.cluster`), each
/// thread running `body`. Returns the access analysis (empty unless
/// `spec.analyze`).
pub fn launch(spec: &LaunchSpec, body: &dyn Fn()) -> Result<Analysis, EmuError> {
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
    let state =
        LaunchState { global: Default::default(), published: Default::default(), dependent: spec.dependent };
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
                waited: Cell::new(false),
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
