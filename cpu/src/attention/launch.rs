//! The steps of attention and their launches: the unfused baseline
//! through the GEMM library, the fused kernels of `gpu/src/attention/`.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::dev::{In, Out};
use gpu::launch::{Dim3, Kernel, registry};

use crate::blas::{Gemm, Layout, Op};
use crate::gemm::{self, Call, Input, TensorGemm};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result, Unread};

use super::problem::Problem;

/// The element types attention runs in (inputs, P and O): the 16-bit
/// tensor-core elements ([`gpu::dev::Element`]) that the GEMM library both
/// takes and gives ([`gemm::Element`]), bf16 and f16. A bound on the one
/// precision axis, not an axis of its own: every such type has it, and a
/// precision `P: gemm::Precision<Input: Element>` runs attention.
pub trait Element: gemm::Element + gpu::dev::Element + DeviceRepr + ValidAsZeroBits {}

impl<T: gemm::Element + gpu::dev::Element + DeviceRepr + ValidAsZeroBits> Element for T {}

/// What the fused kernels take.
pub type FlashSignature<T> = (In<T>, In<T>, In<T>, Out<T>, Out<f32>, u32, u32, u32, u32, f32, u32);
/// What the Hopper kernels take: the tensor maps of Q, K and V (read
/// through them alone), O and lse, a split's workspace, then
/// as [`FlashSignature`] from the heads, with the batch before them and
/// V's descale (FP8; 1 otherwise) after the scale.
pub type HopperSignature<T> =
    (In<u64>, Out<T>, Out<f32>, Out<f32>, u32, u32, u32, u32, u32, f32, f32, In<f32>, u32);
/// What the Hopper step's merge kernel takes.
pub type MergeSignature<T> = (In<f32>, Out<T>, Out<f32>, u32, u32, u32, u32, u32, u32, f32);
/// What the softmax kernel takes.
pub type SoftmaxSignature<T> = (In<f32>, Out<T>, Out<f32>, u32, u32, u32, f32, u32);

/// The steps of the family, as a binary names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// 1: GEMM, softmax kernel, GEMM.
    Unfused,
    /// 2: the FlashAttention-2 kernel.
    Flash,
    /// 3: the FlashAttention-3 kernel (sm_90a).
    Hopper,
}

impl Step {
    pub const ALL: [Step; 3] = [Step::Unfused, Step::Flash, Step::Hopper];

    pub fn name(self) -> &'static str {
        match self {
            Step::Unfused => "unfused",
            Step::Flash => "flash",
            Step::Hopper => "hopper",
        }
    }

    /// The kernel of this step in precision `name` (`bf16`, `f16`) for
    /// head dimension `d`: the softmax kernel for the baseline.
    pub fn kernel(self, precision: &str, d: usize) -> Result<&'static Kernel> {
        let name = match self {
            Step::Unfused => format!("attention_softmax_{precision}"),
            Step::Flash => format!("attention_flash_d{d}_{precision}"),
            Step::Hopper => format!("attention_hopper_d{d}_{precision}"),
        };
        registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
    }
}

