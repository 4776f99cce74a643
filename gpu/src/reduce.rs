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
use crate::kernel;

/// Threads per block of kernels 1, 2, 3 and 5 (a power of two).
pub const BLOCK: usize = 256;
/// Blocks' worth of input each thread of kernels 3 to 5 sums first.
pub const UNROLL: usize = 4;
/// Threads per block kernel 4 is launched with: its block size is a launch
/// parameter, and so is its shared memory. 256, as for kernel 3, so that the
/// only change is the run-time width.
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

/// The most additions any element goes through in kernel 6 for `n`
/// elements of `size` bytes (see [`reduce_fast()`]).
pub const fn fast_add_depth(n: usize, size: usize) -> usize {
    let chunks = n.div_ceil(fast_chunk(size));
    16 / size + 29 + chunks.div_ceil(FAST_BLOCK)
}

/// The types we sum: an identity, an addition, a warp shuffle, and a
/// 16-byte load.
pub trait Sum: Copy + 'static {
    const ZERO: Self;
    /// Elements in 16 bytes: one `ld.global.v4.b32` or `ld.global.v2.b64`.
    const LANES: usize = 16 / size_of::<Self>();
    /// `i32` wraps: the sum is exact modulo 2^32 in any order.
    fn add(self, other: Self) -> Self;
    /// `__shfl_down_sync(FULL_MASK, self, delta)`.
    ///
    /// # Safety
    /// All 32 lanes of the warp execute this shuffle.
    unsafe fn shfl_down(self, delta: u32) -> Self;
    /// The sum of `input[i..i + LANES]`, lane 0 first, read with one 16-byte
    /// load.
    ///
    /// # Safety
    /// `i + LANES` is within the buffer and `i` is a multiple of `LANES`.
    unsafe fn sum16(input: In<Self>, i: usize) -> Self;
}

/// The sum of the lanes of one 16-byte load, lane 0 first.
#[inline(always)]
fn lanes<T: Sum, const V: usize>(v: [T; V]) -> T {
    let mut s = v[0];
    for x in &v[1..] {
        s = s.add(*x);
    }
    s
}

impl Sum for i32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline(always)]
    unsafe fn shfl_down(self, delta: u32) -> Self {
        // SAFETY: the caller's contract.
        unsafe { shfl_down_i32(FULL_MASK, self, delta) }
    }
    #[inline(always)]
    unsafe fn sum16(input: In<Self>, i: usize) -> Self {
        // SAFETY: the caller's contract.
        lanes(unsafe { input.load16::<4>(i) })
    }
}

impl Sum for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    unsafe fn shfl_down(self, delta: u32) -> Self {
        // SAFETY: the caller's contract.
        unsafe { shfl_down_f32(FULL_MASK, self, delta) }
    }
    #[inline(always)]
    unsafe fn sum16(input: In<Self>, i: usize) -> Self {
        // SAFETY: the caller's contract.
        lanes(unsafe { input.load16::<4>(i) })
    }
}

impl Sum for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    unsafe fn shfl_down(self, delta: u32) -> Self {
        // SAFETY: the caller's contract.
        unsafe { shfl_down_f64(FULL_MASK, self, delta) }
    }
    #[inline(always)]
    unsafe fn sum16(input: In<Self>, i: usize) -> Self {
        // SAFETY: the caller's contract.
        lanes(unsafe { input.load16::<2>(i) })
    }
}

