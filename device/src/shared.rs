//! Typed views over the block's launch-sized (dynamic) shared memory.
//!
//! Shared memory is 32 banks of 4-byte words: the word at byte address `a`
//! lives in bank `(a / 4) % 32`. A warp's request costs as many passes
//! ("wavefronts") as the largest number of *distinct* words it touches in
//! one bank; lanes reading the same word get it broadcast for free.
//!
//! On the GPU the memory comes from `gpu_launch_sized_workgroup_mem`, so
//! LLVM knows it is shared (`ld.shared`/`st.shared`, SASS `LDS`/`STS`).
//! Its size is the `shared_bytes` of the kernel's `gpu_launch::Kernel`
//! constant. On the host it is the emulator's per-block buffer, and every
//! access is bounds-checked, race-checked and counted for bank conflicts.

use super::check::{self, Space};

/// A row-major 2-D tile of `T` in shared memory, `STRIDE` elements per row.
///
/// A `STRIDE` larger than the columns used is padding: it shifts each row by
/// `STRIDE % 32` banks, which is what makes column reads conflict-free.
#[derive(Clone, Copy)]
pub struct SharedTile<T, const STRIDE: usize> {
    base: *mut T,
}

/// A 1-D array of `T` in shared memory: [`SharedTile`] with one row.
pub type SharedArray<T> = SharedTile<T, 0>;

/// Bytes of shared memory a `rows` x `stride` tile of `T` needs.
pub const fn tile_bytes<T>(rows: usize, stride: usize) -> u32 {
    (rows * stride * core::mem::size_of::<T>()) as u32
}

/// The start of the block's launch-sized shared memory, 16-byte aligned.
#[doc(hidden)]
#[inline(always)]
pub fn launch_sized_base() -> *mut u8 {
    #[cfg(target_arch = "nvptx64")]
    {
        // Asked for as 16-byte units so that the symbol is declared
        // `.align 16`, which `load_x4`/`store_x4` rely on.
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<crate::mem::F32x4>() as *mut u8
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::shared_base()
    }
}

/// The address of `p` in the shared-memory window (`cvta.to.shared`), as
/// the 32-bit operand `cp.async`, `ldmatrix` and `mbarrier` take.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn window_address<T>(p: *const T) -> u32 {
    let address: u32;
    // SAFETY: pure address arithmetic, `p` points into shared memory.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
            p = in(reg64) p,
            a = out(reg32) address,
            options(pure, nomem, nostack)
        )
    };
    address
}

impl<T: Copy, const STRIDE: usize> SharedTile<T, STRIDE> {
    /// The tile at the start of the block's launch-sized shared memory.
    ///
    /// # Safety
    /// The launch passed at least the tile's bytes of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn launch_sized() -> Self {
        SharedTile { base: launch_sized_base() as *mut T }
    }

    /// A second array placed `byte_offset` bytes into the launch-sized
    /// shared memory (after another one).
    ///
    /// # Safety
    /// The launch passed at least `byte_offset` plus this array's bytes, and
    /// `byte_offset` is a multiple of `T`'s alignment.
    #[inline(always)]
    pub unsafe fn launch_sized_at(byte_offset: usize) -> Self {
        SharedTile { base: launch_sized_base().wrapping_add(byte_offset) as *mut T }
    }

    /// The same memory seen with another row stride (a different tile
    /// placed at this address).
    #[inline(always)]
    pub fn restride<const S: usize>(self) -> SharedTile<T, S> {
        SharedTile { base: self.base }
    }

    /// The tile `offset` elements further into shared memory (a second
    /// stage of a double buffer).
    ///
    /// # Safety
    /// The launch passed enough shared memory.
    #[inline(always)]
    pub unsafe fn offset(self, offset: usize) -> Self {
        SharedTile { base: self.base.wrapping_add(offset) }
    }

    /// The address of row `r`, column `c` (for `cp.async`).
    #[inline(always)]
    pub(crate) fn element_ptr(self, r: usize, c: usize) -> *mut T {
        self.base.wrapping_add(r * STRIDE + c)
    }

    /// The window address (the 32-bit operand of `cp.async`, `ldmatrix`,
    /// `stmatrix`) of row `r`, column `c`: the tile's own, converted once,
    /// plus a 32-bit offset. Converting each element's 64-bit pointer
    /// instead costs a 64-bit add and a conversion per access, which ptxas
    /// cannot fold into the instruction's immediate offset (in a
    /// FlashAttention-2 tile loop, more issue slots than the `mma`s).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn window(self, r: usize, c: usize) -> u32 {
        window_address(self.base).wrapping_add((size_of::<T>() * (r * STRIDE + c)) as u32)
    }

    /// Reads row `r`, column `c`: word `r * STRIDE + c`.
    ///
    /// # Safety
    /// The element lies within the launch's shared memory.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load(self, r: usize, c: usize) -> T {
        let p = self.base.wrapping_add(r * STRIDE + c);
        check::load(Space::Shared, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read() }
    }

    /// Writes row `r`, column `c`.
    ///
    /// # Safety
    /// As for [`SharedTile::load`]; no other thread touches the element
    /// between the same two barriers.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store(self, r: usize, c: usize, value: T) {
        let p = self.base.wrapping_add(r * STRIDE + c);
        check::store(Space::Shared, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.write(value) }
    }
}

impl<const STRIDE: usize> SharedTile<f32, STRIDE> {
    /// Reads row `r`, columns `c..c + 4` with one 16-byte `ld.shared.v4`.
    /// Words `r * STRIDE + c..+4`; over a warp, 8 lanes at a time are
    /// served per pass, so 8 distinct 16-byte units fill the 32 banks.
    ///
    /// # Safety
    /// As for [`SharedTile::load`], and `r * STRIDE + c` is a multiple of 4.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_x4(self, r: usize, c: usize) -> [f32; 4] {
        let p = self.base.wrapping_add(r * STRIDE + c);
        check::load(Space::Shared, p, 16);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *const crate::mem::F32x4).read().0 }
    }

    /// Writes row `r`, columns `c..c + 4` with one 16-byte `st.shared.v4`.
    ///
    /// # Safety
    /// As for [`SharedTile::store`], and `r * STRIDE + c` is a multiple of 4.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_x4(self, r: usize, c: usize, value: [f32; 4]) {
        let p = self.base.wrapping_add(r * STRIDE + c);
        check::store(Space::Shared, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *mut crate::mem::F32x4).write(crate::mem::F32x4(value)) }
    }
}

impl<T: Copy> SharedTile<T, 0> {
    /// Reads element `i` (word `i` for 4-byte `T`: bank `i % 32`).
    ///
    /// # Safety
    /// `i` lies within the launch's shared memory.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get(self, i: usize) -> T {
        let p = self.base.wrapping_add(i);
        check::load(Space::Shared, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read() }
    }

    /// [`SharedTile::get`] of a word that may hold nothing the block
    /// wrote, on purpose: the emulator reports every other read of such a
    /// word. No kernel of ours needs it; a test kernel that shows what a
    /// `cp.async` destination holds before its wait does.
    ///
    /// # Safety
    /// As for [`SharedTile::get`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn get_maybe_uninit(self, i: usize) -> T {
        let p = self.base.wrapping_add(i);
        check::load_maybe_uninit(Space::Shared, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// As for [`SharedTile::get`]; no other thread touches it between the
    /// same two barriers.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn set(self, i: usize, value: T) {
        let p = self.base.wrapping_add(i);
        check::store(Space::Shared, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.write(value) }
    }
}
