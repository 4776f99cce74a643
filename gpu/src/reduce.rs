//! Parallel reduction: the sum of `n` elements, from an in-place tree in
//! global memory to a bandwidth-bound, deterministic one-pass kernel.
//!
//! A sum reads each element once and writes almost nothing, so the floor is
//! `n * size_of::<T>()` bytes over the read bandwidth; the host reports
//! each kernel against a device-to-device copy measured in the same run.
//!
//! Kernels 1 to 5 reduce each block's segment of the input to one partial
//! sum, `partials[blockIdx.x]`; the host launches the same kernel again on
//! the partials until one value is left (2^28 elements: 4 launches of
//! kernel 2). Kernel 6 does the whole sum in one launch.
//!
//! Every kernel is generic over [`Sum`] and exported for `i32` (wrapping,
//! so exact whatever the order) and `f32`, and kernel 6 for `f64` too. The
//! `i32` instances are what prove the indexing: any element lost or counted
//! twice changes an exact sum, while a float sum of 2^28 terms has rounding
//! error larger than one element.
//!
//! Every summation order here is fixed by `n` and the block shape alone
//! (no float atomics), so the same input gives the same bits on every run.
//!
//! The seed (`reduceGmem`, `reduceSmem`, `reduceSmemUnroll`) has bugs that
//! these kernels avoid and [`seed_bugs`] reproduces for the tests:
//! threads past `n` `return` before the barriers (the barrier then waits
//! for threads that have exited, and their shared slots are never written),
//! `reduceSmem` adds `idata[tid + s]` from global memory after staging into
//! shared memory (so only the first step sees partial sums), it writes
//! `idata[0]` instead of `smem[0]` as the block's result, and
//! `reduceSmemUnroll` drops the last block's elements unless all four
//! strided loads are in range. The seed's last-warp `volatile` steps without
//! a barrier also rely on lock-step warps, which Volta and later no longer
//! guarantee; kernel 5 replaces them with shuffles.

use crate::dev::warp::{FULL_MASK, shfl_down_f32, shfl_down_f64, shfl_down_i32};
use crate::dev::{In, Out, SharedArray, block_dim_x, block_idx_x, grid_dim_x, sync_threads, thread_idx_x};
use crate::launch::{Dim3, Kernel};

/// Threads per block of kernels 1, 2, 3 and 5 (a power of two).
pub const BLOCK: usize = 256;
/// Blocks' worth of input each thread of kernels 3 to 5 sums first.
pub const UNROLL: usize = 4;
/// Threads per block kernel 4 is launched with: its block size is a launch
/// parameter, and so is its shared memory. 256, as for kernel 3, so that the
/// only change is the run-time width (at 512 threads, one more tree level
/// and barrier made it slower still).
pub const DYNAMIC_BLOCK: usize = 256;
/// Threads per block of kernel 6.
pub const FAST_BLOCK: usize = 256;
/// Independent 16-byte loads per thread per step of kernel 6.
pub const FAST_LOADS: usize = 4;
/// Steps per chunk of kernel 6.
pub const FAST_STEPS: usize = 8;
/// Warps per block of kernel 6.
pub const FAST_WARPS: usize = FAST_BLOCK / 32;

/// Elements of kernel 6's fixed-size chunk for a `T` of `size` bytes: each
/// chunk's partial sum has a fixed order, whatever block sums it.
pub const fn fast_chunk(size: usize) -> usize {
    FAST_BLOCK * FAST_LOADS * FAST_STEPS * (16 / size)
}

/// The types we sum: an identity, an addition, and a warp shuffle.
pub trait Sum: Copy {
    const ZERO: Self;
    /// `i32` wraps: the sum is exact modulo 2^32 in any order.
    fn add(self, other: Self) -> Self;
    /// `__shfl_down_sync(FULL_MASK, self, delta)`.
    fn shfl_down(self, delta: u32) -> Self;
}

impl Sum for i32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32) -> Self {
        shfl_down_i32(FULL_MASK, self, delta)
    }
}

