//! Distribution-free intervals for the median from order statistics: [x(l), x(n+1-l)]
//! covers it with probability 1 − 2·P(B ≤ l − 1), B ~ Binomial(n, 1/2). Below 6 samples no
//! 95% interval exists, and none is reported (a bootstrap would give an over-confident one).

use super::bootstrap::Interval;
use super::compare::normal_quantile;

/// Above this many samples the binomial is replaced by its normal approximation.
const EXACT_UP_TO: usize = 1000;

/// The rank l (1-based) of the lower end: the largest l with P(B ≤ l − 1) ≤ (1 − conf) / 2,
/// B ~ Binomial(n, 1/2); None when even l = 1 falls short.
pub(crate) fn lower_rank(n: usize, confidence: f64) -> Option<usize> {
    let tail = (1.0 - confidence) / 2.0;
    if n == 0 {
        return None;
    }
    if n > EXACT_UP_TO {
        // Normal approximation with continuity correction: mean n/2, sd sqrt(n)/2.
        let z = normal_quantile(1.0 - tail);
        let l = ((n as f64 - z * (n as f64).sqrt()) / 2.0).floor() as usize;
        return (l >= 1).then_some(l);
    }
    // P(B = i) by the recurrence p(i+1) = p(i)·(n − i)/(i + 1), from p(0) = 2^−n.
    let mut p = 0.5f64.powi(n as i32);
    let mut cdf = 0.0;
    let mut l = 0;
    for i in 0..n / 2 {
        cdf += p; // P(B <= i)
        if cdf > tail {
            break;
        }
        l = i + 1;
        p *= (n - i) as f64 / (i + 1) as f64;
    }
    (l >= 1).then_some(l)
}

/// The 95% distribution-free interval of the median; None with too few samples.
pub fn median_ci_95(xs: &[f64]) -> Option<Interval> {
    let l = lower_rank(xs.len(), 0.95)?;
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Interval {
        lo: v[l - 1],
        hi: v[xs.len() - l],
    })
}

/// The larger distance from the median to either end of the interval, relative to the
/// median: "within ±1%" means both ends are within 1%.
pub(crate) fn relative_reach(ci: &Interval, median: f64) -> f64 {
    if median == 0.0 {
        return f64::INFINITY;
    }
    (median - ci.lo).max(ci.hi - median) / median.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coverage of [x(l), x(n+1-l)]: 1 − 2·P(B ≤ l − 1) (exact range of n only).
    fn coverage(n: usize, l: usize) -> f64 {
        let mut p = 0.5f64.powi(n as i32);
        let mut cdf = 0.0;
        for i in 0..l {
            cdf += p;
            p *= (n - i) as f64 / (i + 1) as f64;
        }
        1.0 - 2.0 * cdf
    }
    use crate::util::rng::SplitMix64;

    /// The fewest samples with a 95% order-statistic interval of the median.
    const MIN_SAMPLES_95: usize = 6;

    #[test]
    fn ranks_match_the_published_table() {
        // Conover's table of the 95% median interval: n → lower rank.
        for (n, l) in [
            (6, 1),
            (8, 1),
            (9, 2),
            (10, 2),
            (12, 3),
            (15, 4),
            (20, 6),
            (30, 10),
        ] {
            assert_eq!(lower_rank(n, 0.95), Some(l), "n = {n}");
            assert!(coverage(n, l) >= 0.95, "n = {n}");
            assert!(coverage(n, l + 1) < 0.95, "n = {n}: the narrowest");
        }
    }

    #[test]
    fn fewer_than_six_samples_have_no_95_percent_interval() {
        for n in 0..MIN_SAMPLES_95 {
            assert_eq!(lower_rank(n, 0.95), None, "n = {n}");
        }
        assert!((coverage(5, 1) - 0.9375).abs() < 1e-12);
        assert_eq!(median_ci_95(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn the_normal_approximation_continues_the_exact_ranks() {
        let exact = lower_rank(EXACT_UP_TO, 0.95).unwrap() as f64;
        let approx = lower_rank(EXACT_UP_TO + 1, 0.95).unwrap() as f64;
        assert!((exact - approx).abs() <= 1.0, "{exact} {approx}");
    }

    #[test]
    fn the_interval_is_made_of_sample_values_around_the_median() {
        let xs = [5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 9.0, 8.0, 7.0, 10.0];
        let ci = median_ci_95(&xs).unwrap();
        assert_eq!((ci.lo, ci.hi), (2.0, 9.0));
        assert!((relative_reach(&ci, 5.5) - 3.5 / 5.5).abs() < 1e-12);
    }

    #[test]
    fn coverage_is_at_least_95_percent_for_a_skewed_distribution() {
        // Exponential samples, true median ln 2: property over many seeded data sets.
        let mut r = SplitMix64(11);
        let trials = 2000;
        let hits = (0..trials)
            .filter(|_| {
                let xs: Vec<f64> = (0..7)
                    .map(|_| -(1.0 - r.next_f32() as f64).max(1e-9).ln())
                    .collect();
                median_ci_95(&xs).unwrap().contains(std::f64::consts::LN_2)
            })
            .count();
        // Nominal coverage at n = 7 is 1 − 2/128 = 98.4%.
        assert!(hits as f64 / trials as f64 > 0.96, "{hits}/{trials}");
    }
}
