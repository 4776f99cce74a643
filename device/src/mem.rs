//! Unchecked global-memory pointers: the parameter types of kernels that
//! index their buffers themselves, as CUDA C does.
//!
//! `In<T>` is read-only device memory, `Out<T>` device memory the kernel
//! writes. Both are `#[repr(transparent)]` over a raw pointer, so a kernel
//! parameter of type `In<f32>` is one `.u64` PTX parameter, which the host
//! fills with a device pointer. The host passes `&Buffer<T>` for an `In<T>`
//! and `&mut Buffer<T>` for an `Out<T>`, so one launch cannot pass a buffer
//! both as an input and as an output, or twice as an output.
//!
//! Accesses are `unsafe`: they are not bounds-checked, and the kernel
//! guards its indices (each kernel's doc comment says how). They compile
//! to one `ld.global`/`st.global`; the vector methods to one `.v2` or
//! `.v4` access. Their names count what the reader counts: `load_x4`,
//! `store_x4`, `store_x2` move 4 or 2 `f32` elements (16 or 8 bytes);
//! `load16`, `load8` and their `_cg` forms, generic over the element type,
//! move 16 or 8 bytes. `Out<T>` is not `Copy`: a kernel holds
//! one handle to each output. For element-wise kernels, which need no
//! `unsafe` at all, see [`super::slice`].

use super::check::{self, Space};

/// Four `f32` with the 16-byte alignment that `ld.global.v4.f32` requires.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F32x4(pub [f32; 4]);

/// Two `f32` aligned to 8 bytes: one `st.global.v2.f32`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct F32x2(pub [f32; 2]);

/// Read-only global memory holding `T`s.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct In<T>(*const T);

/// Global memory the kernel writes `T`s to.
#[repr(transparent)]
pub struct Out<T>(*mut T);

impl<T> In<T> {
    /// The same bytes as elements of another type of the same size (f16
    /// data through 16-bit loads and copies that move bytes whatever their
    /// type).
    #[inline(always)]
    pub fn same_bytes<U>(self) -> In<U> {
        const { assert!(size_of::<T>() == size_of::<U>() && align_of::<U>() <= align_of::<T>()) };
        In(self.0 as *const U)
    }

    /// The same memory as elements of `U`: wider units for a copy that
    /// moves bytes whatever their type (each load's index and alignment
    /// are then `U`'s).
    #[inline(always)]
    pub const fn recast<U>(self) -> In<U> {
        In(self.0 as *const U)
    }
}

impl<T: Copy> In<T> {
    /// Reads element `i`.
    ///
    /// # Safety
    /// `i` is within the buffer the host passed.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load(self, i: usize) -> T {
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read() }
    }
}

/// `N` elements of 16 bytes in all, with the 16-byte alignment that
/// `ld.global.v4.b32` / `ld.global.v2.b64` require.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Align16<A>(A);

/// 8 bytes with the 8-byte alignment of `ld.global.v2.b32`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Align8<A>(A);

impl<T: Copy> In<T> {
    /// Reads elements `i..i + N` (16 bytes: 4 `f32`/`i32` or 2 `f64`)
    /// with one 16-byte load.
    ///
    /// # Safety
    /// `i + N` is within the buffer and `i` is a multiple of `N` (the host's
    /// buffers start 256-byte aligned).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load16<const N: usize>(self, i: usize) -> [T; N] {
        const { assert!(N * core::mem::size_of::<T>() == 16, "load16 reads exactly 16 bytes") };
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, 16);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *const Align16<[T; N]>).read().0 }
    }

    /// Reads elements `i..i + N` (8 bytes: 4 bf16, or 2 words) with one
    /// 8-byte load (`ld.global.v2.b32`).
    ///
    /// # Safety
    /// `i + N` is within the buffer and `i` is a multiple of `N`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load8<const N: usize>(self, i: usize) -> [T; N] {
        const { assert!(N * core::mem::size_of::<T>() == 8, "load8 reads exactly 8 bytes") };
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, 8);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *const Align8<[T; N]>).read().0 }
    }

    /// Reads element `i` bypassing the non-coherent L1 (`ld.volatile`): for
    /// data other blocks of the same launch wrote.
    ///
    /// # Safety
    /// As for [`In::load`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_volatile(self, i: usize) -> T {
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read_volatile() }
    }

    /// The same memory as a read-only view, for a buffer the kernel writes
    /// in one phase and reads in the next: it gives up the output.
    #[inline(always)]
    pub fn from_out(out: Out<T>) -> Self {
        In(out.0 as *const T)
    }

    /// The raw pointer (for `cp.async`, which names its source itself).
    #[inline(always)]
    pub const fn as_ptr(self) -> *const T {
        self.0
    }

    /// The view `offset` elements further on, computed with wrapping
    /// arithmetic: valid to form even past the buffer (for a thread whose
    /// row is out of range), only reads through it need to be in bounds.
    #[inline(always)]
    pub fn wrapping_offset(self, offset: usize) -> Self {
        In(self.0.wrapping_add(offset))
    }

    /// The view `offset` elements further on.
    ///
    /// # Safety
    /// The result stays within the buffer.
    #[inline(always)]
    pub unsafe fn offset(self, offset: usize) -> Self {
        // SAFETY: the caller's contract: the result stays in the buffer.
        In(unsafe { self.0.add(offset) })
    }
}

