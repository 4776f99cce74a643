//! Warp shuffles (`shfl.sync`) and votes: lanes of a warp exchange registers directly,
//! without shared memory or a barrier. On the host the emulator waits until
//! every lane named in the mask has arrived, then hands out the values.
//!
//! Each shuffle is an `unsafe fn`: the PTX ISA leaves `shfl.sync`
//! undefined unless every lane named in `mask` executes the same shuffle
//! with the same mask, which no type can promise. The caller says why its
//! lanes all get there (the emulator reports a lane that does not).

/// All 32 lanes take part.
pub const FULL_MASK: u32 = 0xffff_ffff;

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.down.f32"]
    fn shfl_sync_down_f32(mask: u32, value: f32, delta: u32, clamp: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.f32"]
    fn shfl_sync_bfly_f32(mask: u32, value: f32, lane_mask: u32, clamp: u32) -> f32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_sync_idx_i32(mask: u32, value: i32, src: u32, clamp: u32) -> i32;
}

/// `__shfl_sync(mask, value, src)`: every lane gets lane `src`'s `value`.
///
/// Besides sharing a value, this tells ptxas that the result is the same
/// in every lane: a value computed from the thread index, such as a
/// warpgroup's index, becomes one it can keep on the uniform datapath
/// (uniform registers, `UIADD3`), where `wgmma` descriptors and other
/// warp-wide operands are formed without a copy from each thread's
/// registers (`R2UR`).
///
/// # Safety
/// As for [`shfl_down_f32`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_idx_u32(mask: u32, value: u32, src: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: as for `shfl_down_f32`.
        unsafe { shfl_sync_idx_i32(mask, value as i32, src, 0x1f) as u32 }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::shuffle(mask, emu::ops::ShflOp::Idx(src), u64::from(value)) as u32
    }
}

/// `__shfl_down_sync(mask, value, delta)`: lane `i` gets lane `i + delta`'s
/// value (its own where `i + delta` > 31).
///
/// # Safety
/// Every lane named in `mask` executes this same shuffle, with this `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_down_f32(mask: u32, value: f32, delta: u32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: the caller's contract: every lane named in `mask` executes
        // this same shuffle.
        unsafe { shfl_sync_down_f32(mask, value, delta, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32::from_bits(emu::ops::shuffle(mask, emu::ops::ShflOp::Down(delta), value.to_bits() as u64) as u32)
    }
}

/// `__shfl_down_sync` for `i32`.
///
/// # Safety
/// As for [`shfl_down_f32`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_down_i32(mask: u32, value: i32, delta: u32) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: as for `shfl_down_f32`.
        unsafe { shfl_sync_down_i32(mask, value, delta, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::shuffle(mask, emu::ops::ShflOp::Down(delta), value as u32 as u64) as u32 as i32
    }
}

/// `__shfl_down_sync` for `f64`: two 32-bit shuffles of its halves.
///
/// # Safety
/// As for [`shfl_down_f32`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_down_f64(mask: u32, value: f64, delta: u32) -> f64 {
    let bits = value.to_bits();
    // SAFETY: the caller's contract, for both halves.
    let (lo, hi) = unsafe {
        (
            shfl_down_i32(mask, bits as u32 as i32, delta),
            shfl_down_i32(mask, (bits >> 32) as u32 as i32, delta),
        )
    };
    f64::from_bits((hi as u32 as u64) << 32 | lo as u32 as u64)
}

/// `__shfl_xor_sync(mask, value, lane_mask)`: lane `i` gets lane
/// `i ^ lane_mask`'s value (the butterfly step of an all-reduce).
///
/// # Safety
/// As for [`shfl_down_f32`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn shfl_xor_f32(mask: u32, value: f32, lane_mask: u32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: as for `shfl_down_f32`.
        unsafe { shfl_sync_bfly_f32(mask, value, lane_mask, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32::from_bits(
            emu::ops::shuffle(mask, emu::ops::ShflOp::Xor(lane_mask), value.to_bits() as u64) as u32
        )
    }
}

/// `__ballot_sync(mask, predicate)`: the lanes of `mask` whose predicate
/// is true, as a mask every lane receives (`vote.sync.ballot.b32`).
///
/// # Safety
/// Every lane named in `mask` executes this vote with this `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn ballot(mask: u32, predicate: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let ballot: u32;
        // SAFETY: the caller's contract; registers only.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {b}, p, {m}; }}",
                b = out(reg32) ballot, v = in(reg32) u32::from(predicate), m = in(reg32) mask, options(nostack)
            )
        };
        ballot
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::shuffle(mask, emu::ops::ShflOp::Ballot, u64::from(predicate)) as u32
    }
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
}

/// `__syncwarp(mask)`: the lanes named in `mask` wait for each other, and
/// their shared- and global-memory accesses before it are ordered before
/// their accesses after it (`bar.warp.sync`).
///
/// Since Volta the lanes of a warp are not promised to run in lock step:
/// warp-synchronous code (a scan in shared memory within a warp) needs
/// this between its steps. The calling lane must be in `mask`, and every
/// lane of `mask` must reach a `sync_warp` with the same mask; the
/// emulator reports a mask that breaks either rule, or names a lane that
/// has exited.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_warp(mask: u32) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a warp barrier has no memory-safety preconditions (a bad
        // mask is a hang or undefined behaviour of the warp, which the
        // emulator reports).
        unsafe { bar_warp_sync(mask) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::warp_sync(mask, core::panic::Location::caller());
}
