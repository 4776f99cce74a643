//! `cuda_std::warp`: shuffles with a width and the predicate, lane id,
//! active mask, `sync_warp` and votes, with rust-cuda's signatures.
//!
//! A shuffle is `shfl.sync.{up,down,bfly,idx}.b32` on 32-bit words (64-bit
//! values take two, 128-bit four; the predicate is the first word's). Its
//! `c` operand packs the width: `(32 - width) << 8`, with clamp 31 for
//! down, xor and idx and 0 for up, as CUDA's `__shfl_*_sync` do. A lane
//! whose source lies outside its `width`-lane segment keeps its own value
//! and gets `false`. On the emulator every lane of `mask` must arrive, and
//! a source lane outside `mask` is reported.

/// A value `warp_shuffle_*` moves: the integers, `f16`, `bf16`, `f32` and
/// `f64`.
pub trait WarpShuffleValue: Copy {
    #[doc(hidden)]
    const WORDS: usize;
    #[doc(hidden)]
    fn to_words(self) -> [u32; 4];
    #[doc(hidden)]
    fn from_words(words: [u32; 4]) -> Self;
}

macro_rules! shuffle_values {
    ($($t:ty => $bits:ty, $words:expr, $to:expr, $from:expr;)*) => {$(
        impl WarpShuffleValue for $t {
            const WORDS: usize = $words;
            #[inline(always)]
            fn to_words(self) -> [u32; 4] {
                let b: $bits = ($to)(self);
                let wide = b as u128;
                [wide as u32, (wide >> 32) as u32, (wide >> 64) as u32, (wide >> 96) as u32]
            }
            #[inline(always)]
            fn from_words(w: [u32; 4]) -> Self {
                let wide = w[0] as u128 | (w[1] as u128) << 32 | (w[2] as u128) << 64 | (w[3] as u128) << 96;
                ($from)(wide as $bits)
            }
        }
    )*};
}

shuffle_values! {
    u8 => u8, 1, |v| v, |b| b;
    u16 => u16, 1, |v| v, |b| b;
    u32 => u32, 1, |v| v, |b| b;
    u64 => u64, 2, |v| v, |b| b;
    u128 => u128, 4, |v| v, |b| b;
    i8 => u8, 1, |v: i8| v as u8, |b: u8| b as i8;
    i16 => u16, 1, |v: i16| v as u16, |b: u16| b as i16;
    i32 => u32, 1, |v: i32| v as u32, |b: u32| b as i32;
    i64 => u64, 2, |v: i64| v as u64, |b: u64| b as i64;
    i128 => u128, 4, |v: i128| v as u128, |b: u128| b as i128;
    f32 => u32, 1, f32::to_bits, f32::from_bits;
    f64 => u64, 2, f64::to_bits, f64::from_bits;
    half::f16 => u16, 1, half::f16::to_bits, half::f16::from_bits;
    half::bf16 => u16, 1, half::bf16::to_bits, half::bf16::from_bits;
}

/// One `shfl.sync` of a 32-bit word: the word received and the predicate.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn shfl32<const MODE: u32>(mask: u32, value: u32, b: u32, c: u32) -> (u32, bool) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (out, ok): (u32, u32);
        macro_rules! shfl {
            ($mode:literal) => {
                // SAFETY: the caller's contract (every lane of `mask`
                // executes this shuffle); registers only.
                unsafe {
                    core::arch::asm!(
                        concat!("{{ .reg .pred p; shfl.sync.", $mode, ".b32 {d}|p, {a}, {b}, {c}, {m}; selp.u32 {ok}, 1, 0, p; }}"),
                        d = out(reg32) out, ok = out(reg32) ok, a = in(reg32) value, b = in(reg32) b,
                        c = in(reg32) c, m = in(reg32) mask, options(nostack)
                    )
                }
            };
        }
        match MODE {
            0 => shfl!("up"),
            1 => shfl!("down"),
            2 => shfl!("bfly"),
            _ => shfl!("idx"),
        }
        (out, ok != 0)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let got = emu::ops::shuffle(mask, emu::ops::ShflOp::Sync { mode: MODE, b, c }, u64::from(value));
        (got as u32, got >> 32 & 1 == 1)
    }
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn shuffle<T: WarpShuffleValue, const MODE: u32>(mask: u32, value: T, b: u32, width: u32) -> (T, bool) {
    assert!(width.is_power_of_two() && width <= 32, "a shuffle's width is a power of two up to 32");
    let clamp = if MODE == 0 { 0 } else { 31 };
    let c = ((32 - width) << 8) | clamp;
    // Straight-line words (`WORDS` is a constant): no loop over a local
    // array, so the words stay in registers.
    let w = value.to_words();
    let (w0, ok) = shfl32::<MODE>(mask, w[0], b, c);
    let w1 = if T::WORDS > 1 { shfl32::<MODE>(mask, w[1], b, c).0 } else { 0 };
    let (w2, w3) = if T::WORDS > 2 {
        (shfl32::<MODE>(mask, w[2], b, c).0, shfl32::<MODE>(mask, w[3], b, c).0)
    } else {
        (0, 0)
    };
    (T::from_words([w0, w1, w2, w3]), ok)
}

