//! Is B faster than A? A Mann–Whitney U test on the raw per-repetition rates plus a
//! bootstrap interval of the ratio of medians, with a noise threshold as criterion has.

use super::bootstrap::{Interval, ratio_interval};
use super::median;
use super::steady::normal_cdf;

/// Two-sided p-value of the Mann–Whitney U test (exact without ties for small samples,
/// normal approximation with tie correction otherwise).
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let mut u: f64 = 0.0;
    let mut ties = false;
    for &x in a {
        for &y in b {
            if x < y {
                u += 1.0;
            } else if x == y {
                u += 0.5;
                ties = true;
            }
        }
    }
    let mn = (m * n) as f64;
    let u_min = u.min(mn - u);
    if !ties && m + n <= 40 {
        // P(U <= u_min) by the recurrence p(m,n,u) = m/(m+n) p(m-1,n,u-n) + n/(m+n) p(m,n-1,u).
        let cdf = exact_cdf(m, n, u_min.floor() as usize);
        return (2.0 * cdf).min(1.0);
    }
    // Normal approximation with tie correction.
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&x| x == all[i]).count();
        let t = j as f64;
        tie_term += t * t * t - t;
        i += j;
    }
    let nn = (m + n) as f64;
    let var = mn / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mn / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    2.0 * (1.0 - normal_cdf(z))
}

fn exact_cdf(m: usize, n: usize, u: usize) -> f64 {
    // prob[i][j][k]: P(U = k) for sample sizes i, j.
    let max_u = m * n;
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect(); // i = 0: U = 0
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        cur.push(vec![1.0]); // j = 0
        for j in 1..=n {
            let len = i * j + 1;
            let mut v = vec![0.0; len];
            let (wi, wj) = (i as f64 / (i + j) as f64, j as f64 / (i + j) as f64);
            for (k, slot) in v.iter_mut().enumerate() {
                let from_a = if k >= j {
                    prev[j].get(k - j).copied().unwrap_or(0.0)
                } else {
                    0.0
                };
                let from_b = cur[j - 1].get(k).copied().unwrap_or(0.0);
                *slot = wi * from_a + wj * from_b;
            }
            cur.push(v);
        }
        prev = cur;
    }
    prev[n][..=u.min(max_u)].iter().sum()
}

/// The smallest two-sided p-value the Mann–Whitney test can give with `m` and `n` samples:
/// complete separation, 2 / C(m + n, m). With 3 + 3 samples it is 0.1, so at alpha 0.05 no
/// difference, however large, can be significant: such a test is underpowered, not negative.
pub fn min_attainable_p(m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    // C(m + n, m) as a running product, in floating point (exact for small counts, and
    // only compared against alpha for large ones).
    let k = m.min(n);
    let ways = (1..=k).fold(1.0f64, |acc, i| acc * (m + n - k + i) as f64 / i as f64);
    (2.0 / ways).min(1.0)
}

/// The smallest equal number of samples per side at which the test can reach `alpha`.
pub fn samples_needed(alpha: f64) -> usize {
    (1..=1000)
        .find(|&n| min_attainable_p(n, n) < alpha)
        .unwrap_or(1000)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    /// Not significant, and the interval overlaps the noise band.
    NoChange,
    /// The data cannot decide: too few samples for the test to reach alpha, or an interval
    /// that excludes the noise band while the test is not significant. Never "no change".
    Inconclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// median(B) / median(A) of tokens/s: 1.10 means B is 10% faster.
    pub speedup: f64,
    pub ci: Interval,
    pub p_value: f64,
    /// The smallest p-value the test could give with these sample counts.
    pub min_attainable_p: f64,
    /// `min_attainable_p` is not below alpha: no result could have been significant.
    pub too_few_samples: bool,
    pub verdict: Verdict,
}

impl Comparison {
    /// The whole interval lies beyond a slowdown of `threshold` (0.05 = 5% slower).
    pub fn interval_slower_than(&self, threshold: f64) -> bool {
        self.ci.hi < 1.0 - threshold
    }
}