/// The device buffers of one problem: inputs, outputs, and the baseline's
/// scores and probabilities (allocated when the baseline runs).
pub struct Buffers<T: DeviceRepr> {
    pub q: DeviceBuffer<T>,
    pub k: DeviceBuffer<T>,
    pub v: DeviceBuffer<T>,
    pub o: DeviceBuffer<T>,
    pub lse: DeviceBuffer<f32>,
    scores: Option<(DeviceBuffer<f32>, DeviceBuffer<T>)>,
    /// The Hopper step's maps, deal and split workspace.
    hopper: HopperState,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> Buffers<T> {
    /// Uploads Q, K, V (checked against the problem) and allocates O and lse.
    pub fn new(gpu: &Gpu, problem: &Problem, q: &[T], k: &[T], v: &[T]) -> Result<Self> {
        problem.check()?;
        if q.len() != problem.q_len() || k.len() != problem.kv_len() || v.len() != problem.kv_len() {
            return Err(Error::InvalidInput(format!("attention {problem}: inputs of the wrong length")));
        }
        Ok(Buffers {
            q: gpu.upload(q)?,
            k: gpu.upload(k)?,
            v: gpu.upload(v)?,
            o: gpu.alloc(problem.q_len())?,
            lse: gpu.alloc(problem.rows())?,
            scores: None,
            hopper: HopperState::default(),
        })
    }
}

/// Runs `step` on `problem` in precision `P`: O and lse into `x`.
pub fn launch<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    lib: &TensorGemm,
    step: Step,
    p: &Problem,
    x: &mut Buffers<P::Input>,
) -> Result<()> {
    p.check()?;
    let (sq, sk) = (p.s_q as u32, p.s_k as u32);
    let causal = u32::from(p.causal);
    match step {
        Step::Flash => {
            let kernel = Step::Flash.kernel(<P::Input as Input>::NAME, p.d)?;
            let typed = kernel.typed::<FlashSignature<P::Input>>().map_err(Error::InvalidInput)?;
            let grid = kernel.launch.grid(sq, (p.batch * p.heads) as u32);
            let dims = (p.heads as u32, p.kv_heads as u32, sq, sk);
            // SAFETY: the buffers hold Q, K, V, O and lse of this checked
            // problem (`Buffers::new`); the grid is the kernel's.
            unsafe {
                typed.launch(
                    gpu,
                    grid,
                    (&x.q, &x.k, &x.v, &mut x.o, &mut x.lse, dims.0, dims.1, dims.2, dims.3, p.scale, causal),
                )
            }
        }
        Step::Hopper => {
            let kernel = Step::Hopper.kernel(<P::Input as Input>::NAME, p.d)?;
            let (q, k, v) = (&x.q, &x.k, &x.v);
            let maps = || hopper_maps(gpu, p, (q, k, v), None);
            let scales = Scales::Tensor(p.scale, 1.0);
            launch_hopper(gpu, p, kernel, maps, (&mut x.o, &mut x.lse), &mut x.hopper, scales)
        }
        Step::Unfused => {
            let kernel = Step::Unfused.kernel(<P::Input as Input>::NAME, p.d)?;
            let typed = kernel.typed::<SoftmaxSignature<P::Input>>().map_err(Error::InvalidInput)?;
            let scores = p.rows() * p.s_k;
            if x.scores.as_ref().is_none_or(|(s, _)| s.len() < scores) {
                x.scores = Some((gpu.alloc(scores)?, gpu.alloc(scores)?));
            }
            let (s, pr) = x.scores.as_mut().expect("just allocated");
            // The query heads of one K/V head are consecutive: their rows
            // are one `group s_q x d` matrix, and one strided batch of `b
            // kv_heads` GEMMs makes every head's S (rows in Q's order).
            let (m, batch) = (p.group() * p.s_q, p.batch * p.kv_heads);
            let qk = Call::new(Gemm::new(Layout::Row, Op::N, Op::T, m, p.s_k, p.d)).packed(batch);
            lib.run::<P, f32>(gpu, &qk, &x.q, &x.k, s, None)?;
            let rows = p.rows() as u32;
            // SAFETY: S and P hold `rows s_k` elements, lse `rows`; the
            // grid covers the rows, 4 a block.
            unsafe {
                typed.launch(
                    gpu,
                    kernel.launch.blocks(rows),
                    (&*s, &mut *pr, &mut x.lse, rows, sq, sk, p.scale, causal),
                )
            }?;
            let pv = Call::new(Gemm::new(Layout::Row, Op::N, Op::N, m, p.d, p.s_k)).packed(batch);
            lib.run::<P, P::Input>(gpu, &pv, pr, &x.v, &mut x.o, None).map(drop)
        }
    }
}

/// The Hopper step's state on one problem's buffers: its tensor maps, its
/// causal deal and its split's workspace, each made at the first launch
/// that needs it.
#[derive(Default)]
pub struct HopperState {
    /// The tensor maps of the shape (`Problem::shape`) they were encoded for.
    maps: Option<([usize; 6], DeviceBuffer<u64>)>,
    /// The causal deal: shape, grid, heads per group ([`deal_group`]).
    deal: Option<([usize; 6], u32, u32)>,
    /// The split workspace (the chunks' states), grown to the largest
    /// split launched.
    split: Option<DeviceBuffer<f32>>,
    /// Passed for the descales of a launch without descales per head.
    unread: Unread,
}

/// How a Hopper launch scales the scores and O: `(scale, v_scale)` for
/// every head, or each K/V head's own (`2 b kv_heads` words:
/// `gpu::attention::hopper::HEAD_DESCALES`).
pub enum Scales<'a> {
    Tensor(f32, f32),
    Head(&'a DeviceBuffer<f32>),
}