/// The summation tree over `smem[0..width]` shared by kernels 2 to 4:
/// `log2(width)` steps, each halving the active threads; thread `tid`
/// adds `smem[tid + stride]` into `smem[tid]`, then the block waits.
/// Consecutive threads touch consecutive words: no bank conflicts, but
/// every step is a barrier, and the last five steps keep only part of one
/// warp busy.
///
/// # Safety
/// `smem` holds `width` elements (a power of two), `tid < width`, and every
/// thread of the block calls this.
#[inline(always)]
unsafe fn tree_in_shared<T: Sum>(smem: SharedArray<T>, tid: usize, width: usize) {
    let mut stride = width / 2;
    while stride > 0 {
        if tid < stride {
            // SAFETY: tid + stride < width, the array's length; the words
            // tid and tid + stride are this thread's alone in this step.
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
///
/// Launch: `data` holds `n` elements, `partials` one per block, the grid
/// `ceil(n / 256)` blocks.
/// Measured: `BENCHMARKS.md`, rows `reduce_gmem_*`.
#[kernel(block = BLOCK, tile = BLOCK, types = [i32, f32])]
pub fn reduce_gmem<T: Sum>(data: Out<T>, partials: Out<T>, n: u64) {
    let n = n as usize;
    let tid = thread_idx_x() as usize;
    let base = block_idx_x() as usize * BLOCK;
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if tid < stride && base + tid + stride < n {
            // SAFETY: base + tid + stride < n; the two elements are this
            // thread's alone in this step.
            unsafe { data.store(base + tid, data.load(base + tid).add(data.load(base + tid + stride))) };
        }
        sync_threads();
        stride /= 2;
    }
    if tid == 0 {
        // SAFETY: base < n (the grid has ceil(n / 256) blocks); one partial
        // per block.
        unsafe { partials.store(block_idx_x() as usize, data.load(base)) };
    }
}

/// 2. The same tree in shared memory (the seed's `reduceSmem`, fixed).
///
/// Each thread stages one element (0 past `n`) into `smem[tid]`, then the
/// tree runs in shared memory: global memory is read once per element.
/// Expect little gain over kernel 1: the in-place tree's re-reads hit the
/// SM's L1, so both are limited by the same thing, one element per thread
/// and 8 barriers per 256 elements. Kernel 3 attacks that.
///
/// Launch: `input` holds `n` elements, `partials` one per block, the grid
/// `ceil(n / 256)` blocks.
/// Measured: `BENCHMARKS.md`, rows `reduce_smem_*`.
#[kernel(block = BLOCK, shared = BLOCK * size_of::<T>(), tile = BLOCK, types = [i32, f32])]
pub fn reduce_smem<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    let n = n as usize;
    // SAFETY: the declaration passes BLOCK elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    let i = block_idx_x() as usize * BLOCK + tid;
    // SAFETY: guarded by i < n; tid < BLOCK, this thread's word.
    unsafe { smem.set(tid, if i < n { input.load(i) } else { T::ZERO }) };
    sync_threads();
    // SAFETY: BLOCK elements, tid < BLOCK, and every thread gets here.
    unsafe { tree_in_shared(smem, tid, BLOCK) };
    if tid == 0 {
        // SAFETY: one partial per block; word 0 was last written before the
        // tree's final barrier.
        unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
    }
}

/// The first step of kernels 3 to 5: thread `tid` of block `b` (of
/// `width` threads) sums `input[4 width b + tid + k width]` for k = 0..3,
/// each guarded on its own (the seed dropped all four unless the last was
/// in range). The four loads are independent: four requests in flight per
/// thread, and a quarter of the blocks.
///
/// # Safety
/// `input` holds `n` elements.
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
///
/// # Safety
/// `input` holds `n` elements, `partials` one per block; the block has
/// `width` threads (a power of two) and `width` elements of shared memory.
#[inline(always)]
unsafe fn reduce_unrolled_tree<T: Sum>(input: In<T>, partials: Out<T>, n: u64, width: usize) {
    // SAFETY: the caller's launch passes `width` elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    // SAFETY: the caller's contract; tid < width, this thread's word.
    unsafe { smem.set(tid, sum_unrolled(input, n as usize, width, tid)) };
    sync_threads();
    // SAFETY: `width` elements, tid < width, and every thread gets here.
    unsafe { tree_in_shared(smem, tid, width) };
    if tid == 0 {
        // SAFETY: one partial per block, written after the tree's barrier.
        unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
    }
}

/// 3. Each thread first sums 4 blocks' worth of input (the seed's
/// `reduceSmemUnroll`), then the shared-memory tree of kernel 2, over a
/// block of the compile-time `BLOCK` threads.
///
/// Launch: `input` holds `n` elements, `partials` one per block, the grid
/// `ceil(n / 1024)` blocks.
/// Measured: `BENCHMARKS.md`, rows `reduce_unroll_*`.
#[kernel(block = BLOCK, shared = BLOCK * size_of::<T>(), tile = BLOCK * UNROLL, types = [i32, f32])]
pub fn reduce_unroll<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    // SAFETY: the launch's contract; the declaration passes BLOCK elements
    // of shared memory for a block of BLOCK threads.
    unsafe { reduce_unrolled_tree(input, partials, n, BLOCK) }
}

