//! Random inputs, generated in parallel and reproducibly.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rayon::prelude::*;

/// Elements per independently seeded block of the stream.
const BLOCK: usize = 1 << 16;

/// `n` values drawn by `draw`, the same for the same `seed` whatever the
/// number of threads: block `b` of 2^16 values has its own generator seeded
/// from `seed` and `b`.
pub fn random_with<T: Send>(n: usize, seed: u64, draw: impl Fn(&mut SmallRng) -> T + Sync) -> Vec<T> {
    (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .flat_map_iter(|b| {
            let mut rng = SmallRng::seed_from_u64(seed ^ (b as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let len = (n - b * BLOCK).min(BLOCK);
            let draw = &draw;
            (0..len).map(move |_| draw(&mut rng))
        })
        .collect()
}

/// `n` random `f32` in [-1, 1), from `seed`.
pub fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    use rand::Rng;
    random_with(n, seed, |rng| rng.random_range(-1.0f32..1.0))
}
