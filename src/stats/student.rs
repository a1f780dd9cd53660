//! Student's t distribution and the t interval on the log scale: throughput noise is
//! multiplicative, and a t interval on ln(t/s) covers at its level from 2 samples (a
//! bootstrap of the median covers about 75% at 3). Written here because `statrs` would bring
//! a linear-algebra stack for a CDF and its inverse.

use super::bootstrap::Interval;
use super::{mean, stddev};

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9): 1e-15 relative, far beyond what a p-value needs.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let s = (G[1..].iter().enumerate()).fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    // Kept off zero, where the fraction's terms would divide by it.
    let off_zero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / off_zero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 / off_zero(1.0 + aa * d);
            c = off_zero(1.0 + aa / c);
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The fraction converges fast on the side of the mean; use the symmetry on the other.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub(crate) fn t_cdf(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// The `q` quantile of Student's t (bisection on the CDF).
pub(crate) fn t_quantile(q: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1e4, 1e4);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        let before = (lo, hi);
        if t_cdf(mid, df) < q {
            lo = mid;
        } else {
            hi = mid;
        }
        // The bounds meet within about 70 steps; a step that moves neither is repeated by
        // every later one, so the rest would give the same answer at the cost of a CDF
        // each (three quarters of a leaderboard's time over 41 files).
        if (lo, hi) == before {
            break;
        }
    }
    (lo + hi) / 2.0
}

pub(crate) fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    (2.0 * (1.0 - t_cdf(t.abs(), df))).min(1.0)
}

/// The fewest samples a t interval needs: with one there is no spread to scale it by.
pub(crate) const MIN_SAMPLES: usize = 2;

/// The `confidence` t interval of the centre of positive `xs` on the log scale, mapped
/// back: exp(mean ln x ± t·sd/√n). On lognormal noise that centre is the median. None
/// below 2 samples or with a value that is not positive.
pub(crate) fn log_t_interval(xs: &[f64], confidence: f64) -> Option<Interval> {
    if xs.len() < MIN_SAMPLES || xs.iter().any(|&x| x.is_nan() || x <= 0.0 || !x.is_finite()) {
        return None;
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let n = logs.len() as f64;
    let half = t_quantile(0.5 + confidence / 2.0, n - 1.0) * stddev(&logs) / n.sqrt();
    Some(Interval::exp_around(mean(&logs), half))
}

/// B over A as the ratio of geometric means, with its `confidence` Welch t interval on the
/// log scale: two independent samples (e.g. the requests of a served test and of the
/// in-process one). None below 2 positive samples a side, or with no spread at all.
pub fn welch_log_ratio(a: &[f64], b: &[f64], confidence: f64) -> Option<(f64, Interval)> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        let v: Vec<f64> = xs
            .iter()
            .filter(|x| x.is_finite() && **x > 0.0)
            .map(|x| x.ln())
            .collect();
        (v.len() >= MIN_SAMPLES).then_some(v)
    };
    let (la, lb) = (logs(a)?, logs(b)?);
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (va, vb) = (stddev(&la).powi(2) / na, stddev(&lb).powi(2) / nb);
    if va + vb <= 0.0 {
        return None;
    }
    let df = welch_df(va, vb, na, nb);
    let d = mean(&lb) - mean(&la);
    let half = t_quantile(0.5 + confidence / 2.0, df) * (va + vb).sqrt();
    Some((d.exp(), Interval::exp_around(d, half)))
}

/// The Welch–Satterthwaite degrees of freedom of a difference of two means, from each
/// mean's variance and its sample's size.
pub(crate) fn welch_df(va: f64, vb: f64, na: f64, nb: f64) -> f64 {
    (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The geometric mean of positive values (the centre `log_t_interval` brackets).
    fn geometric_mean(xs: &[f64]) -> f64 {
        if xs.is_empty() {
            return 0.0;
        }
        (xs.iter()
            .map(|x| x.max(f64::MIN_POSITIVE).ln())
            .sum::<f64>()
            / xs.len() as f64)
            .exp()
    }

    #[test]
    fn welch_ratio_is_the_ratio_of_geometric_means_and_brackets_it() {
        let a = [100.0, 110.0, 90.0, 105.0];
        let b: Vec<f64> = a.iter().map(|x| x * 0.8).collect();
        let (r, ci) = welch_log_ratio(&a, &b, 0.95).unwrap();
        assert!((r - 0.8).abs() < 1e-12);
        assert!(ci.lo < 0.8 && 0.8 < ci.hi && ci.hi < 1.0, "{ci:?}");
        assert!(welch_log_ratio(&a[..1], &b, 0.95).is_none());
        assert!(welch_log_ratio(&[1.0, 1.0], &[2.0, 2.0], 0.95).is_none());
    }

    #[test]
    fn quantiles_match_the_published_t_table() {
        // Two-sided 95%: the 0.975 quantile.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (9.0, 2.262),
            (19.0, 2.093),
            (1000.0, 1.962),
        ] {
            assert!((t_quantile(0.975, df) - t).abs() < 1e-3, "df {df}");
        }
        assert!(
            t_quantile(0.5, 7.0).abs() < 1e-6,
            "{}",
            t_quantile(0.5, 7.0)
        );
    }

    #[test]
    fn stopping_when_the_bisection_stalls_gives_every_quantile_to_the_bit() {
        // All 200 steps, as before the early stop.
        let full = |q: f64, df: f64| {
            let (mut lo, mut hi) = (-1e4, 1e4);
            for _ in 0..200 {
                let mid = (lo + hi) / 2.0;
                if t_cdf(mid, df) < q {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo + hi) / 2.0
        };
        for df in [1.0, 2.0, 3.5, 9.0, 30.0, 1000.0] {
            for q in [
                1e-12,
                0.001,
                0.025,
                0.3,
                0.5,
                0.8,
                0.95,
                0.975,
                0.999,
                1.0 - 1e-12,
            ] {
                assert_eq!(
                    t_quantile(q, df).to_bits(),
                    full(q, df).to_bits(),
                    "q {q} df {df}"
                );
            }
        }
    }

    #[test]
    fn the_cdf_is_symmetric_and_matches_known_values() {
        assert!((t_cdf(0.0, 5.0) - 0.5).abs() < 1e-12);
        assert!(
            (t_cdf(1.0, 1.0) - 0.75).abs() < 1e-9,
            "Cauchy: 1/2 + atan(1)/π"
        );
        assert!((t_cdf(-2.0, 8.0) + t_cdf(2.0, 8.0) - 1.0).abs() < 1e-12);
        assert!((t_two_sided_p(2.262, 9.0) - 0.05).abs() < 1e-3);
    }

    #[test]
    fn the_log_interval_brackets_the_geometric_mean_and_needs_two_samples() {
        let xs = [100.0, 110.0, 90.0, 105.0];
        let ci = log_t_interval(&xs, 0.95).unwrap();
        let g = geometric_mean(&xs);
        assert!(ci.lo < g && g < ci.hi, "{ci:?} {g}");
        // Symmetric on the log scale.
        assert!(((g / ci.lo).ln() - (ci.hi / g).ln()).abs() < 1e-9);
        assert_eq!(log_t_interval(&[100.0], 0.95), None);
        assert_eq!(log_t_interval(&[100.0, 0.0], 0.95), None);
        let same = log_t_interval(&[5.0, 5.0, 5.0], 0.95).unwrap();
        assert!((same.lo - 5.0).abs() < 1e-9 && (same.hi - 5.0).abs() < 1e-9);
    }
}
