//! The answer to "which variant should I run", as a set where noise leaves it one: the
//! fastest variant within an error budget with the ones it ties with, and the Pareto front of
//! speed against error with ties kept. One function for the ladder table, the leaderboard's
//! answer and the runner's `rounds = "auto"`, which keeps adding rounds while a comparison
//! this answer depends on is open.
//!
//! Within one run whose variants all have 2 or more interleaved rounds, speeds are compared
//! paired by round over a Holm family (`pairs`); otherwise (one launch per variant, or rows
//! from different runs) a speed difference is established only when the intervals are
//! apart (`ties`), the rule across runs.

use super::pairs::{Design, PairVerdict, judge};
use super::ties::{Figure, pareto_front_by};

/// One variant: its speed (a rate with its own interval), its round medians in round order,
/// and its error (KLD with ±1.96 se), when measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub speed: Figure,
    pub rounds: Vec<f64>,
    pub error: Option<Figure>,
}

/// How speed ties were judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Paired by round (t on the log ratios of the round medians), Holm over `family` pairs
    /// (every pair of the variants) at 5%, with `rounds` rounds (the fewest of any variant).
    Paired {
        rounds: usize,
        family: usize,
        design: Design,
    },
    /// The variants' own 95% intervals overlap.
    Overlap,
}

impl Rule {
    /// "paired by round over 5 rounds, Holm over 7 pairs at 5%" / "...". For the note
    /// under an answer.
    pub fn describe(&self) -> String {
        match self {
            Rule::Paired {
                rounds,
                family,
                design,
            } => {
                let seq = match design {
                    Design::Fixed => String::new(),
                    Design::Sequential { max_rounds } => format!(
                        "; rounds added until resolved (at most {max_rounds}), 5% spent over {} looks",
                        design.looks()
                    ),
                };
                format!(
                    "ties: decode not established apart paired by round (t on the log ratios of \
                     the {rounds} interleaved rounds' medians), Holm over all {family} pairs at \
                     5%{seq}"
                )
            }
            Rule::Overlap => {
                "ties: decode intervals overlap (the rows are not all from one run with 2 or more interleaved rounds: nothing pairs them)".into()
            }
        }
    }
}

/// The answer over a set of choices.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub rule: Rule,
    /// The fastest choice within the budget (every choice when none has an error).
    pub best: Option<usize>,
    /// The choices within the budget that `best` is not established faster than.
    pub best_ties: Vec<usize>,
    /// On the Pareto front of speed against error, ties kept (false without an error).
    pub front: Vec<bool>,
    /// For each front choice, the other front choices its speed ties with.
    pub front_ties: Vec<Vec<usize>>,
    /// The comparisons the answer depends on that are not established: `best` against a
    /// rival within the budget, or a choice the point estimates put off the front but
    /// neither speed nor error establishes off it. (a, b): the faster first.
    pub open: Vec<(usize, usize)>,
    /// How many comparisons the answer depends on (the pairs `open` is drawn from).
    pub needed: usize,
    /// The paired verdicts (empty under [`Rule::Overlap`]).
    pub pairs: Vec<PairVerdict>,
}

