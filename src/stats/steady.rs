//! Steady-state checks on a test's per-repetition rates: warmup drift (the first samples
//! slower than the rest) and a trend across samples (thermal throttling, a noisy neighbour).

use super::median;

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 erf, |error| < 1.5e-7).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    let sign = if z >= 0.0 { 1.0 } else { -1.0 };
    0.5 * (1.0 + sign * erf)
}

/// Mann–Kendall trend test: two-sided p-value of a monotonic trend in `xs` (n ≥ 3).
pub fn mann_kendall_p(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 3 {
        return 1.0;
    }
    let s: i64 = pairs(n)
        .map(|(i, j)| (xs[j] - xs[i]).partial_cmp(&0.0).map_or(0, |o| o as i64))
        .sum();
    let nf = n as f64;
    let var = nf * (nf - 1.0) * (2.0 * nf + 5.0) / 18.0;
    if s == 0 {
        return 1.0;
    }
    let z = (s as f64 - (s.signum() as f64)) / var.sqrt();
    2.0 * (1.0 - normal_cdf(z.abs()))
}

/// Theil–Sen slope: the median of pairwise slopes, robust to outliers.
pub fn theil_sen_slope(xs: &[f64]) -> f64 {
    let slopes: Vec<f64> = pairs(xs.len())
        .map(|(i, j)| (xs[j] - xs[i]) / (j - i) as f64)
        .collect();
    median(&slopes)
}

/// Every (i, j) with i < j < n, in order.
fn pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |i| (i + 1..n).map(move |j| (i, j)))
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Steadiness {
    /// The first samples are slower than all the rest: more warmup was needed.
    pub warmup_drift: bool,
    /// Theil–Sen slope over the whole run, relative to the median (−0.05: 5% slower by the end).
    pub trend_rel: f64,
    /// Mann–Kendall p-value of the trend.
    pub trend_p: f64,
    /// A significant trend of more than `TREND_MIN` over the run.
    pub trending: bool,
}

/// A trend smaller than this over the whole run is not worth a flag.
pub const TREND_MIN: f64 = 0.02;
pub const TREND_ALPHA: f64 = 0.05;

/// Checks per-repetition rates (higher is faster), in run order.
pub fn check(rates: &[f64]) -> Steadiness {
    let n = rates.len();
    let mut s = Steadiness {
        trend_p: 1.0,
        ..Default::default()
    };
    if n < 5 {
        return s;
    }
    // Drift: for some head of up to a fifth of the run, every early sample is slower than
    // every later one, and by more than 2% at the median.
    s.warmup_drift = (1..=(n / 5).max(1)).any(|head| {
        let rest = &rates[head..];
        let rest_min = rest.iter().copied().fold(f64::INFINITY, f64::min);
        rates[..head].iter().all(|&x| x < rest_min) && median(&rates[..head]) < median(rest) * 0.98
    });
    let m = median(rates);
    if m > 0.0 {
        s.trend_rel = theil_sen_slope(rates) * (n - 1) as f64 / m;
    }
    s.trend_p = mann_kendall_p(rates);
    s.trending = n >= 6 && s.trend_p < TREND_ALPHA && s.trend_rel.abs() > TREND_MIN;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
        assert!((normal_cdf(-1.0) - 0.158_655).abs() < 1e-5);
    }

    #[test]
    fn flat_noise_is_steady() {
        let xs = [
            100.0, 101.0, 99.5, 100.4, 99.8, 100.9, 100.1, 99.7, 100.3, 100.0,
        ];
        let s = check(&xs);
        assert!(!s.warmup_drift && !s.trending, "{s:?}");
    }

    #[test]
    fn a_slow_start_is_warmup_drift() {
        let xs = [
            80.0, 100.0, 101.0, 99.5, 100.4, 99.8, 100.9, 100.1, 99.7, 100.3,
        ];
        assert!(check(&xs).warmup_drift);
    }

    #[test]
    fn throttling_is_a_significant_downward_trend() {
        let xs: Vec<f64> = (0..12)
            .map(|i| 100.0 - 1.0 * i as f64 + if i % 2 == 0 { 0.3 } else { -0.3 })
            .collect();
        let s = check(&xs);
        assert!(s.trending, "{s:?}");
        assert!(s.trend_rel < -0.08 && s.trend_p < 0.01, "{s:?}");
    }

    #[test]
    fn theil_sen_ignores_one_outlier() {
        let mut xs: Vec<f64> = (0..10).map(|i| i as f64).collect();
        xs[5] = 100.0;
        assert!((theil_sen_slope(&xs) - 1.0).abs() < 1e-9);
    }
}
