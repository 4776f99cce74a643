//! Comparisons against host references. `Err` is a message naming the
//! kernel, how many elements differ and the first of them.

use rayon::prelude::*;

/// Bit-exact comparison of two `f32` arrays.
pub fn exact(name: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    exact_by(name, got, want, |x| x.to_bits() as u64)
}

/// Bit-exact comparison of two `f64` arrays.
pub fn exact_f64(name: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    exact_by(name, got, want, f64::to_bits)
}

fn exact_by<T: Copy + Sync + std::fmt::Display>(
    name: &str,
    got: &[T],
    want: &[T],
    bits: impl Fn(T) -> u64 + Sync,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{name}: {} elements, expected {}", got.len(), want.len()));
    }
    let bad = got.par_iter().zip(want).filter(|(g, w)| bits(**g) != bits(**w)).count();
    if bad == 0 {
        return Ok(());
    }
    let first = got.iter().zip(want).position(|(g, w)| bits(*g) != bits(*w)).unwrap();
    Err(format!(
        "{name}: {bad} of {} elements differ, first at {first}: got {} (bits {:#x}), expected {}",
        got.len(),
        got[first],
        bits(got[first]),
        want[first]
    ))
}