/// Resolves the answer over `cs` with error budget `budget`. `paired`: the choices' rounds
/// were interleaved in one run, taken under this design; pairing is used only when every
/// choice has 2 or more rounds.
pub fn resolve(cs: &[Choice], budget: f64, paired: Option<Design>, alpha: f64) -> Resolution {
    let n = cs.len();
    let any_error = cs.iter().any(|c| c.error.is_some());
    let eligible: Vec<usize> = (0..n)
        .filter(|&i| match cs[i].error {
            Some(e) => e.value <= budget,
            None => !any_error,
        })
        .collect();
    let best = eligible
        .iter()
        .copied()
        .max_by(|&a, &b| cs[a].speed.value.total_cmp(&cs[b].speed.value));
    // The answer's comparisons: best against each rival within the budget; every pair where
    // the point estimates put one off the front.
    let with_error: Vec<usize> = (0..n).filter(|&i| cs[i].error.is_some()).collect();
    let points: Vec<(Figure, Figure)> = with_error
        .iter()
        .map(|&i| (cs[i].speed, cs[i].error.unwrap()))
        .collect();
    let mut needed: Vec<(usize, usize)> = Vec::new();
    let push = |v: &mut Vec<(usize, usize)>, a: usize, b: usize| {
        if a != b && !v.iter().any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a)) {
            v.push((a, b));
        }
    };
    if let Some(b) = best {
        for &e in &eligible {
            push(&mut needed, b, e);
        }
    }
    let dominates = |j: usize, i: usize| {
        let (sj, ej) = (cs[j].speed.value, cs[j].error.unwrap().value);
        let (si, ei) = (cs[i].speed.value, cs[i].error.unwrap().value);
        sj >= si && ej <= ei && (sj > si || ej < ei)
    };
    for &i in &with_error {
        for &j in &with_error {
            if i != j && dominates(j, i) {
                push(&mut needed, j, i);
            }
        }
    }
    let answer_pairs = needed.len();
    // The Holm family: every pair, not only those the answer needs. Which pairs the answer
    // needs depends on the data (the fastest is the largest estimate), and a family chosen by
    // the data would not hold its level: with 4 identical variants, "the fastest against the
    // others" was called established 5.5% of the time over the looks of auto rounds
    // (tests/it/monte_carlo/sequential.rs).
    let mut family = needed.clone();
    for i in 0..n {
        for k in i + 1..n {
            push(&mut family, i, k);
        }
    }
    let can_pair = paired.is_some() && n >= 2 && cs.iter().all(|c| c.rounds.len() >= 2);
    let (rule, verdicts) = match (can_pair, paired) {
        (true, Some(design)) => {
            let rounds: Vec<Vec<f64>> = cs.iter().map(|c| c.rounds.clone()).collect();
            let v = judge(&rounds, &family, alpha, design);
            let fewest = cs.iter().map(|c| c.rounds.len()).min().unwrap_or(0);
            (
                Rule::Paired {
                    rounds: fewest,
                    family: family.len(),
                    design,
                },
                v,
            )
        }
        _ => (Rule::Overlap, Vec::new()),
    };
    // x established faster than y.
    let faster = |x: usize, y: usize| -> bool {
        match rule {
            Rule::Overlap => cs[x].speed.established_above(&cs[y].speed),
            Rule::Paired { .. } => verdicts.iter().any(|v| {
                (v.a, v.b) == (y, x) && v.established > 0
                    || (v.a, v.b) == (x, y) && v.established < 0
            }),
        }
    };
    let tie = |x: usize, y: usize| !faster(x, y) && !faster(y, x);
    let best_ties: Vec<usize> = match best {
        Some(b) => eligible
            .iter()
            .copied()
            .filter(|&e| e != b && tie(b, e))
            .collect(),
        None => Vec::new(),
    };
    let front_sub = pareto_front_by(&points, &|j, i| faster(with_error[j], with_error[i]));
    let mut front = vec![false; n];
    for (k, &i) in with_error.iter().enumerate() {
        front[i] = front_sub[k];
    }
    let front_ties: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            if !front[i] {
                return Vec::new();
            }
            (0..n)
                .filter(|&k| k != i && front[k] && tie(i, k))
                .collect()
        })
        .collect();
    let open: Vec<(usize, usize)> = needed[..answer_pairs]
        .iter()
        .filter(|&&(a, b)| {
            let error_apart = match (cs[a].error, cs[b].error) {
                (Some(ea), Some(eb)) => ea.established_above(&eb) || eb.established_above(&ea),
                _ => false,
            };
            // A best-within-budget pair needs the speed; a front pair is settled by either.
            let is_best_pair = best.is_some_and(|x| x == a) && eligible.contains(&b);
            tie(a, b) && (is_best_pair || !error_apart)
        })
        .copied()
        .collect();
    Resolution {
        rule,
        best,
        best_ties,
        front,
        front_ties,
        open,
        needed: answer_pairs,
        pairs: verdicts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(level: f64, swings: &[f64], kld: Option<f64>) -> Choice {
        let rounds: Vec<f64> = swings.iter().map(|s| level * s).collect();
        let i = crate::stats::analysis::LevelInterval::of(
            crate::stats::analysis::Covers::BetweenRounds,
            &rounds,
        );
        Choice {
            speed: match i {
                Some(i) => Figure {
                    value: crate::stats::mean(&rounds),
                    lo: i.lo,
                    hi: i.hi,
                },
                None => Figure::point(level),
            },
            rounds,
            error: kld.map(|k| Figure::around(k, 0.001)),
        }
    }

    const SWINGS: [f64; 5] = [1.0, 1.15, 0.87, 1.08, 0.92];

    fn jitter(c: &mut Choice, j: &[f64]) {
        for (r, x) in c.rounds.iter_mut().zip(j) {
            *r *= x;
        }
    }

    #[test]
    fn paired_rounds_separate_what_overlapping_intervals_tie() {
        let a = choice(100.0, &SWINGS, Some(0.01));
        let mut b = choice(110.0, &SWINGS, Some(0.03));
        jitter(&mut b, &[1.004, 0.997, 1.002, 0.998, 1.001]);
        let cs = [a, b];
        let paired = resolve(&cs, 0.05, Some(Design::Fixed), 0.05);
        assert!(matches!(paired.rule, Rule::Paired { rounds: 5, .. }));
        assert_eq!(paired.best, Some(1));
        assert!(paired.best_ties.is_empty(), "{paired:?}");
        assert!(paired.open.is_empty(), "{paired:?}");
        let overlap = resolve(&cs, 0.05, None, 0.05);
        assert_eq!(overlap.rule, Rule::Overlap);
        assert_eq!(overlap.best_ties, vec![0]);
        assert_eq!(overlap.open, vec![(1, 0)]);
        // Both on the front: a trade-off (faster, worse KLD), and tied only unpaired.
        assert_eq!(paired.front, vec![true, true]);
        assert!(paired.front_ties[0].is_empty());
        assert_eq!(overlap.front_ties[0], vec![1]);
    }

    #[test]
    fn a_dominated_choice_leaves_the_front_once_established_and_stays_open_until_then() {
        let a = choice(100.0, &SWINGS, Some(0.01));
        let mut b = choice(99.0, &SWINGS, Some(0.0105));
        jitter(&mut b, &[1.02, 0.98, 1.01, 0.99, 1.0]);
        let r = resolve(&[a.clone(), b], 0.05, Some(Design::Fixed), 0.05);
        // 1% slower and its KLD within the other's error: not established, both stay.
        assert_eq!(r.front, vec![true, true]);
        assert!(r.open.contains(&(0, 1)), "{r:?}");
        let mut c = choice(80.0, &SWINGS, Some(0.0105));
        jitter(&mut c, &[1.004, 0.997, 1.002, 0.998, 1.001]);
        let r = resolve(&[a, c], 0.05, Some(Design::Fixed), 0.05);
        assert_eq!(r.front, vec![true, false]);
        assert!(r.open.is_empty(), "{r:?}");
    }

    #[test]
    fn without_errors_the_answer_is_the_fastest_and_one_round_falls_back_to_overlap() {
        let a = choice(100.0, &[1.0], None);
        let b = choice(50.0, &[1.0], None);
        let r = resolve(&[a, b], 0.05, Some(Design::Fixed), 0.05);
        assert_eq!(r.rule, Rule::Overlap);
        assert_eq!(r.best, Some(0));
        assert!(r.front.iter().all(|f| !f));
    }
}
