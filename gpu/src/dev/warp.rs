//! Warp shuffles (`shfl.sync`): lanes of a warp exchange registers directly,
//! without shared memory or a barrier. On the host the emulator waits until
//! every lane named in the mask has arrived, then hands out the values.

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
}

/// `__shfl_down_sync(mask, value, delta)`: lane `i` gets lane `i + delta`'s
/// value (its own where `i + delta` > 31).
#[inline(always)]
pub fn shfl_down_f32(mask: u32, value: f32, delta: u32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: every lane named in `mask` executes this same shuffle.
        unsafe { shfl_sync_down_f32(mask, value, delta, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32::from_bits(
            emu::device::shuffle(mask, emu::device::ShflOp::Down(delta), value.to_bits() as u64) as u32
        )
    }
}

/// `__shfl_down_sync` for `i32`.
#[inline(always)]
pub fn shfl_down_i32(mask: u32, value: i32, delta: u32) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: as for `shfl_down_f32`.
        unsafe { shfl_sync_down_i32(mask, value, delta, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::device::shuffle(mask, emu::device::ShflOp::Down(delta), value as u32 as u64) as u32 as i32
    }
}

/// `__shfl_down_sync` for `f64`: two 32-bit shuffles of its halves.
#[inline(always)]
pub fn shfl_down_f64(mask: u32, value: f64, delta: u32) -> f64 {
    let bits = value.to_bits();
    let lo = shfl_down_i32(mask, bits as u32 as i32, delta) as u32 as u64;
    let hi = shfl_down_i32(mask, (bits >> 32) as u32 as i32, delta) as u32 as u64;
    f64::from_bits(hi << 32 | lo)
}

/// `__shfl_xor_sync(mask, value, lane_mask)`: lane `i` gets lane
/// `i ^ lane_mask`'s value (the butterfly step of an all-reduce).
#[inline(always)]
pub fn shfl_xor_f32(mask: u32, value: f32, lane_mask: u32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: as for `shfl_down_f32`.
        unsafe { shfl_sync_bfly_f32(mask, value, lane_mask, 0x1f) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32::from_bits(
            emu::device::shuffle(mask, emu::device::ShflOp::Xor(lane_mask), value.to_bits() as u64) as u32
        )
    }
}
