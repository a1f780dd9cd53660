//! Racing: which of many candidates is fastest, without measuring each as often as the
//! closest pair needs (docs/tune.md: the test, the family, the stop). The own noise is
//! pooled over all survivors, because a pair's own t test (k−1 degrees of freedom)
//! establishes nothing after 2 or 3 rounds at a large family's levels.

use super::log_mean;
use super::resolve::INDIFFERENCE;
use super::student::t_cdf;

/// 2 rounds give the pooled estimate (m−1) degrees of freedom.
pub const FIRST_LOOK: usize = 2;
/// Looks every round until this one; then the gap grows.
const EVERY_ROUND_UNTIL: usize = 6;
/// Each later look is this many times the previous one's rounds (rounded up).
const GROWTH: f64 = 1.25;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Family-wise error of every elimination and tie the race states.
    pub alpha: f64,
    /// A slower candidate is eliminated only beyond this ratio (0.02 = 2%), and within it
    /// two candidates can be established tied.
    pub indifference: f64,
    pub max_rounds: usize,
}

impl Settings {
    /// 5% family-wise, the answer's indifference.
    pub fn new(max_rounds: usize) -> Settings {
        Settings {
            alpha: 0.05,
            indifference: INDIFFERENCE,
            max_rounds: max_rounds.max(FIRST_LOOK),
        }
    }
}

/// The rounds after which a race of at most `max_rounds` looks: 2, 3, 4, 5, 6, 8, 10, 13,
/// ..., and `max_rounds`.
pub fn looks(max_rounds: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut k = FIRST_LOOK;
    while k < max_rounds {
        v.push(k);
        k = if k < EVERY_ROUND_UNTIL {
            k + 1
        } else {
            (k as f64 * GROWTH).ceil() as usize
        };
    }
    if max_rounds >= FIRST_LOOK {
        v.push(max_rounds);
    }
    v
}

/// The claims one look can state about n candidates: n(n−1) ordered "faster beyond the
/// indifference" and n(n−1)/2 "tied within it".
pub fn claims_per_look(n: usize) -> f64 {
    let n = n as f64;
    1.5 * n * (n - 1.0)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The candidate with the highest mean log rate.
    pub leader: usize,
    pub slower: Vec<bool>,
    /// The leader itself: false.
    pub tied: Vec<bool>,
}

impl Judgement {
    pub fn resolved(&self) -> bool {
        (0..self.slower.len()).all(|i| i == self.leader || self.slower[i] || self.tied[i])
    }
}

