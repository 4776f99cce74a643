//! `shfl.sync`: which lane each lane reads (PTX ISA, "shfl.sync").

/// The lane `shfl.sync` reads for `lane`, and its predicate, by the PTX
/// ISA's pseudocode (`mode`: 0 up, 1 down, 2 bfly, 3 idx): `c[4:0]` is the
/// clamp, `c[12:8]` the segment mask; a source outside the lane's segment
/// gives the lane its own value and a false predicate.
pub const fn source_lane(lane: u32, mode: u32, b: u32, c: u32) -> (u32, bool) {
    let (bval, cval, segmask) = (b & 31, c & 31, (c >> 8) & 31);
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, ok) = match mode {
        0 => {
            let j = lane as i64 - bval as i64;
            (j, j >= max_lane as i64)
        }
        1 => {
            let j = (lane + bval) as i64;
            (j, j <= max_lane as i64)
        }
        2 => {
            let j = (lane ^ bval) as i64;
            (j, j <= max_lane as i64)
        }
        _ => {
            let j = (min_lane | (bval & !segmask)) as i64;
            (j, j <= max_lane as i64)
        }
    };
    if ok { (j as u32, true) } else { (lane, false) }
}
