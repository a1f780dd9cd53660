//! Pure statistics over raw samples: no I/O, no engine, unit-tested in isolation.

pub mod analysis;
pub mod bootstrap;
pub mod compare;
pub mod order;
pub(crate) mod outliers;
pub mod pairs;
pub mod race;
pub mod resolve;
pub(crate) mod steady;
pub mod student;
pub mod ties;

/// Arithmetic mean; 0 for an empty slice (callers never report an empty test as ok).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Mean of the natural logs: the log of the geometric mean.
pub(crate) fn log_mean(xs: &[f64]) -> f64 {
    mean(&xs.iter().map(|x| x.ln()).collect::<Vec<_>>())
}

/// Sample standard deviation (n − 1), as llama-bench computes it; 0 with fewer than 2 samples.
pub fn stddev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// Median (mean of the two middle values for an even count); 0 for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile (0..=1) of sorted values, interpolated linearly between the closest
/// ranks (numpy's default, llama.cpp's percentile); NaN for no values. The one quantile:
/// bootstrap intervals, outlier fences, serving latency percentiles and KLD percentiles.
pub(crate) fn quantile<T: Copy + Into<f64>>(sorted: &[T], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    let at = |k: usize| -> f64 { sorted[k].into() };
    if i + 1 < sorted.len() {
        at(i) + (at(i + 1) - at(i)) * frac
    } else {
        at(i)
    }
}

/// Tokens per second of each sample: `n_tokens / (ns · 1e-9)`.
pub fn rates_per_second(n_tokens: u64, samples_ns: &[u64]) -> Vec<f64> {
    (samples_ns.iter())
        .map(|&ns| n_tokens as f64 * 1e9 / ns.max(1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_stddev_match_hand_computation() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        // population sd is 2; the sample sd is sqrt(32/7)
        assert!((stddev(&xs) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn stddev_of_one_sample_is_zero() {
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(stddev(&[]), 0.0);
    }

    #[test]
    fn quantiles_interpolate_clamp_and_take_f32() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 7.0), 4.0);
        let f: Vec<f32> = (1..=10).map(|x| x as f32).collect();
        assert!((quantile(&f, 0.9) - 9.1).abs() < 1e-6);
        assert!(quantile::<f64>(&[], 0.5).is_nan());
    }

    #[test]
    fn median_handles_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn avg_ts_is_mean_of_rates_not_rate_of_totals() {
        // 100 tokens in 1 s and in 3 s: rates 100 and 33.3; mean of rates 66.7, total rate 50.
        let ts = rates_per_second(100, &[1_000_000_000, 3_000_000_000]);
        assert!((mean(&ts) - (100.0 + 100.0 / 3.0) / 2.0).abs() < 1e-9);
        assert!((median(&ts) - mean(&ts)).abs() < 1e-9);
    }

    #[test]
    fn zero_duration_sample_does_not_divide_by_zero() {
        let r = rates_per_second(10, &[0]);
        assert!(r[0].is_finite());
    }
}
