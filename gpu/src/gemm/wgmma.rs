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
//! - **The epilogue in the store.** With one split, each consumer turns
//!   its sums into `D = act(alpha acc + beta C + bias)` in the output type
//!   as it stores them (`C` read only when `beta != 0`): no `f32`
//!   workspace, no second pass over `D`. With several, partial sums land
//!   in the `f32` workspace `w` (split `s` of matrix `z` at `(z splits +
//!   s) m n`, rows `n` apart, 8-byte pairs when `n` is even) and
//!   `gemm_epilogue` finishes.
//!
//! Its arithmetic is step 6's: per stage 48 KB for `2 x 128 x 256 x BK`
//! FLOPs.

use half::{bf16, f16};

use super::epilogue::{BIAS_COLS, BIAS_ROWS, Output, activate};
use crate::dev::registers;
use crate::dev::tma::acquire_map;
use crate::dev::wgmma::d_f32;
use crate::dev::{In, Out, block_idx_x, grid_dim_x, thread_idx_x};
use crate::kernel;
use crate::tensor::hopper::{
    BM, BN, Bf16, Element, F16, STAGES, Tf32, WS_THREADS, consume, grouped, shared_bytes, start, store_at,
};
use seq_macro::seq;

/// The scalars of a launch (what [`items`] and the stores need).
#[derive(Clone, Copy)]
struct Work {
    m: usize,
    n: usize,
    ldd: usize,
    d_batch: usize,
    batch: usize,
    splits: usize,
    split_steps: usize,
    steps: usize,
}

/// One item: the C tile's origin, its matrix of the batch, its k-split,
/// its first k-step and count.
#[derive(Clone, Copy)]
struct Item {
    origin: (usize, usize),
    z: usize,
    s: usize,
    first: usize,
    steps: usize,
}

/// `D = act(alpha acc + beta C + bias)`: the epilogue's scalars.
#[derive(Clone, Copy)]
struct Epilogue {
    alpha: f32,
    beta: f32,
    bias: In<f32>,
    bias_mode: u32,
    act: u32,
}

/// Warpgroup `wg`'s sums of the tile at `(m0, n0)` through the epilogue
/// into `D` (`d[base + i ldd + j]`, inside `m x n` only): each thread's
/// 128 sums lie in two rows 8 apart, in pairs of neighbouring columns
/// ([`d_f32`]).
///
/// # Safety
/// `d` holds the matrix at `base`, `ldd`; the bias (by its mode) `m` or
/// `n` values; no other thread touches these elements.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_through<T: Output>(
    d: &Out<T>,
    acc: &[f32; 128],
    (m0, n0): (usize, usize),
    wg: usize,
    t: u32,
    (m, n): (usize, usize),
    (base, ldd): (usize, usize),
    e: Epilogue,
) {
    let (r, col) = d_f32(t, 0);
    let (row, col) = (m0 + 64 * wg + r as usize, n0 + col as usize);
    seq!(J in 0..64 {{
        let row = row + 8 * (J % 2);
        let col = col + 8 * (J / 2);
        for h in 0..2 {
            if row < m && col + h < n {
                let at = base + row * ldd + col + h;
                let mut x = e.alpha * acc[2 * J + h];
                if e.beta != 0.0 {
                    // SAFETY: inside D (the caller's contract); this
                    // thread's element alone.
                    x += e.beta * unsafe { d.load(at) }.to_f32();
                }
                if e.bias_mode == BIAS_ROWS || e.bias_mode == BIAS_COLS {
                    let i = if e.bias_mode == BIAS_ROWS { row } else { col + h };
                    // SAFETY: i < m or i < n, the bias's length by its mode.
                    x += unsafe { e.bias.load(i) };
                }
                // SAFETY: as for the load.
                unsafe { d.store(at, T::of_f32(activate(e.act, x))) };
            }
        }
    }});
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
        Item { origin: (tm * BM, tn * BN), z, s, first, steps: w.split_steps.min(w.steps.saturating_sub(first)) }
    })
}

/// The body of every instance (see the module).
#[inline(always)]
fn gemm<E: Element, T: Output>(maps: In<u64>, (d, sums): (Out<T>, Out<f32>), w: Work, k: u32, e: Epilogue) {
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
                    let (s, round) = (it % STAGES, it / STAGES);
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
    let mut it = 0;
    if w.splits == 1 {
        for item in items(w) {
            // SAFETY: the warpgroup, converged; the producer fills these
            // k-steps in this order; `d` holds every matrix of the batch
            // at `ldd`, `d_batch` apart, and the bias its values (the
            // launch's contract).
            unsafe {
                let acc = consume(ring, consumer, item.steps, &mut it);
                store_through(&d, &acc, item.origin, consumer, t, (w.m, w.n), (item.z * w.d_batch, w.ldd), e);
            }
        }
        return;
    }
    let split = w.m * w.n;
    for item in items(w) {
        let base = (item.z * w.splits + item.s) * split;
        // SAFETY: as above; `sums` holds `batch splits m n` values, rows
        // `n` apart; pairs only when `n` (so every base) is even.
        unsafe {
            let acc = consume(ring, consumer, item.steps, &mut it);
            if w.n.is_multiple_of(2) {
                store_at::<true>(&sums, &acc, item.origin, consumer, t, (w.m, w.n), (base, w.n));
            } else {
                store_at::<false>(&sums, &acc, item.origin, consumer, t, (w.m, w.n), (base, w.n));
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
        /// element's); `a` and `b` are the buffers they point into; `d`
        /// holds `batch` matrices `m x n` at `ldd`, `d_batch` apart (read
        /// when `beta != 0`), `sums` (with `splits > 1`) `batch splits m
        /// n` values; the bias `m` or `n` values by `bias_mode`;
        /// `split_steps` k-steps per split, enough splits to cover `k`.
        #[kernel(
            block = WS_THREADS,
            shared = shared_bytes(),
            tile = [BN, BM],
            min_blocks = 1,
            persistent = true,
            arch = "sm_90a",
            types = [f32, bf16, f16]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Output>(
            maps: In<u64>,
            a: In<$ty>,
            b: In<$ty>,
            d: Out<T>,
            sums: Out<f32>,
            bias: In<f32>,
            m: u32,
            n: u32,
            k: u32,
            ldd: u32,
            d_batch: u64,
            batch: u32,
            splits: u32,
            split_steps: u32,
            alpha: f32,
            beta: f32,
            bias_mode: u32,
            act: u32,
        ) {
            // The copy engine reads A and B through the maps.
            let _ = (a, b);
            let work = Work {
                m: m as usize,
                n: n as usize,
                ldd: ldd as usize,
                d_batch: d_batch as usize,
                batch: batch as usize,
                splits: splits as usize,
                split_steps: split_steps as usize,
                steps: 0,
            };
            let epilogue = Epilogue { alpha, beta, bias, bias_mode, act };
            gemm::<$element, T>(maps, (d, sums), work, k, epilogue);
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
