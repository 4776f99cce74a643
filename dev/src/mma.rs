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
//!
//! Which lane holds which element is fixed by the PTX ISA ("Matrix
//! Fragments for mma.m16n8k16" and "for mma.m16n8k8"); [`a_bf16`],
//! [`b_bf16`], [`a_tf32`], [`b_tf32`] and [`c_f32`] encode it, with
//! `group = lane / 4` and `quad = lane % 4`:
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
//! host's error bounds allow one `f32` ulp per addition). The emulator
//! computes each lane's `D` from the whole warp's fragments, gathered from
//! the lanes as the hardware does, in `f64`, rounded once to `f32`.

/// The lane's place in its warp's fragments: `(group, quad)` = `(lane / 4,
/// lane % 4)`.
#[inline(always)]
const fn parts(lane: u32) -> (u32, u32) {
    (lane / 4, lane % 4)
}

/// `(row, column)` of element `i` (0..8) of lane `lane`'s A fragment of
/// `m16n8k16` bf16 (see the module documentation).
#[inline(always)]
pub const fn a_bf16(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * ((i / 2) % 2), 2 * quad + i % 2 + 8 * (i / 4))
}

/// `(row k, column n)` of element `i` (0..4) of the B fragment of
/// `m16n8k16` bf16.
#[inline(always)]
pub const fn b_bf16(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (2 * quad + i % 2 + 8 * (i / 2), group)
}

/// `(row, column)` of register `i` (0..4) of the A fragment of `m16n8k8`
/// tf32.
#[inline(always)]
pub const fn a_tf32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * (i % 2), quad + 4 * (i / 2))
}

/// `(row k, column n)` of register `i` (0..2) of the B fragment of
/// `m16n8k8` tf32.
#[inline(always)]
pub const fn b_tf32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (quad + 4 * i, group)
}

/// `(row, column)` of element `i` (0..4) of the C and D fragments (both
/// shapes).
#[inline(always)]
pub const fn c_f32(lane: u32, i: u32) -> (u32, u32) {
    let (group, quad) = parts(lane);
    (group + 8 * (i / 2), 2 * quad + i % 2)
}

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

/// `D = A B + C` for one `m16n8k16` tile with bf16 A and B and `f32` C and
/// D: `a`, `b`, `c` are this lane's fragments (see the module documentation
/// for which elements they are), the result is this lane's D fragment.
///
/// # Safety
/// All 32 lanes of the warp execute this same instruction, converged (the
/// PTX ISA's `.sync.aligned`); the emulator reports a lane that does not.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_bf16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        mma_sync!("m16n8k16.row.col.f32.bf16.bf16.f32", a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulated::halves(a, b, c, bf16_to_f32)
}

/// As [`mma_bf16_m16n8k16`] with IEEE binary16 A and B (two per register,
/// the same lane map). f16 has 11 significant bits: products are exact in
/// `f32`, as for bf16.
///
/// # Safety
/// As for [`mma_bf16_m16n8k16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_f16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        mma_sync!("m16n8k16.row.col.f32.f16.f16.f32", a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // Every binary16 is exactly an `f32` (the `half` crate decodes it).
    emulated::halves(a, b, c, |h| half::f16::from_bits(h).to_f32())
}

/// `D = A B + C` for one `m16n8k8` tile with tf32 A and B and `f32` C and
/// D. A and B are 32-bit patterns: rounded by [`to_tf32`], or raw `f32`s,
/// whose low 13 mantissa bits the tensor core drops (truncation).
///
/// # Safety
/// As for [`mma_bf16_m16n8k16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn mma_tf32_m16n8k8(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (a converged warp).
    unsafe {
        mma_sync!("m16n8k8.row.col.f32.tf32.tf32.f32", a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (lane, warp_a, warp_b) = emulated::gather(a, b);
        // The tensor core reads only the tf32 bits of each register.
        let tf32 = |bits: u32| f32::from_bits(bits & !0x1fff);
        emulated::product(
            lane,
            c,
            8,
            |l, i| (a_tf32(l, i), tf32(warp_a[l as usize][i as usize])),
            4,
            |l, i| (b_tf32(l, i), tf32(warp_b[l as usize][i as usize])),
            2,
        )
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod emulated {
    use super::{a_bf16, b_bf16, c_f32};

    /// One `m16n8k16` of 16-bit inputs (bf16 or f16, two per register, the
    /// lower index in the low half), `value` decoding each.
    #[track_caller]
    pub fn halves(a: [u32; 4], b: [u32; 2], c: [f32; 4], value: fn(u16) -> f32) -> [f32; 4] {
        let (lane, warp_a, warp_b) = gather(a, b);
        let half = |r: u32, i: u32| value((r >> (16 * (i % 2))) as u16);
        product(
            lane,
            c,
            16,
            |l, i| (a_bf16(l, i), half(warp_a[l as usize][(i / 2) as usize], i)),
            8,
            |l, i| (b_bf16(l, i), half(warp_b[l as usize][(i / 2) as usize], i)),
            4,
        )
    }

    /// This lane's index, and every lane's A and B registers (see
    /// `warp::gather`).
    #[track_caller]
    pub fn gather(a: [u32; 4], b: [u32; 2]) -> (u32, [[u32; 4]; 32], [[u32; 2]; 32]) {
        let (lane, all) = crate::warp::gather([a[0], a[1], a[2], a[3], b[0], b[1]]);
        let warp_a = all.map(|r| [r[0], r[1], r[2], r[3]]);
        let warp_b = all.map(|r| [r[4], r[5]]);
        (lane, warp_a, warp_b)
    }

    /// This lane's D: the whole A (16 x `k`) and B (`k` x 8) rebuilt from
    /// the lanes' elements (`a_at(lane, i)` for `i < a_per_lane`, likewise
    /// B), multiplied in `f64` (exact for bf16 and tf32 products and sums of
    /// up to 16 of them) and added to C, rounded once.
    #[allow(clippy::too_many_arguments)]
    pub fn product(
        lane: u32,
        c: [f32; 4],
        k: usize,
        a_at: impl Fn(u32, u32) -> ((u32, u32), f32),
        a_per_lane: u32,
        b_at: impl Fn(u32, u32) -> ((u32, u32), f32),
        b_per_lane: u32,
    ) -> [f32; 4] {
        let mut a = [[0.0f64; 16]; 16];
        let mut b = [[0.0f64; 8]; 16];
        for l in 0..32 {
            for i in 0..a_per_lane {
                let ((r, col), v) = a_at(l, i);
                a[r as usize][col as usize] = v as f64;
            }
            for i in 0..b_per_lane {
                let ((row, n), v) = b_at(l, i);
                b[row as usize][n as usize] = v as f64;
            }
        }
        core::array::from_fn(|i| {
            let (r, n) = c_f32(lane, i as u32);
            let dot: f64 = (0..k).map(|p| a[r as usize][p] * b[p][n as usize]).sum();
            (dot + c[i] as f64) as f32
        })
    }
}
