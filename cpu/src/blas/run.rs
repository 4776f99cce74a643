//! `sgemm` itself: checks a call, follows BLAS's rules for the trivial
//! cases, packs an operand its kernels' 16-byte loads cannot read, and
//! launches the plan's kernels.
//!
//! The block tile kernels run their unchecked main loop (16-byte loads,
//! no range checks) only when every operand allows it: its leading
//! dimension a multiple of 4, and, for one contiguous along m or n rather
//! than k, that extent too (`gpu::gemm::ffma`). Otherwise every load is
//! checked and most are scalar: at 4095^3 the FFMA path ran at 72% of
//! cuBLAS, against 94% at 4096^3. A large call (at least
//! [`Sgemm::pack_from`] multiply-adds) therefore copies each such operand
//! into a workspace first, K-major at a row stride rounded up to 4
//! (`super::pack`): A as `m x k`, B as `n x k`, transposed on the way
//! where it was contiguous along m or n. The copy moves `8 m k` or `8 n k`
//! bytes, against `2 m n k` FLOPs of FFMA: at 4095^3, 134 MB per operand
//! (about 45 us at 3 TB/s) beside a product of 137 GFLOP.

use gpu::dev::{In, Out};
use gpu::launch::Typed;

use super::gemm::{Gemm, MAX_LD, RowMajor};
use super::pack::{fits, pack};
use super::plan::{self, Plan};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// The block tile kernels' parameters: `a, b, c, m, n, k, lda, ldb, ldc,
/// alpha, beta, k_chunk, c_split`.
pub type BlockTile = (In<f32>, In<f32>, Out<f32>, u32, u32, u32, u32, u32, u32, f32, f32, u32, u64);

/// An `sgemm` that keeps its split-K and packing workspaces between calls
/// (so a timed loop allocates nothing after the first call).
pub struct Sgemm {
    workspace: Option<DeviceBuffer<f32>>,
    /// A and B packed K-major (see the module).
    packed: [Option<DeviceBuffer<f32>>; 2],
    /// The last call's problem and plan: a timed loop plans once.
    last: Option<(RowMajor, Plan)>,
    /// The least `m n k` at which an operand the unchecked loop cannot
    /// read is packed (0: always; `usize::MAX`: never). Below it the
    /// checked loop reads it in place: a pack's launch would cost more
    /// than the scalar loads of a small product.
    pub pack_from: usize,
}

impl Default for Sgemm {
    fn default() -> Sgemm {
        Sgemm { workspace: None, packed: [None, None], last: None, pack_from: 1 << 27 }
    }
}

/// Whether the unchecked loop can read an operand in place: 16-byte loads
/// (`ld` a multiple of 4) of whole groups of 4 (`extent`, along which it
/// is contiguous unless `kmajor`, a multiple of 4).
fn readable(ld: usize, extent: usize, kmajor: bool) -> bool {
    ld.is_multiple_of(4) && (kmajor || extent.is_multiple_of(4))
}

/// The block tile kernel for a tile and the ops as stored row-major.
fn block_tile_kernel(tile: (usize, usize), a_t: bool, b_t: bool) -> Result<Typed<BlockTile>> {
    let kernel = plan::kernel_for(tile, a_t, b_t).ok_or_else(|| {
        let op = |t: bool| if t { 'T' } else { 'N' };
        Error::InvalidInput(format!("no {}x{} {}{} block tile kernel", tile.0, tile.1, op(a_t), op(b_t)))
    })?;
    kernel.typed::<BlockTile>().map_err(Error::InvalidInput)
}

impl Sgemm {
    pub fn new() -> Sgemm {
        Sgemm::default()
    }