impl Sum for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32) -> Self {
        shfl_down_f32(FULL_MASK, self, delta)
    }
}

impl Sum for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn shfl_down(self, delta: u32) -> Self {
        shfl_down_f64(FULL_MASK, self, delta)
    }
}

/// The kernels of one variant, per element type.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Short name: `gmem`, `smem`, `unroll`, `dynamic`, `shuffle`, `fast`.
    pub name: &'static str,
    /// Threads per block.
    pub block: usize,
    pub i32: Option<Kernel>,
    pub f32: Option<Kernel>,
    /// Only kernel 6 is exported for `f64`.
    pub f64: Option<Kernel>,
    /// Input elements one block reduces per launch (kernels 1 to 5).
    pub per_block: usize,
    /// Kernel 1 sums in place: it overwrites its input.
    pub in_place: bool,
}

/// A kernel of variants 1 to 5: one partial per block, `per_block` inputs each.
const fn tree(name: &'static str, block: usize, elem: usize, per_block: usize, shared: bool) -> Kernel {
    Kernel::new(
        name,
        Dim3::x(block as u32),
        if shared { (block * elem) as u32 } else { 0 },
        [per_block as u32, 1],
    )
}

/// Kernel 6: shared memory for one partial per warp, then the last-block flag.
const fn fast(name: &'static str, elem: usize) -> Kernel {
    Kernel::new(
        name,
        Dim3::x(FAST_BLOCK as u32),
        (FAST_WARPS * elem + 16) as u32,
        [fast_chunk(elem) as u32, 1],
    )
}

/// The most additions any element goes through in kernel 6 for `n`
/// elements of `size` bytes (see [`reduce_fast`]).
pub const fn fast_add_depth(n: usize, size: usize) -> usize {
    let chunks = n.div_ceil(fast_chunk(size));
    16 / size + 29 + chunks.div_ceil(FAST_BLOCK)
}

/// Byte offset of kernel 6's last-block flag in shared memory.
pub const fn fast_flag_offset(elem: usize) -> usize {
    FAST_WARPS * elem
}

pub const GMEM: Variant = Variant {
    name: "gmem",
    block: BLOCK,
    i32: Some(tree("reduce_gmem_i32", BLOCK, 4, BLOCK, false)),
    f32: Some(tree("reduce_gmem_f32", BLOCK, 4, BLOCK, false)),
    f64: None,
    per_block: BLOCK,
    in_place: true,
};
pub const SMEM: Variant = Variant {
    name: "smem",
    block: BLOCK,
    i32: Some(tree("reduce_smem_i32", BLOCK, 4, BLOCK, true)),
    f32: Some(tree("reduce_smem_f32", BLOCK, 4, BLOCK, true)),
    f64: None,
    per_block: BLOCK,
    in_place: false,
};
pub const UNROLLED: Variant = Variant {
    name: "unroll",
    block: BLOCK,
    i32: Some(tree("reduce_unroll_i32", BLOCK, 4, BLOCK * UNROLL, true)),
    f32: Some(tree("reduce_unroll_f32", BLOCK, 4, BLOCK * UNROLL, true)),
    f64: None,
    per_block: BLOCK * UNROLL,
    in_place: false,
};
pub const DYNAMIC: Variant = Variant {
    name: "dynamic",
    block: DYNAMIC_BLOCK,
    i32: Some(tree("reduce_dynamic_i32", DYNAMIC_BLOCK, 4, DYNAMIC_BLOCK * UNROLL, true)),
    f32: Some(tree("reduce_dynamic_f32", DYNAMIC_BLOCK, 4, DYNAMIC_BLOCK * UNROLL, true)),
    f64: None,
    per_block: DYNAMIC_BLOCK * UNROLL,
    in_place: false,
};
pub const SHUFFLE: Variant = Variant {
    name: "shuffle",
    block: BLOCK,
    i32: Some(Kernel { shared_bytes: 32 * 4, ..tree("reduce_shuffle_i32", BLOCK, 4, BLOCK * UNROLL, false) }),
    f32: Some(Kernel { shared_bytes: 32 * 4, ..tree("reduce_shuffle_f32", BLOCK, 4, BLOCK * UNROLL, false) }),
    f64: None,
    per_block: BLOCK * UNROLL,
    in_place: false,
};
pub const FAST: Variant = Variant {
    name: "fast",
    block: FAST_BLOCK,
    i32: Some(fast("reduce_fast_i32", 4)),
    f32: Some(fast("reduce_fast_f32", 4)),
    f64: Some(fast("reduce_fast_f64", 8)),
    per_block: 0,
    in_place: false,
};