/// 4. Kernel 3 with the block size, and so the shared memory, chosen at
/// launch (`blockDim.x`, a power of two; launched with 256 threads): the
/// only difference is the `width` argument.
///
/// In CUDA C this is `extern __shared__ int smem[]` instead of
/// `__shared__ int smem[DIM]`. Here every kernel's shared memory is
/// launch-sized (`gpu_launch_sized_workgroup_mem`: a static `.shared` array
/// declared through inline asm reaches LLVM as a generic pointer, see the
/// toolchain notes in docs/design.md), so what changes is that the tree's width
/// is a run-time value: the tree's loop cannot be unrolled at compile time
/// (a run-time trip count and shift per level). Expect it slower than
/// kernel 3: the tree is short, so the per-level loop overhead and the
/// unknown trip count (no unrolling, no scheduling across levels) show.
/// What it buys is the freedom to pick the block size per launch; kernel 5
/// drops the tree altogether.
///
/// Launch: as kernel 3, with DYNAMIC_BLOCK threads.
/// Measured: `BENCHMARKS.md`, rows `reduce_dynamic_*`.
#[kernel(
    block = DYNAMIC_BLOCK,
    shared = DYNAMIC_BLOCK * size_of::<T>(),
    tile = DYNAMIC_BLOCK * UNROLL,
    types = [i32, f32]
)]
pub fn reduce_dynamic<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    // SAFETY: the launch's contract; the declaration passes one element of
    // shared memory per thread of the block.
    unsafe { reduce_unrolled_tree(input, partials, n, block_dim_x() as usize) }
}

/// The sum over a warp's 32 lanes, in lane 0: five `shfl.sync.down` steps
/// (16, 8, 4, 2, 1), registers only, no barrier.
///
/// # Safety
/// All 32 lanes of the warp call it.
#[inline(always)]
unsafe fn warp_sum<T: Sum>(mut v: T) -> T {
    let mut delta = 16;
    while delta > 0 {
        // SAFETY: the caller's contract: every lane takes this step.
        v = v.add(unsafe { v.shfl_down(delta) });
        delta /= 2;
    }
    v
}

/// The sum over a block of `32 * warps` threads, in thread 0: each warp
/// sums with shuffles, lane 0 of each writes `smem[warp]`, one barrier,
/// then warp 0 sums those. Bank `warp % 32`: conflict-free.
///
/// # Safety
/// Every thread of the block calls it; `smem` holds `warps` elements.
#[inline(always)]
unsafe fn block_sum<T: Sum>(smem: SharedArray<T>, v: T, tid: usize, warps: usize) -> T {
    let (lane, warp) = (tid % 32, tid / 32);
    // SAFETY: every thread of the block, so every lane of each warp.
    let v = unsafe { warp_sum(v) };
    if lane == 0 {
        // SAFETY: warp < warps, the array's length; one writer per word.
        unsafe { smem.set(warp, v) };
    }
    sync_threads();
    let mut total = T::ZERO;
    if warp == 0 {
        // SAFETY: lane < warps is in bounds; all of warp 0 takes the
        // shuffles.
        total = unsafe { warp_sum(if lane < warps { smem.get(lane) } else { T::ZERO }) };
    }
    total
}

