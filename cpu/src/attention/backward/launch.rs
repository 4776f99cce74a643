//! The backward's steps and their launches: the unfused baseline through
//! the GEMM library, and the fused kernel of
//! `gpu/src/attention/backward/`.

use gpu::dev::{In, Out};
use gpu::launch::{Kernel, registry};

use crate::blas::{Gemm, Layout, Op};
use crate::gemm::{self, Call, Input, TensorGemm};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

use super::super::launch::{Buffers, Element, Step};
use super::super::problem::Problem;

/// What [`gpu::attention::backward::attention_backward_dot()`] takes.
pub type DotSignature<T> = (In<T>, In<T>, Out<f32>, u32, u32);
/// What the unfused step's scores kernel takes.
pub type ScoresSignature<T> = (In<f32>, In<f32>, In<f32>, In<f32>, Out<T>, Out<T>, u32, u32, u32, f32, u32);
/// What the fused backward kernels take.
pub type FlashSignature<T> = (
    In<T>,
    In<T>,
    In<T>,
    In<T>,
    In<f32>,
    In<f32>,
    Out<f32>,
    Out<u32>,
    Out<T>,
    Out<T>,
    u32,
    u32,
    u32,
    u32,
    f32,
    u32,
);
/// What the Hopper backward kernels take: the tensor maps of Q, dO, K
/// and V (read through them alone), then as [`FlashSignature`] from lse.
pub type HopperSignature<T> =
    (In<u64>, In<f32>, In<f32>, Out<u32>, Out<T>, Out<T>, u32, u32, u32, u32, f32, u32);
/// What the dQ conversion takes.
pub type DqSignature<T> = (In<f32>, Out<T>, u32, f32);

/// The head dimensions of the fused backward: dK and dV of a warp's 16
/// keys take `d` registers a thread, which at 256 leaves nothing for the
/// products.
pub const FUSED_HEAD_DIMS: [usize; 2] = [64, 128];

/// The backward's kernel of `step` in precision `precision` for head
/// dimension `d` (the unfused step's scores kernel), or why there is
/// none.
pub fn kernel(step: Step, precision: &str, d: usize) -> Result<&'static Kernel> {
    let name = match step {
        Step::Unfused => format!("attention_backward_scores_{precision}"),
        Step::Flash | Step::Hopper if FUSED_HEAD_DIMS.contains(&d) => {
            format!("attention_backward_{}_d{d}_{precision}", step.name())
        }
        Step::Flash | Step::Hopper => {
            return Err(Error::InvalidInput(format!(
                "the {} backward takes head dims 64 and 128, not {d} (dK and dV alone would take a thread's registers); the unfused backward takes {d}",
                step.name()
            )));
        }
    };
    registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
}

fn find(name: String) -> Result<&'static Kernel> {
    registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
}

/// The backward's buffers beside the forward's ([`Buffers`]: Q, K, V, O,
/// lse): dO, the gradients, D, and each step's workspace (allocated at
/// its first launch).
pub struct Gradients<T: gemm::Element> {
    pub d_o: DeviceBuffer<T>,
    pub dq: DeviceBuffer<T>,
    pub dk: DeviceBuffer<T>,
    pub dv: DeviceBuffer<T>,
    delta: DeviceBuffer<f32>,
    /// The fused step's `f32` sum of dQ, and its turn counters (one a
    /// query tile; used in the deterministic mode).
    dq_sum: Option<(DeviceBuffer<f32>, DeviceBuffer<u32>)>,
    /// The unfused step's scores.
    scores: Option<Scores<T>>,
    /// The Hopper step's tensor maps, encoded at its first launch on a
    /// shape (`Problem::shape`).
    maps: Option<([usize; 6], DeviceBuffer<u64>)>,
}

/// The unfused step's `s_q x s_k` matrices: S and dP (`f32`, from the
/// GEMMs), P and dS (for the next GEMMs).
struct Scores<T: gemm::Element> {
    s: DeviceBuffer<f32>,
    dp: DeviceBuffer<f32>,
    p: DeviceBuffer<T>,
    ds: DeviceBuffer<T>,
}

impl<T: gemm::Element + cudarc::driver::ValidAsZeroBits> Gradients<T> {
    /// Uploads dO (checked against the problem) and allocates the rest.
    pub fn new(gpu: &Gpu, p: &Problem, d_o: &[T]) -> Result<Self> {
        p.check()?;
        if d_o.len() != p.q_len() {
            return Err(Error::InvalidInput(format!("attention {p}: dO of the wrong length")));
        }
        Ok(Gradients {
            d_o: gpu.upload(d_o)?,
            dq: gpu.alloc(p.q_len())?,
            dk: gpu.alloc(p.kv_len())?,
            dv: gpu.alloc(p.kv_len())?,
            delta: gpu.alloc(p.rows())?,
            dq_sum: None,
            scores: None,
            maps: None,
        })
    }
}