/// Launches a Hopper forward kernel (`attention_hopper_*`, output `T`) on
/// `p`: O and lse into `out`, the scores and O scaled as `scales` says;
/// `maps` encodes the tensor maps when the shape is new; a split's merge
/// follows (never with scales per head: the merge takes one scale).
pub fn launch_hopper<T: Element>(
    gpu: &Gpu,
    p: &Problem,
    kernel: &'static Kernel,
    maps: impl FnOnce() -> Result<Vec<u64>>,
    (o, lse): (&mut DeviceBuffer<T>, &mut DeviceBuffer<f32>),
    state: &mut HopperState,
    scales: Scales,
) -> Result<()> {
    use gpu::attention::hopper::{
        CAUSAL, GROUP_SHIFT, HEAD_DESCALES, PING_PONG, SPLIT, merge_threads, part_floats,
    };
    let ((scale, v_scale), descales) = match scales {
        Scales::Tensor(scale, v_scale) => ((scale, v_scale), None),
        Scales::Head(words) => {
            if words.len() != 2 * p.batch * p.kv_heads {
                return Err(Error::InvalidInput(format!(
                    "attention {p}: descales per head need {} words, the buffer has {}",
                    2 * p.batch * p.kv_heads,
                    words.len()
                )));
            }
            ((p.scale, 1.0), Some(words))
        }
    };
    let (sq, sk) = (p.s_q as u32, p.s_k as u32);
    let typed = kernel.typed::<HopperSignature<T>>().map_err(Error::InvalidInput)?;
    if state.maps.as_ref().is_none_or(|(shape, _)| *shape != p.shape()) {
        state.maps = Some((p.shape(), gpu.upload(&maps()?)?));
    }
    let maps = &state.maps.as_ref().expect("just encoded").1;
    let resident = gpu.resident_blocks(kernel)?;
    // A split runs on every block, even with fewer tiles than blocks.
    let split = if descales.is_some() { None } else { hopper_split(p, resident) };
    let grid = match split {
        Some(_) => Dim3::xy(resident, 1),
        None => kernel.launch.persistent_grid(sq, (p.batch * p.heads) as u32, resident),
    };
    let words = split.map_or(1, |_| grid.x as usize * part_floats(p.d));
    if state.split.as_ref().is_none_or(|w| w.len() < words) {
        // (Zeros: the merge reads only what the product wrote, but a
        // buffer the sanitizer's initcheck sees written.)
        state.split = Some(gpu.zeros(words)?);
    }
    let workspace = state.split.as_mut().expect("just allocated");
    let group = if p.causal {
        if state.deal.is_none_or(|(shape, g, _)| shape != p.shape() || g != grid.x) {
            state.deal = Some((p.shape(), grid.x, deal_group(p, grid.x)));
        }
        state.deal.expect("just picked").2
    } else {
        0
    };
    let flags = if p.causal { CAUSAL } else { 0 }
        | if p.ping_pong { PING_PONG } else { 0 }
        | if split.is_some() { SPLIT } else { 0 }
        | if descales.is_some() { HEAD_DESCALES } else { 0 }
        | group << GROUP_SHIFT;
    let descales = match descales {
        Some(words) => words,
        None => state.unread.get(gpu)?,
    };
    let dims = (p.batch as u32, p.heads as u32, p.kv_heads as u32, sq, sk);
    // SAFETY: O and lse hold this checked problem's rows, and the maps
    // describe its inputs as the kernel reads them (the caller's `maps`);
    // a split's workspace its size; the grid is the kernel's.
    unsafe {
        typed.launch(
            gpu,
            grid,
            (
                maps, &mut *o, &mut *lse, workspace, dims.0, dims.1, dims.2, dims.3, dims.4, scale, v_scale,
                descales, flags,
            ),
        )
    }?;
    let Some(tail) = split else { return Ok(()) };
    let merge = registry::find(&format!("attention_merge_{}", <T as Input>::NAME))
        .ok_or_else(|| Error::InvalidInput("no kernel attention_merge".into()))?;
    let typed = merge.typed::<MergeSignature<T>>().map_err(Error::InvalidInput)?;
    let threads = merge_threads(p.d, tail.tiles as usize) as u32;
    let workspace = state.split.as_ref().expect("allocated above");
    // SAFETY: the product launch just wrote the chunks' states for this
    // problem on `grid` blocks; O and lse are the problem's.
    unsafe {
        typed.launch(
            gpu,
            Dim3::xy(merge.launch.blocks(threads), 1),
            (workspace, o, lse, dims.0, dims.1, dims.3, dims.4, p.d as u32, grid.x, scale),
        )
    }
}

