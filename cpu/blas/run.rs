//! `sgemm` itself: checks a call, follows BLAS's rules for the trivial
//! cases, and launches the plan's kernels.

use gpu::dev::{In, Out};
use gpu::launch::Typed;

use super::gemm::{Gemm, RowMajor};
use super::plan::{self, Plan};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

/// The block tile kernels' parameters: `a, b, c, m, n, k, lda, ldb, ldc,
/// alpha, beta, k_chunk, c_split`.
pub type BlockTile = (In<f32>, In<f32>, Out<f32>, u32, u32, u32, u32, u32, u32, f32, f32, u32, u64);

/// An `sgemm` that keeps its split-K workspace between calls (so a timed
/// loop allocates nothing after the first call).
#[derive(Default)]
pub struct Sgemm {
    workspace: Option<DeviceBuffer<f32>>,
    /// The last call's problem and plan: a timed loop plans once.
    last: Option<(RowMajor, Plan)>,
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

    /// The plan [`Sgemm::run`] takes for `g` on `gpu`.
    pub fn plan(gpu: &Gpu, g: &Gemm) -> Plan {
        plan::choose(&g.row_major(), gpu.info.multiprocessors.max(1) as usize)
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
            None => match self.last {
                Some((last, plan)) if last == r => plan,
                _ => {
                    let plan = Sgemm::plan(gpu, g);
                    self.last = Some((r, plan));
                    plan
                }
            },
        };
        let tile = block_tile_kernel((plan.bm, plan.bn), r.a_t, r.b_t)?;
        // BLAS's quick returns: nothing to do, or C = beta C.
        if g.m == 0 || g.n == 0 || ((g.alpha == 0.0 || g.k == 0) && g.beta == 1.0) {
            return Ok(());
        }
        let (m, n) = (r.m as u32, r.n as u32);
        if g.alpha == 0.0 || g.k == 0 {
            let scale = &gpu::sgemm::blas::gemm_scale::KERNEL;
            let blocks = (r.m * r.n).div_ceil(scale.launch.tile[0] as usize) as u32;
            // SAFETY: C holds the m x n matrix at ldc (checked above); one thread per element.
            return unsafe {
                gpu::sgemm::blas::gemm_scale::launch(gpu, blocks, c, m, n, r.ldc as u32, g.beta)
            };
        }
        let (a, b) = if r.swapped { (b, a) } else { (a, b) };
        let grid = |splits: usize| (n.div_ceil(plan.bn as u32), m.div_ceil(plan.bm as u32), splits as u32);
        let scalars = |x: &RowMajor| (x.m as u32, x.n as u32, x.k as u32, x.lda as u32, x.ldb as u32);
        let (m32, n32, k32, lda, ldb) = scalars(&r);
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
        let reduce = &gpu::sgemm::blas::gemm_split_reduce::KERNEL;
        let blocks = (r.m * r.n).div_ceil(reduce.launch.tile[0] as usize) as u32;
        let w = self.workspace.as_ref().expect("allocated above");
        // SAFETY: the workspace holds `splits` slices of m n; C the m x n matrix at ldc.
        unsafe {
            gpu::sgemm::blas::gemm_split_reduce::launch(
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
