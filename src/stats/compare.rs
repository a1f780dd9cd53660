//! Is B faster than A? Verdicts from the medians of rounds, where the deciding variance
//! lives: repetitions inside one context vary less than launches do. docs/methodology.md
//! says which test each pairing gets; tests/it/monte_carlo.rs checks every path's
//! false-positive rate, power and coverage.

use super::bootstrap::Interval;
use super::steady::normal_cdf;
use super::student::{t_quantile, t_two_sided_p, welch_df};
use super::{mean, stddev};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    /// The whole interval lies inside ±threshold: any change is smaller than that.
    NoChange,
    /// The data cannot decide: the interval reaches past ±threshold and includes no change.
    /// Never "no change".
    Inconclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Rounds interleaved in time, as many on each side (2 or more): a t test on the log
    /// ratios of the rounds' medians, paired by round (round i of A with round i of B).
    PairedRounds,
    /// Rounds interleaved in time, 2 or more per side but not as many: Welch's t test on
    /// the log medians.
    UnpairedRounds,
    /// Separate launches, or one round on a side: the noise floor between launches is added
    /// to what each side's own data show.
    NoiseFloor,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorSource {
    /// By `tpsbench noise` on this machine, from an A/A (a file with rounds).
    Measured(String),
    Given,
    Assumed,
}

/// The sd of ln t/s between launches assumed when none is measured or given: 7%, what a
/// 2-core VM showed between launches (docs/methodology.md); one launch per side then resolves
/// little below a 20% change.
pub(crate) const ASSUMED_FLOOR: f64 = 0.07;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoiseFloor {
    /// Of ln t/s of a launch's result between launches (0.05 ≈ 5%).
    pub sd: f64,
    pub source: FloorSource,
}

impl NoiseFloor {
    pub fn assumed() -> NoiseFloor {
        NoiseFloor {
            sd: ASSUMED_FLOOR,
            source: FloorSource::Assumed,
        }
    }

    pub fn describe(&self) -> String {
        let from = match &self.source {
            FloorSource::Measured(what) => format!("measured: {what}"),
            FloorSource::Given => "given with --noise".into(),
            FloorSource::Assumed => {
                "assumed; measure this machine's with `tpsbench noise FILE`, or give --noise".into()
            }
        };
        let percent = self.sd * 100.0;
        format!("noise floor {percent:.1}% between launches ({from})")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// B over A: the ratio of the geometric means of the rounds' medians (of the medians
    /// for one round each). 1.10 means B is 10% faster.
    pub speedup: f64,
    /// The `1 − alpha` interval of `speedup`, covering what `method` says.
    pub ci: Interval,
    pub p_value: f64,
    pub method: Method,
    pub rounds: (usize, usize),
    /// For an inconclusive pair: about how many rounds per side would bring the interval's
    /// half-width inside the threshold, judged from the spread seen.
    pub rounds_needed: Option<usize>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub alpha: f64,
    /// "No change" needs the whole interval inside ±threshold.
    pub threshold: f64,
    /// For sides from separate launches.
    pub floor: NoiseFloor,
    /// The two sides' rounds ran interleaved in time, round by round (`run --library`, or
    /// two parts of one run): they may be paired. False for two separate runs.
    pub interleaved: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            alpha: 0.05,
            threshold: 0.02,
            floor: NoiseFloor::assumed(),
            interleaved: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub round_medians: Vec<f64>,
    /// Of the one launch, when there is one round: the spread within it.
    pub repetitions: Vec<f64>,
}

impl Measured {
    fn logs(&self) -> Vec<f64> {
        self.round_medians
            .iter()
            .map(|x| x.max(f64::MIN_POSITIVE).ln())
            .collect()
    }