/// 5. Kernel 3 with warp shuffles instead of the shared-memory tree: 1
/// barrier per block instead of 8, and no `volatile` lock-step tricks.
///
/// Launch: as kernel 3.
/// Measured: `BENCHMARKS.md`, rows `reduce_shuffle_*`.
#[kernel(block = BLOCK, shared = 32 * size_of::<T>(), tile = BLOCK * UNROLL, types = [i32, f32])]
pub fn reduce_shuffle<T: Sum>(input: In<T>, partials: Out<T>, n: u64) {
    // SAFETY: the declaration passes 32 elements of shared memory.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    let tid = thread_idx_x() as usize;
    // SAFETY: `input` holds `n` elements (the launch's contract).
    let v = unsafe { sum_unrolled(input, n as usize, BLOCK, tid) };
    // SAFETY: every thread gets here; BLOCK / 32 = 8 <= 32 elements.
    let total = unsafe { block_sum(smem, v, tid, BLOCK / 32) };
    if tid == 0 {
        // SAFETY: one partial per block.
        unsafe { partials.store(block_idx_x() as usize, total) };
    }
}

/// 6. Fast and deterministic: the whole sum in one launch.
///
/// The input is cut into fixed chunks of `fast_chunk` elements (32768
/// `f32`: 128 KiB); a grid of any size strides over the chunks. In a chunk,
/// thread `t` of 256 issues 4 independent 16-byte loads per step
/// (`ld.global.v4`, a warp reads 512 contiguous bytes per load: 16 sectors,
/// all used), 8 steps, into 4 register accumulators; then `block_sum`
/// gives the chunk's partial, `partials[chunk]`. The last block to finish
/// (an integer atomic ticket with release and acquire) sums the partials: thread `t`
/// adds `partials[t], partials[t + 256], ...` in order, then one more
/// `block_sum`. It resets the ticket for the next launch.
///
/// The order of every addition depends on `n` alone, not on the grid or on
/// timing, so the bits of the result are the same for every grid size
/// (the tests launch several) and every run. A chunk that runs past `n`
/// takes the same steps with element-wise guarded loads.
///
/// Rounding: an element goes through at most `LANES - 1` lane adds, 8
/// accumulator adds, 2 to merge 4 accumulators, 5 + 5 shuffle levels, then
/// `ceil(chunks / 256)` serial adds and 5 + 5 more, so at most `h = LANES +
/// 29 + ceil(chunks / 256)` additions and `|sum - exact| <= h u / (1 - h u)
/// * sum |x|` with `u` the unit roundoff (2^-24 for `f32`); see
/// [`fast_add_depth`]. The host asserts this bound.
///
/// Launch: `input` holds `n` elements, `partials` one per chunk, `ticket`
/// one zero, `out` one element; any grid of at most `chunks` blocks.
/// Measured: `BENCHMARKS.md`, rows `reduce_fast_*`.
#[kernel(
    block = FAST_BLOCK,
    shared = FAST_WARPS * size_of::<T>() + 16,
    tile = fast_chunk(size_of::<T>()),
    types = [i32, f32, f64]
)]
pub fn reduce_fast<T: Sum>(input: In<T>, partials: Out<T>, ticket: Out<u32>, out: Out<T>, n: u64) {
    use crate::dev::atomic::{Ordering, fence};
    let n = n as usize;
    let chunk = FAST_BLOCK * FAST_LOADS * FAST_STEPS * T::LANES;
    let chunks = n.div_ceil(chunk);
    let tid = thread_idx_x() as usize;
    // SAFETY: the declaration passes FAST_WARPS elements plus the flag.
    let smem = unsafe { SharedArray::<T>::launch_sized() };
    // SAFETY: as above; the flag's offset is a multiple of 4.
    let last_block = unsafe { SharedArray::<u32>::launch_sized_at(FAST_WARPS * size_of::<T>()) };

    let mut c = block_idx_x() as usize;
    while c < chunks {
        let base = c * chunk;
        let mut acc = [T::ZERO; FAST_LOADS];
        if base + chunk <= n {
            for step in 0..FAST_STEPS {
                for (k, acc) in acc.iter_mut().enumerate() {
                    let i = base + ((step * FAST_LOADS + k) * FAST_BLOCK + tid) * T::LANES;
                    // SAFETY: i + LANES <= base + chunk <= n; i is a
                    // multiple of LANES.
                    *acc = acc.add(unsafe { T::sum16(input, i) });
                }
            }
        } else {
            for step in 0..FAST_STEPS {
                for (k, acc) in acc.iter_mut().enumerate() {
                    let i = base + ((step * FAST_LOADS + k) * FAST_BLOCK + tid) * T::LANES;
                    // The lanes in order, 0 past `n`, as `sum16` adds them.
                    // SAFETY: each load is guarded by its index < n.
                    let lane = |l: usize| if i + l < n { unsafe { input.load(i + l) } } else { T::ZERO };
                    let mut v = lane(0);
                    for l in 1..T::LANES {
                        v = v.add(lane(l));
                    }
                    *acc = acc.add(v);
                }
            }
        }
        let v = acc[0].add(acc[1]).add(acc[2].add(acc[3]));
        // SAFETY: every thread of the block runs the same chunks; FAST_WARPS
        // elements.
        let total = unsafe { block_sum(smem, v, tid, FAST_WARPS) };
        if tid == 0 {
            // SAFETY: c < chunks, the partials' length; one writer.
            unsafe { partials.store(c, total) };
        }
        // smem is rewritten by the next chunk's block_sum.
        sync_threads();
        c += grid_dim_x() as usize;
    }

    if tid == 0 {
        // The ticket, drawn with release and acquire: this block's
        // partials (thread 0's writes) visible device-wide before it, and
        // the block that draws the last one sees all of them (the release
        // is a fence before the `atom`, `gpu::dev::atomic::ordered`).
        // SAFETY: `ticket` is one u32, zero at launch, touched only
        // atomically by thread 0 of each block until the last block resets
        // it after every ticket is drawn.
        let drawn = unsafe { ticket.atomic_add(0, 1, Ordering::AcqRel) };
        // SAFETY: the flag word lies after the FAST_WARPS elements; thread
        // 0 alone writes it, before the barrier.
        unsafe { last_block.set(0, (drawn + 1 == grid_dim_x()) as u32) };
    }
    sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    if unsafe { last_block.get(0) } == 1 {
        fence();
        let partials = In::from_out(partials);
        let mut s = T::ZERO;
        let mut i = tid;
        while i < chunks {
            // SAFETY: i < chunks; volatile: written by other blocks.
            s = s.add(unsafe { partials.load_volatile(i) });
            i += FAST_BLOCK;
        }
        // SAFETY: the whole (last) block takes this branch.
        let total = unsafe { block_sum(smem, s, tid, FAST_WARPS) };
        if tid == 0 {
            // SAFETY: `out` and `ticket` hold one element each; every other
            // block has drawn its ticket.
            unsafe {
                out.store(0, total);
                ticket.store(0, 0);
            }
        }
    }
}