    /// `C = alpha op(A) op(B) + beta C` with the dispatcher's plan.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        g: &Gemm,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        self.run_with(gpu, g, None, a, b, c)
    }

    /// Which operands of `g` (A, B) [`Sgemm::run`] packs (see the module).
    pub fn packs(&self, g: &Gemm) -> (bool, bool) {
        let r = g.row_major();
        let large = r.m.saturating_mul(r.n).saturating_mul(r.k) >= self.pack_from;
        // A product to compute, and a packed operand's row stride and rows
        // within what the kernels and the pack's grid take.
        let work = r.m > 0 && r.n > 0 && r.k > 0 && g.alpha != 0.0 && r.k.next_multiple_of(4) <= MAX_LD;
        let can = |rows: usize, transposed: bool| work && large && fits::<f32>(rows, transposed);
        (!readable(r.lda, r.m, !r.a_t) && can(r.m, r.a_t), !readable(r.ldb, r.n, r.b_t) && can(r.n, !r.b_t))
    }

    /// The plan [`Sgemm::run`] takes for `g` on `gpu`.
    pub fn plan(gpu: &Gpu, g: &Gemm) -> Plan {
        plan::choose(&g.row_major(), gpu.info.multiprocessors.max(1) as usize)
    }

    /// [`Sgemm::plan`], remembered for the next call of the same problem
    /// (a timed loop plans once): the plan [`Sgemm::run`] takes.
    pub fn planned(&mut self, gpu: &Gpu, g: &Gemm) -> Plan {
        let r = g.row_major();
        match self.last {
            Some((last, plan)) if last == r => plan,
            _ => {
                let plan = Sgemm::plan(gpu, g);
                self.last = Some((r, plan));
                plan
            }
        }
    }

    /// [`Sgemm::run`] with a given plan (`None`: the dispatcher's). The
    /// whole call is checked before anything is launched or allocated.
    pub fn run_with(
        &mut self,
        gpu: &Gpu,
        g: &Gemm,
        plan: Option<Plan>,
        a: &DeviceBuffer<f32>,
        b: &DeviceBuffer<f32>,
        c: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        g.check_buffers(a.len(), b.len(), c.len())?;
        let r = g.row_major();
        let plan = match plan {
            Some(p) => Plan::new((p.bm, p.bn), p.splits, r.k),
            None => self.planned(gpu, g),
        };
        let (pack_a, pack_b) = self.packs(g);
        // Packed operands are K-major.
        let (a_t, b_t) = (r.a_t && !pack_a, r.b_t || pack_b);
        let tile = block_tile_kernel((plan.bm, plan.bn), a_t, b_t)?;
        // BLAS's quick returns: nothing to do, or C = beta C.
        if g.m == 0 || g.n == 0 || ((g.alpha == 0.0 || g.k == 0) && g.beta == 1.0) {
            return Ok(());
        }
        let (m, n) = (r.m as u32, r.n as u32);
        if g.alpha == 0.0 || g.k == 0 {
            let scale = &gpu::gemm::ffma::gemm_scale::KERNEL;
            let blocks = (r.m * r.n).div_ceil(scale.launch.tile[0] as usize) as u32;
            // SAFETY: C holds the m x n matrix at ldc (checked above); one thread per element.
            return unsafe {
                gpu::gemm::ffma::gemm_scale::launch(gpu, blocks, c, m, n, r.ldc as u32, g.beta)
            };
        }
        let (a, b) = if r.swapped { (b, a) } else { (a, b) };
        // Each operand to pack, K-major at a row stride of `kp`: A as
        // `m x k` (transposed from `k x m` when op(A) is T), B as `n x k`
        // (transposed from `k x n` when op(B) is N).
        let kp = r.k.next_multiple_of(4);
        let [pa, pb] = &mut self.packed;
        for (on, src, ld, slot, rows, transposed) in
            [(pack_a, a, r.lda, pa, r.m, r.a_t), (pack_b, b, r.ldb, pb, r.n, !r.b_t)]
        {
            if on {
                if slot.as_ref().is_none_or(|w| w.len() < rows * kp) {
                    *slot = None;
                    *slot = Some(gpu.alloc::<f32>(rows * kp)?);
                }
                let dst = slot.as_mut().expect("allocated above");
                pack(gpu, src, dst, (rows, r.k), (ld, 0, transposed), (kp, rows * kp), 1)?;
            }
        }
        let (a, lda) = match &self.packed[0] {
            Some(w) if pack_a => (w, kp),
            _ => (a, r.lda),
        };
        let (b, ldb) = match &self.packed[1] {
            Some(w) if pack_b => (w, kp),
            _ => (b, r.ldb),
        };
        debug_assert!(
            (!pack_a || readable(lda, r.m, !a_t)) && (!pack_b || readable(ldb, r.n, b_t)),
            "a packed operand reaches the unchecked loop"
        );
        let grid = |splits: usize| (n.div_ceil(plan.bn as u32), m.div_ceil(plan.bm as u32), splits as u32);
        let (m32, n32, k32, lda, ldb) = (r.m as u32, r.n as u32, r.k as u32, lda as u32, ldb as u32);
        if plan.splits == 1 {
            // SAFETY: A, B and C hold op(A), op(B) and C at their leading dimensions (checked
            // above); the grid covers C with the tile and k with one range.
            return unsafe {
                tile.launch(
                    gpu,
                    grid(1),
                    (a, b, c, m32, n32, k32, lda, ldb, r.ldc as u32, g.alpha, g.beta, k32, 0),
                )
            };
        }
        let slices = plan.splits * r.m * r.n;
        if self.workspace.as_ref().is_none_or(|w| w.len() < slices) {
            self.workspace = None;
            self.workspace = Some(gpu.alloc::<f32>(slices)?);
        }
        let w = self.workspace.as_mut().expect("allocated above");
        // SAFETY: A and B as above; the workspace holds `splits` packed m x n slices, one per z.
        unsafe {
            tile.launch(
                gpu,
                grid(plan.splits),
                (a, b, w, m32, n32, k32, lda, ldb, n32, 1.0, 0.0, plan.k_chunk as u32, (r.m * r.n) as u64),
            )?
        };
        let reduce = &gpu::gemm::ffma::gemm_split_reduce::KERNEL;
        let blocks = (r.m * r.n).div_ceil(reduce.launch.tile[0] as usize) as u32;
        let w = self.workspace.as_ref().expect("allocated above");
        // SAFETY: the workspace holds `splits` slices of m n; C the m x n matrix at ldc.
        unsafe {
            gpu::gemm::ffma::gemm_split_reduce::launch(
                gpu,
                blocks,
                w,
                c,
                m,
                n,
                r.ldc as u32,
                plan.splits as u32,
                g.alpha,
                g.beta,
            )
        }
    }
}
