//! The instructions the float functions are built from, each with its
//! emulator model.
//!
//! Only correctly rounded instructions are used: `fma.rn`, `sqrt.rn`,
//! `cvt.rni`/`rmi`/`rpi`/`rzi` (round to an integer in a float format),
//! and Rust's `+ - * /` (PTX `add.rn`, `sub.rn`, `mul.rn`, `div.rn`, since
//! rustc neither fuses nor flushes subnormals). IEEE 754 defines each of
//! these results exactly, so the host model (the host's `mul_add`, `sqrt`
//! and roundings) computes the same bits as the device: the emulator's
//! result of every function here is the GPU's, bit for bit, and a bound
//! measured on one holds on the other. No `.approx` instruction is used;
//! `ex2.approx.ftz.f32` (2 ulp) or `sin.approx.f32` (absolute error
//! `2^-20.5`) would need a bound of their own and the model would only be
//! within it.

/// One PTX instruction of one operand on `f64`, or its host model.
macro_rules! unary {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $reg:ident, $ptx:literal, |$x:ident| $host:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($x: $ty) -> $ty {
            #[cfg(target_arch = "nvptx64")]
            {
                let r: $ty;
                // SAFETY: an arithmetic instruction on registers; it reads
                // and writes no memory.
                unsafe {
                    core::arch::asm!(concat!($ptx, " {r}, {x};"), r = out($reg) r, x = in($reg) $x,
                        options(pure, nomem, nostack))
                };
                r
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host
            }
        }
    };
}

unary!(
    /// `sqrt.rn.f64`: the correctly rounded square root.
    sqrt, f64, reg64, "sqrt.rn.f64", |x| x.sqrt()
);
unary!(
    /// `cvt.rni.f64.f64`: to the nearest integer, ties to even.
    rint, f64, reg64, "cvt.rni.f64.f64", |x| x.round_ties_even()
);
unary!(
    /// `cvt.rmi.f64.f64`: towards minus infinity.
    floor, f64, reg64, "cvt.rmi.f64.f64", |x| x.floor()
);
unary!(
    /// `cvt.rpi.f64.f64`: towards plus infinity.
    ceil, f64, reg64, "cvt.rpi.f64.f64", |x| x.ceil()
);
unary!(
    /// `cvt.rzi.f64.f64`: towards zero.
    trunc, f64, reg64, "cvt.rzi.f64.f64", |x| x.trunc()
);
unary!(
    /// `sqrt.rn.f32`: the correctly rounded square root.
    sqrtf, f32, reg32, "sqrt.rn.f32", |x| x.sqrt()
);
unary!(
    /// `cvt.rni.f32.f32`: to the nearest integer, ties to even.
    rintf, f32, reg32, "cvt.rni.f32.f32", |x| x.round_ties_even()
);
unary!(
    /// `cvt.rmi.f32.f32`: towards minus infinity.
    floorf, f32, reg32, "cvt.rmi.f32.f32", |x| x.floor()
);
unary!(
    /// `cvt.rpi.f32.f32`: towards plus infinity.
    ceilf, f32, reg32, "cvt.rpi.f32.f32", |x| x.ceil()
);
unary!(
    /// `cvt.rzi.f32.f32`: towards zero.
    truncf, f32, reg32, "cvt.rzi.f32.f32", |x| x.trunc()
);

/// `fma.rn.f64`: `a * b + c` rounded once.
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("fma.rn.f64 {r}, {a}, {b}, {c};", r = out(reg64) r, a = in(reg64) a,
                b = in(reg64) b, c = in(reg64) c, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `fma.rn.f32`: `a * b + c` rounded once.
#[inline(always)]
pub fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an arithmetic instruction on registers.
        unsafe {
            core::arch::asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a,
                b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}