/// Every reduction variant, slowest idea first.
pub const ALL: [Variant; 6] = [GMEM, SMEM, UNROLLED, DYNAMIC, SHUFFLE, FAST];

/// The summation tree over `smem[0..width]` shared by kernels 2 to 4:
/// `log2(width)` steps, each halving the active threads; thread `tid`
/// adds `smem[tid + stride]` into `smem[tid]`, then the block waits.
/// Consecutive threads touch consecutive words: no bank conflicts, but
/// every step is a barrier, and the last five steps keep only part of one
/// warp busy.
#[inline(always)]
unsafe fn tree_in_shared<T: Sum>(smem: SharedArray<T>, tid: usize, width: usize) {
    let mut stride = width / 2;
    while stride > 0 {
        if tid < stride {
            // SAFETY: tid + stride < width, the array's length.
            unsafe { smem.set(tid, smem.get(tid).add(smem.get(tid + stride))) };
        }
        sync_threads();
        stride /= 2;
    }
}

/// 1. In-place tree in global memory (the seed's `reduceGmem`, fixed).
///
/// Block `b` owns `data[256 b..256 b + 256]` and halves it 8 times in place,
/// a barrier after each step (a barrier also orders the block's global
/// accesses). Every step reads and writes global memory: 8 round trips
/// through L1/L2 per element, and the input is destroyed. Threads whose
/// partner lies past `n` skip the add but still reach every barrier.
#[inline(always)]
unsafe fn reduce_gmem<T: Sum>(data: Out<T>, partials: Out<T>, n: u64) {
    let n = n as usize;
    let tid = thread_idx_x() as usize;
    let base = block_idx_x() as usize * BLOCK;
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if tid < stride && base + tid + stride < n {
            // SAFETY: base + tid + stride < n.
            unsafe { data.store(base + tid, data.load(base + tid).add(data.load(base + tid + stride))) };
        }
        sync_threads();
        stride /= 2;
    }
    if tid == 0 {
        // SAFETY: base < n (the grid has ceil(n / 256) blocks); one partial per block.
        unsafe { partials.store(block_idx_x() as usize, data.load(base)) };
    }
}

/// 2. The same tree in shared memory (the seed's `reduceSmem`, fixed).
///
/// Each thread stages one element (0 past `n`) into `smem[tid]`, then the
/// tree runs in shared memory: global memory is read once per element.
/// Barely faster than kernel 1 (H200: 939 vs 905 GB/s): the in-place tree's
/// re-reads hit the SM's L1, so both are limited by the same thing, one
/// element per thread and 8 barriers per 256 elements. Kernel 3 attacks that.
#[inline(always)]
unsafe fn reduce_smem<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    let n = n as usize;
    // SAFETY: the launch passes BLOCK elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    let i = block_idx_x() as usize * BLOCK + tid;
    // SAFETY: guarded by i < n; tid < BLOCK.
    unsafe { smem.set(tid, if i < n { input.load(i) } else { T::ZERO }) };
    sync_threads();
    unsafe { tree_in_shared(smem, tid, BLOCK) };
    if tid == 0 {
        unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
    }
}

