//! What a finished test reports beyond llama-bench's mean ± sd, and when an adaptive test
//! may stop repeating.

use super::bootstrap::{Interval, mean_ci, median_ci};
use super::order;
use super::outliers::{Outliers, classify};
use super::steady::{Steadiness, check};
use super::student::log_t_interval;
use super::{mean, median, stddev};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The fixed repetition count was reached (llama-bench's mode).
    Fixed,
    /// The median's confidence interval became narrower than the target.
    Precision,
    MaxRepetitions,
    MaxTime,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopPolicy {
    /// The fixed count when `ci_target` is None.
    pub min_repetitions: u32,
    /// Relative half-width of the median's 95% CI to reach (0.01 = ±1%).
    pub ci_target: Option<f64>,
    pub max_repetitions: u32,
    /// Of timed repetitions per test.
    pub max_seconds: f64,
}

impl StopPolicy {
    pub fn fixed(repetitions: u32) -> Self {
        StopPolicy {
            min_repetitions: repetitions,
            ci_target: None,
            max_repetitions: repetitions,
            max_seconds: f64::INFINITY,
        }
    }

    /// Whether to stop after these rates, `elapsed_s` spent. [`precise`] must hold at two
    /// looks in a row: stopping at the first picks looks where the interval is narrow by
    /// chance, which covered 61-85% (tests/it/monte_carlo.rs).
    pub fn should_stop(&self, rates: &[f64], elapsed_s: f64, _seed: u64) -> Option<StopReason> {
        let n = rates.len() as u32;
        let Some(target) = self.ci_target else {
            return (n >= self.min_repetitions).then_some(StopReason::Fixed);
        };
        let two_looks =
            n >= 2 && precise(rates, target) && precise(&rates[..rates.len() - 1], target);
        if n >= self.min_repetitions && two_looks {
            return Some(StopReason::Precision);
        }
        if n >= self.max_repetitions {
            return Some(StopReason::MaxRepetitions);
        }
        if n >= self.min_repetitions && elapsed_s >= self.max_seconds {
            return Some(StopReason::MaxTime);
        }
        None
    }
}

/// Whether the median of `rates` is known to `target` (0.01 = ±1%): its distribution-free
/// 95% interval ([`order`], 6 samples or more) lies within `target` of it. Not a bootstrap,
/// which covers about 75% at 3 samples and would stop on luck.
pub(crate) fn precise(rates: &[f64], target: f64) -> bool {
    order::median_ci_95(rates).is_some_and(|ci| order::relative_reach(&ci, median(rates)) <= target)
}

/// Analyses a test that ran several rounds: the repetitions of every round pooled for the
/// within-launch figures, and the interval between rounds from each round's median.
pub(crate) fn analyse_rounds(
    rates: &[f64],
    round_medians: &[f64],
    stop_reason: StopReason,
    target: Option<f64>,
    seed: u64,
) -> TestStats {
    let mut s = analyse(rates, stop_reason, target, seed);
    if round_medians.len() >= 2 {
        s.interval = LevelInterval::of(Covers::BetweenRounds, round_medians);
    }
    s
}

/// A test whose coefficient of variation exceeds this is noted as noisy (5%).
pub(crate) const NOISY_CV: f64 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Covers {
    /// Repetitions inside one context of one launch (llama-bench's methodology). The
    /// variance between contexts and launches, which decides most verdicts, is not in it.
    WithinLaunch,
    /// Rounds: the same test in fresh contexts (fresh processes under `--isolate`),
    /// interleaved with the plan's other tests; computed from each round's median.
    BetweenRounds,
}

impl Covers {
    pub fn describe(&self, n: usize) -> String {
        match self {
            Covers::WithinLaunch => "within one launch".into(),
            Covers::BetweenRounds => format!("between {n} rounds"),
        }
    }
}

/// A confidence interval of a test's t/s that says what it covers: the t interval on the
/// log scale, from the repetitions of one launch or from the medians of the rounds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LevelInterval {
    pub covers: Covers,
    pub confidence: f64,
    /// Repetitions or rounds.
    pub n: usize,
    pub lo: f64,
    pub hi: f64,
}

impl LevelInterval {
    pub fn of(covers: Covers, xs: &[f64]) -> Option<LevelInterval> {
        let ci = log_t_interval(xs, 0.95)?;
        Some(LevelInterval {
            covers,
            confidence: 0.95,
            n: xs.len(),
            lo: ci.lo,
            hi: ci.hi,
        })
    }

