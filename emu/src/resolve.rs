//! What the scheduler does when threads wait: it releases barriers and
//! the cluster barrier, completes `sync_warp`s, shuffles and mbarrier
//! waits, and reports divergent barriers and deadlocks.

use std::rc::Rc;

use super::abi::{ShflOp, Site};
use super::context::{BlockCtx, State, ThreadCtx};
use super::order::{Knowledge, WarpSyncs};
use super::report::{EmuError, who};

/// Nobody in the cluster can run and no shuffle, `sync_warp` or mbarrier
/// wait completes: a block's barrier or the cluster's must release. A
/// block whose threads all wait at a barrier (or have exited) releases it
/// or reports a divergent barrier; else the cluster's barrier releases
/// with every thread of the cluster at the same one; else it is a
/// deadlock, reported by the first block with a thread waiting elsewhere.
pub(crate) fn release_a_barrier(
    ctxs: &[BlockCtx],
    threads: &[ThreadCtx],
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
    if let Some(State::ClusterBarrier(first)) = state.iter().find(|s| !matches!(**s, State::Exited)).copied()
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
        share_knowledge(threads);
        state.fill(State::Runnable);
        for ctx in ctxs {
            ctx.epoch.set(ctx.epoch.get() + 1);
        }
        return Ok(());
    }
    let stuck = |x: &State| !matches!(x, State::Exited | State::ClusterBarrier(_));
    let b = (0..ctxs.len())
        .find(|&b| state[b * n..(b + 1) * n].iter().any(stuck))
        .or_else(|| {
            (0..ctxs.len()).find(|&b| state[b * n..(b + 1) * n].iter().any(|x| !matches!(*x, State::Exited)))
        })
        .unwrap_or(0);
    release_barrier(&ctxs[b], &threads[b * n..(b + 1) * n], &mut state[b * n..(b + 1) * n])
}

/// Nobody can run and no shuffle or `sync_warp` completes: a barrier must
/// release, with every thread of the block at it.
pub(crate) fn release_barrier(
    ctx: &BlockCtx,
    threads: &[ThreadCtx],
    state: &mut [State],
) -> Result<(), EmuError> {
    if let Some(e) = ctx.uninitialized.take() {
        return Err(e);
    }
    // Every thread at one barrier, the common case: released below.
    let uniform = match state.first() {
        Some(&State::Barrier(site)) => state.iter().all(|s| *s == State::Barrier(site)),
        _ => false,
    };
    if !uniform {
        return Err(barrier_error(ctx, state));
    }
    share_knowledge(threads);
    state.fill(State::Runnable);
    ctx.epoch.set(ctx.epoch.get() + 1);
    Ok(())
}

/// A barrier's release: every thread of `threads` (a block's, or a
/// cluster's) learns what any of them acquired (nothing to do when none
/// acquired anything).
fn share_knowledge(threads: &[ThreadCtx]) {
    if threads.iter().all(|t| t.knowledge.borrow().is_empty()) {
        return;
    }
    let mut all = Knowledge::default();
    for t in threads {
        all.merge(&t.knowledge.borrow());
    }
    let all = Rc::new(all);
    for t in threads {
        *t.knowledge.borrow_mut() = Rc::clone(&all);
    }
}

/// Why the threads of a block waiting at a barrier cannot all go on:
/// some wait elsewhere, at other barriers, or have exited.
fn barrier_error(ctx: &BlockCtx, state: &[State]) -> EmuError {
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
        return error(format!(
            "{} waited at a barrier{barrier} while {} waited in shuffles, sync_warps, mbarrier waits or cluster \
             barriers (at {}) that cannot complete",
            who(&at_barrier),
            who(&elsewhere),
            sites.join(", ")
        ));
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
        return divergent(detail);
    }
    let exited = of(&|s| matches!(*s, State::Exited));
    divergent(format!(
        "{} waited at the barrier at {first}, which {} skipped by exiting (a barrier must be reached by every \
         thread of the block, or by none)",
        who(&at_barrier),
        who(&exited)
    ))
}

/// Lets every thread whose mbarrier phase has completed go on. Returns
/// whether any did.
pub(crate) fn resolve_mbarrier_waits(ctx: &BlockCtx, state: &mut [State]) -> bool {
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
pub(crate) fn resolve_warp_syncs(ctx: &BlockCtx, state: &mut [State]) -> Result<bool, EmuError> {
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
            if i >= n || matches!(state[i], State::Exited) {
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

/// Completes every shuffle whose mask lanes have all arrived. Returns
/// whether any did.
pub(crate) fn resolve_shuffles(
    ctx: &BlockCtx,
    state: &mut [State],
    input: &mut [u64],
) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    for warp in 0..n.div_ceil(32) {
        let lanes = warp * 32..(warp * 32 + 32).min(n);
        let Some(State::Shuffle { mask, site, .. }) =
            lanes.clone().map(|i| state[i]).find(|s| matches!(s, State::Shuffle { .. }))
        else {
            continue;
        };
        let mut named = [0usize; 32];
        let mut count = 0;
        for i in lanes.clone().filter(|i| mask & (1 << (i - warp * 32)) != 0) {
            named[count] = i;
            count += 1;
        }
        let members = &named[..count];
        if members.iter().any(|&i| matches!(state[i], State::Exited)) {
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
        let mut bits = [0u64; 32];
        for i in lanes.clone() {
            if let State::Shuffle { bits: b, .. } = state[i] {
                bits[i - warp * 32] = b;
            }
        }
        let ballot = members
            .iter()
            .filter(|&&i| bits[i - warp * 32] & 1 == 1)
            .fold(0u64, |m, &i| m | 1 << (i - warp * 32));
        for &i in members {
            let State::Shuffle { op, bits: own, .. } = state[i] else { unreachable!() };
            let lane = (i - warp * 32) as u32;
            if op == ShflOp::Ballot {
                input[i] = ballot;
                state[i] = State::Runnable;
                continue;
            }
            if let ShflOp::Sync { mode, b, c } = op {
                let (j, ok) = gpu_isa::shuffle::source_lane(lane, mode, b, c);
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