/// The first step of kernels 3 to 5: thread `tid` of block `b` (of
/// `width` threads) sums `input[4 width b + tid + k width]` for k = 0..3,
/// each guarded on its own (the seed dropped all four unless the last was
/// in range). The four loads are independent: four requests in flight per
/// thread, and a quarter of the blocks.
#[inline(always)]
unsafe fn sum_unrolled<T: Sum>(input: In<T>, n: usize, width: usize, tid: usize) -> T {
    let base = block_idx_x() as usize * width * UNROLL + tid;
    let mut v = [T::ZERO; UNROLL];
    for (k, v) in v.iter_mut().enumerate() {
        let i = base + k * width;
        if i < n {
            // SAFETY: i < n.
            *v = unsafe { input.load(i) };
        }
    }
    v[0].add(v[1]).add(v[2]).add(v[3])
}

/// Kernels 3 and 4: the four strided loads, then the shared-memory tree,
/// over a block of `width` threads with `width` elements of shared memory.
#[inline(always)]
unsafe fn reduce_unrolled_tree<T: Sum>(input: In<T>, partials: Out<T>, n: u64, width: usize) {
    // SAFETY: the launch passes `width` elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    unsafe { smem.set(tid, sum_unrolled(input, n as usize, width, tid)) };
    sync_threads();
    unsafe { tree_in_shared(smem, tid, width) };
    if tid == 0 {
        unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
    }
}

/// 3. Each thread first sums 4 blocks' worth of input (the seed's
/// `reduceSmemUnroll`), then the shared-memory tree of kernel 2, over a
/// block of the compile-time `BLOCK` threads.
#[inline(always)]
unsafe fn reduce_unroll<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    unsafe { reduce_unrolled_tree(input, partials, n, BLOCK) }
}

/// 4. Kernel 3 with the block size, and so the shared memory, chosen at
/// launch (`blockDim.x`, a power of two; launched with 256 threads): the
/// only difference is the `width` argument.
///
/// In CUDA C this is `extern __shared__ int smem[]` instead of
/// `__shared__ int smem[DIM]`. Here every kernel's shared memory is
/// launch-sized (`gpu_launch_sized_workgroup_mem`: a static `.shared` array
/// declared through inline asm reaches LLVM as a generic pointer, see
/// TOOLCHAIN.md), so what changes is that the tree's width is a run-time
/// value: the tree's loop cannot be unrolled at compile time (a run-time
/// trip count and shift per level). It is slower than kernel 3 (H200, 2^28
/// f32: 2560 against 3110 GB/s): the tree is short, so the per-level loop
/// overhead and the unknown trip count (no unrolling, no scheduling across
/// levels) show. What it buys is the freedom to pick the block size per
/// launch; kernel 5 drops the tree altogether.
#[inline(always)]
unsafe fn reduce_dynamic<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    unsafe { reduce_unrolled_tree(input, partials, n, block_dim_x() as usize) }
}

/// The sum over a warp's 32 lanes, in lane 0: five `shfl.sync.down` steps
/// (16, 8, 4, 2, 1), registers only, no barrier.
#[inline(always)]
fn warp_sum<T: Sum>(mut v: T) -> T {
    let mut delta = 16;
    while delta > 0 {
        v = v.add(v.shfl_down(delta));
        delta /= 2;
    }
    v
}

/// The sum over a block of `32 * warps` threads, in thread 0: each warp
/// sums with shuffles, lane 0 of each writes `smem[warp]`, one barrier,
/// then warp 0 sums those. Bank `warp % 32`: conflict-free.
#[inline(always)]
unsafe fn block_sum<T: Sum>(smem: SharedArray<T>, v: T, tid: usize, warps: usize) -> T {
    let (lane, warp) = (tid % 32, tid / 32);
    let v = warp_sum(v);
    if lane == 0 {
        // SAFETY: warp < warps, the array's length.
        unsafe { smem.set(warp, v) };
    }
    sync_threads();
    let mut total = T::ZERO;
    if warp == 0 {
        // SAFETY: lane < warps.
        total = warp_sum(if lane < warps { unsafe { smem.get(lane) } } else { T::ZERO });
    }
    total
}

/// 5. Kernel 3 with warp shuffles instead of the shared-memory tree: 1
/// barrier per block instead of 8, and no `volatile` lock-step tricks.
#[inline(always)]
unsafe fn reduce_shuffle<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    // SAFETY: the launch passes 32 elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    let v = unsafe { sum_unrolled(input, n as usize, BLOCK, tid) };
    let total = unsafe { block_sum(smem, v, tid, BLOCK / 32) };
    if tid == 0 {
        unsafe { partials.store(block_idx_x() as usize, total) };
    }
}

