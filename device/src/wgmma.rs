//! `wgmma`: Hopper's warpgroup-level tensor-core multiply (sm_90a). The
//! four warps of a warpgroup (128 consecutive threads, the first a
//! multiple of 128) together compute `D = A B + D` for a 64 x N x 16 tile
//! of bf16 or f16 (`k16`: 32 bytes of k), a 64 x N x 8 tile of tf32 (`k8`,
//! also 32 bytes) or a 64 x N x 32 tile of FP8 E4M3 or E5M2 (`k32`), reading A and B straight from shared memory through 64-bit
//! matrix descriptors; D stays in registers, spread over the 128 threads.
//!
//! **Accumulators** (`f32`): thread `t` of the warpgroup holds
//! `N / 2` values; value `i` is row `16 (t / 32) + g + 8 (i / 2 mod 2)`,
//! column `8 (i / 4) + 2 q + i mod 2`, with `g = (t mod 32) / 4` and `q = t
//! mod 4` ([`d_f32`]): each warp owns 16 rows, laid out as `mma.sync`'s
//! `m16n8` C fragment repeated along N.
//!
//! **Descriptors** ([`Descriptor`]): bits 0-13 the shared address / 16,
//! 16-29 the leading-dimension byte offset / 16 (LBO), 32-45 the
//! stride-dimension byte offset / 16 (SBO), 62-63 the swizzle (1: 128
//! bytes, 2: 64, 3: 32). With an `S`-byte swizzle the operand is made of
//! atoms of 8 rows of `S` bytes (`8 S` bytes), each row's 16-byte units
//! permuted by [`swizzle`] of the address (what a TMA copy with that
//! swizzle writes). For elements of `E` bytes ([`element_offset`]):
//!
//! - **K-major** (A as a row-major `m x k` tile, or a tf32 or FP8 B as an
//!   `n x k` one, `S / E` k per row): element `(r, k)` is at `start + S (r mod 8) +
//!   SBO (r / 8) + E k`; the next instruction's k (32 bytes) of the same
//!   rows starts 32 bytes further.
//! - **MN-major** (bf16 or f16 B as a row-major `k x n` tile, `S / 2` n per row;
//!   the instruction's `tnspB` = 1): element `(k, n)` is at `start + 2 (n
//!   mod S/2) + S (k mod 8) + SBO (k / 8) + LBO (n / (S/2))`. tf32 has no
//!   MN-major form.
//!
//! Each then goes through [`swizzle`]. The instruction is asynchronous:
//! `fence` before the first `wgmma` that touches registers written by
//! other code, `commit` to close a group, `wait::<N>` until at most `N`
//! groups are in flight before reading D or reusing the shared tiles.
//!
//! PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate". The
//! descriptors, [`element_offset`], [`d_f32`] and [`swizzle`] are
//! `gpu_isa`'s, the one home of what the ISA defines. On the host
//! `emu::ops::wgmma` computes each thread's D from the shared tiles at
//! the instruction, through the same descriptor arithmetic, in `f64`
//! rounded once per instruction (as for `mma`), and checks every byte it reads:
//! in bounds, written, not awaiting a TMA copy.

use gpu_isa::Element;
pub use gpu_isa::swizzle::swizzle;
pub use gpu_isa::wgmma::{Descriptor, d_f32, element_offset, fp8_column};

/// The address `wgmma` descriptors and the emulator use for a pointer into
/// the launch's shared memory: its shared-window address on the GPU, its
/// offset in the block's shared memory on the host.
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::shared::window_address(p)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        (p as usize - emu::ops::shared_base() as usize) as u32
    }
}

