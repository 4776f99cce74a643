//! Comparisons against host references. `Err` is a message naming the
//! kernel, how many elements differ and the first of them.

use rayon::prelude::*;

/// An element type compared bit for bit (`-0.0` is not `0.0`, and a NaN
/// left by the poison is never a result).
pub trait Exact: Copy + Sync + std::fmt::Display {
    fn bits(self) -> u64;
}

impl Exact for f32 {
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl Exact for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Bit-exact comparison of two arrays.
pub fn exact<T: Exact>(name: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{name}: {} elements, expected {}", got.len(), want.len()));
    }
    let bad = got.par_iter().zip(want).filter(|(g, w)| g.bits() != w.bits()).count();
    if bad == 0 {
        return Ok(());
    }
    let first = got.iter().zip(want).position(|(g, w)| g.bits() != w.bits()).unwrap();
    Err(format!(
        "{name}: {bad} of {} elements differ, first at {first}: got {} (bits {:#x}), expected {}",
        got.len(),
        got[first],
        got[first].bits(),
        want[first]
    ))
}