/// The seed's bugs, reproduced on purpose (`i32` only) so that the tests
/// can show they catch each one. Never use these.
pub mod seed_bugs {
    use super::{BLOCK, UNROLL, sum_unrolled, tree_in_shared};
    use crate::dev::{In, Out, SharedArray, block_idx_x, sync_threads, thread_idx_x};
    use crate::kernel;

    /// `reduceSmem`'s tree adds `idata[tid + stride]` from global memory
    /// after staging into shared memory: from the second step on it adds
    /// raw inputs instead of partial sums.
    #[kernel(block = BLOCK, shared = BLOCK * 4, tile = BLOCK)]
    pub fn reduce_seed_bug_global_read_i32(input: In<i32>, partials: Out<i32>, n: u64) {
        let n = n as usize;
        // SAFETY: the declaration passes BLOCK words.
        let smem = unsafe { SharedArray::<i32>::launch_sized() };
        let tid = thread_idx_x() as usize;
        let base = block_idx_x() as usize * BLOCK;
        // SAFETY: guarded by base + tid < n; tid < BLOCK.
        unsafe { smem.set(tid, if base + tid < n { input.load(base + tid) } else { 0 }) };
        sync_threads();
        let mut stride = BLOCK / 2;
        while stride > 0 {
            if tid < stride && base + tid + stride < n {
                // SAFETY: in bounds as guarded; word tid is this thread's.
                unsafe { smem.set(tid, smem.get(tid).wrapping_add(input.load(base + tid + stride))) };
            }
            sync_threads();
            stride /= 2;
        }
        if tid == 0 {
            // SAFETY: one partial per block.
            unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
        }
    }

