//! The tensor-memory accelerator (TMA): one thread asks for a whole 2-D
//! box of a matrix (or of one matrix of a stack, a 3-D map: [`copy_3d`]), and the copy engine moves it from global to shared
//! memory (`cp.async.bulk.tensor`), zero-filling what lies outside the
//! matrix, optionally swizzled, and counts its bytes on an [`Mbarrier`].
//!
//! What to copy is described by a tensor map the host encodes
//! (`cuTensorMapEncodeTiled`: the matrix's address, sizes and row stride,
//! the box, the swizzle) into 128 bytes the kernel reads from global
//! memory. The row stride must be a multiple of 16 bytes and the address
//! 16-byte aligned; with the 128-byte swizzle the box's rows are 128 bytes
//! and its shared destination 1024-byte aligned, and the bytes land at
//! [`swizzle_128`] of their unswizzled offsets — the layout `wgmma`'s
//! 128-byte-swizzle descriptors read (`wgmma` module).
//!
//! PTX ISA, "cp.async.bulk.tensor" (sm_90). On the host the emulator
//! decodes its own encoding of the map (`emu::tma::Map`) and copies the
//! box, landing it when a wait on the mbarrier observes the phase.

use super::In;
use super::barrier::Mbarrier;

pub use gpu_isa::swizzle::{swizzle, swizzle_128};

/// Words of one tensor map in global memory (128 bytes, 64-byte aligned).
pub const MAP_WORDS: usize = 16;

/// `fence.proxy.tensormap::generic.acquire.sys`: makes map `i` of `maps`,
/// written by the host (`cudaMemcpy`) before the launch, visible to this
/// thread's TMA copies. Once per block, before the first copy.
///
/// # Safety
/// `maps` holds at least `i + 1` maps.
#[inline(always)]
pub unsafe fn acquire_map(maps: In<u64>, i: usize) {
    let _map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract; a fence.
    unsafe {
        core::arch::asm!("fence.proxy.tensormap::generic.acquire.sys [{m}], 128;", m = in(reg64) _map, options(nostack))
    };
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes`:
/// copies the box of map `i` of `maps` whose first element is column `x`,
/// row `y` into shared memory at `dst`, and completes its bytes on `bar`.
///
/// # Safety
/// `maps` holds at least `i + 1` maps encoded for this launch's buffers
/// (64-byte aligned); `dst` lies in the launch's shared memory with room
/// for the box, aligned as the map's swizzle needs (1024 bytes for 128);
/// `bar` is initialized and its phase expects the bytes; nothing touches
/// the box's bytes until a wait on `bar` has observed the phase.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn copy_2d(dst: *mut u8, maps: In<u64>, i: usize, (x, y): (i32, i32), bar: Mbarrier) {
    let map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) crate::shared::window_address(dst), m = in(reg64) map,
            x = in(reg32) x, y = in(reg32) y, b = in(reg32) crate::shared::window_address(bar.ptr()),
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let site = core::panic::Location::caller();
        let data = box_bytes(dst, map, i, (x, y, i32::MIN), site);
        emu::ops::tma_copy(bar.ptr() as usize, dst as usize, data, site);
    }
}

/// `cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes`:
/// [`copy_2d`] from plane `z` of a 3-D map (a stack of matrices, the box
/// one plane deep): column `x`, row `y` of matrix `z`, zero-filled past
/// that matrix's own rows and columns, not from the next one's.
///
/// # Safety
/// As for [`copy_2d`], with map `i` a 3-D map whose box is one plane deep.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn copy_3d(dst: *mut u8, maps: In<u64>, i: usize, (x, y, z): (i32, i32, i32), bar: Mbarrier) {
    let map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
            d = in(reg32) crate::shared::window_address(dst), m = in(reg64) map,
            x = in(reg32) x, y = in(reg32) y, z = in(reg32) z,
            b = in(reg32) crate::shared::window_address(bar.ptr()),
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let site = core::panic::Location::caller();
        let data = box_bytes(dst, map, i, (x, y, z), site);
        emu::ops::tma_copy(bar.ptr() as usize, dst as usize, data, site);
    }
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster`:
/// [`copy_2d`] into every block of the cluster whose rank is a bit of
/// `mask`, at the same shared offset in each, completing the bytes on each
/// one's mbarrier at `bar`'s offset: one read of global memory (and of L2)
/// for all of them.
///
/// # Safety
/// As for [`copy_2d`], in every block of `mask` (each initialized its
/// mbarrier, a cluster barrier since, and expects the bytes in the phase),
/// and none of them has exited.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn copy_2d_multicast(
    dst: *mut u8,
    maps: In<u64>,
    i: usize,
    (x, y): (i32, i32),
    bar: Mbarrier,
    mask: u16,
) {
    let map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster \
             [{d}], [{m}, {{{x}, {y}}}], [{b}], {mask};",
            d = in(reg32) crate::shared::window_address(dst), m = in(reg64) map,
            x = in(reg32) x, y = in(reg32) y, b = in(reg32) crate::shared::window_address(bar.ptr()),
            mask = in(reg16) mask, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let site = core::panic::Location::caller();
        let data = box_bytes(dst, map, i, (x, y, i32::MIN), site);
        emu::ops::tma_copy_multicast(bar.ptr() as usize, dst as usize, data, mask, site);
    }
}