/// 128 zero accumulators, each set by its own instruction: `[0.0; 128]`
/// (or any array the compiler can see is all zeros) compiles to a loop
/// over the array, whose variable index keeps the whole array in local
/// memory (a stack frame) instead of registers.
#[inline(always)]
pub fn zeros() -> [f32; 128] {
    #[cfg(target_arch = "nvptx64")]
    {
        seq_macro::seq!(I in 0..128 {{
            #(let d~I: f32;)*
            // SAFETY: register moves only.
            unsafe {
                core::arch::asm!(
                    concat!(#("mov.b32 {d", I, "}, 0; ",)*),
                    #(d~I = out(reg32) d~I,)*
                    options(pure, nomem, nostack)
                )
            };
            [#(d~I,)*]
        }})
    }
    #[cfg(not(target_arch = "nvptx64"))]
    [0.0; 128]
}

/// `wgmma.fence.sync.aligned`: orders this thread's earlier register
/// accesses to the accumulators before the next `wgmma`.
#[inline(always)]
pub fn fence() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence.
    unsafe {
        core::arch::asm!("wgmma.fence.sync.aligned;", options(nostack))
    };
}

/// `wgmma.commit_group.sync.aligned`: the `wgmma`s issued since the last
/// commit form one group.
#[inline(always)]
pub fn commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("wgmma.commit_group.sync.aligned;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::wgmma_commit();
}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` groups are
/// in flight; their accumulators and shared operands are then free.
///
/// The accumulators of the groups waited for must not be read before
/// this: each of `acc`'s registers passes through an empty `asm` after the
/// wait, so the compiler cannot move a use of it above.
#[inline(always)]
pub fn wait<const N: u32>(acc: [f32; 128]) -> [f32; 128] {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a wait.
        unsafe { core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) };
        seq_macro::seq!(I in 0..128 {{
            #(let mut d~I = acc[I];)*
            // SAFETY: an empty asm that "changes" the registers after the
            // wait (and keeps its place: not `pure`).
            unsafe { core::arch::asm!(concat!("// ", operands!(#(I)*)), #(d~I = inout(reg32) d~I,)* options(nomem, nostack)) };
            [#(d~I,)*]
        }})
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        emu::ops::wgmma_wait(N as usize);
        acc
    }
}

/// The accumulators of one warpgroup thread for a `wgmma` of `N` columns,
/// `[f32; N / 2]` (N = 64, 128 or 256), and the `m64nN` forms on them: A
/// K-major in shared memory (`mma_ss`) or in registers (`mma_rs`), B in
/// shared memory, K-major (`N x k`, `TRANS_B` false) or MN-major (`k x N`,
/// `TRANS_B` true: the instruction's `tnspB`), the operand type `T::INPUT`
/// of the element type `T`.
///
/// **A in registers** (`mma_rs`): each thread gives four registers, two
/// elements each, laid out as `mma.sync`'s `m16n8k16` A fragment of its
/// warp's 16 rows (warp `w` of the warpgroup: rows `16 w..16 w + 16`, the
/// rows of D it holds): register `j` holds row `g + 8 (j mod 2)`, k `2 q +
/// 8 (j / 2)` and the next, with `g = lane / 4`, `q = lane mod 4`. That is
/// where accumulators `8 t..8 t + 8` of an earlier product lie ([`d_f32`]):
/// row `g`, columns `16 t + 2 q, +1`, row `g + 8` the same, then both rows
/// at `16 t + 8 + 2 q`. So a product's `f32` accumulators, rounded and
/// packed in pairs, are the A operand of its k16 step `t` as they lie (how
/// FlashAttention-3 feeds P to `P V`).
///
/// **FP8 A in registers** (`k32`): four registers, four E4M3 (or E5M2)
/// values each, the lowest byte the lowest k, as `mma.sync`'s `m16n8k32`
/// A fragment: register `j` holds row `g + 8 (j mod 2)`, k `4 q + 16 (j /
/// 2)` and the next three. Accumulators `16 t..16 t + 16` of an earlier
/// product hold, for row `g`, columns `32 t + 8 b + 2 q` and the next for
/// `b` = 0..4: not the k the fragment names, so the packing
/// ([`Accumulators::pinned_fp8_fragments`] takes its result) permutes
/// k. Within each 16 of k, fragment byte `4 q + i` is column `8 (i / 2) +
/// 2 q + i mod 2`: a product that sums over k (as `P V` over keys) gives
/// the same result when B's k are permuted alike ([`fp8_column`]).
///
/// On the host each computes D through `emu::ops::wgmma` (the
/// descriptors, swizzles and fragments of `gpu_isa`, the whole product in
/// `f64`, rounded once).
pub trait Accumulators: Copy + core::ops::IndexMut<usize, Output = f32> {
    /// The instruction's N.
    const N: usize;
    /// These accumulators rounded to 16 bits and packed in pairs, `N / 4`
    /// registers: the A fragments of a product whose k runs over these
    /// `N` columns (four per k16 step, see the trait's documentation).
    type Fragments: Copy + core::ops::IndexMut<usize, Output = u32>;
    /// Zeros, each set by its own instruction (see [`zeros`]).
    fn zeroed() -> Self;
    /// Zero fragments.
    fn fragments_zeroed() -> Self::Fragments;
    /// `f` through an empty `asm` that "changes" them and keeps its place
    /// (not `pure`): the A fragments of a run of
    /// [`Accumulators::mma_rs`], pinned before the [`fence`] so that the
    /// compiler cannot sink what computes them (conversions, packing) past
    /// it, between the fence and the `wgmma`s, where ptxas would fence
    /// again or serialize.
    fn pinned_fragments(f: Self::Fragments) -> Self::Fragments;
    /// [`Accumulators::pinned_fragments`] for FP8 A fragments: the first
    /// `N / 8` registers (four values each) pinned, the rest left as they
    /// are (unused: FP8 packs four values a register).
    fn pinned_fp8_fragments(f: Self::Fragments) -> Self::Fragments;
    /// The registers through an empty `asm` that "changes" them: after a
    /// [`wait_for`], no use of them moves above the wait.
    fn pinned(self) -> Self;
    /// `wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T` (A K-major at `a`, B
    /// at `b`, one 32-byte k-step: `K` 16 for bf16 and f16, 8 for tf32, 32
    /// for FP8): `A B + (scale_d ? self : 0)`. `TRANS_B`: B is MN-major,
    /// which only 16-bit operands may be (the ISA transposes neither tf32
    /// nor FP8: their B is an `N x K` tile, rows of k; the emulator reports
    /// a `TRANS_B` with them).
    ///
    /// tf32 operands are `f32` bit patterns; the tensor core reads their
    /// top 19 bits (sign, exponent, 10 mantissa bits), dropping the other
    /// 13: each input is truncated toward zero, a relative error below
    /// `2^-10` for normal values (subnormals lose more: their leading bit is
    /// lower). Each product of two FP8 values is exact; how the tensor core
    /// adds them into D is not specified beyond `f32` accumulation.
    ///
    /// # Safety
    /// All 128 threads of the warpgroup execute it converged; the
    /// descriptors describe operands in the launch's shared memory, written
    /// and visible to the async proxy (after a TMA copy's mbarrier wait, or
    /// a `fence.proxy.async`); the device is sm_90a.
    unsafe fn mma_ss<T: Element, const TRANS_B: bool>(
        self,
        a: Descriptor,
        b: Descriptor,
        scale_d: bool,
    ) -> Self;
    /// As [`Accumulators::mma_ss`], A from this thread's registers `a` (see
    /// the trait's documentation).
    ///
    /// # Safety
    /// As for [`Accumulators::mma_ss`]; `a` are not written until a wait
    /// has seen the instruction complete (in PTX, ptxas keeps them).
    unsafe fn mma_rs<T: Element, const TRANS_B: bool>(
        self,
        a: [u32; 4],
        b: Descriptor,
        scale_d: bool,
    ) -> Self;
}

/// `wgmma.wait_group.sync.aligned G`, then `acc` pinned
/// ([`Accumulators::pinned`]): the accumulators of the groups waited for
/// are read only after the wait. Only `acc`'s registers are touched: the
/// accumulators of a younger group still in flight must be left alone, or
/// ptxas serializes the `wgmma`s.
#[inline(always)]
pub fn wait_for<const G: u32, A: Accumulators>(acc: A) -> A {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a wait.
    unsafe {
        core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const G, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::wgmma_wait(G as usize);
    acc.pinned()
}

/// [`wait_for`], kept below the work that computed `after`.
///
/// ptxas (CUDA 13.0) schedules `wgmma.wait_group` as an instruction with no
/// operands: as early as the code after it likes, not where the PTX has
/// it. A wait meant to let independent work overlap a product can so move
/// above that work, which then starts only once the product is done (the
/// softmax of attention's step 3 did, behind its `P V`). It does not move
/// the wait above a shared-memory store, and a store of `after` waits for
/// the work: so `after` goes to `pin` first, from the lanes where `store`
/// holds (one per warp is enough; no one reads it).
///
/// # Safety
/// `pin` is shared memory of this thread's warp that no other warp uses.
#[inline(always)]
pub unsafe fn wait_for_after<const G: u32, A: Accumulators>(
    acc: A,
    after: f32,
    pin: crate::shared::SharedArray<f32>,
    store: bool,
) -> A {
    if store {
        // SAFETY: the caller's contract.
        unsafe { pin.set(0, after) };
    }
    wait_for::<G, A>(acc)
}

/// [`Accumulators`] for `[f32; $regs]`, `N = $n`, fragments `[u32; $frags]`.
macro_rules! accumulators {
    ($n:tt, $regs:tt, $frags:tt, $fp8:tt) => {
        impl Accumulators for [f32; $regs] {
            const N: usize = $n;
            type Fragments = [u32; $frags];

            #[inline(always)]
            fn fragments_zeroed() -> Self::Fragments {
                [0; $frags]
            }

            #[inline(always)]
            fn pinned_fragments(f: Self::Fragments) -> Self::Fragments {
                #[cfg(target_arch = "nvptx64")]
                {
                    seq_macro::seq!(I in 0..$frags {{
                        #(let mut d~I = f[I];)*
                        // SAFETY: an empty asm.
                        unsafe {
                            core::arch::asm!(concat!("// ", operands!(#(I)*)), #(d~I = inout(reg32) d~I,)* options(nomem, nostack))
                        };
                        [#(d~I,)*]
                    }})
                }
                #[cfg(not(target_arch = "nvptx64"))]
                f
            }

            #[inline(always)]
            fn pinned_fp8_fragments(f: Self::Fragments) -> Self::Fragments {
                #[cfg(target_arch = "nvptx64")]
                {
                    let mut f = f;
                    seq_macro::seq!(I in 0..$fp8 {{
                        #(let mut d~I = f[I];)*
                        // SAFETY: an empty asm.
                        unsafe {
                            core::arch::asm!(concat!("// ", operands!(#(I)*)), #(d~I = inout(reg32) d~I,)* options(nomem, nostack))
                        };
                        #(f[I] = d~I;)*
                    }});
                    f
                }
                #[cfg(not(target_arch = "nvptx64"))]
                f
            }

            #[inline(always)]
            fn zeroed() -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    seq_macro::seq!(I in 0..$regs {{
                        #(let d~I: f32;)*
                        // SAFETY: register moves only.
                        unsafe {
                            core::arch::asm!(
                                concat!(#("mov.b32 {d", I, "}, 0; ",)*),
                                #(d~I = out(reg32) d~I,)*
                                options(pure, nomem, nostack)
                            )
                        };
                        [#(d~I,)*]
                    }})
                }
                #[cfg(not(target_arch = "nvptx64"))]
                [0.0; $regs]
            }

            #[inline(always)]
            fn pinned(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    seq_macro::seq!(I in 0..$regs {{
                        #(let mut d~I = self[I];)*
                        // SAFETY: an empty asm that "changes" the registers
                        // (and keeps its place: not `pure`).
                        unsafe {
                            core::arch::asm!(concat!("// ", operands!(#(I)*)), #(d~I = inout(reg32) d~I,)* options(nomem, nostack))
                        };
                        [#(d~I,)*]
                    }})
                }
                #[cfg(not(target_arch = "nvptx64"))]
                self
            }

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma_ss<T: Element, const TRANS_B: bool>(self, a: Descriptor, b: Descriptor, scale_d: bool) -> Self {
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: the caller's contract.
                unsafe {
                    match (T::INPUT, TRANS_B) {
                        (gpu_isa::Input::Bf16, false) => issue_ss!($n, $regs, "bf16.bf16", "0", self, a, b, scale_d),
                        (gpu_isa::Input::Bf16, true) => issue_ss!($n, $regs, "bf16.bf16", "1", self, a, b, scale_d),
                        (gpu_isa::Input::F16, false) => issue_ss!($n, $regs, "f16.f16", "0", self, a, b, scale_d),
                        (gpu_isa::Input::F16, true) => issue_ss!($n, $regs, "f16.f16", "1", self, a, b, scale_d),
                        (gpu_isa::Input::Tf32, _) => issue_ss_k!($n, $regs, "k8.f32.tf32.tf32", ", 1, 1", self, a, b, scale_d),
                        (gpu_isa::Input::E4m3, _) => issue_ss_k!($n, $regs, "k32.f32.e4m3.e4m3", ", 1, 1", self, a, b, scale_d),
                        (gpu_isa::Input::E5m2, _) => issue_ss_k!($n, $regs, "k32.f32.e5m2.e5m2", ", 1, 1", self, a, b, scale_d),
                    }
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let mut acc = self;
                    emu::ops::wgmma(
                        &mut acc,
                        (emu::ops::WgmmaA::Shared(a), b),
                        (T::INPUT, TRANS_B),
                        scale_d,
                        core::panic::Location::caller(),
                    );
                    acc
                }
            }

            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn mma_rs<T: Element, const TRANS_B: bool>(self, a: [u32; 4], b: Descriptor, scale_d: bool) -> Self {
                // (FP8 with an MN-major B has no instruction: the arm below
                // ignores `TRANS_B`, and the emulator reports it.)
                const { assert!(T::BYTES <= 2, "A from registers is bf16, f16 or FP8") };
                #[cfg(target_arch = "nvptx64")]
                // SAFETY: the caller's contract.
                unsafe {
                    match (T::INPUT, TRANS_B) {
                        (gpu_isa::Input::Bf16, false) => issue_rs!($n, $regs, "k16.f32.bf16.bf16", ", 1, 1, 0", self, a, b, scale_d),
                        (gpu_isa::Input::Bf16, true) => issue_rs!($n, $regs, "k16.f32.bf16.bf16", ", 1, 1, 1", self, a, b, scale_d),
                        (gpu_isa::Input::E4m3, _) => issue_rs!($n, $regs, "k32.f32.e4m3.e4m3", ", 1, 1", self, a, b, scale_d),
                        (gpu_isa::Input::E5m2, _) => issue_rs!($n, $regs, "k32.f32.e5m2.e5m2", ", 1, 1", self, a, b, scale_d),
                        (_, false) => issue_rs!($n, $regs, "k16.f32.f16.f16", ", 1, 1, 0", self, a, b, scale_d),
                        (_, true) => issue_rs!($n, $regs, "k16.f32.f16.f16", ", 1, 1, 1", self, a, b, scale_d),
                    }
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    let mut acc = self;
                    emu::ops::wgmma(
                        &mut acc,
                        (emu::ops::WgmmaA::Registers(a), b),
                        (T::INPUT, TRANS_B),
                        scale_d,
                        core::panic::Location::caller(),
                    );
                    acc
                }
            }
        }
    };
}

accumulators!(64, 32, 16, 8);
accumulators!(128, 64, 32, 16);
accumulators!(192, 96, 48, 24);
accumulators!(256, 128, 64, 32);

/// One `wgmma.mma_async.sync.aligned.m64n$n k16.f32.$types` on `$regs`
/// accumulators, A and B descriptors, `tnspB` = `$trans`.
#[cfg(target_arch = "nvptx64")]
macro_rules! issue_ss {
    ($n:tt, $regs:tt, $types:literal, $trans:literal, $acc:expr, $a:expr, $b:expr, $scale_d:expr) => {
        issue_ss_k!(
            $n,
            $regs,
            concat!("k16.f32.", $types),
            concat!(", 1, 1, 0, ", $trans),
            $acc,
            $a,
            $b,
            $scale_d
        )
    };
}
#[cfg(target_arch = "nvptx64")]
use issue_ss;

/// One `wgmma.mma_async.sync.aligned.m64n$n$form` on `$regs` accumulators,
/// A and B descriptors in shared memory, `scale-d` from `$scale_d`, then
/// the immediates `$tail` (the scales of A and B; for 16-bit types the
/// transposes too): `$form` is k and the types, `k8.f32.tf32.tf32`.
#[cfg(target_arch = "nvptx64")]
macro_rules! issue_ss_k {
    ($n:tt, $regs:tt, $form:expr, $tail:expr, $acc:expr, $a:expr, $b:expr, $scale_d:expr) => {{
        let (acc, a, b, scale_d): ([f32; $regs], Descriptor, Descriptor, bool) = ($acc, $a, $b, $scale_d);
        seq_macro::seq!(I in 0..$regs {{
            #(let mut d~I = acc[I];)*
            core::arch::asm!(
                concat!(
                    "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; ",
                    "wgmma.mma_async.sync.aligned.m64n", $n, $form, " {{",
                    operands!(#(I)*),
                    "}}, {a}, {b}, p", $tail, "; }}"
                ),
                #(d~I = inout(reg32) d~I,)*
                a = in(reg64) a.0, b = in(reg64) b.0, scale = in(reg32) scale_d as u32,
                options(nostack)
            );
            [#(d~I,)*]
        }})
    }};
}
#[cfg(target_arch = "nvptx64")]
use issue_ss_k;

/// As [`issue_ss_k`] with A from four registers (`tnspA` does not
/// exist: `$tail` holds the scales, and for 16-bit types `tnspB`).
#[cfg(target_arch = "nvptx64")]
macro_rules! issue_rs {
    ($n:tt, $regs:tt, $form:literal, $tail:literal, $acc:expr, $a:expr, $b:expr, $scale_d:expr) => {{
        let (acc, a, b, scale_d): ([f32; $regs], [u32; 4], Descriptor, bool) = ($acc, $a, $b, $scale_d);
        seq_macro::seq!(I in 0..$regs {{
            #(let mut d~I = acc[I];)*
            core::arch::asm!(
                concat!(
                    "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; ",
                    "wgmma.mma_async.sync.aligned.m64n", $n, $form, " {{",
                    operands!(#(I)*),
                    "}}, {{{a0}, {a1}, {a2}, {a3}}}, {b}, p", $tail, "; }}"
                ),
                #(d~I = inout(reg32) d~I,)*
                a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                b = in(reg64) b.0, scale = in(reg32) scale_d as u32,
                options(nostack)
            );
            [#(d~I,)*]
        }})
    }};
}
#[cfg(target_arch = "nvptx64")]
use issue_rs;

/// `{d0}, {d1}, ...`: the accumulators' places in an `asm!` template.
#[cfg(target_arch = "nvptx64")]
macro_rules! operands {
    ($first:literal $($i:literal)*) => { concat!("{d", $first, "}" $(, ", {d", $i, "}")*) };
}
#[cfg(target_arch = "nvptx64")]
use operands;