    /// Threads past `n` return before staging and before the barriers:
    /// their shared slots keep whatever an earlier block left there, and
    /// the tree adds it in.
    #[kernel(block = BLOCK, shared = BLOCK * 4, tile = BLOCK)]
    pub fn reduce_seed_bug_early_return_i32(input: In<i32>, partials: Out<i32>, n: u64) {
        // SAFETY: the declaration passes BLOCK words.
        let smem = unsafe { SharedArray::<i32>::launch_sized() };
        let tid = thread_idx_x() as usize;
        let i = block_idx_x() as usize * BLOCK + tid;
        if i >= n as usize {
            return;
        }
        // SAFETY: i < n; tid < BLOCK.
        unsafe { smem.set(tid, input.load(i)) };
        sync_threads();
        // SAFETY: in bounds; the barriers are the bug this kernel shows
        // (exited threads no longer hold them).
        unsafe { tree_in_shared(smem, tid, BLOCK) };
        if tid == 0 {
            // SAFETY: one partial per block.
            unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
        }
    }

    /// The block's result is written from `idata[0]` (the block's first
    /// input) instead of `smem[0]` (its sum).
    #[kernel(block = BLOCK, shared = BLOCK * 4, tile = BLOCK)]
    pub fn reduce_seed_bug_wrong_element_i32(input: In<i32>, partials: Out<i32>, n: u64) {
        let n = n as usize;
        // SAFETY: the declaration passes BLOCK words.
        let smem = unsafe { SharedArray::<i32>::launch_sized() };
        let tid = thread_idx_x() as usize;
        let base = block_idx_x() as usize * BLOCK;
        // SAFETY: guarded by base + tid < n; tid < BLOCK.
        unsafe { smem.set(tid, if base + tid < n { input.load(base + tid) } else { 0 }) };
        sync_threads();
        // SAFETY: BLOCK words, every thread gets here.
        unsafe { tree_in_shared(smem, tid, BLOCK) };
        if tid == 0 {
            // SAFETY: base < n (one block per 256 elements).
            unsafe { partials.store(block_idx_x() as usize, input.load(base)) };
        }
    }

    /// `reduceSmemUnroll` sums its four strided elements only if the last
    /// is in range, and otherwise none of them: a block that runs past `n`
    /// loses up to three quarters of its elements. (The seed's `<=` also
    /// reads one past the end; this keeps `<` so that the only fault is
    /// the dropped elements.)
    #[kernel(block = BLOCK, shared = BLOCK * 4, tile = BLOCK * UNROLL)]
    pub fn reduce_seed_bug_unroll_drop_i32(input: In<i32>, partials: Out<i32>, n: u64) {
        let n = n as usize;
        // SAFETY: the declaration passes BLOCK words.
        let smem = unsafe { SharedArray::<i32>::launch_sized() };
        let tid = thread_idx_x() as usize;
        let i = block_idx_x() as usize * BLOCK * UNROLL + tid;
        // SAFETY: `input` holds n elements.
        let v = if i + 3 * BLOCK < n { unsafe { sum_unrolled(input, n, BLOCK, tid) } } else { 0 };
        // SAFETY: tid < BLOCK.
        unsafe { smem.set(tid, v) };
        sync_threads();
        // SAFETY: BLOCK words, every thread gets here.
        unsafe { tree_in_shared(smem, tid, BLOCK) };
        if tid == 0 {
            // SAFETY: one partial per block.
            unsafe { partials.store(block_idx_x() as usize, smem.get(0)) };
        }
    }
}
