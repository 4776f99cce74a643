//! Warp-level tensor-core multiply-accumulate (`mma.sync.aligned`): the 32
//! lanes of a warp together compute `D = A B + C` for one small tile, each
//! lane holding a fixed piece ("fragment") of every operand in registers.
//!
//! Two shapes, both with `f32` accumulation:
//!
//! | instruction | A | B | C, D | per lane |
//! | --- | --- | --- | --- | --- |
//! | `m16n8k16.row.col.f32.bf16.bf16.f32` | 16 x 16 bf16 | 16 x 8 bf16 | 16 x 8 f32 | A: 4 regs (8 bf16), B: 2 regs (4 bf16), C: 4 f32 |
//! | `m16n8k16.row.col.f32.f16.f16.f32` | 16 x 16 f16 | 16 x 8 f16 | 16 x 8 f32 | as bf16 (the same lane map) |
//! | `m16n8k8.row.col.f32.tf32.tf32.f32` | 16 x 8 tf32 | 8 x 8 tf32 | 16 x 8 f32 | A: 4 regs, B: 2 regs, C: 4 f32 |
//! | `m16n8k32.row.col.f32.e4m3.e4m3.f32` (sm_89; by [`mma`]) | 16 x 32 e4m3 | 32 x 8 e4m3 | 16 x 8 f32 | A: 4 regs (16 bytes), B: 2 regs, C: 4 f32 |
//!
//! In each, a lane's A registers hold 8 bytes of k of two rows and its B
//! registers 8 bytes of k of one column: [`mma`] picks the instruction
//! from the element type, so a kernel written over bytes of k runs in
//! every precision.
//!
//! Which lane holds which element is fixed by the PTX ISA ("Matrix
//! Fragments for mma.m16n8k16" and "for mma.m16n8k8"); [`a_bf16`],
//! [`b_bf16`], [`a_tf32`], [`b_tf32`] and [`c_f32`] (from `gpu_isa::mma`,
//! the one home of the lane maps) encode it, with `group = lane / 4` and
//! `quad = lane % 4`:
//!
//! - **A, bf16** (row-major 16 x 16): element `i` of 8 (register `i / 2`,
//!   the lower index in the low 16 bits) is row `group + 8 ((i / 2) % 2)`,
//!   column `2 quad + i % 2 + 8 (i / 4)`.
//! - **B, bf16** (16 x 8, "col": k runs along a register): element `i` of 4
//!   is row (k) `2 quad + i % 2 + 8 (i / 2)`, column `group`.
//! - **A, tf32** (16 x 8): register `i` of 4 is row `group + 8 (i % 2)`,
//!   column `quad + 4 (i / 2)`.
//! - **B, tf32** (8 x 8): register `i` of 2 is row `quad + 4 i`, column
//!   `group`.
//! - **C and D, f32** (16 x 8): element `i` of 4 is row `group + 8 (i / 2)`,
//!   column `2 quad + i % 2`.
//!
//! So a lane's two A elements in one register are neighbours along k, and
//! a quad of lanes (one `group`) covers a row's 16 k values: a warp's A
//! fragment is 32 lanes x 16 bytes, the whole 512-byte tile.
//!
//! `bf16` has 8 significant bits, `tf32` 11; their products are exact in
//! `f32`, and the tensor core adds them into the `f32` accumulator (in an
//! order and with an internal rounding the ISA does not specify: the
//! host's error bounds allow one `f32` ulp per addition). On the host,
//! `emu::ops::mma_sync` computes each lane's `D` from the whole warp's
//! fragments, gathered from the lanes as the hardware does, in `f64`,
//! rounded once to `f32`.

pub use gpu_isa::mma::{a_bf16, a_fp8, a_tf32, b_bf16, b_fp8, b_tf32, c_f32};
use gpu_isa::{Element, Input};

