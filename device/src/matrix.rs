//! `ldmatrix` and `stmatrix`: a warp moves whole 8 x 8 matrices of 16-bit
//! elements between shared memory and `mma` fragments in one instruction.
//!
//! Each of the (up to) four 8 x 8 matrices is eight rows of 16 bytes; lane
//! `l` names the address of row `l % 8` of matrix `l / 8` (`.x4`: all 32
//! lanes give one). Register `j` of every lane then holds two neighbouring
//! elements of matrix `j`: with `group = lane / 4`, `quad = lane % 4`,
//!
//! - plain: row `group`, columns `2 quad` and `2 quad + 1` (the lower
//!   column in the low 16 bits) — exactly the A fragment's register of
//!   `mma.m16n8k16` for a row-major tile, and the C layout of an `m16n8`
//!   tile;
//! - `.trans`: column `group`, rows `2 quad` and `2 quad + 1` — the B
//!   fragment's register (two neighbours along k of one column n) read from
//!   a tile stored k-row by k-row (row-major `k x n`).
//!
//! The rows may lie anywhere (each 16-byte aligned): that is what lets a
//! kernel permute ("swizzle") where each row's 16-byte pieces go. Banks:
//! the hardware serves one 8 x 8 matrix (eight 16-byte rows, 128 bytes) per
//! pass; its eight rows cover all 32 banks exactly when they fall in eight
//! different 16-byte slots of a 128-byte line (`address / 16 mod 8`). Four
//! matrices in four passes is the least; every collision adds a pass. The
//! emulator records each lane's 16-byte row as one access, so its bank
//! analysis counts exactly these passes.
//!
//! `ldmatrix` needs sm_75, `stmatrix` sm_90 (PTX ISA, "Warp-level matrix
//! load/store instructions").

use super::SharedTile;
use super::check::{self, Space};

impl<const STRIDE: usize> SharedTile<u16, STRIDE> {
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: this lane gives the row
    /// starting at `(r, c)`; returns its four registers (see the module
    /// documentation).
    ///
    /// # Safety
    /// All 32 lanes call it converged; each row lies within the launch's
    /// shared memory and starts on 16 bytes.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn ldmatrix_x4(self, r: usize, c: usize) -> [u32; 4] {
        // SAFETY: the caller's contract.
        unsafe { self.load_matrices::<false>(r, c) }
    }

    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: as
    /// [`SharedTile::ldmatrix_x4`], each matrix transposed.
    ///
    /// # Safety
    /// As for [`SharedTile::ldmatrix_x4`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn ldmatrix_x4_trans(self, r: usize, c: usize) -> [u32; 4] {
        // SAFETY: the caller's contract.
        unsafe { self.load_matrices::<true>(r, c) }
    }

    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_matrices<const TRANS: bool>(self, r: usize, c: usize) -> [u32; 4] {
        let p = self.element_ptr(r, c);
        check::load(Space::Shared, p, 16);
        #[cfg(target_arch = "nvptx64")]
        {
            let address = self.window(r, c);
            let (r0, r1, r2, r3): (u32, u32, u32, u32);
            // SAFETY: the caller's contract; it reads shared memory only.
            unsafe {
                if TRANS {
                    core::arch::asm!(
                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
                        r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
                        a = in(reg32) address, options(readonly, nostack)
                    )
                } else {
                    core::arch::asm!(
                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
                        r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3,
                        a = in(reg32) address, options(readonly, nostack)
                    )
                }
            };
            [r0, r1, r2, r3]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::ldmatrix_x4(p as usize, TRANS)
    }

    /// `stmatrix.sync.aligned.m8n8.x4.shared.b16` (sm_90): the inverse of
    /// [`SharedTile::ldmatrix_x4`]; this lane gives the row at `(r, c)`
    /// and its four registers, and the warp writes the four matrices.
    ///
    /// # Safety
    /// As for [`SharedTile::ldmatrix_x4`]; no other thread touches the rows
    /// between the same two barriers; the device is sm_90 or later.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn stmatrix_x4(self, r: usize, c: usize, regs: [u32; 4]) {
        let p = self.element_ptr(r, c);
        #[cfg(target_arch = "nvptx64")]
        {
            let address = self.window(r, c);
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{a}], {{{r0}, {r1}, {r2}, {r3}}};",
                    a = in(reg32) address,
                    r0 = in(reg32) regs[0], r1 = in(reg32) regs[1], r2 = in(reg32) regs[2], r3 = in(reg32) regs[3],
                    options(nostack)
                )
            };
        }
        #[cfg(not(target_arch = "nvptx64"))]
        emu::ops::stmatrix_x4(p as usize, regs);
    }
}