/// Sum of the `V` lanes of one 16-byte load, lane 0 first.
#[inline(always)]
fn lanes<T: Sum, const V: usize>(v: [T; V]) -> T {
    let mut s = v[0];
    for x in &v[1..] {
        s = s.add(*x);
    }
    s
}

/// 6. Fast and deterministic: the whole sum in one launch.
///
/// The input is cut into fixed chunks of `fast_chunk` elements (32768
/// `f32`: 128 KiB); a grid of any size strides over the chunks. In a chunk,
/// thread `t` of 256 issues 4 independent 16-byte loads per step
/// (`ld.global.v4`, a warp reads 512 contiguous bytes per load: 16 sectors,
/// all used), 8 steps, into 4 register accumulators; then [`block_sum`]
/// gives the chunk's partial, `partials[chunk]`. The last block to finish
/// (an integer atomic ticket, after a fence) sums the partials: thread `t`
/// adds `partials[t], partials[t + 256], ...` in order, then one more
/// [`block_sum`]. It resets the ticket for the next launch.
///
/// The order of every addition depends on `n` alone, not on the grid or on
/// timing, so the bits of the result are the same for every grid size
/// (the tests launch several) and every run. A chunk that runs past `n`
/// takes the same steps with element-wise guarded loads.
///
/// Rounding: an element goes through at most `V - 1` lane adds, 8
/// accumulator adds, 2 to merge 4 accumulators, 5 + 5 shuffle levels, then
/// `ceil(chunks / 256)` serial adds and 5 + 5 more, so at most `h = V + 29 +
/// ceil(chunks / 256)` additions and `|sum - exact| <= h u / (1 - h u) *
/// sum |x|` with `u` the unit roundoff (2^-24 for `f32`); see
/// [`fast_add_depth`]. The host asserts this bound.
#[inline(always)]
unsafe fn reduce_fast<T: Sum, const V: usize>(
    input: In<T>,
    partials: Out<T>,
    ticket: Out<u32>,
    out: Out<T>,
    n: u64,
) {
    use core::sync::atomic::{AtomicU32, Ordering, fence};
    let n = n as usize;
    let chunk = FAST_BLOCK * FAST_LOADS * FAST_STEPS * V;
    let chunks = n.div_ceil(chunk);
    let tid = thread_idx_x() as usize;
    // SAFETY: the launch passes FAST_WARPS elements plus the flag.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let last_block = unsafe { SharedArray::<u32>::launch_sized_at(FAST_WARPS * core::mem::size_of::<T>()) };

    let mut c = block_idx_x() as usize;
    while c < chunks {
        let base = c * chunk;
        let mut acc = [T::ZERO; FAST_LOADS];
        if base + chunk <= n {
            for step in 0..FAST_STEPS {
                for (k, acc) in acc.iter_mut().enumerate() {
                    let i = base + ((step * FAST_LOADS + k) * FAST_BLOCK + tid) * V;
                    // SAFETY: i + V <= base + chunk <= n; i is a multiple of V.
                    *acc = acc.add(lanes(unsafe { input.load16::<V>(i) }));
                }
            }
        } else {
            for step in 0..FAST_STEPS {
                for (k, acc) in acc.iter_mut().enumerate() {
                    let i = base + ((step * FAST_LOADS + k) * FAST_BLOCK + tid) * V;
                    let mut v = [T::ZERO; V];
                    for (l, v) in v.iter_mut().enumerate() {
                        if i + l < n {
                            // SAFETY: i + l < n.
                            *v = unsafe { input.load(i + l) };
                        }
                    }
                    *acc = acc.add(lanes(v));
                }
            }
        }
        let v = acc[0].add(acc[1]).add(acc[2].add(acc[3]));
        let total = unsafe { block_sum(smem, v, tid, FAST_WARPS) };
        if tid == 0 {
            // SAFETY: c < chunks, the partials' length.
            unsafe { partials.store(c, total) };
        }
        // smem is rewritten by the next chunk's block_sum.
        sync_threads();
        c += grid_dim_x() as usize;
    }

    if tid == 0 {
        // Make this block's partials visible device-wide before taking a
        // ticket; the block that draws the last ticket sees all of them.
        fence(Ordering::SeqCst);
        // SAFETY: `ticket` is one u32, zero at launch; only thread 0 of
        // each block touches it.
        let drawn = unsafe { AtomicU32::from_ptr(ticket.as_ptr()) }.fetch_add(1, Ordering::AcqRel);
        unsafe { last_block.set(0, (drawn + 1 == grid_dim_x()) as u32) };
    }
    sync_threads();
    if unsafe { last_block.get(0) } == 1 {
        fence(Ordering::SeqCst);
        let partials = In::from_out(partials);
        let mut s = T::ZERO;
        let mut i = tid;
        while i < chunks {
            // SAFETY: i < chunks; volatile: written by other blocks.
            s = s.add(unsafe { partials.load_volatile(i) });
            i += FAST_BLOCK;
        }
        let total = unsafe { block_sum(smem, s, tid, FAST_WARPS) };
        if tid == 0 {
            unsafe {
                out.store(0, total);
                ticket.store(0, 0);
            }
        }
    }
}