/// `__shfl_down_sync(mask, value, delta, width)`: lane `i` gets lane
/// `i + delta` of its segment, with `true`; past the segment, its own
/// value and `false`.
///
/// # Safety
/// Every lane named in `mask` executes this shuffle with this `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_shuffle_down<T: WarpShuffleValue>(
    mask: u32,
    value: T,
    delta: u32,
    width: u32,
) -> (T, bool) {
    shuffle::<T, 1>(mask, value, delta, width)
}

/// `__shfl_up_sync`: lane `i` gets lane `i - delta` of its segment.
///
/// # Safety
/// As for [`warp_shuffle_down`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_shuffle_up<T: WarpShuffleValue>(mask: u32, value: T, delta: u32, width: u32) -> (T, bool) {
    shuffle::<T, 0>(mask, value, delta, width)
}

/// `__shfl_xor_sync`: lane `i` gets lane `i ^ lane_mask`.
///
/// # Safety
/// As for [`warp_shuffle_down`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_shuffle_xor<T: WarpShuffleValue>(
    mask: u32,
    value: T,
    lane_mask: u32,
    width: u32,
) -> (T, bool) {
    shuffle::<T, 2>(mask, value, lane_mask, width)
}

/// `__shfl_sync`: every lane gets lane `idx` of its segment.
///
/// # Safety
/// As for [`warp_shuffle_down`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_shuffle_idx<T: WarpShuffleValue>(mask: u32, value: T, idx: u32, width: u32) -> (T, bool) {
    shuffle::<T, 3>(mask, value, idx, width)
}

/// This thread's lane in its warp (`%laneid`).
#[inline(always)]
pub fn lane_id() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let lane: u32;
        // SAFETY: reading a special register.
        unsafe {
            core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack))
        };
        lane
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        gpu_device::thread::thread_rank() % 32
    }
}

/// The lanes of the warp executing this call together (`activemask`). On
/// the emulator, whose lanes run one at a time: the lanes not yet exited.
#[inline(always)]
pub fn activemask() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let mask: u32;
        // SAFETY: no operands but the output.
        unsafe { core::arch::asm!("activemask.b32 {m};", m = out(reg32) mask, options(nomem, nostack)) };
        mask
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::active_mask()
    }
}

/// `__syncwarp(mask)`.
///
/// # Safety
/// The calling lane is in `mask`, and every lane of `mask` reaches a
/// `sync_warp` with this mask (the emulator reports each broken rule).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn sync_warp(mask: u32) {
    gpu_device::warp::sync_warp(mask);
}

/// `__ballot_sync(mask, predicate)`: the lanes of `mask` whose predicate
/// is true.
///
/// # Safety
/// Every lane named in `mask` executes this vote with this `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_vote_ballot(mask: u32, predicate: bool) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { gpu_device::warp::ballot(mask, predicate) }
}

/// `__all_sync(mask, predicate)`: whether every lane of `mask` votes true.
///
/// # Safety
/// As for [`warp_vote_ballot`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_vote_all(mask: u32, predicate: bool) -> bool {
    // SAFETY: the caller's contract.
    unsafe { warp_vote_ballot(mask, predicate) & mask == mask }
}

/// `__any_sync(mask, predicate)`: whether some lane of `mask` votes true.
///
/// # Safety
/// As for [`warp_vote_ballot`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn warp_vote_any(mask: u32, predicate: bool) -> bool {
    // SAFETY: the caller's contract.
    unsafe { warp_vote_ballot(mask, predicate) & mask != 0 }
}