/// `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`: the reverse
/// of [`copy_2d`], a TMA store. The copy engine reads the box of map `i`
/// of `maps` from shared memory at `src` (laid out, and swizzled, as
/// [`copy_2d`] would have landed it) and writes it to the matrix with its
/// first element at column `x`, row `y`, leaving out what lies outside the
/// matrix: a tile's edges need no guards. It runs on after this thread
/// goes on; [`bulk_commit`] closes a group of them, [`bulk_wait_read`]
/// waits until a group has read its shared bytes.
///
/// # Safety
/// `maps` holds at least `i + 1` maps encoded for this launch's buffers,
/// acquired by this thread ([`acquire_map`]); `src` lies in the launch's
/// shared memory with the box, aligned as the swizzle needs (1024 bytes
/// for 128); every thread's writes of the box are ordered before this
/// (a barrier or `sync_warp` after each writer's
/// [`fence_async_shared`]); nothing writes the box until a
/// [`bulk_wait_read`] of this thread has seen its group read it; no other
/// access of the matrix's bytes races with it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_2d(src: *const u8, maps: In<u64>, i: usize, (x, y): (i32, i32)) {
    let map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(reg64) map, x = in(reg32) x, y = in(reg32) y,
            s = in(reg32) crate::shared::window_address(src), options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let site = core::panic::Location::caller();
        let m = read_map(map, i, "store_2d", site);
        if m.plane_bytes > 0 {
            panic!("a 2-D TMA store through map {i}, which is 3-D");
        }
        emu::ops::tma_store(m, (x as i64, y as i64, 0), false, src as usize, site);
    }
}

/// `cp.reduce.async.bulk.tensor.3d.global.shared::cta.add`: adds the
/// box of `f32`s at `src` in shared memory (laid out as [`copy_3d`] lands
/// it) into map `i`'s tensor at column `x`, row `y` of plane `z`, each
/// element atomically, in L2: what a TMA store is to a write. Blocks that
/// sum into one tensor (attention's dQ) reduce whole boxes, at the copy
/// engine's rate, rather than `red`s of a word each. Elements past the
/// plane's rows or columns are dropped. It runs on as [`store_2d`] does:
/// [`bulk_commit`], then [`bulk_wait_read`] before `src` is written again,
/// or [`bulk_wait`] before the sums are published.
///
/// # Safety
/// As [`store_2d`]'s, with a 3-D map of `f32` elements; no plain access
/// of the tensor's bytes races with it (other adds may).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn reduce_add_3d(src: *const u8, maps: In<u64>, i: usize, (x, y, z): (i32, i32, i32)) {
    let map = maps.as_ptr().wrapping_add(i * MAP_WORDS);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [{m}, {{{x}, {y}, {z}}}], [{s}];",
            m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z,
            s = in(reg32) crate::shared::window_address(src), options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let site = core::panic::Location::caller();
        let m = read_map(map, i, "reduce_add_3d", site);
        if m.plane_bytes == 0 {
            panic!("a 3-D TMA reduction through map {i}, which is 2-D");
        }
        emu::ops::tma_store(m, (x as i64, y as i64, z as i64), true, src as usize, site);
    }
}