    pub fn label(&self) -> String {
        let (percent, covers) = (self.confidence * 100.0, self.covers.describe(self.n));
        format!("{percent:.0}% {covers}")
    }
}

/// Statistics of a test's per-repetition tokens/s.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TestStats {
    /// Sample sd / mean.
    pub cv: f64,
    /// Seeded bootstrap intervals of the mean and median within one launch, kept for readers
    /// of earlier files: they cover about 75% at 3 samples; tables show `interval`.
    pub mean_ci: Interval,
    pub median_ci: Interval,
    pub median_ci_rel: f64,
    /// Between rounds when it ran 2 or more rounds, else within one launch.
    pub interval: Option<LevelInterval>,
    /// What adaptive stopping and the "imprecise" flag use; absent below 6 samples.
    pub median_ci_order: Option<Interval>,
    pub outliers: Outliers,
    pub steadiness: Steadiness,
    pub stop_reason: StopReason,
    /// "warmup_drift", "trend", "outliers", "imprecise", "noisy" (CV above 5%).
    pub flags: Vec<String>,
}

impl TestStats {
    /// The notes a table shows: the flags, with "noisy" given its CV ("noisy: CV 7.3%").
    /// Files written before the "noisy" flag existed get the note from their `cv`.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.flags.clone();
        notes.retain(|f| f != "noisy");
        if self.cv > NOISY_CV {
            notes.push(format!("noisy: CV {:.1}%", self.cv * 100.0));
        }
        notes
    }
}

/// The coefficient of variation, sample sd / mean (0 for a mean that is not positive).
pub(crate) fn cv(rates: &[f64]) -> f64 {
    let m = mean(rates);
    if m > 0.0 { stddev(rates) / m } else { 0.0 }
}