    /// Variance of this side's mean log within its launch: from its rounds when it has 2
    /// or more, else from the repetitions of its one round.
    fn var_of_mean(&self) -> f64 {
        let mut logs = self.logs();
        if logs.len() < 2 {
            let reps = self.repetitions.iter().filter(|x| **x > 0.0);
            logs = reps.map(|x| x.ln()).collect();
        }
        if logs.len() >= 2 {
            variance(&logs) / logs.len() as f64
        } else {
            0.0
        }
    }
}

/// Compares B against A from the medians of their rounds, as [`Method`] describes.
pub fn compare(a: &Measured, b: &Measured, s: &Settings) -> Comparison {
    let (la, lb) = (a.logs(), b.logs());
    let rounds = (la.len(), lb.len());
    let d = mean(&lb) - mean(&la);
    let q = 1.0 - s.alpha / 2.0;
    let interleaved = s.interleaved && la.len() >= 2 && lb.len() >= 2;
    let (method, half, p_value, spread) = if interleaved && la.len() == lb.len() {
        let diffs: Vec<f64> = lb.iter().zip(&la).map(|(y, x)| y - x).collect();
        let n = diffs.len() as f64;
        let se = stddev(&diffs) / n.sqrt();
        let df = n - 1.0;
        let p = p_of(d, se, |t| t_two_sided_p(t, df));
        let half = t_quantile(q, df) * se;
        // Spread per round of the log ratio: rounds needed ≈ (t·sd / threshold)².
        (Method::PairedRounds, half, p, stddev(&diffs))
    } else if interleaved {
        let va = variance(&la) / la.len() as f64;
        let vb = variance(&lb) / lb.len() as f64;
        let se = (va + vb).sqrt();
        let df = if va + vb > 0.0 {
            welch_df(va, vb, la.len() as f64, lb.len() as f64)
        } else {
            1.0
        };
        let p = p_of(d, se, |t| t_two_sided_p(t, df));
        let per_round = (variance(&la) + variance(&lb)).sqrt();
        (Method::UnpairedRounds, t_quantile(q, df) * se, p, per_round)
    } else {
        // Each side: its launch's level (floor) plus what its own data leave uncertain.
        let floor = s.floor.sd * s.floor.sd;
        let se = (a.var_of_mean() + b.var_of_mean() + 2.0 * floor).sqrt();
        let p = p_of(d, se, |z| 2.0 * (1.0 - normal_cdf(z.abs())));
        let z = normal_quantile(q);
        (Method::NoiseFloor, z * se, p, f64::INFINITY)
    };
    let ci = Interval::exp_around(d, half);
    let speedup = d.exp();
    let inside = ci.lo >= 1.0 - s.threshold && ci.hi <= 1.0 + s.threshold;
    let significant = ci.lo > 1.0 || ci.hi < 1.0;
    let verdict = match (inside, significant) {
        (true, _) => Verdict::NoChange,
        (false, false) => Verdict::Inconclusive,
        _ if speedup > 1.0 => Verdict::Faster,
        _ => Verdict::Slower,
    };
    // More rounds of separate launches do not shrink the floor: only interleaved rounds
    // have a count that would decide.
    let rounds_needed = (verdict == Verdict::Inconclusive && method != Method::NoiseFloor)
        .then(|| rounds_for(spread, s.threshold));
    Comparison {
        speedup,
        ci,
        p_value,
        method,
        rounds,
        rounds_needed,
        verdict,
    }
}

/// Rounds per side for a 95% interval of half-width `threshold` when one round's log ratio
/// spreads by `spread`: (2·spread / threshold)², at least 3 (below 3 the t quantile alone
/// makes the interval wide).
pub(crate) fn rounds_for(spread: f64, threshold: f64) -> usize {
    if threshold.is_nan() || threshold <= 0.0 || !spread.is_finite() {
        return usize::MAX;
    }
    let n = (2.0 * spread / threshold).powi(2).ceil();
    (n as usize).max(3)
}

fn p_of(d: f64, se: f64, two_sided: impl Fn(f64) -> f64) -> f64 {
    if se > 0.0 {
        two_sided(d / se)
    } else if d == 0.0 {
        1.0
    } else {
        0.0
    }
}

/// The p-value of "`d` (a difference of logs) lies beyond ln(1 + `margin`)" with standard
/// error `se`: 1 within the margin, else [`p_of`] the distance beyond it.
pub(crate) fn p_beyond(d: f64, se: f64, margin: f64, two_sided: impl Fn(f64) -> f64) -> f64 {
    let beyond = d.abs() - margin.ln_1p();
    if beyond <= 0.0 {
        1.0
    } else {
        p_of(beyond, se, two_sided)
    }
}

fn variance(xs: &[f64]) -> f64 {
    stddev(xs).powi(2)
}

/// The standard normal quantile, by bisection on the CDF (called rarely; exact enough).
pub(crate) fn normal_quantile(q: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0, 10.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(xs: &[f64]) -> Measured {
        Measured {
            round_medians: xs.to_vec(),
            repetitions: Vec::new(),
        }
    }

    fn launch(reps: &[f64]) -> Measured {
        Measured {
            round_medians: vec![crate::stats::median(reps)],
            repetitions: reps.to_vec(),
        }
    }

    fn interleaved() -> Settings {
        Settings {
            interleaved: true,
            ..Default::default()
        }
    }

    #[test]
    fn paired_rounds_find_a_ten_percent_change_in_the_right_direction() {
        let a = rounds(&[100.0, 104.0, 97.0, 101.0]);
        let b = rounds(&[110.5, 114.0, 106.0, 111.5]);
        let c = compare(&a, &b, &interleaved());
        assert_eq!(c.method, Method::PairedRounds);
        assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
        assert!(c.ci.lo > 1.0 && c.ci.contains(c.speedup));
        assert_eq!(compare(&b, &a, &interleaved()).verdict, Verdict::Slower);
    }

    #[test]
    fn pairing_by_round_removes_a_level_shared_by_both_sides() {
        // Each round moves both sides by up to 20%: unpaired, that hides the 5% change.
        let level = [1.0, 1.2, 0.85, 1.1, 0.95];
        let a: Vec<f64> = level.iter().map(|l| 100.0 * l).collect();
        let b: Vec<f64> = level.iter().map(|l| 105.0 * l * 1.001).collect();
        let paired = compare(&rounds(&a), &rounds(&b), &interleaved());
        assert_eq!(paired.verdict, Verdict::Faster, "{paired:?}");
        let unpaired = compare(&rounds(&a), &rounds(&b[..4]), &interleaved());
        assert_eq!(unpaired.method, Method::UnpairedRounds);
        assert_eq!(unpaired.verdict, Verdict::Inconclusive, "{unpaired:?}");
        assert!(unpaired.rounds_needed.is_some());
    }

    #[test]
    fn no_change_needs_the_whole_interval_inside_the_threshold() {
        let a = rounds(&[100.0, 100.2, 99.9, 100.1, 100.0]);
        let same = rounds(&[100.1, 100.0, 100.0, 100.2, 99.9]);
        let c = compare(&a, &same, &interleaved());
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        // Wide rounds: not significant, and not "no change" either.
        let wide = rounds(&[90.0, 112.0, 95.0, 108.0, 101.0]);
        let c = compare(&a, &wide, &interleaved());
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        assert!(c.rounds_needed.unwrap() > 5, "{c:?}");
    }

    #[test]
    fn one_launch_per_side_is_judged_against_the_noise_floor() {
        // Tight repetitions, 5% apart: within one launch that looks certain, but a launch
        // moves by 7%.
        let a = launch(&[100.0, 100.3, 99.8, 100.1, 99.9]);
        let b = launch(&[95.0, 95.2, 94.9, 95.1, 95.0]);
        let c = compare(&a, &b, &Settings::default());
        assert_eq!(c.method, Method::NoiseFloor);
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        // A two-fold slowdown is beyond any floor.
        let half = launch(&[50.0, 50.2, 49.9, 50.1, 50.0]);
        assert_eq!(
            compare(&a, &half, &Settings::default()).verdict,
            Verdict::Slower
        );
        // A measured floor of 1% decides the 5%.
        let s = Settings {
            floor: NoiseFloor {
                sd: 0.01,
                source: FloorSource::Given,
            },
            ..Default::default()
        };
        assert_eq!(compare(&a, &b, &s).verdict, Verdict::Slower);
    }

    #[test]
    fn rounds_needed_grow_with_the_spread_and_shrink_with_the_threshold() {
        assert_eq!(rounds_for(0.02, 0.02), 4);
        assert!(rounds_for(0.05, 0.02) > rounds_for(0.02, 0.02));
        assert!(rounds_for(0.05, 0.05) < rounds_for(0.05, 0.02));
        assert_eq!(rounds_for(0.0, 0.02), 3);
    }
}