/// Exports one generic reduction body for one element type.
macro_rules! tree_kernel {
    ($($name:ident = $body:ident::<$t:ty>($input:ident: $in_ty:ty);)*) => {$(
        kernel! {
            /// See the generic body of the same family step.
            pub fn $name($input: $in_ty, partials: Out<$t>, n: u64) {
                $body::<$t>($input, partials, n)
            }
        }
    )*};
}

tree_kernel! {
    reduce_gmem_i32 = reduce_gmem::<i32>(data: Out<i32>);
    reduce_gmem_f32 = reduce_gmem::<f32>(data: Out<f32>);
    reduce_smem_i32 = reduce_smem::<i32>(input: In<i32>);
    reduce_smem_f32 = reduce_smem::<f32>(input: In<f32>);
    reduce_unroll_i32 = reduce_unroll::<i32>(input: In<i32>);
    reduce_unroll_f32 = reduce_unroll::<f32>(input: In<f32>);
    reduce_dynamic_i32 = reduce_dynamic::<i32>(input: In<i32>);
    reduce_dynamic_f32 = reduce_dynamic::<f32>(input: In<f32>);
    reduce_shuffle_i32 = reduce_shuffle::<i32>(input: In<i32>);
    reduce_shuffle_f32 = reduce_shuffle::<f32>(input: In<f32>);
}

macro_rules! fast_kernel {
    ($($name:ident = <$t:ty, $v:literal>;)*) => {$(
        kernel! {
            /// Kernel 6, see [`reduce_fast`].
            pub fn $name(input: In<$t>, partials: Out<$t>, ticket: Out<u32>, out: Out<$t>, n: u64) {
                reduce_fast::<$t, $v>(input, partials, ticket, out, n)
            }
        }
    )*};
}

fast_kernel! {
    reduce_fast_i32 = <i32, 4>;
    reduce_fast_f32 = <f32, 4>;
    reduce_fast_f64 = <f64, 2>;
}

/// The seed's bugs, reproduced on purpose (`i32` only) so that the tests
/// can show they catch each one. Never use these.
pub mod seed_bugs {
    use super::{BLOCK, UNROLL, Variant, tree};
    use super::{sum_unrolled, tree_in_shared};
    use crate::dev::{In, Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};

    const fn bug(name: &'static str, kernel: &'static str, per_block: usize) -> Variant {
        Variant {
            name,
            block: BLOCK,
            i32: Some(tree(kernel, BLOCK, 4, per_block, true)),
            f32: None,
            f64: None,
            per_block,
            in_place: false,
        }
    }