/// `target`: the precision the test aimed for, if any.
pub(crate) fn analyse(
    rates: &[f64],
    stop_reason: StopReason,
    target: Option<f64>,
    seed: u64,
) -> TestStats {
    let med = median(rates);
    let median_ci = median_ci(rates, seed);
    let steadiness = check(rates);
    let outliers = classify(rates);
    let median_ci_rel = median_ci.relative_half_width(med);
    let cv = cv(rates);
    let flags = [
        (steadiness.warmup_drift, "warmup_drift"),
        (steadiness.trending, "trend"),
        (outliers.low_severe + outliers.high_severe > 0, "outliers"),
        (target.is_some_and(|t| !precise(rates, t)), "imprecise"),
        (cv > NOISY_CV, "noisy"),
    ];
    let flags = (flags.into_iter().filter(|f| f.0))
        .map(|f| f.1.to_string())
        .collect();
    TestStats {
        cv,
        interval: LevelInterval::of(Covers::WithinLaunch, rates),
        mean_ci: mean_ci(rates, seed),
        median_ci,
        median_ci_rel,
        median_ci_order: order::median_ci_95(rates),
        outliers,
        steadiness,
        stop_reason,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_policy_stops_exactly_at_the_count() {
        let p = StopPolicy::fixed(5);
        assert_eq!(p.should_stop(&[1.0; 4], 0.0, 1), None);
        assert_eq!(p.should_stop(&[1.0; 5], 0.0, 1), Some(StopReason::Fixed));
    }

    #[test]
    fn adaptive_policy_stops_on_precision_count_or_time() {
        let p = StopPolicy {
            min_repetitions: 5,
            ci_target: Some(0.01),
            max_repetitions: 8,
            max_seconds: 10.0,
        };
        // Precise at 6 and again at 7: two consecutive looks.
        let tight = [100.0, 100.1, 99.9, 100.0, 100.05, 99.95, 100.02];
        assert_eq!(p.should_stop(&tight[..6], 1.0, 1), None, "one look only");
        assert_eq!(p.should_stop(&tight, 1.0, 1), Some(StopReason::Precision));
        let wide = [80.0, 120.0, 90.0, 110.0, 100.0];
        assert_eq!(p.should_stop(&wide, 1.0, 1), None);
        assert_eq!(p.should_stop(&wide, 11.0, 1), Some(StopReason::MaxTime));
        let wide8 = [80.0, 120.0, 90.0, 110.0, 100.0, 85.0, 115.0, 95.0];
        assert_eq!(
            p.should_stop(&wide8, 1.0, 1),
            Some(StopReason::MaxRepetitions)
        );
        assert_eq!(p.should_stop(&tight[..3], 100.0, 1), None, "minimum first");
    }

    #[test]
    fn analysis_flags_what_it_finds() {
        let drift = [
            70.0, 100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 100.0, 99.9, 100.3,
        ];
        let s = analyse(&drift, StopReason::Fixed, Some(0.001), 1);
        assert!(s.flags.contains(&"warmup_drift".to_string()), "{s:?}");
        assert!(s.flags.contains(&"outliers".to_string()), "{s:?}");
        assert!(s.median_ci.contains(median(&drift)));
        let clean = analyse(
            &[100.0, 100.2, 99.8, 100.1, 99.9, 100.05],
            StopReason::Precision,
            Some(0.01),
            1,
        );
        assert!(clean.flags.is_empty(), "{clean:?}");
        assert!(clean.cv > 0.0 && clean.cv < 0.01);
    }

    #[test]
    fn precision_is_never_claimed_below_six_samples() {
        // The case: ci_target 0.02 with repetitions 3 stopped "precise" after 3.
        let p = StopPolicy {
            min_repetitions: 3,
            ci_target: Some(0.02),
            max_repetitions: 50,
            max_seconds: 600.0,
        };
        let rates = [100.0, 100.2, 99.9, 100.1, 99.8, 100.0, 100.3];
        // 6 samples are the first look with an interval; the second look (7) may stop.
        for n in 3..7 {
            assert_eq!(p.should_stop(&rates[..n], 1.0, 1), None, "n = {n}");
        }
        assert_eq!(
            p.should_stop(&rates[..7], 1.0, 1),
            Some(StopReason::Precision)
        );
        // Identical samples too: a zero-width bootstrap interval is not evidence.
        assert_eq!(p.should_stop(&[100.0; 3], 1.0, 1), None);
    }

    #[test]
    fn precision_needs_both_ends_of_the_order_interval_within_the_target() {
        // Six samples: the interval is [min, max].
        let rates = [100.0, 100.0, 100.0, 100.0, 100.0, 103.0];
        assert!(!precise(&rates, 0.02), "the high end is 3% out");
        assert!(precise(&rates, 0.031));
    }

    #[test]
    fn a_test_under_six_samples_with_a_target_is_flagged_imprecise() {
        let s = analyse(
            &[100.0, 100.1, 99.9],
            StopReason::MaxRepetitions,
            Some(0.02),
            1,
        );
        assert!(s.flags.contains(&"imprecise".to_string()), "{s:?}");
        assert_eq!(s.median_ci_order, None);
        let s = analyse(&[100.0; 6], StopReason::Precision, Some(0.02), 1);
        assert!(s.flags.is_empty(), "{s:?}");
        assert!(s.median_ci_order.is_some());
    }

    #[test]
    fn a_cv_above_five_percent_is_noted_with_its_value() {
        // Mean 100, sample sd 7.3: CV 7.3%.
        let rates = [100.0 - 7.3, 100.0 + 7.3, 100.0 - 7.3, 100.0 + 7.3, 100.0];
        let s = analyse(&rates, StopReason::Fixed, None, 1);
        let cv = s.cv;
        assert!(cv > NOISY_CV, "{cv}");
        assert!(s.flags.contains(&"noisy".to_string()), "{s:?}");
        assert!(
            s.notes().contains(&format!("noisy: CV {:.1}%", cv * 100.0)),
            "{:?}",
            s.notes()
        );
        assert!(
            !s.notes().contains(&"noisy".to_string()),
            "once, with its value"
        );
        let quiet = analyse(
            &[100.0, 101.0, 99.0, 100.5, 99.5],
            StopReason::Fixed,
            None,
            1,
        );
        assert!(quiet.notes().is_empty(), "{quiet:?}");
    }

    #[test]
    fn an_older_record_without_the_flag_still_gets_the_note() {
        let mut s = analyse(
            &[90.0, 110.0, 95.0, 105.0, 100.0],
            StopReason::Fixed,
            None,
            1,
        );
        s.flags.clear();
        assert_eq!(s.notes(), vec![format!("noisy: CV {:.1}%", s.cv * 100.0)]);
    }
}