/// Settings of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Significance level (default 0.05).
    pub alpha: f64,
    /// Changes smaller than this are "no change" even when significant (default 0.01).
    pub noise: f64,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            noise: 0.01,
            seed: 0x7470_7362,
        }
    }
}

/// Compares B against A on per-repetition tokens/s.
pub fn compare(a: &[f64], b: &[f64], s: Settings) -> Comparison {
    let speedup = median(b) / median(a);
    let ci = ratio_interval(a, b, median, 1.0 - s.alpha, 2000, s.seed);
    let p_value = mann_whitney_p(a, b);
    let min_p = min_attainable_p(a.len(), b.len());
    let too_few_samples = min_p >= s.alpha;
    let beyond_noise = ci.lo > 1.0 + s.noise || ci.hi < 1.0 - s.noise;
    let significant = p_value < s.alpha && !ci.contains(1.0) && (speedup - 1.0).abs() > s.noise;
    let verdict = if too_few_samples {
        Verdict::Inconclusive
    } else if significant {
        if speedup > 1.0 {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else if beyond_noise {
        // The interval says "changed", the test says "not shown": neither wins.
        Verdict::Inconclusive
    } else {
        Verdict::NoChange
    };
    Comparison {
        speedup,
        ci,
        p_value,
        min_attainable_p: min_p,
        too_few_samples,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::writer::SplitMix64;

    fn noisy(n: usize, center: f64, cv: f64, rng: &mut SplitMix64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let z: f64 = (0..12).map(|_| rng.next_f32() as f64).sum::<f64>() - 6.0;
                center * (1.0 + cv * z)
            })
            .collect()
    }

    #[test]
    fn exact_p_values_match_tables() {
        // Complete separation of 5 vs 5: p = 2/252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        // Perfectly interleaved: no evidence.
        assert!(mann_whitney_p(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]) > 0.5);
    }

    #[test]
    fn identical_samples_are_no_change() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let c = compare(&a, &a, Settings::default());
        assert_eq!(c.verdict, Verdict::NoChange);
        assert!((c.speedup - 1.0).abs() < 1e-12);
        assert!(c.p_value > 0.5);
    }

    #[test]
    fn a_ten_percent_shift_is_significant_in_the_right_direction() {
        let mut r = SplitMix64(1);
        let a = noisy(10, 100.0, 0.02, &mut r);
        let faster: Vec<f64> = noisy(10, 110.0, 0.02, &mut r);
        let slower: Vec<f64> = noisy(10, 90.0, 0.02, &mut r);
        let up = compare(&a, &faster, Settings::default());
        assert_eq!(up.verdict, Verdict::Faster, "{up:?}");
        assert!(up.ci.contains(up.speedup) && up.ci.lo > 1.0);
        assert_eq!(
            compare(&a, &slower, Settings::default()).verdict,
            Verdict::Slower
        );
        // Even with llama-bench's 5 repetitions.
        assert_eq!(
            compare(&a[..5], &faster[..5], Settings::default()).verdict,
            Verdict::Faster
        );
    }

    #[test]
    fn noise_only_differences_are_flagged_at_most_at_the_stated_rate() {
        let mut r = SplitMix64(42);
        let trials = 400;
        let flagged = (0..trials)
            .filter(|_| {
                let a = noisy(10, 100.0, 0.03, &mut r);
                let b = noisy(10, 100.0, 0.03, &mut r);
                let v = compare(&a, &b, Settings::default()).verdict;
                matches!(v, Verdict::Faster | Verdict::Slower)
            })
            .count();
        // alpha = 5%: expect at most 20 of 400, allow sampling slack.
        assert!(
            flagged <= 26,
            "{flagged} of {trials} noise-only pairs flagged"
        );
    }

    #[test]
    fn normal_approximation_agrees_with_exact_on_moderate_samples() {
        let a: Vec<f64> = (0..20).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..20).map(|i| i as f64 + 5.5).collect();
        let exact = mann_whitney_p(&a, &b);
        let mut b_long = b.clone();
        b_long.push(100.0); // m + n = 41: normal approximation
        let approx = mann_whitney_p(&a, &b_long);
        assert!(exact < 0.05 && approx < 0.05, "{exact} {approx}");
    }

    const A: [f64; 5] = [100.0, 101.0, 99.0, 100.5, 99.5];

    /// B at `ratio` of A, with its own small jitter.
    fn scaled(n: usize, ratio: f64) -> (Vec<f64>, Vec<f64>) {
        let jitter = [0.3, -0.2, 0.1, -0.4, 0.2];
        let b = (0..n).map(|i| (A[i] + jitter[i]) * ratio).collect();
        (A[..n].to_vec(), b)
    }

    #[test]
    fn the_smallest_attainable_p_is_two_over_the_number_of_orderings() {
        assert!((min_attainable_p(2, 2) - 2.0 / 6.0).abs() < 1e-12);
        assert!((min_attainable_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_attainable_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((min_attainable_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((min_attainable_p(3, 5) - 2.0 / 56.0).abs() < 1e-12);
        assert_eq!(min_attainable_p(1, 1), 1.0);
        assert_eq!(min_attainable_p(0, 5), 1.0);
        // It is what the test gives for complete separation.
        let (a, b) = scaled(5, 0.5);
        assert!((mann_whitney_p(&a, &b) - min_attainable_p(5, 5)).abs() < 1e-12);
        assert_eq!(samples_needed(0.05), 4);
        assert_eq!(samples_needed(0.01), 5);
    }

    #[test]
    fn a_two_fold_slowdown_at_two_and_three_samples_is_inconclusive_not_no_change() {
        for n in [2, 3] {
            let (a, b) = scaled(n, 0.52);
            let c = compare(&a, &b, Settings::default());
            assert_eq!(c.verdict, Verdict::Inconclusive, "n = {n}: {c:?}");
            assert!(c.too_few_samples, "n = {n}");
            assert!(c.interval_slower_than(0.05), "n = {n}: {c:?}");
            assert!((c.speedup - 0.52).abs() < 0.01, "{c:?}");
        }
    }

    #[test]
    fn a_two_fold_slowdown_at_four_and_five_samples_is_slower() {
        for n in [4, 5] {
            let (a, b) = scaled(n, 0.52);
            let c = compare(&a, &b, Settings::default());
            assert_eq!(c.verdict, Verdict::Slower, "n = {n}: {c:?}");
            assert!(!c.too_few_samples);
        }
    }

    #[test]
    fn an_unchanged_pair_is_inconclusive_below_four_samples_and_no_change_from_four() {
        for n in [2, 3, 4, 5] {
            let (a, b) = scaled(n, 1.0);
            let c = compare(&a, &b, Settings::default());
            let expected = if n < 4 {
                Verdict::Inconclusive
            } else {
                Verdict::NoChange
            };
            assert_eq!(c.verdict, expected, "n = {n}: {c:?}");
            assert!(!c.interval_slower_than(0.05), "n = {n}: {c:?}");
        }
    }

    #[test]
    fn an_interval_beyond_the_noise_band_is_never_no_change() {
        // Enough samples for the test, but the ranks overlap (a few slow runs in A, a few
        // fast ones in B) so p stays above alpha, while every resampled median of B is 3%
        // below A's: the interval sits wholly below 1 - noise.
        let a: Vec<f64> = [vec![100.0; 16], vec![10.0; 4]].concat();
        let b: Vec<f64> = [vec![97.0; 16], vec![500.0; 4]].concat();
        let s = Settings::default();
        let c = compare(&a, &b, s);
        let beyond = c.ci.lo > 1.0 + s.noise || c.ci.hi < 1.0 - s.noise;
        assert!(c.p_value >= s.alpha, "{c:?}");
        assert!(beyond, "the case this test is about: {c:?}");
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    }
}
