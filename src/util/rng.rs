//! The one seedable generator: tensors of synthetic models, prompt tokens, sampling,
//! bootstrap resamples and the mock engine's jitter all draw from it, so a seed means the
//! same numbers everywhere.

/// SplitMix64: a tiny, well-mixed, seedable generator (no dependency, stable across versions).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}
