//! The hooks of the asynchronous copies: `cp.async`, mbarriers, TMA
//! copies and multicasts, and the asynchronous proxy's reads.

use super::abi::{Op, Site, Space};
use super::context::{Event, PendingCopy, PendingStore, async_misuse, block, peer, suspend, thread};
use super::hooks::{
    check_bounds, check_map_bounds, check_words, checked_access, mark_written, mbarrier_acquire,
    mbarrier_release, mbarrier_release_in, recorded_access,
};
use super::order::Kind;
use super::proxy::Proxy;
use std::sync::atomic::{AtomicU32, Ordering};

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
    thread().copies.borrow_mut().copies.issue(PendingCopy { dst, data, len: size, site });
}

/// `cp.async.commit_group`.
pub fn copy_commit() {
    thread().copies.borrow_mut().copies.commit();
}

/// `cp.async.wait_group n`: the copies of all but the `n` newest groups
/// land (and are race-checked again: the write may happen any time from
/// the copy to the wait).
pub fn copy_wait(n: usize) {
    let t = thread();
    // (A statement of its own: the borrow ends before the group is
    // handled.)
    while let Some(group) = { t.copies.borrow_mut().copies.retire(n) } {
        for c in group {
            check_bounds(Space::Shared, c.dst, c.len, c.site);
            check_words(Space::Shared, c.dst, c.len, Kind::Write, Some(&c.data[..c.len]), true, c.site);
            mark_written(c.dst, c.len);
            // SAFETY: checked to lie within the block's shared memory.
            unsafe { std::ptr::copy_nonoverlapping(c.data.as_ptr(), c.dst as *mut u8, c.len) };
        }
    }
}

/// The offset in the block's shared memory of an mbarrier at `addr`,
/// checked in bounds and 8-byte aligned.
pub(crate) fn mbarrier_offset(addr: usize, site: Site) -> usize {
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
    mbarrier_release(addr);
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
    mbarrier_acquire(addr);
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
    mbarrier_release_in(to, offset);
    to.proxy
        .borrow_mut()
        .arrive(offset, 0)
        .unwrap_or_else(|e| async_misuse(format!("{e}, in block {rank} of its cluster"), site));
}

/// A TMA multicast: `data` to shared `dst` in every block of the cluster
/// whose rank is a bit of `mask`, each counting the bytes on its mbarrier
/// at the offset of `bar`. The issuing block's bytes are race-checked as
/// [`tma_copy`]'s are; the other blocks' only through their mbarriers
/// (touching bytes that have not landed).
pub fn tma_copy_multicast(bar: usize, dst: usize, data: Vec<u8>, mask: u16, site: Site) {
    let offset = mbarrier_offset(bar, site);
    check_bounds(Space::Shared, dst, data.len(), site);
    let dst = dst - block().shared as usize;
    if mask == 0 {
        async_misuse("multicasts a TMA copy to no block (mask 0)".into(), site);
    }
    for rank in (0..16).filter(|r| mask & (1 << r) != 0) {
        let to = peer(rank, "multicasts a TMA copy to", site);
        if to.linear == block().linear {
            // Its own block's bytes are race-checked as `tma_copy`'s are.
            let at = block().shared as usize + dst;
            check_words(Space::Shared, at, data.len(), Kind::Write, Some(&data), true, site);
            mbarrier_release(bar);
        }
        to.proxy
            .borrow_mut()
            .copy(offset, dst, data.clone(), site)
            .unwrap_or_else(|e| async_misuse(format!("{e}, in block {rank} of its cluster"), site));
    }
}

/// A TMA copy of `data` (read from global memory by the caller, through
/// [`async_read`]) to shared `dst`, completing `data.len()`
/// transaction bytes on the mbarrier at `bar`.
///
/// The copy writes the bytes any time until it lands, so it is
/// race-checked now as a write of the issuing thread: a stage refilled
/// while a reader (a `wgmma` not yet waited for, a load) may still read
/// it is reported, whichever runs first. Its completion publishes on the
/// mbarrier what the issuing thread has done up to the copy, as an
/// arrival would, so the copy is ordered before the reads of whoever
/// waits for it.
pub fn tma_copy(bar: usize, dst: usize, data: Vec<u8>, site: Site) {
    let offset = mbarrier_offset(bar, site);
    check_bounds(Space::Shared, dst, data.len(), site);
    check_words(Space::Shared, dst, data.len(), Kind::Write, Some(&data), true, site);
    mbarrier_release(bar);
    let dst = dst - block().shared as usize;
    block().proxy.borrow_mut().copy(offset, dst, data, site).unwrap_or_else(|e| async_misuse(e, site));
}