/// Device bytes of the backward beside the forward's: dO, dQ, dK, dV,
/// D, and the larger workspace: the unfused step's S, dP, P, dS (12
/// bytes a score) or the fused step's dQ sum.
pub fn device_bytes(p: &Problem) -> usize {
    2 * (2 * p.q_len() + 2 * p.kv_len()) + 4 * p.rows() + (12 * p.rows() * p.s_k).max(4 * p.q_len())
}

/// Host bytes of a verified backward beside the forward's
/// ([`Problem::host_bytes`]): Q, K, V, O, dO and lse as `f64` for the
/// reference, dO drawn, the gradients read back.
pub fn host_bytes(p: &Problem) -> usize {
    8 * (3 * p.q_len() + 2 * p.kv_len() + p.rows()) + 2 * (2 * p.q_len() + 2 * p.kv_len())
}

/// Runs `step`'s backward on `p` in precision `P`: from the forward's
/// buffers `x` (Q, K, V, O, lse) and dO in `g`, dQ, dK and dV into `g`.
pub fn launch<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    lib: &TensorGemm,
    step: Step,
    p: &Problem,
    x: &Buffers<P::Input>,
    g: &mut Gradients<P::Input>,
) -> Result<()> {
    p.check()?;
    let name = <P::Input as Input>::NAME;
    let (sq, sk, rows) = (p.s_q as u32, p.s_k as u32, p.rows() as u32);
    let causal = u32::from(p.causal);
    let kernel = kernel(step, name, p.d)?;
    let dot = find(format!("attention_backward_dot_{name}"))?;
    let typed = dot.typed::<DotSignature<P::Input>>().map_err(Error::InvalidInput)?;
    // SAFETY: O and dO hold `rows` rows of `d`, D `rows`; the grid covers
    // them, 4 rows a block.
    unsafe { typed.launch(gpu, dot.launch.blocks(rows), (&x.o, &g.d_o, &mut g.delta, rows, p.d as u32)) }?;
    match step {
        Step::Flash | Step::Hopper => {
            use gpu::attention::backward::{BR, CAUSAL, DETERMINISTIC};
            let turns = p.batch * p.heads * p.s_q.div_ceil(BR);
            if g.dq_sum.as_ref().is_none_or(|(s, t)| s.len() != p.q_len() || t.len() != turns) {
                g.dq_sum = Some((gpu.alloc(p.q_len())?, gpu.alloc(turns)?));
            }
            let (sum, order) = g.dq_sum.as_mut().expect("just allocated");
            gpu.zero(sum)?;
            gpu.zero(order)?;
            let heads = (p.heads as u32, p.kv_heads as u32);
            let flags = if p.causal { CAUSAL } else { 0 } | if p.deterministic { DETERMINISTIC } else { 0 };
            let grid = kernel.launch.grid(sk, (p.batch * p.kv_heads) as u32);
            if step == Step::Hopper {
                if g.maps.as_ref().is_none_or(|(shape, _)| *shape != p.shape()) {
                    g.maps = Some((p.shape(), gpu.upload(&hopper_maps(gpu, p, x, &g.d_o, sum)?)?));
                }
                let maps = &g.maps.as_ref().expect("just encoded").1;
                let typed = kernel.typed::<HopperSignature<P::Input>>().map_err(Error::InvalidInput)?;
                // SAFETY: the maps describe this checked problem's Q, dO,
                // K and V as the kernel reads them (`hopper_maps`); lse, D
                // and the gradients are its; the sum is zeroed; the grid is
                // the kernel's.
                unsafe {
                    typed.launch(
                        gpu,
                        grid,
                        (
                            maps,
                            &x.lse,
                            &g.delta,
                            &mut *order,
                            &mut g.dk,
                            &mut g.dv,
                            heads.0,
                            heads.1,
                            sq,
                            sk,
                            p.scale,
                            flags,
                        ),
                    )
                }?;
            } else {
                let typed = kernel.typed::<FlashSignature<P::Input>>().map_err(Error::InvalidInput)?;
                // SAFETY: the buffers hold this checked problem's tensors;
                // the sum and the counters are zeroed; the grid is the
                // kernel's.
                unsafe {
                    typed.launch(
                        gpu,
                        grid,
                        (
                            &x.q,
                            &x.k,
                            &x.v,
                            &g.d_o,
                            &x.lse,
                            &g.delta,
                            &mut *sum,
                            &mut *order,
                            &mut g.dk,
                            &mut g.dv,
                            heads.0,
                            heads.1,
                            sq,
                            sk,
                            p.scale,
                            flags,
                        ),
                    )
                }?;
            }
            let convert = find(format!("attention_backward_dq_{name}"))?;
            let typed = convert.typed::<DqSignature<P::Input>>().map_err(Error::InvalidInput)?;
            let n = p.q_len() as u32;
            // SAFETY: the sum and dQ hold `n` elements.
            unsafe { typed.launch(gpu, convert.launch.blocks(n), (&*sum, &mut g.dq, n, p.scale)) }
        }
        Step::Unfused => {
            let scores = p.rows() * p.s_k;
            if g.scores.as_ref().is_none_or(|x| x.s.len() < scores) {
                g.scores = Some(Scores {
                    s: gpu.alloc(scores)?,
                    dp: gpu.alloc(scores)?,
                    p: gpu.alloc(scores)?,
                    ds: gpu.alloc(scores)?,
                });
            }
            let Scores { s, dp, p: pr, ds } = g.scores.as_mut().expect("just allocated");
            // The query heads of a K/V head are consecutive rows (`group
            // s_q` of them): one strided batch of `b kv_heads` GEMMs a
            // product, as the forward's.
            let (m, batch) = (p.group() * p.s_q, p.batch * p.kv_heads);
            let by_keys = Call::new(Gemm::new(Layout::Row, Op::N, Op::T, m, p.s_k, p.d)).packed(batch);
            lib.run::<P, f32>(gpu, &by_keys, &x.q, &x.k, s, None)?;
            lib.run::<P, f32>(gpu, &by_keys, &g.d_o, &x.v, dp, None)?;
            let typed = kernel.typed::<ScoresSignature<P::Input>>().map_err(Error::InvalidInput)?;
            // SAFETY: S, dP, P and dS hold `rows s_k` elements, lse and D
            // `rows`; the grid covers the rows, 4 a block.
            unsafe {
                typed.launch(
                    gpu,
                    kernel.launch.blocks(rows),
                    (&*s, &*dp, &x.lse, &g.delta, &mut *pr, &mut *ds, rows, sq, sk, p.scale, causal),
                )
            }?;
            // dV = Pᵀ dO, dK = scale dSᵀ Q: `s_k x d`, over the group's rows.
            let by_rows =
                |alpha| Call::new(Gemm::new(Layout::Row, Op::T, Op::N, p.s_k, p.d, m).scaled(alpha, 0.0));
            lib.run::<P, P::Input>(gpu, &by_rows(1.0).packed(batch), &*pr, &g.d_o, &mut g.dv, None)?;
            lib.run::<P, P::Input>(gpu, &by_rows(p.scale).packed(batch), &*ds, &x.q, &mut g.dk, None)?;
            // dQ = scale dS K.
            let dq = Call::new(Gemm::new(Layout::Row, Op::N, Op::N, m, p.d, p.s_k).scaled(p.scale, 0.0))
                .packed(batch);
            lib.run::<P, P::Input>(gpu, &dq, &*ds, &x.k, &mut g.dq, None).map(drop)
        }
    }
}

