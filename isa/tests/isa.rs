//! The ISA's definitions checked against what the instructions are used
//! for: `ldmatrix` loads `mma` fragments, the swizzles permute, the
//! shuffle source lanes are CUDA's `__shfl_*_sync` with a width.

use gpu_isa::mma::{a_bf16, b_bf16, ldmatrix_source};
use gpu_isa::shuffle::source_lane;
use gpu_isa::swizzle::swizzle;
use gpu_isa::wgmma::{Descriptor, element_offset};

/// `ldmatrix.x4` with lane `l` giving row `l % 16`, column `8 (l / 16)`
/// of a row-major 16 x 16 tile loads exactly the `m16n8k16` A fragment.
#[test]
fn ldmatrix_loads_the_a_fragment() {
    for lane in 0..32 {
        for j in 0..4 {
            for h in 0..2 {
                let (row, e) = ldmatrix_source(lane, j, false, h);
                let tile = (row % 16, 8 * (row / 16) + e);
                assert_eq!(tile, a_bf16(lane, 2 * j + h), "lane {lane} register {j} half {h}");
            }
        }
    }
}

/// `ldmatrix.x4.trans` with lane `l < 16` giving row k = `l` of a
/// row-major k x n tile (16 x 8) loads the `m16n8k16` B fragment in
/// registers 0 and 1.
#[test]
fn ldmatrix_trans_loads_the_b_fragment() {
    for lane in 0..32 {
        for j in 0..2 {
            for h in 0..2 {
                let (row, e) = ldmatrix_source(lane, j, true, h);
                assert_eq!((row, e), b_bf16(lane, 2 * j + h), "lane {lane} register {j} half {h}");
            }
        }
    }
}

/// Each swizzle permutes the 16-byte units of every `8 span`-byte atom,
/// keeps bytes within their unit, and spreads each column of units over
/// distinct unit positions of the 128-byte rows.
#[test]
fn swizzles_permute_units_within_an_atom() {
    for span in [32, 64, 128] {
        for atom in 0..3 {
            let base = atom * 8 * span * (128 / span);
            let units: Vec<usize> = (0..8 * 128 / 16).map(|u| swizzle(span, base + 16 * u)).collect();
            let mut sorted = units.clone();
            sorted.sort_unstable();
            let expected: Vec<usize> = (0..8 * 128 / 16).map(|u| base + 16 * u).collect();
            assert_eq!(sorted, expected, "span {span}");
            for a in base..base + 1024 {
                assert_eq!(swizzle(span, a) % 16, a % 16);
                assert_eq!(swizzle(span, a) / 128, a / 128, "stays in its row");
            }
            // The first unit of each of 8 consecutive rows: `span / 16`
            // distinct positions, each `8 / (span / 16)` times.
            let mut column: Vec<usize> = (0..8).map(|r| swizzle(span, base + 128 * r) % 128 / 16).collect();
            column.sort_unstable();
            column.dedup();
            assert_eq!(column.len(), span / 16, "span {span}");
        }
    }
    assert_eq!(swizzle(0, 12345), 12345);
}

/// `shfl.sync` with CUDA's encoding of a width `w`
/// (`c = ((32 - w) << 8) | clamp`): down, up, xor and idx stay in their
/// segment, and a source outside it gives the lane its own value.
#[test]
fn shuffle_sources_stay_in_their_segment() {
    for w in [1u32, 2, 4, 8, 16, 32] {
        let seg = (32 - w) << 8;
        for lane in 0..32 {
            let (start, off) = (lane - lane % w, lane % w);
            for d in 0..32 {
                let down = if off + d < w { (lane + d, true) } else { (lane, false) };
                assert_eq!(source_lane(lane, 1, d, seg | 31), down, "down w {w} lane {lane} d {d}");
                let up = if off >= d { (lane - d, true) } else { (lane, false) };
                assert_eq!(source_lane(lane, 0, d, seg), up, "up w {w} lane {lane} d {d}");
                if d < w {
                    assert_eq!(source_lane(lane, 2, d, seg | 31), (lane ^ d, true), "xor w {w}");
                    assert_eq!(source_lane(lane, 3, d, seg | 31), (start + d, true), "idx w {w}");
                }
            }
        }
    }
}

/// A descriptor's fields read back as they were encoded, and an MN-major
/// element's offset walks its row of `span` bytes, then the next row.
#[test]
fn descriptors_round_trip() {
    let d = Descriptor::swizzled(128, 1024, 8192, 1024);
    assert_eq!((d.fields(), d.span()), ((1024, 8192, 1024), 128));
    assert_eq!(d.advanced(32).fields(), (1056, 8192, 1024));
    assert_eq!(element_offset(d, false, 2, (9, 3)), 1024 + 128 + 1024 + 6);
    assert_eq!(element_offset(d, true, 2, (1, 65)), 1024 + 2 + 128 + 8192);
}

// The FP8 formats.
mod fp8 {
    use gpu_isa::fp8::{E4m3, E5m2};

    #[test]
    fn known_values() {
        assert_eq!(E4m3(0x7e).to_f32(), 448.0);
        assert_eq!(E4m3(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(E4m3(0x08).to_f32(), 2f32.powi(-6));
        assert_eq!(E4m3(0x38).to_f32(), 1.0);
        assert_eq!(E4m3(0xb8).to_f32(), -1.0);
        assert!(E4m3(0x7f).to_f32().is_nan());
        assert_eq!(E4m3(0x78).to_f32(), 256.0);
        assert_eq!(E5m2(0x7b).to_f32(), 57344.0);
        assert_eq!(E5m2(0x01).to_f32(), 2f32.powi(-16));
        assert_eq!(E5m2(0x3c).to_f32(), 1.0);
        assert_eq!(E5m2(0x7c).to_f32(), f32::INFINITY);
        assert!(E5m2(0x7d).to_f32().is_nan());
    }

    /// Every finite code round-trips; every value halfway between two
    /// neighbours rounds to the one with an even code; beyond the largest
    /// finite saturates.
    fn round_trips<F: Fn(u8) -> f32, G: Fn(f32) -> u8>(decode: F, encode: G, max: u8) {
        for bits in 0..=max {
            let x = decode(bits);
            assert_eq!(encode(x), bits, "{bits:#x}");
            assert_eq!(encode(-x), bits | 0x80, "-{bits:#x}");
            if bits < max {
                let next = decode(bits + 1);
                let mid = (x + next) / 2.0;
                let even = if bits % 2 == 0 { bits } else { bits + 1 };
                assert_eq!(encode(mid), even, "tie above {bits:#x}");
                let below = f32::from_bits(mid.to_bits() - 1);
                assert_eq!(encode(below), bits, "just below the tie above {bits:#x}");
            }
        }
        assert_eq!(encode(1e30), max);
        assert_eq!(encode(f32::INFINITY), max);
        assert_eq!(encode(f32::NEG_INFINITY), max | 0x80);
        assert!(decode(encode(f32::NAN)).is_nan());
        assert_eq!(encode(1e-30), 0);
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        round_trips(|b| E4m3(b).to_f32(), |x| E4m3::from_f32(x).0, 0x7e);
    }

    #[test]
    fn e5m2_rounds_to_nearest_even_and_saturates() {
        round_trips(|b| E5m2(b).to_f32(), |x| E5m2::from_f32(x).0, 0x7b);
    }
}