    pub const GLOBAL_READ: Variant = bug("seed_bug_global_read", "reduce_seed_bug_global_read_i32", BLOCK);
    pub const EARLY_RETURN: Variant = bug("seed_bug_early_return", "reduce_seed_bug_early_return_i32", BLOCK);
    pub const WRONG_ELEMENT: Variant =
        bug("seed_bug_wrong_element", "reduce_seed_bug_wrong_element_i32", BLOCK);
    pub const UNROLL_DROP: Variant =
        bug("seed_bug_unroll_drop", "reduce_seed_bug_unroll_drop_i32", BLOCK * UNROLL);
    pub const ALL: [Variant; 4] = [GLOBAL_READ, EARLY_RETURN, WRONG_ELEMENT, UNROLL_DROP];

    kernel! {
        /// `reduceSmem`'s tree adds `idata[tid + stride]` from global
        /// memory after staging into shared memory: from the second step
        /// on it adds raw inputs instead of partial sums.
        pub fn reduce_seed_bug_global_read_i32(input: In<i32>, partials: Out<i32>, n: u64) {
            let n = n as usize;
            let smem = SharedArray::<i32>::launch_sized();
            let tid = thread_idx_x() as usize;
            let base = block_idx_x() as usize * BLOCK;
            smem.set(tid, if base + tid < n { input.load(base + tid) } else { 0 });
            sync_threads();
            let mut stride = BLOCK / 2;
            while stride > 0 {
                if tid < stride && base + tid + stride < n {
                    smem.set(tid, smem.get(tid).wrapping_add(input.load(base + tid + stride)));
                }
                sync_threads();
                stride /= 2;
            }
            if tid == 0 {
                partials.store(block_idx_x() as usize, smem.get(0));
            }
        }
    }

    kernel! {
        /// Threads past `n` return before staging and before the barriers:
        /// their shared slots keep whatever an earlier block left there,
        /// and the tree adds it in.
        pub fn reduce_seed_bug_early_return_i32(input: In<i32>, partials: Out<i32>, n: u64) {
            let smem = SharedArray::<i32>::launch_sized();
            let tid = thread_idx_x() as usize;
            let i = block_idx_x() as usize * BLOCK + tid;
            if i >= n as usize {
                return;
            }
            smem.set(tid, input.load(i));
            sync_threads();
            tree_in_shared(smem, tid, BLOCK);
            if tid == 0 {
                partials.store(block_idx_x() as usize, smem.get(0));
            }
        }
    }

    kernel! {
        /// The block's result is written from `idata[0]` (the block's first
        /// input) instead of `smem[0]` (its sum).
        pub fn reduce_seed_bug_wrong_element_i32(input: In<i32>, partials: Out<i32>, n: u64) {
            let n = n as usize;
            let smem = SharedArray::<i32>::launch_sized();
            let tid = thread_idx_x() as usize;
            let base = block_idx_x() as usize * BLOCK;
            smem.set(tid, if base + tid < n { input.load(base + tid) } else { 0 });
            sync_threads();
            tree_in_shared(smem, tid, BLOCK);
            if tid == 0 {
                partials.store(block_idx_x() as usize, input.load(base));
            }
        }
    }

    kernel! {
        /// `reduceSmemUnroll` sums its four strided elements only if the
        /// last is in range, and otherwise none of them: a block that runs
        /// past `n` loses up to three quarters of its elements. (The seed's
        /// `<=` also reads one past the end; this keeps `<` so that the
        /// only fault is the dropped elements.)
        pub fn reduce_seed_bug_unroll_drop_i32(input: In<i32>, partials: Out<i32>, n: u64) {
            let n = n as usize;
            let smem = SharedArray::<i32>::launch_sized();
            let tid = thread_idx_x() as usize;
            let i = block_idx_x() as usize * BLOCK * UNROLL + tid;
            let v = if i + 3 * BLOCK < n { sum_unrolled(input, n, BLOCK, tid) } else { 0 };
            smem.set(tid, v);
            sync_threads();
            tree_in_shared(smem, tid, BLOCK);
            if tid == 0 {
                partials.store(block_idx_x() as usize, smem.get(0));
            }
        }
    }
}
