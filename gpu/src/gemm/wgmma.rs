//! The library's tensor-core kernel: the tensor ladder's step 6
//! (`tc_wgmma_persistent_*`: TMA into a 4-stage mbarrier ring, one
//! producer and two consumer warpgroups with `setmaxnreg`, persistent
//! blocks over a grouped tile order), generalized to the work a library
//! call brings:
//!
//! - **Items, not tiles.** A block walks `batch x splits x tiles` items:
//!   matrix `z` of a strided batch (its A and B through tensor maps `2 z`
//!   and `2 z + 1`), k-split `s` (k-steps `s split_steps..`), and a 128 x
//!   256 tile of C in grouped order. Splitting k multiplies the items of a
//!   skinny problem (128 x 8192 x 8192 has 32 tiles for 132 SMs; 4 splits
//!   make 128 items), at the price of writing `splits` partial sums that
//!   the epilogue adds.
//! - **Any shape.** A tile's rows past `m`, columns past `n` and a last
//!   k-step past `k` are the copy engine's zero fill: the maps describe
//!   exactly `m x k` and `k x n` (their row strides multiples of 16 bytes,
//!   which the host arranges), and the stores are guarded.
//! - **Any row stride.** Sums land at `c[base + i ldc + j]`, in 8-byte
//!   pairs when `n`, `ldc` and every base are even.
//!
//! Its arithmetic is step 6's: per stage 48 KB for `2 x 128 x 256 x BK`
//! FLOPs.

use half::{bf16, f16};

use crate::dev::registers;
use crate::dev::tma::acquire_map;
use crate::dev::{In, Out, block_idx_x, grid_dim_x, thread_idx_x};
use crate::kernel;
use crate::tensor::hopper::{
    BM, BN, Bf16, Element, F16, Tf32, WS_THREADS, consume, grouped, shared_bytes, start, store_at,
};

/// The scalars of a launch (what [`items`] and the stores need).
#[derive(Clone, Copy)]
struct Work {
    m: usize,
    n: usize,
    ldc: usize,
    c_batch: usize,
    c_split: usize,
    batch: usize,
    splits: usize,
    split_steps: usize,
    steps: usize,
}

/// One item: the C tile's origin, its matrix of the batch, its first
/// k-step and count, and where its sums go.
#[derive(Clone, Copy)]
struct Item {
    origin: (usize, usize),
    z: usize,
    first: usize,
    steps: usize,
    base: usize,
}

/// This block's items, in the order every warpgroup walks them.
#[inline(always)]
fn items(w: Work) -> impl Iterator<Item = Item> {
    let grid = (w.m.div_ceil(BM), w.n.div_ceil(BN));
    let tiles = grid.0 * grid.1;
    (block_idx_x() as usize..w.batch * w.splits * tiles).step_by(grid_dim_x() as usize).map(move |i| {
        let (tile, rest) = (i % tiles, i / tiles);
        let (s, z) = (rest % w.splits.max(1), rest / w.splits.max(1));
        let (tm, tn) = grouped(tile, grid);
        let first = s * w.split_steps;
        Item {
            origin: (tm * BM, tn * BN),
            z,
            first,
            steps: w.split_steps.min(w.steps.saturating_sub(first)),
            base: z * w.c_batch + s * w.c_split,
        }
    })
}

/// The body of every instance (see the module).
#[inline(always)]
fn gemm<E: Element>(maps: In<u64>, c: Out<f32>, w: Work, k: u32) {
    let t = thread_idx_x() as usize;
    let (ring, steps) = start::<E>(maps, 2, k);
    let w = Work { steps, ..w };
    if t < 128 {
        // SAFETY: the warpgroup, converged; 40 + 2 x 232 = 3 x 168.
        unsafe { registers::release::<40>() };
        if t == 0 {
            // `start` made maps 0 and 1 visible; the batch's others too.
            for map in 2..2 * w.batch {
                // SAFETY: the launch passes 2 batch maps.
                unsafe { acquire_map(maps, map) };
            }
            let mut it = 0;
            for item in items(w) {
                for step in item.first..item.first + item.steps {
                    let (s, round) = (it % crate::tensor::hopper::STAGES, it / crate::tensor::hopper::STAGES);
                    // SAFETY: one thread; the stage is free once both
                    // consumers released its previous round; maps 2 z and
                    // 2 z + 1 are the item's A and B.
                    unsafe {
                        if round > 0 {
                            ring.empty(s).wait(((round - 1) % 2) as u32);
                        }
                        ring.fill_from(s, step, item.origin, (2 * item.z, 2 * item.z + 1));
                    }
                    it += 1;
                }
            }
        }
        return;
    }
    // SAFETY: as above; the producer releases what this claims.
    unsafe { registers::claim::<232>() };
    let consumer = t / 128 - 1;
    let t = (t % 128) as u32;
    let pairs = w.n.is_multiple_of(2)
        && w.ldc.is_multiple_of(2)
        && w.c_batch.is_multiple_of(2)
        && w.c_split.is_multiple_of(2);
    let mut it = 0;
    for item in items(w) {
        // SAFETY: the warpgroup, converged; the producer fills these
        // k-steps in this order; `c` holds every item's `m x n` at its
        // base and `ldc` (the launch's contract), pairs only when even.
        unsafe {
            let acc = consume(ring, consumer, item.steps, &mut it);
            if pairs {
                store_at::<true>(&c, &acc, item.origin, consumer, t, (w.m, w.n), (item.base, w.ldc));
            } else {
                store_at::<false>(&c, &acc, item.origin, consumer, t, (w.m, w.n), (item.base, w.ldc));
            }
        }
    }
}

macro_rules! instances {
    ($($(#[$doc:meta])* $name:ident($ty:ty, $element:ty);)*) => {$(
        $(#[$doc])*
        ///
        /// Launch: 384 threads, one block per SM or fewer
        /// (`persistent`); `maps` holds `2 batch` tensor maps (A's then
        /// B's for each matrix of the batch, rows on 16 bytes, boxes as the
        /// element's); `a` and `b` are the buffers they point into; `c`
        /// holds `batch` blocks of `splits` blocks of `m x n` at `ldc`
        /// (`c_batch` and `c_split` elements apart); `split_steps` k-steps
        /// per split, enough splits to cover `k`.
        #[kernel(block = WS_THREADS, shared = shared_bytes(), tile = [BN, BM], min_blocks = 1, persistent = true, arch = "sm_90a")]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            maps: In<u64>,
            a: In<$ty>,
            b: In<$ty>,
            c: Out<f32>,
            m: u32,
            n: u32,
            k: u32,
            ldc: u32,
            batch: u32,
            c_batch: u64,
            splits: u32,
            split_steps: u32,
            c_split: u64,
        ) {
            // The copy engine reads A and B through the maps.
            let _ = (a, b);
            let work = Work {
                m: m as usize,
                n: n as usize,
                ldc: ldc as usize,
                c_batch: c_batch as usize,
                c_split: c_split as usize,
                batch: batch as usize,
                splits: splits as usize,
                split_steps: split_steps as usize,
                steps: 0,
            };
            gemm::<$element>(maps, c, work, k);
        }
    )*};
}

instances! {
    /// bf16 A (`m x k`, K-major) and B (`k x n`, N-major).
    gemm_wgmma_bf16(bf16, Bf16);
    /// IEEE binary16 A and B, laid out as for bf16.
    gemm_wgmma_f16(f16, F16);
    /// `f32` A (`m x k`) and B transposed (`n x k`), both K-major, read as
    /// tf32 (each input's low 13 mantissa bits dropped).
    gemm_wgmma_tf32(f32, Tf32);
}