/// The Hopper step's split of its last round on `grid` blocks
/// (`hopper::Tail`, whose module says why), where it pays: not causal,
/// and not turned off (`Problem::split`).
pub fn hopper_split(p: &Problem, grid: u32) -> Option<gpu::attention::hopper::Tail> {
    use gpu::attention::hopper::{Tail, bc};
    if p.causal || !p.split {
        return None;
    }
    Tail::of_problem((p.batch * p.heads) as u32, (p.s_q as u32, p.s_k as u32), bc(p.d) as u32, grid)
}

/// Heads per group of the Hopper step's causal deal on `grid` blocks
/// (`hopper::GROUP_SHIFT`; the scheduler's module says why): the smallest
/// group of whole K/V heads that divides `b heads`, has tiles for two
/// rounds, and whose deal the model (`hopper::causal_deal_loads`) puts
/// within 1% of dealing every head at once (or within 2% of even); 0,
/// every head at once, if no group is.
pub fn deal_group(p: &Problem, grid: u32) -> u32 {
    use gpu::attention::hopper::{BR, GROUP_SHIFT, bc, causal_deal_loads};
    let dims = (p.batch as u32, p.heads as u32, p.kv_heads as u32, p.s_q as u32, p.s_k as u32);
    let all = dims.0 * dims.1;
    let m_blocks = p.s_q.div_ceil(BR).max(1) as u32;
    // The busiest block's work over the mean.
    let spread = |group: u32| {
        let loads: Vec<u64> = causal_deal_loads(grid, dims, group, bc(p.d)).collect();
        let mean = loads.iter().sum::<u64>() as f64 / loads.len().max(1) as f64;
        loads.iter().max().copied().unwrap_or(0) as f64 / mean.max(1.0)
    };
    let per_kv = p.group().max(1) as u32;
    let mut groups = (per_kv..all)
        .step_by(per_kv as usize)
        .filter(|&g| all.is_multiple_of(g) && g * m_blocks >= 2 * grid && g < 1 << (32 - GROUP_SHIFT))
        .peekable();
    // (No candidate, no model run: most small problems.)
    if groups.peek().is_none() {
        return 0;
    }
    let target = (spread(all) + 0.01).max(1.02);
    groups.find(|&g| spread(g) <= target).unwrap_or(0)
}

/// The Hopper step's tensor maps, each box a tile's rows by a swizzle
/// span (128 bytes, or a 64-byte row's own: FP8 at `d = 64`): Q's (every
/// head's rows, `b heads s_q x d`, boxes of 128 rows), then each K/V
/// head's K and V (`s_k x d`, boxes of `bc(d)` rows, so a head's last tile
/// reads zeros past `s_k`). With `vt` (FP8: Vᵀ and its key pitch, from
/// `hopper::fp8_v_transpose`), each head's second map is Vᵀ's (`d x
/// pitch`, boxes of `d` rows by `bc(d)` keys).
pub fn hopper_maps<I: Input>(
    gpu: &Gpu,
    p: &Problem,
    (q, k, v): (&DeviceBuffer<I>, &DeviceBuffer<I>, &DeviceBuffer<I>),
    vt: Option<usize>,
) -> Result<Vec<u64>> {
    use gpu::attention::hopper::{BR, bc, span_of};
    let e = size_of::<I>();
    // A box's columns: the swizzle span of a row of `row` elements.
    let cols = |row: usize| span_of(row * e) / e;
    let mut words = Vec::with_capacity(16 * (1 + 2 * p.batch * p.kv_heads));
    words.extend(gpu.tensor_map_pitched(q, 0, (p.batch * p.heads * p.s_q, p.d), p.d, (BR, cols(p.d)))?);
    let bc = bc(p.d);
    for head in 0..p.batch * p.kv_heads {
        let at = head * p.s_k * p.d;
        words.extend(gpu.tensor_map_pitched(k, at, (p.s_k, p.d), p.d, (bc, cols(p.d)))?);
        words.extend(match vt {
            // Every padded column: the last sixteen's keys are permuted
            // over all of its places (zeros past `s_k`).
            Some(pitch) => {
                gpu.tensor_map_pitched(v, head * p.d * pitch, (p.d, pitch), pitch, (p.d, cols(bc)))?
            }
            None => gpu.tensor_map_pitched(v, at, (p.s_k, p.d), p.d, (bc, cols(p.d)))?,
        });
    }
    Ok(words)
}
