//! The decode call's buffers and launches: the decode kernel, then, when
//! the keys are split, the merge.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use gpu::attention::decode::{CAUSAL, PACKED, PAGE_SHIFT, PAGED, WK_SHIFT, part_floats};
use gpu::dev::{In, Out};
use gpu::launch::{Dim3, Kernel, registry};

use crate::gemm::Input;
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};

use super::super::launch::Element;
use super::{Cache, Decode, Plan};

/// What the decode kernels take (Q and O in `T`, the cache in `C`).
pub type DecodeSignature<T, C> = (
    In<T>,
    In<C>,
    In<C>,
    In<u32>,
    In<u32>,
    In<f32>,
    Out<T>,
    Out<f32>,
    Out<f32>,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    f32,
    u32,
);
/// What the merge takes.
pub type MergeSignature<T> = (In<f32>, Out<T>, Out<f32>, u32, u32, u32);

/// The decode kernel for head dimension `d`, Q and O in `T`, the cache in
/// `C` (`T`, or E4M3).
pub fn kernel<T: Input, C: Input>(d: usize) -> Result<&'static Kernel> {
    let cache = if size_of::<C>() == 1 { format!("{}_", C::NAME) } else { String::new() };
    find(format!("attention_decode_{cache}d{d}_{}", T::NAME))
}

fn find(name: String) -> Result<&'static Kernel> {
    registry::find(&name).ok_or_else(|| Error::InvalidInput(format!("no kernel {name}")))
}

/// A call's device buffers: Q, the cache (K, V in `C`, the table, the
/// descales), the lengths, O and lse, and a split's workspace (grown to
/// the largest split run on them).
pub struct DecodeBuffers<T: Element, C: CacheElement> {
    pub q: DeviceBuffer<T>,
    pub k: DeviceBuffer<C>,
    pub v: DeviceBuffer<C>,
    pub table: DeviceBuffer<u32>,
    pub lens: DeviceBuffer<u32>,
    pub scales: DeviceBuffer<f32>,
    pub o: DeviceBuffer<T>,
    pub lse: DeviceBuffer<f32>,
    parts: Option<DeviceBuffer<f32>>,
    /// The cache's geometry: tokens a page, table entries a sequence,
    /// paged or not.
    page_rows: usize,
    table_stride: usize,
    paged: bool,
}

/// What a cache may hold: the queries' 16-bit type, or E4M3.
pub trait CacheElement: Input + DeviceRepr + ValidAsZeroBits {}

impl<C: Input + DeviceRepr + ValidAsZeroBits> CacheElement for C {}

impl<T: Element, C: CacheElement> DecodeBuffers<T, C> {
    /// Uploads Q (checked against the problem), the cache, its descales (K's
    /// of each K/V head, then V's) and the lengths, and allocates O and
    /// lse.
    pub fn new(gpu: &Gpu, p: &Decode, q: &[T], cache: &Cache<C>, scales: &[f32]) -> Result<Self> {
        p.check()?;
        if q.len() != p.q_len() || scales.len() != 2 * p.kv_heads {
            return Err(Error::InvalidInput(format!("decode {p}: Q or the descales of the wrong length")));
        }
        if (size_of::<C>() == 1) != p.fp8 {
            return Err(Error::InvalidInput(format!("decode {p}: a cache of another type")));
        }
        cache.check(p)?;
        if let Some(bad) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::InvalidInput(format!(
                "decode {p}: a descale of {bad} (each is finite and positive)"
            )));
        }
        if cache.paged != p.page_size.is_some() || cache.table.len() < p.batch * cache.table_stride {
            return Err(Error::InvalidInput(format!("decode {p}: a cache of another layout")));
        }
        Ok(DecodeBuffers {
            q: gpu.upload(q)?,
            k: gpu.upload(&cache.k)?,
            v: gpu.upload(&cache.v)?,
            table: gpu.upload(&cache.table)?,
            lens: gpu.upload(&p.lens_words())?,
            scales: gpu.upload(scales)?,
            o: gpu.alloc(p.q_len())?,
            lse: gpu.alloc(p.rows())?,
            parts: None,
            page_rows: cache.page_rows,
            table_stride: cache.table_stride,
            paged: cache.paged,
        })
    }
}

/// Runs `p` by `plan`: O and lse into `x`.
pub fn launch<T: Element + Input, C: CacheElement>(
    gpu: &Gpu,
    p: &Decode,
    plan: &Plan,
    x: &mut DecodeBuffers<T, C>,
) -> Result<()> {
    p.check()?;
    let kernel = kernel::<T, C>(p.d)?;
    let typed = kernel.typed::<DecodeSignature<T, C>>().map_err(Error::InvalidInput)?;
    plan.check(p)?;
    let words = if plan.splits > 1 { plan.splits as usize * p.rows() * part_floats(p.d) } else { 1 };
    if x.parts.as_ref().is_none_or(|w| w.len() < words) {
        // (Zeros: the merge reads only what the decode wrote, but a buffer
        // the sanitizer's initcheck sees written.)
        x.parts = Some(gpu.zeros(words)?);
    }
    let parts = x.parts.as_mut().expect("just allocated");
    let page_shift = if x.paged { x.page_rows.trailing_zeros() } else { 0 };
    let flags = if p.causal { CAUSAL } else { 0 }
        | if x.paged { PAGED } else { 0 }
        | if p.q_lens.is_some() { PACKED } else { 0 }
        | plan.wk.trailing_zeros() << WK_SHIFT
        | page_shift << PAGE_SHIFT;
    let grid = Dim3::xy(plan.splits * plan.row_tiles, (p.batch * p.kv_heads) as u32);
    // SAFETY: the buffers hold Q, the cache, the table and the lengths of
    // this checked problem (`DecodeBuffers::new`), O and lse its rows; the
    // plan covers every key and row; a split's workspace its size.
    unsafe {
        typed.launch(
            gpu,
            grid,
            (
                &x.q,
                &x.k,
                &x.v,
                &x.table,
                &x.lens,
                &x.scales,
                &mut x.o,
                &mut x.lse,
                parts,
                p.heads as u32,
                p.kv_heads as u32,
                p.s_q as u32,
                x.page_rows as u32,
                x.table_stride as u32,
                plan.split_keys,
                p.scale,
                flags,
            ),
        )
    }?;
    if plan.splits == 1 {
        return Ok(());
    }
    let merge = find(format!("attention_decode_merge_{}", T::NAME))?;
    let typed = merge.typed::<MergeSignature<T>>().map_err(Error::InvalidInput)?;
    let threads = (32 * p.rows()) as u32;
    let parts = x.parts.as_ref().expect("allocated above");
    // SAFETY: the decode launch just wrote every split's state of every row.
    unsafe {
        typed.launch(
            gpu,
            merge.launch.blocks(threads),
            (parts, &mut x.o, &mut x.lse, p.rows() as u32, p.d as u32, plan.splits),
        )
    }
}
