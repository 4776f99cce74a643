//! Shapes nobody picked: `gemm --random N --seed S` draws `N` GEMM shapes
//! from the ranges users run, so that the dispatcher is judged on shapes
//! no list names (a fixed list invites tuning to the list).
//!
//! Each dimension is log-uniform on `1..=16384` (as many shapes between
//! 64 and 128 as between 4096 and 8192), then shaped by a draw:
//!
//! | share | what | why |
//! | --- | --- | --- |
//! | 30% | every dimension rounded up to a multiple of 8, 16, 64 or 128 | model dimensions, padded batches |
//! | 25% | every dimension odd | sequence lengths, vocabularies, user data |
//! | 25% | as drawn | |
//! | 10% | skinny: one of m and n at most 256, the others at least 1024 | small batches against wide weights |
//! | 10% | decode: one of m and n at most 16, the others at least 2048 | a few tokens against a weight |
//!
//! The same seed gives the same shapes on every machine ([`SmallRng`]
//! seeded by the seed alone). [`COMMITTED_SEED`] is the seed the
//! benchmarks keep; a run without `--seed` draws a fresh one and prints it.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The seed whose shapes the benchmarks keep from run to run.
pub const COMMITTED_SEED: u64 = 1;

/// The largest dimension drawn.
pub const MAX: usize = 16384;

/// What a shape was drawn as (the draw's row of the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Aligned,
    Odd,
    Plain,
    Skinny,
    Decode,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Aligned => "aligned",
            Kind::Odd => "odd",
            Kind::Plain => "plain",
            Kind::Skinny => "skinny",
            Kind::Decode => "decode",
        }
    }
}

/// A log-uniform draw on `lo..=hi`.
fn log_uniform(rng: &mut SmallRng, lo: usize, hi: usize) -> usize {
    let (a, b) = ((lo as f64).ln(), ((hi + 1) as f64).ln());
    (rng.random_range(a..b).exp() as usize).clamp(lo, hi)
}

/// `count` shapes `(m, n, k)` drawn from `seed`, each with its kind.
pub fn shapes(count: usize, seed: u64) -> Vec<(Kind, (usize, usize, usize))> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let mut d = [0; 3].map(|_| log_uniform(&mut rng, 1, MAX));
            let draw = rng.random_range(0..100);
            let kind = match draw {
                0..30 => Kind::Aligned,
                30..55 => Kind::Odd,
                55..80 => Kind::Plain,
                80..90 => Kind::Skinny,
                _ => Kind::Decode,
            };
            match kind {
                Kind::Aligned => {
                    let unit = [8, 16, 64, 128][rng.random_range(0..4)];
                    d = d.map(|x| x.next_multiple_of(unit).min(MAX));
                }
                Kind::Odd => d = d.map(|x| if x % 2 == 0 { x - 1 } else { x }),
                Kind::Plain => {}
                Kind::Skinny | Kind::Decode => {
                    let (small, large) = if kind == Kind::Skinny { (256, 1024) } else { (16, 2048) };
                    d = [0; 3].map(|_| log_uniform(&mut rng, large, MAX));
                    // The small side: m (tokens against a weight) or n.
                    d[rng.random_range(0..2)] = log_uniform(&mut rng, 1, small);
                }
            }
            (kind, (d[0], d[1], d[2]))
        })
        .collect()
}

/// A seed from the clock, for a run that names none.
pub fn fresh_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_nanos() as u64 % 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_its_shapes_and_each_kind_its_share() {
        let drawn = shapes(4000, COMMITTED_SEED);
        assert_eq!(drawn, shapes(4000, COMMITTED_SEED));
        assert_ne!(drawn[..20], shapes(20, COMMITTED_SEED + 1)[..]);
        let share = |kind: Kind| drawn.iter().filter(|(k, _)| *k == kind).count() as f64 / 4000.0;
        for (kind, want) in [
            (Kind::Aligned, 0.30),
            (Kind::Odd, 0.25),
            (Kind::Plain, 0.25),
            (Kind::Skinny, 0.10),
            (Kind::Decode, 0.10),
        ] {
            // Four standard deviations of a binomial share at n = 4000.
            let sd = (want * (1.0 - want) / 4000.0f64).sqrt();
            assert!((share(kind) - want).abs() < 4.0 * sd, "{kind:?}: {}", share(kind));
        }
        for &(kind, (m, n, k)) in &drawn {
            let dims = [m, n, k];
            assert!(dims.iter().all(|&x| (1..=MAX).contains(&x)), "{dims:?}");
            match kind {
                Kind::Odd => assert!(dims.iter().all(|x| x % 2 == 1), "{dims:?}"),
                Kind::Aligned => assert!(dims.iter().all(|x| x % 8 == 0), "{dims:?}"),
                Kind::Decode => assert!(m.min(n) <= 16 && m.max(n) >= 2048 && k >= 2048, "{dims:?}"),
                Kind::Skinny => assert!(m.min(n) <= 256 && m.max(n) >= 1024 && k >= 1024, "{dims:?}"),
                Kind::Plain => {}
            }
        }
        // Log-uniform: as many plain dimensions below 128 as above (7 of
        // the 14 octaves).
        let plain: Vec<usize> =
            drawn.iter().filter(|(k, _)| *k == Kind::Plain).flat_map(|(_, (m, n, k))| [*m, *n, *k]).collect();
        let low = plain.iter().filter(|&&x| x < 128).count() as f64 / plain.len() as f64;
        assert!((low - 7.0 / 14.0).abs() < 0.05, "{low}");
    }
}
