//! Token sampling from logits, in Rust (pure): greedy (argmax) or temperature sampling with a
//! seeded generator, one sampler per sequence. Its cost is part of what a request waits
//! for and is reported as time outside llama.cpp.

use crate::gguf::writer::SplitMix64;

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

/// Index of the largest logit (the first on ties); 0 for an empty slice.
pub fn argmax(logits: &[f32]) -> i32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_largest_logit() {
        assert_eq!(argmax(&[0.1, 3.0, -1.0, 3.0]), 1);
        assert_eq!(Sampler::new(0.0, 1).sample(&[0.0, 0.5, 2.0]), 2);
        assert_eq!(argmax(&[]), 0);
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
