//! The two 8-bit floating-point formats of Hopper's tensor cores (OCP
//! FP8), what `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` makes of an `f32`
//! and what `wgmma`'s `.e4m3` / `.e5m2` operands mean:
//!
//! | format | exponent bits, bias | mantissa bits | largest finite | smallest subnormal | specials |
//! | --- | --- | --- | --- | --- | --- |
//! | [`E4m3`] | 4, 7 | 3 | 448 | 2^-9 | NaN `S.1111.111` only: no infinities |
//! | [`E5m2`] | 5, 15 | 2 | 57344 | 2^-16 | IEEE: infinities, NaNs |
//!
//! Conversion from `f32` rounds to nearest, ties to even, and saturates:
//! a value beyond the largest finite (infinities included) becomes the
//! largest finite of its sign; NaN stays NaN. Every FP8 value is exactly
//! an `f32`, so the product of two is exact in `f32` (4 x 4 significant
//! bits at most).

/// One format's parameters.
#[derive(Clone, Copy)]
struct Format {
    mantissa: u32,
    bias: i32,
    /// The largest finite value's bits (without the sign).
    max: u8,
    /// IEEE specials (all-ones exponent = infinity or NaN); otherwise
    /// only the all-ones pattern is NaN.
    ieee: bool,
}

const E4M3: Format = Format { mantissa: 3, bias: 7, max: 0x7e, ieee: false };
const E5M2: Format = Format { mantissa: 2, bias: 15, max: 0x7b, ieee: true };

/// `2^e` as an `f64` (for `-1022 <= e <= 1023`).
const fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

impl Format {
    fn decode(self, bits: u8) -> f32 {
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let magnitude = bits & 0x7f;
        let exp_field = (magnitude >> self.mantissa) as i32;
        let man = (magnitude & ((1 << self.mantissa) - 1)) as f64;
        let all_ones = (1 << (7 - self.mantissa)) - 1;
        if self.ieee && exp_field == all_ones {
            return if man == 0.0 { sign as f32 * f32::INFINITY } else { f32::NAN };
        }
        if !self.ieee && magnitude == 0x7f {
            return f32::NAN;
        }
        let scale = pow2(-(self.mantissa as i32));
        let value = if exp_field == 0 {
            man * scale * pow2(1 - self.bias)
        } else {
            (1.0 + man * scale) * pow2(exp_field - self.bias)
        };
        (sign * value) as f32
    }

    fn encode(self, x: f32) -> u8 {
        if x.is_nan() {
            return 0x7f;
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let x = (x as f64).abs();
        let max = self.decode(self.max) as f64;
        if x >= max {
            return sign | self.max;
        }
        // The quantum at x's binade (subnormals share the lowest normal
        // binade's): x / q is exact, and rounding it to an integer is
        // rounding x to the format.
        let binade = (((x.to_bits() >> 52) as i32) - 1023).max(1 - self.bias);
        let q = pow2(binade - self.mantissa as i32);
        let t = x / q;
        let mut units = t as u64;
        let frac = t - units as f64;
        if frac > 0.5 || (frac == 0.5 && units % 2 == 1) {
            units += 1;
        }
        // `units` quanta of the binade: below 2^mantissa a subnormal (in
        // the lowest binade); 2^(mantissa + 1) rolls into the next binade,
        // which the field arithmetic below carries.
        let lowest = binade == 1 - self.bias;
        let field = if lowest && units < 1 << self.mantissa {
            units
        } else {
            (((binade + self.bias) as u64) << self.mantissa) + units - (1 << self.mantissa)
        };
        sign | field as u8
    }
}

macro_rules! fp8 {
    ($(#[$doc:meta])* $name:ident, $format:expr, $label:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $name(pub u8);

        impl $name {
            /// The format's name.
            pub const NAME: &'static str = $label;
            /// Its mantissa bits (significand bits less one).
            pub const MANTISSA: u32 = $format.mantissa;
            /// The value (exact in `f32`).
            pub fn to_f32(self) -> f32 {
                $format.decode(self.0)
            }
            /// `x` rounded to nearest even, saturated to the largest
            /// finite of its sign.
            pub fn from_f32(x: f32) -> Self {
                Self($format.encode(x))
            }
            /// The largest finite value.
            pub fn max() -> f32 {
                $format.decode($format.max)
            }
        }
    };
}

fp8!(
    /// OCP FP8 E4M3 (`.e4m3`): 4 exponent bits, 3 mantissa bits, no
    /// infinities, largest finite 448.
    E4m3, E4M3, "e4m3"
);
fp8!(
    /// OCP FP8 E5M2 (`.e5m2`): 5 exponent bits, 2 mantissa bits, IEEE
    /// specials, largest finite 57344.
    E5m2, E5M2, "e5m2"
);

#[cfg(feature = "cudarc")]
mod device_types {
    // SAFETY: one byte, no padding, any bit pattern valid (repr(transparent) u8).
    unsafe impl cudarc::driver::DeviceRepr for super::E4m3 {}
    // SAFETY: as above.
    unsafe impl cudarc::driver::ValidAsZeroBits for super::E4m3 {}
    // SAFETY: as above.
    unsafe impl cudarc::driver::DeviceRepr for super::E5m2 {}
    // SAFETY: as above.
    unsafe impl cudarc::driver::ValidAsZeroBits for super::E5m2 {}
}