/// The Hopper step's tensor maps, with the 128-byte swizzle: Q's and dO's
/// (every head's rows, `b heads s_q x d`, boxes of 64 rows x 64), dQ's
/// `f32` sum (a plane a head, boxes of 64 rows x 32, so that a head's last
/// tile adds nothing past `s_q`), then each K/V head's K and V (`s_k x
/// d`, boxes of 128 rows x 64, so a head's last tile reads zeros past
/// `s_k`).
fn hopper_maps<T: Input>(
    gpu: &Gpu,
    p: &Problem,
    x: &Buffers<T>,
    d_o: &DeviceBuffer<T>,
    dq_sum: &DeviceBuffer<f32>,
) -> Result<Vec<u64>> {
    use gpu::attention::backward::{BR, hopper::BC};
    let mut words = Vec::with_capacity(16 * (3 + 2 * p.batch * p.kv_heads));
    for buffer in [&x.q, d_o] {
        words.extend(gpu.tensor_map_pitched(buffer, 0, (p.batch * p.heads * p.s_q, p.d), p.d, (BR, 64))?);
    }
    words.extend(gpu.tensor_map_stack(dq_sum, (p.batch * p.heads, p.s_q, p.d), (BR, 32))?);
    for head in 0..p.batch * p.kv_heads {
        for buffer in [&x.k, &x.v] {
            words.extend(gpu.tensor_map_pitched(buffer, head * p.s_k * p.d, (p.s_k, p.d), p.d, (BC, 64))?);
        }
    }
    Ok(words)
}
