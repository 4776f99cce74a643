//! The element types the tensor cores multiply, and the enum that names
//! them.
//!
//! [`Input`] is the operand type of an `mma` or `wgmma` instruction, the
//! `.bf16`/`.f16`/`.tf32`/`.e4m3`/`.e5m2` of its name. [`Element`] is
//! implemented on the types a buffer holds (`half::bf16`, `half::f16`,
//! [`Tf32`], [`E4m3`], [`E5m2`]) and says which operand type each is. The
//! device layer picks an instruction from `T::INPUT`, the emulator decodes
//! an operand's bits with [`Input::value`], and the host names a precision
//! with [`Input::name`]: the precision axis is written here once.

use crate::fp8::{E4m3, E5m2};
use half::{bf16, f16};

/// The operand type of a tensor-core instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// bfloat16: the top half of an `f32` (8 significant bits).
    Bf16,
    /// IEEE binary16 (11 significant bits).
    F16,
    /// tf32: an `f32` whose low 13 mantissa bits the tensor core drops.
    Tf32,
    /// OCP FP8 E4M3 (`wgmma`, and `mma.sync` from sm_89).
    E4m3,
    /// OCP FP8 E5M2 (`wgmma`, and `mma.sync` from sm_89).
    E5m2,
}

impl Input {
    /// Bytes of one element in memory.
    pub const fn bytes(self) -> usize {
        match self {
            Input::Tf32 => 4,
            Input::Bf16 | Input::F16 => 2,
            Input::E4m3 | Input::E5m2 => 1,
        }
    }

    /// The PTX type suffix, which is also `--precision`'s name.
    pub const fn name(self) -> &'static str {
        match self {
            Input::Bf16 => "bf16",
            Input::F16 => "f16",
            Input::Tf32 => "tf32",
            Input::E4m3 => "e4m3",
            Input::E5m2 => "e5m2",
        }
    }

    /// Whether `wgmma` reads both operands K-major only: the ISA transposes
    /// 16-bit operands in shared memory, and no 32- or 8-bit one.
    pub const fn k_major_only(self) -> bool {
        self.bytes() != 2
    }

    /// An FP8 type (per-tensor scales come with it).
    pub const fn is_fp8(self) -> bool {
        self.bytes() == 1
    }

    /// The value the tensor core reads from an element's bits
    /// ([`Input::bytes`] of them, in a `u32`): tf32 drops the low 13
    /// mantissa bits.
    pub fn value(self, bits: u32) -> f64 {
        match self {
            Input::Bf16 => f32::from_bits(bits << 16) as f64,
            // Every binary16 is exactly an `f64`.
            Input::F16 => f16::from_bits(bits as u16).to_f64(),
            Input::Tf32 => f32::from_bits(bits & !0x1fff) as f64,
            Input::E4m3 => E4m3(bits as u8).to_f32() as f64,
            Input::E5m2 => E5m2(bits as u8).to_f32() as f64,
        }
    }
}

/// A type whose values the tensor cores multiply.
pub trait Element: Copy + Default + 'static {
    /// The instruction's operand type for it.
    const INPUT: Input;
    /// Bytes of one element.
    const BYTES: usize = Self::INPUT.bytes();
    /// Its bits, low [`Element::BYTES`] of a `u32`.
    fn bits(self) -> u32;
    /// The element with bits `bits` (the low [`Element::BYTES`]).
    fn from_bits(bits: u32) -> Self;
}

/// An `f32` that the tensor cores read as tf32 (its top 19 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(transparent)]
pub struct Tf32(pub f32);

macro_rules! element {
    ($t:ty, $input:ident, |$x:ident| $bits:expr, |$b:ident| $from:expr) => {
        impl Element for $t {
            const INPUT: Input = Input::$input;
            #[inline(always)]
            fn bits(self) -> u32 {
                let $x = self;
                $bits
            }
            #[inline(always)]
            fn from_bits($b: u32) -> Self {
                $from
            }
        }
    };
}

element!(bf16, Bf16, |x| x.to_bits() as u32, |b| bf16::from_bits(b as u16));
element!(f16, F16, |x| x.to_bits() as u32, |b| f16::from_bits(b as u16));
element!(Tf32, Tf32, |x| x.0.to_bits(), |b| Tf32(f32::from_bits(b)));
element!(E4m3, E4m3, |x| x.0 as u32, |b| E4m3(b as u8));
element!(E5m2, E5m2, |x| x.0 as u32, |b| E5m2(b as u8));