/// A read by the asynchronous proxy (a TMA copy's source in global memory,
/// a TMA store's in shared memory): bounds, races with the block's
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

/// A `wgmma`'s read of its operand's `bytes` at shared `addr`: bounds,
/// landed copies and the race and initialization checks now, and the race
/// checks again at the [`wgmma_wait`] that retires its group, since the
/// tensor cores may read the bytes any time from the issue to then (as a
/// `cp.async`'s write is checked at its issue and at its wait). A stage
/// released before that wait is then a race with the copy that refills
/// it.
pub fn wgmma_read(addr: usize, bytes: usize, site: Site) {
    async_read(Space::Shared, addr, bytes, site);
    thread().copies.borrow_mut().wgmma.issue((addr, bytes, site));
}

/// `wgmma.commit_group`: the `wgmma`s since the last commit form a group.
pub fn wgmma_commit() {
    thread().copies.borrow_mut().wgmma.commit();
}

/// `wgmma.wait_group n`: the groups but the `n` newest are done; their
/// shared operands are race-checked again as this thread's reads, now.
pub fn wgmma_wait(n: usize) {
    let t = thread();
    while let Some(group) = { t.copies.borrow_mut().wgmma.retire(n) } {
        for (addr, bytes, site) in group {
            check_words(Space::Shared, addr, bytes, Kind::Read, None, false, site);
        }
    }
}

/// A TMA store (`cp.async.bulk.tensor.{2d,3d}.global.shared::cta`), or
/// with `add` a reduction (`cp.reduce.async.bulk.tensor .add` of `f32`
/// elements): the box of `map` at column `x`, row `y`, plane `z` from
/// shared memory at `src`, issued now, carried out at the [`bulk_wait`]
/// that completes its group.
pub fn tma_store(map: crate::tma::Map, xyz: (i64, i64, i64), add: bool, src: usize, site: Site) {
    if add && map.element_bytes != 4 {
        async_misuse("adds a TMA box of elements that are not f32".into(), site);
    }
    check_bounds(Space::Shared, src, map.box_bytes(), site);
    if !(src - block().shared as usize).is_multiple_of(1024) && map.swizzle == 128 {
        async_misuse(
            "stores a TMA box with the 128-byte swizzle from shared memory not on 1024 bytes".into(),
            site,
        );
    }
    thread().copies.borrow_mut().bulk.issue(PendingStore { map, xyz, add, src, site });
}

/// `cp.async.bulk.commit_group`.
pub fn bulk_commit() {
    thread().copies.borrow_mut().bulk.commit();
}

/// The copy engine's read of `bytes` at `addr` in global memory through a
/// tensor map (a row of a TMA box): bounds against the live allocations,
/// races with the grid's writes; not counted in the access analysis.
pub fn tma_read(addr: usize, bytes: usize, site: Site) {
    check_map_bounds(addr, bytes, site);
    check_words(Space::Global, addr, bytes, Kind::Read, None, false, site);
}

/// `cp.async.bulk.wait_group(.read) n`: the TMA stores of all but the `n`
/// newest groups read their shared bytes (bounds, races with the block's
/// writes, bytes never written) and write global memory (bounds, races;
/// a reduction's adds are atomic: they race with no other atomic), in
/// this thread's name, now.
pub fn bulk_wait(n: usize) {
    let t = thread();
    while let Some(group) = { t.copies.borrow_mut().bulk.retire(n) } {
        for st in group {
            let bytes = st.map.box_bytes();
            async_read(Space::Shared, st.src, bytes, st.site);
            // SAFETY: checked above to lie within the block's shared memory.
            let data = unsafe { std::slice::from_raw_parts(st.src as *const u8, bytes) }.to_vec();
            let base = block().shared as usize;
            st.map.store_box(st.xyz, st.src - base, &data, |addr, row| {
                check_map_bounds(addr, row.len(), st.site);
                let op = if st.add {
                    Op::Atomic { write: true, order: Ordering::Relaxed }
                } else {
                    Op::Write(row)
                };
                recorded_access(Space::Global, addr, row.len(), op, st.site);
                block().launch.before_map_write(addr);
                if st.add {
                    for (i, x) in row.chunks_exact(4).enumerate() {
                        let v = f32::from_le_bytes(x.try_into().unwrap());
                        // SAFETY: checked to lie in a live allocation; 4
                        // bytes on 4 (the map's rows start on 16).
                        let cell = unsafe { AtomicU32::from_ptr((addr + 4 * i) as *mut u32) };
                        let add = |w: u32| Some((f32::from_bits(w) + v).to_bits());
                        let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, add);
                    }
                } else {
                    // SAFETY: checked to lie in a live allocation.
                    unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), addr as *mut u8, row.len()) };
                }
            });
        }
    }
}