/// Two bf16 values in one register: `lo` (the lower element index) in bits
/// 0..16, `hi` in 16..32.
#[inline(always)]
pub const fn pack_bf16(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// The `f32` a bf16 stands for (its bits are the top half of the `f32`'s).
#[inline(always)]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `cvt.rna.tf32.f32`: `x` rounded to tf32 (10 explicit mantissa bits), to
/// nearest with ties away from zero, as a 32-bit pattern whose low 13 bits
/// are zero. NaN and infinity pass through.
#[inline(always)]
pub fn to_tf32(x: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a register-only conversion.
        unsafe {
            core::arch::asm!("cvt.rna.tf32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let bits = x.to_bits();
        if !x.is_finite() {
            return bits;
        }
        // Add half of the dropped 13 bits' weight to the magnitude, then
        // truncate: ties go away from zero (the sign bit is untouched).
        (bits.wrapping_add(1 << 12)) & !0x1fff
    }
}

/// `mma.sync.aligned.<shape and types> d, a, b, c` on four A registers,
/// two B registers and four `f32` accumulators: the D fragment.
#[cfg(target_arch = "nvptx64")]
macro_rules! mma_sync {
    ($form:literal, $a:expr, $b:expr, $c:expr) => {{
        let (a, b, c): ([u32; 4], [u32; 2], [f32; 4]) = ($a, $b, $c);
        let (d0, d1, d2, d3): (f32, f32, f32, f32);
        core::arch::asm!(
            concat!("mma.sync.aligned.", $form, " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, \
                     {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"),
            d0 = out(reg32) d0, d1 = out(reg32) d1, d2 = out(reg32) d2, d3 = out(reg32) d3,
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            c0 = in(reg32) c[0], c1 = in(reg32) c[1], c2 = in(reg32) c[2], c3 = in(reg32) c[3],
            options(pure, nomem, nostack)
        );
        [d0, d1, d2, d3]
    }};
}

/// `D = A B + C` for one `m16n8k16` tile with 16-bit A and B (`T` bf16 or
/// f16, two per register) and `f32` C and D: `a`, `b`, `c` are this lane's
/// fragments (see the module documentation for which elements they are),
/// the result is this lane's D fragment. Both types' products are exact in
/// `f32` (8 and 11 significant bits, 22 at most in a product).
///
/// # Safety
/// All 32 lanes of the warp execute this same instruction, converged (the
/// PTX ISA's `.sync.aligned`); the emulator reports a lane that does not.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_m16n8k16<T: Element>(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    const { assert!(T::BYTES == 2, "m16n8k16 multiplies bf16 or f16") };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        match T::INPUT {
            Input::Bf16 => mma_sync!("m16n8k16.row.col.f32.bf16.bf16.f32", a, b, c),
            _ => mma_sync!("m16n8k16.row.col.f32.f16.f16.f32", a, b, c),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::mma_sync(T::INPUT, a, b, c)
}

/// `D = A B + C` for one `m16n8k8` tile with tf32 A and B and `f32` C and
/// D. A and B are 32-bit patterns: rounded by [`to_tf32`], or raw `f32`s,
/// whose low 13 mantissa bits the tensor core drops (truncation).
///
/// # Safety
/// As for [`mma_m16n8k16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_tf32_m16n8k8(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        mma_sync!("m16n8k8.row.col.f32.tf32.tf32.f32", a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::mma_sync(Input::Tf32, a, b, c)
}

/// The `mma.sync` of element type `T` whose A registers hold 8 bytes of k
/// of two rows (`group` and `group + 8`) and whose B registers hold 8
/// bytes of k of column `group`: `m16n8k16` for bf16 and f16, `m16n8k8`
/// for tf32, `m16n8k32` for FP8 (E4M3, E5M2; sm_89 and later). Every
/// product of two such elements is exact in `f32`, tf32's after the
/// tensor core drops the low 13 mantissa bits.
///
/// # Safety
/// As for [`mma_m16n8k16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma<T: Element>(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        match T::INPUT {
            Input::Bf16 => mma_sync!("m16n8k16.row.col.f32.bf16.bf16.f32", a, b, c),
            Input::F16 => mma_sync!("m16n8k16.row.col.f32.f16.f16.f32", a, b, c),
            Input::Tf32 => mma_sync!("m16n8k8.row.col.f32.tf32.tf32.f32", a, b, c),
            Input::E4m3 => mma_sync!("m16n8k32.row.col.f32.e4m3.e4m3.f32", a, b, c),
            Input::E5m2 => mma_sync!("m16n8k32.row.col.f32.e5m2.e5m2.f32", a, b, c),
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::mma_sync(T::INPUT, a, b, c)
}
