//! Token sampling from logits, in Rust (pure): greedy (argmax) or temperature sampling with a
//! seeded generator, one sampler per sequence. Its cost is part of what a request waits
//! for and is reported as time outside llama.cpp.

use crate::util::rng::SplitMix64;

pub struct Sampler {
    temperature: f32,
    rng: SplitMix64,
    /// Scratch for the probabilities (reused: no allocation per token).
    probs: Vec<f32>,
}

impl Sampler {
    /// `temperature` 0 is greedy; `seed` makes temperature sampling repeatable.
    pub fn new(temperature: f32, seed: u64) -> Self {
        Sampler {
            temperature,
            rng: SplitMix64(seed),
            probs: Vec::new(),
        }
    }

    pub fn sample(&mut self, logits: &[f32]) -> i32 {
        if self.temperature <= 0.0 || logits.len() < 2 {
            return argmax(logits);
        }
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let inv_t = 1.0 / self.temperature;
        self.probs.clear();
        self.probs
            .extend(logits.iter().map(|&l| ((l - max) * inv_t).exp()));
        let total: f32 = self.probs.iter().sum();
        let mut r = ((self.rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * total;
        for (i, &p) in self.probs.iter().enumerate() {
            if r < p {
                return i as i32;
            }
            r -= p;
        }
        argmax(logits)
    }
}

/// Index of the largest logit (the first on ties; NaN logits are skipped); 0 for an empty
/// slice or one with no logit above −∞.
pub(crate) fn argmax(logits: &[f32]) -> i32 {
    // Greedy sampling runs once per sequence per generation step, inside the timed step, over
    // Gemma 3's 262,144 logits (1 MiB). So: blocks that stay in L1, the largest value of each
    // found by a loop the compiler vectorizes, and the block searched for its position only
    // when it beats every block before it. Each logit comes from memory once.
    const BLOCK: usize = 2048;
    let (mut max, mut idx) = (f32::NEG_INFINITY, 0);
    for (b, block) in logits.chunks(BLOCK).enumerate() {
        let m = block_max(block);
        if m > max {
            max = m;
            idx = b * BLOCK + block.iter().position(|&x| x == m).unwrap_or(0);
        }
    }
    idx as i32
}

/// The largest value (NaN skipped, −∞ when there is none), over 16 lanes.
fn block_max(block: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = block.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            if x > *lane {
                *lane = x;
            }
        }
    }
    lanes
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain loop `argmax` replaces, kept as the tests' reference.
    fn argmax_reference(logits: &[f32]) -> i32 {
        let mut best: Option<usize> = None;
        for (i, &l) in logits.iter().enumerate() {
            if !l.is_nan() && best.is_none_or(|b| l > logits[b]) {
                best = Some(i);
            }
        }
        best.unwrap_or(0) as i32
    }

    #[test]
    fn greedy_takes_the_first_largest_logit() {
        assert_eq!(argmax(&[0.1, 3.0, -1.0, 3.0]), 1);
        assert_eq!(Sampler::new(0.0, 1).sample(&[0.0, 0.5, 2.0]), 2);
        assert_eq!(argmax(&[]), 0);
    }

    #[test]
    fn argmax_agrees_with_the_plain_loop_on_every_length_and_on_ties() {
        let mut rng = SplitMix64(9);
        for n in [1usize, 15, 16, 17, 33, 1000, 262_144 + 7] {
            let mut v: Vec<f32> = (0..n)
                .map(|_| (rng.next_u64() % 1000) as f32 / 7.0 - 60.0)
                .collect();
            assert_eq!(argmax(&v), argmax_reference(&v), "n = {n}");
            // The largest value twice, the second copy in the tail: the first one wins.
            let top = v.iter().copied().fold(f32::MIN, f32::max) + 1.0;
            v[n / 3] = top;
            v[n - 1] = top;
            assert_eq!(argmax(&v), (n / 3) as i32, "n = {n}");
        }
    }

    #[test]
    fn argmax_skips_nan_and_takes_the_first_of_all_equal() {
        assert_eq!(argmax(&[f32::NAN, 1.0, 2.0, f32::NAN]), 2);
        assert_eq!(argmax(&[f32::NEG_INFINITY; 40]), 0);
        assert_eq!(argmax(&[f32::NAN; 3]), 0);
        assert_eq!(argmax(&[-5.0; 20]), 0);
    }

    #[test]
    fn temperature_sampling_is_seeded_and_follows_the_distribution() {
        let logits = [0.0f32, (3.0f32).ln()]; // probabilities 1/4, 3/4 at temperature 1
        let draw = |seed| {
            let mut s = Sampler::new(1.0, seed);
            (0..4000).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        let a = draw(5);
        assert_eq!(a, draw(5));
        assert_ne!(a, draw(6));
        let ones = a.iter().filter(|&&t| t == 1).count() as f64 / 4000.0;
        assert!((ones - 0.75).abs() < 0.03, "{ones}");
    }

    #[test]
    fn a_low_temperature_is_nearly_greedy() {
        let mut s = Sampler::new(0.01, 3);
        assert!((0..100).all(|_| s.sample(&[0.0, 1.0, 0.5]) == 1));
    }
}