impl In<u16> {
    /// The same bytes as 32-bit words (two 16-bit elements each, the lower
    /// index in the low half), as `f32` bit patterns: for 16-byte copies of
    /// bf16 data (`cp.async`), which move bytes whatever their type.
    /// Element `2 i` and `2 i + 1` are word `i`.
    #[inline(always)]
    pub fn words(self) -> In<f32> {
        In(self.0 as *const f32)
    }
}

impl In<f32> {
    /// Reads elements `i..i + 4` with one 16-byte load.
    ///
    /// # Safety
    /// `i + 4` is within the buffer and `i` is a multiple of 4 (the host's
    /// buffers start 256-byte aligned).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_x4(self, i: usize) -> [f32; 4] {
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, 16);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *const F32x4).read().0 }
    }

    /// Words `i..i + 4` (their bits) by one 16-byte load cached in L2 only
    /// (`ld.global.cg`): for data read once, whose lines would only take
    /// room in L1. On the host, [`In::load_x4`] (no L1 to bypass).
    ///
    /// # Safety
    /// As for [`In::load_x4`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load16_cg(self, i: usize) -> [u32; 4] {
        #[cfg(target_arch = "nvptx64")]
        {
            let (r0, r1, r2, r3): (u32, u32, u32, u32);
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!("ld.global.cg.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) r0, b = out(reg32) r1, c = out(reg32) r2, d = out(reg32) r3, p = in(reg64) self.0.wrapping_add(i), options(nostack, readonly, pure))
            };
            [r0, r1, r2, r3]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's contract.
        unsafe { self.load_x4(i) }.map(f32::to_bits)
    }

    /// Words `i..i + 2` by one 8-byte load cached in L2 only; on the host,
    /// [`In::load8`].
    ///
    /// # Safety
    /// As for [`In::load8`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load8_cg(self, i: usize) -> [u32; 2] {
        #[cfg(target_arch = "nvptx64")]
        {
            let (r0, r1): (u32, u32);
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!("ld.global.cg.v2.b32 {{{a}, {b}}}, [{p}];", a = out(reg32) r0, b = out(reg32) r1, p = in(reg64) self.0.wrapping_add(i), options(nostack, readonly, pure))
            };
            [r0, r1]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's contract.
        unsafe { self.load8::<2>(i) }.map(f32::to_bits)
    }
}

impl<T: Copy> Out<T> {
    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` is within the buffer, and no other thread of the launch writes it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store(&self, i: usize, value: T) {
        let p = self.0.wrapping_add(i);
        check::store(Space::Global, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.write(value) }
    }

    /// Reads element `i` (for kernels that update their output in place).
    ///
    /// # Safety
    /// As for [`Out::store`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load(&self, i: usize) -> T {
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, size_of::<T>());
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { p.read() }
    }
}

impl<T> Out<T> {
    /// The raw pointer, for atomics.
    #[inline(always)]
    pub const fn as_ptr(&self) -> *mut T {
        self.0
    }

    /// The same memory as elements of `U`: to store two 16-bit values
    /// with one 4-byte store, say (each store's index and alignment are
    /// then `U`'s).
    #[inline(always)]
    pub const fn recast<U>(&self) -> Out<U> {
        Out(self.0 as *mut U)
    }
}

impl Out<f32> {
    /// Reads elements `i..i + 4` with one 16-byte load.
    ///
    /// # Safety
    /// As for [`In::load_x4`].
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn load_x4(&self, i: usize) -> [f32; 4] {
        let p = self.0.wrapping_add(i);
        check::load(Space::Global, p, 16);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *const F32x4).read().0 }
    }

    /// Writes elements `i..i + 4` with one 16-byte store.
    ///
    /// # Safety
    /// As for [`In::load_x4`], and no other thread writes these elements.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_x4(&self, i: usize, value: [f32; 4]) {
        let p = self.0.wrapping_add(i);
        check::store(Space::Global, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *mut F32x4).write(F32x4(value)) }
    }

    /// Writes elements `i..i + 2` with one 8-byte store.
    ///
    /// # Safety
    /// Both elements are within the buffer, `i` is even, and no other
    /// thread writes these elements.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_x2(&self, i: usize, value: [f32; 2]) {
        let p = self.0.wrapping_add(i);
        check::store(Space::Global, p, &value);
        // SAFETY: the caller's contract (see `# Safety`).
        unsafe { (p as *mut F32x2).write(F32x2(value)) }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{In, Out};
    use gpu_launch::{Arg, KernelParam, Launcher};

    fn pointer<R: Launcher + ?Sized, T: 'static>(buffer: &R::Buffer<T>) -> Arg {
        let (addr, len) = R::address::<T>(buffer);
        Arg::Ptr { addr, bytes: len * size_of::<T>() }
    }

    fn address(arg: &Arg) -> usize {
        match arg {
            Arg::Ptr { addr, .. } => *addr as usize,
            other => panic!("a pointer parameter got {other:?}"),
        }
    }

    impl<T: 'static> KernelParam for In<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&R::Buffer<T>) -> Arg {
            pointer::<R, T>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            In(address(arg) as *const T)
        }
    }

    impl<T: 'static> KernelParam for Out<T> {
        type Host<'a, R: Launcher + ?Sized> = &'a mut R::Buffer<T>;
        fn arg<R: Launcher + ?Sized>(host: &&mut R::Buffer<T>) -> Arg {
            pointer::<R, T>(host)
        }
        unsafe fn from_arg(arg: &Arg) -> Self {
            Out(address(arg) as *mut T)
        }
    }
}