/// `cp.async.bulk.commit_group`: closes this thread's group of TMA stores.
#[inline(always)]
pub fn bulk_commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no memory-safety preconditions.
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::bulk_commit();
}

/// `cp.async.bulk.wait_group.read N`: waits until all but this thread's
/// `N` newest groups of TMA stores have read their shared bytes (their
/// buffers may be written again; the global writes may still be under
/// way, and complete before the grid does).
#[inline(always)]
pub fn bulk_wait_read<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no memory-safety preconditions.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::bulk_wait(N as usize);
}

/// `cp.async.bulk.wait_group N`: waits until all but this thread's `N`
/// newest groups of TMA stores are complete: their writes (or adds) are
/// performed, so that a fence and a release after this publish them.
#[inline(always)]
pub fn bulk_wait<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no memory-safety preconditions.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::bulk_wait(N as usize);
}

/// `fence.proxy.async.shared::cta`: orders this thread's writes of shared
/// memory before later reads by the asynchronous proxy (a TMA store),
/// once a barrier or `sync_warp` has ordered the threads. (The emulator
/// orders them by the barrier alone.)
#[inline(always)]
pub fn fence_async_shared() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack))
    };
}

/// The emulator's reading of the map at `map` (map `i` of the launch's,
/// used by `what`): the copy engine's read of global memory, checked, and
/// its decoding.
#[cfg(not(target_arch = "nvptx64"))]
fn read_map(map: *const u64, i: usize, what: &str, site: emu::ops::Site) -> emu::tma::Map {
    emu::ops::async_read(emu::ops::Space::Global, map as usize, 8 * MAP_WORDS, site);
    // SAFETY: checked above to lie in a buffer of the launch.
    let words = unsafe { (map as *const [u64; MAP_WORDS]).read_unaligned() };
    let Some(m) = emu::tma::Map::decode(&words) else {
        panic!("{what}: map {i} is not a tensor map encoded for the emulator");
    };
    m
}

/// The emulator's copy engine: the box of the map at `map` (map `i` of
/// the launch's) at column `x`, row `y` of plane `z` (`i32::MIN`: a 2-D
/// copy), as it lands at `dst`
/// (swizzled by its offset), read from global memory with bounds and race
/// checks.
#[cfg(not(target_arch = "nvptx64"))]
fn box_bytes(
    dst: *mut u8,
    map: *const u64,
    i: usize,
    (x, y, z): (i32, i32, i32),
    site: emu::ops::Site,
) -> std::vec::Vec<u8> {
    let rank = if z == i32::MIN { 2 } else { 3 };
    let m = read_map(map, i, if rank == 2 { "copy_2d" } else { "copy_3d" }, site);
    // The hardware reads a map of the copy's own rank (a 3-D map's stride
    // between planes is not 0).
    if (m.plane_bytes > 0) != (rank == 3) {
        panic!("a {rank}-D TMA copy through map {i}, which is not {rank}-D");
    }
    let z = z.max(0);
    let base = emu::ops::shared_base() as usize;
    m.copy_box((x as i64, y as i64, z as i64), dst as usize - base, |addr, bytes| {
        emu::ops::tma_read(addr, bytes.len(), site);
        // SAFETY: checked above to lie in a live allocation.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, bytes.as_mut_ptr(), bytes.len()) };
    })
}