/// Judges candidates whose `values[i]` are k ≥ 2 round values each (round r of every
/// candidate taken in one stretch of time), each claim one-sided at `level`. None with
/// fewer than 2 candidates or 2 rounds, unequal rounds, or a value that is not a positive
/// number.
pub fn judge(values: &[Vec<f64>], level: f64, indifference: f64) -> Option<Judgement> {
    let m = values.len();
    let k = values.first()?.len();
    let bad = |x: &f64| !x.is_finite() || *x <= 0.0;
    if m < 2 || k < 2 || values.iter().any(|v| v.len() != k || v.iter().any(bad)) {
        return None;
    }
    let logs: Vec<Vec<f64>> = values
        .iter()
        .map(|v| v.iter().map(|x| x.ln()).collect())
        .collect();
    let row: Vec<f64> = logs.iter().map(|v| super::mean(v)).collect();
    let col: Vec<f64> = (0..k)
        .map(|r| logs.iter().map(|v| v[r]).sum::<f64>() / m as f64)
        .collect();
    let grand = super::mean(&row);
    let ss: f64 = (0..m)
        .flat_map(|i| (0..k).map(move |r| (i, r)))
        .map(|(i, r)| logs[i][r] - row[i] - col[r] + grand)
        .map(|e| e * e)
        .sum();
    let df = ((m - 1) * (k - 1)) as f64;
    let sd = (ss / df).sqrt();
    let leader = (0..m).max_by(|&a, &b| row[a].total_cmp(&row[b]))?;
    let se = sd * (2.0 / k as f64).sqrt();
    let margin = indifference.ln_1p();
    // One-sided p of "the statistic is above zero".
    let p = |t: f64| {
        if se > 0.0 {
            1.0 - t_cdf(t / se, df)
        } else if t > 0.0 {
            0.0
        } else {
            1.0
        }
    };
    let mut slower = vec![false; m];
    let mut tied = vec![false; m];
    for j in (0..m).filter(|&j| j != leader) {
        let d = row[leader] - row[j];
        slower[j] = p(d - margin) <= level;
        tied[j] = p(margin - d).max(p(d + margin)) <= level;
    }
    Some(Judgement {
        leader,
        slower,
        tied,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    OneLeft,
    /// Every other survivor is established within the indifference of the leader.
    Resolved,
    /// The budget ended: "max_rounds 20 reached", "600 s of max_seconds 600".
    Budget(String),
}

impl Stop {
    pub fn describe(&self) -> String {
        match self {
            Stop::OneLeft => "one candidate left".into(),
            Stop::Resolved => "every other survivor established tied with the leader".into(),
            Stop::Budget(why) => format!("budget spent: {why}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Established slower than `by` (the leader then) after `at_round` rounds; `ratio`: the
    /// leader's geometric mean over this candidate's, over the rounds both ran.
    Slower {
        by: usize,
        at_round: usize,
        ratio: f64,
    },
    /// `at_round` is 1-based.
    Failed { at_round: usize },
}

/// A race over `n` candidates (indices 0..n), fed one round at a time.
#[derive(Debug, Clone)]
pub struct Race {
    settings: Settings,
    looks: Vec<usize>,
    level: f64,
    rounds: Vec<Vec<f64>>,
    out: Vec<Option<Out>>,
    /// At the last look.
    tied: Vec<bool>,
    stop: Option<Stop>,
    cost: usize,
}

impl Race {
    pub fn new(n: usize, settings: Settings) -> Race {
        let looks = looks(settings.max_rounds);
        let level = settings.alpha / (claims_per_look(n).max(1.0) * looks.len() as f64);
        Race {
            settings,
            looks,
            level,
            rounds: vec![Vec::new(); n],
            out: vec![None; n],
            tied: vec![false; n],
            stop: None,
            cost: 0,
        }
    }

    pub fn survivors(&self) -> Vec<usize> {
        (0..self.out.len())
            .filter(|&i| self.out[i].is_none())
            .collect()
    }

    pub fn rounds_done(&self) -> usize {
        self.survivors()
            .first()
            .map_or(0, |&i| self.rounds[i].len())
    }

    /// Candidate-rounds run so far, the failed ones too.
    pub fn cost(&self) -> usize {
        self.cost
    }

    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// Each claim's level at each look (alpha over the family and the looks).
    pub fn level(&self) -> f64 {
        self.level
    }

    pub fn rounds_of(&self, i: usize) -> &[f64] {
        &self.rounds[i]
    }

    pub fn out(&self, i: usize) -> Option<&Out> {
        self.out[i].as_ref()
    }

    /// One round of the survivors: `values` holds (candidate, rate) for each survivor, or
    /// None for one whose measurement failed (it leaves the race). Judges at a planned look
    /// and says whether the race stopped.
    pub fn add_round(&mut self, values: &[(usize, Option<f64>)]) -> Option<&Stop> {
        if self.stop.is_some() {
            return self.stop.as_ref();
        }
        let round = self.rounds_done() + 1;
        for &(i, v) in values {
            if self.out[i].is_some() {
                continue;
            }
            self.cost += 1;
            match v.filter(|x| x.is_finite() && *x > 0.0) {
                Some(x) => self.rounds[i].push(x),
                None => self.out[i] = Some(Out::Failed { at_round: round }),
            }
        }
        // A survivor without this round's value (not given) leaves as failed: the rounds of
        // the survivors stay aligned, which the pairing needs.
        for i in self.survivors() {
            if self.rounds[i].len() < round {
                self.out[i] = Some(Out::Failed { at_round: round });
            }
        }
        let alive = self.survivors();
        if alive.len() <= 1 {
            self.stop = Some(Stop::OneLeft);
        } else if self.looks.contains(&round) {
            self.look(&alive, round);
        }
        if self.stop.is_none() && round >= self.settings.max_rounds {
            let max = self.settings.max_rounds;
            self.stop = Some(Stop::Budget(format!("max_rounds {max} reached")));
        }
        self.stop.as_ref()
    }

    pub fn end(&mut self, why: String) {
        self.stop.get_or_insert(Stop::Budget(why));
    }

    fn look(&mut self, alive: &[usize], round: usize) {
        let values: Vec<Vec<f64>> = alive.iter().map(|&i| self.rounds[i].clone()).collect();
        let Some(j) = judge(&values, self.level, self.settings.indifference) else {
            return;
        };
        let leader = alive[j.leader];
        for (s, &i) in alive.iter().enumerate() {
            self.tied[i] = j.tied[s];
            if j.slower[s] {
                self.out[i] = Some(Out::Slower {
                    by: leader,
                    at_round: round,
                    ratio: (log_mean(&self.rounds[leader]) - log_mean(&self.rounds[i])).exp(),
                });
                self.tied[i] = false;
            }
        }
        let left = self.survivors();
        if left.len() <= 1 {
            self.stop = Some(Stop::OneLeft);
        } else if left.iter().all(|&i| i == leader || self.tied[i]) {
            self.stop = Some(Stop::Resolved);
        }
    }

    pub fn answer(&self) -> Option<Answer> {
        let alive = self.survivors();
        let geo = |i: usize| log_mean(&self.rounds[i]);
        let leader = *alive.iter().max_by(|&&a, &&b| geo(a).total_cmp(&geo(b)))?;
        let ties = (alive.iter().copied())
            .filter(|&i| i != leader && self.tied[i])
            .collect();
        Some(Answer { leader, ties })
    }
}

/// The race's verdict among its survivors; the others are open (the budget left them).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The survivor with the highest geometric mean over its rounds.
    pub leader: usize,
    pub ties: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round values `level · swing_r · jitter`.
    fn rows(levels: &[f64], swings: &[f64], jitter: &[f64]) -> Vec<Vec<f64>> {
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                swings
                    .iter()
                    .enumerate()
                    .map(|(r, s)| l * s * jitter[(i * 7 + r * 3) % jitter.len()])
                    .collect()
            })
            .collect()
    }

    const SWINGS: [f64; 6] = [1.0, 1.2, 0.85, 1.1, 0.9, 1.05];
    const JITTER: [f64; 5] = [1.01, 0.99, 1.005, 0.995, 1.0];

    #[test]
    fn looks_are_every_round_early_then_sparser_and_always_at_the_budget() {
        assert_eq!(looks(10), vec![2, 3, 4, 5, 6, 8, 10]);
        assert_eq!(looks(2), vec![2]);
        assert!(looks(1000).len() <= 30, "{:?}", looks(1000));
        assert_eq!(*looks(1000).last().unwrap(), 1000);
    }

    #[test]
    fn a_shared_swing_cancels_and_a_clear_gap_is_established_after_two_rounds() {
        // Round swings of 20% hide nothing: every candidate moves with them.
        let v = rows(&[100.0, 60.0, 99.5], &SWINGS[..2], &JITTER);
        let j = judge(&v, 0.001, 0.02).unwrap();
        assert_eq!(j.leader, 0);
        assert_eq!(j.slower, vec![false, true, false]);
        assert!(!j.resolved(), "0.5% apart is not yet established tied");
        let v = rows(&[100.0, 60.0, 99.5], &SWINGS, &JITTER);
        let j = judge(&v, 0.05, 0.02).unwrap();
        assert!(j.tied[2] && j.resolved(), "{j:?}");
    }

    #[test]
    fn a_gap_within_the_indifference_is_never_an_elimination() {
        // 1.5% apart with almost no noise: tied, not slower.
        let v = rows(&[100.0, 98.5], &SWINGS, &[1.0, 1.0001, 0.9999]);
        let j = judge(&v, 0.05, 0.02).unwrap();
        assert_eq!((j.slower[1], j.tied[1]), (false, true));
    }

    #[test]
    fn bad_values_are_not_judged() {
        assert!(judge(&[vec![1.0, 2.0]], 0.05, 0.02).is_none());
        assert!(judge(&[vec![1.0], vec![2.0]], 0.05, 0.02).is_none());
        assert!(judge(&[vec![1.0, 2.0], vec![2.0]], 0.05, 0.02).is_none());
        assert!(judge(&[vec![1.0, 0.0], vec![2.0, 1.0]], 0.05, 0.02).is_none());
    }

    #[test]
    fn a_race_cuts_the_slow_early_and_ends_with_one_left() {
        let levels = [100.0, 50.0, 40.0, 95.0];
        let mut race = Race::new(4, Settings::new(40));
        let mut r = 0;
        while race.stop().is_none() {
            let vals: Vec<(usize, Option<f64>)> = race
                .survivors()
                .into_iter()
                .map(|i| {
                    let x = levels[i] * SWINGS[r % 6] * JITTER[(i + 2 * r) % 5];
                    (i, Some(x))
                })
                .collect();
            race.add_round(&vals);
            r += 1;
        }
        assert_eq!(race.stop(), Some(&Stop::OneLeft));
        let a = race.answer().unwrap();
        assert_eq!(a.leader, 0);
        assert!(a.ties.is_empty() && race.survivors() == [0]);
        // The two halves-as-fast left first; the cost counts only the rounds run.
        let at = |i: usize| match race.out(i) {
            Some(Out::Slower { at_round, by, .. }) => (*at_round, *by),
            o => panic!("{o:?}"),
        };
        assert!(at(1).0 < at(3).0 && at(2).0 < at(3).0, "{race:?}");
        assert_eq!(at(3).1, 0);
        assert!(race.cost() < 4 * race.rounds_done());
    }

    #[test]
    fn the_budget_names_what_stays_open_and_a_failure_leaves_the_race() {
        // Two candidates 3% apart with noise: not separable in 4 rounds.
        let mut race = Race::new(3, Settings::new(4));
        for r in 0..4 {
            let s = SWINGS[r];
            let vals = [
                (0, Some(100.0 * s * JITTER[r])),
                (1, Some(97.0 * s * JITTER[(r + 2) % 5])),
                (2, if r == 1 { None } else { Some(50.0 * s) }),
            ];
            race.add_round(&vals);
        }
        assert_eq!(
            race.stop(),
            Some(&Stop::Budget("max_rounds 4 reached".into()))
        );
        assert_eq!(race.out(2), Some(&Out::Failed { at_round: 2 }));
        let a = race.answer().unwrap();
        assert_eq!(
            (a.leader, a.ties, race.survivors()),
            (0, vec![], vec![0, 1])
        );
        assert_eq!(race.cost(), 3 + 3 + 2 + 2);
    }
}
