//! The answer to "which variant should I run": the fastest within an error budget with the
//! ones it ties with, and the Pareto front of speed against error, ties kept. One function
//! for the ladder table, the leaderboard and `rounds = "auto"`.
//!
//! Variants that were not interleaved in one run are compared against each side's interval
//! plus a noise floor per launch, because one launch's intervals leave that noise out.

use super::bootstrap::Interval;
use super::compare::{Comparison, Method, NoiseFloor, Verdict, normal_quantile, p_beyond};
use super::pairs::{Design, PairVerdict, holm, judge};
use super::steady::normal_cdf;
use super::ties::{Figure, pareto_front_by};

/// The answer's indifference: established slower only by more than 2%, so launches cannot
/// contradict each other on a smaller gap (Q4_K_M, 3% behind Q6_K, flipped 6-7% of the time
/// without it: tests/it/monte_carlo/stability.rs).
pub const INDIFFERENCE: f64 = 0.02;

/// One variant: its speed, its round medians in round order, and its error (KLD ± 1.96 se).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub speed: Figure,
    pub rounds: Vec<f64>,
    pub error: Option<Figure>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Paired by round (t on the log ratios of the round medians), Holm over `family` pairs
    /// (every pair of the variants) at 5%, with `rounds` rounds (the fewest of any variant).
    Paired {
        rounds: usize,
        family: usize,
        design: Design,
    },
    /// [`Rule::Paired`] for the `family` pairs of one run, [`Rule::Apart`] for the rest of the
    /// table's `of` pairs (those of the `apart` choices); 5% split over the families by count.
    Mixed {
        rounds: usize,
        family: usize,
        of: usize,
        design: Design,
        apart: usize,
        floor: NoiseFloor,
    },
    /// Nothing pairs the rows: a z test on the log ratio, each side's interval widened by
    /// `floor` per launch, Holm over all `family` pairs at 5%.
    Apart { family: usize, floor: NoiseFloor },
}

/// The note a sequential design adds to the rule; none for a fixed one.
fn sequential_note(design: &Design, level: &str) -> String {
    match design {
        Design::Fixed => String::new(),
        Design::Sequential { max_rounds } => format!(
            "; rounds added until resolved (at most {max_rounds}), {level} spent over {} looks",
            design.looks()
        ),
    }
}

impl Rule {
    /// The note under an answer.
    pub fn describe(&self) -> String {
        match self {
            Rule::Paired {
                rounds,
                family,
                design,
            } => format!(
                "ties: decode not established apart by more than {:.0}% paired by round (t on \
                 the log ratios of the {rounds} interleaved rounds' medians), Holm over all \
                 {family} pairs at 5%{}",
                INDIFFERENCE * 100.0,
                sequential_note(design, "5%")
            ),
            Rule::Mixed {
                rounds,
                family,
                of,
                design,
                apart,
                floor,
            } => {
                let level = format!("{:.1}%", 5.0 * *family as f64 / (*of).max(1) as f64);
                let rest = format!("{:.1}%", 5.0 * (*of - *family) as f64 / (*of).max(1) as f64);
                format!(
                    "ties: decode not established apart by more than {:.0}% paired by round within \
                 one run (t on the log ratios of the {rounds} interleaved rounds' medians), Holm over its {family} \
                 pairs at {level} (5% split over the table's {of} pairs by count){}; {apart} {} \
                 measured apart from it (another run, or one launch) judged against the noise \
                 between launches, Holm at {rest} ({})",
                    INDIFFERENCE * 100.0,
                    sequential_note(design, &level),
                    if *apart == 1 { "row" } else { "rows" },
                    floor.describe(),
                )
            }
            Rule::Apart { family, floor } => format!(
                "ties: decode not established apart by more than {:.0}% against the noise \
                 between launches (nothing pairs these rows: one round each, or different runs; \
                 each row's interval is widened by the {}), Holm over all {family} pairs at 5%; \
                 interleaved rounds pair them (`tpsbench run --rounds auto`)",
                INDIFFERENCE * 100.0,
                floor.describe()
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub rule: Rule,
    /// The fastest choice within the budget (every choice is when none has an error).
    pub best: Option<usize>,
    /// The choices within the budget that `best` is not established faster than.
    pub best_ties: Vec<usize>,
    /// On the Pareto front of speed against error, ties kept (false without an error).
    pub front: Vec<bool>,
    pub front_ties: Vec<Vec<usize>>,
    /// The comparisons the answer depends on that are not established: `best` against a
    /// rival within the budget, or a choice the point estimates put off the front but
    /// neither speed nor error establishes off it. (a, b): the faster first.
    pub open: Vec<(usize, usize)>,
    /// How many comparisons the answer depends on (the pairs `open` is drawn from).
    pub needed: usize,
    pub pairs: Vec<PairVerdict>,
}

/// Which run a choice was measured in, and that run's design: choices of one run had their
/// rounds interleaved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    pub id: usize,
    pub design: Design,
}

/// Resolves the answer over `cs` within `budget`; `paired`: all were interleaved in one run
/// under this design.
pub fn resolve(
    cs: &[Choice],
    budget: f64,
    paired: Option<Design>,
    alpha: f64,
    floor: &NoiseFloor,
) -> Resolution {
    let runs = vec![paired.map(|design| Run { id: 0, design }); cs.len()];
    resolve_runs(cs, &runs, budget, alpha, floor)
}

/// [`resolve`] over several runs (`runs[i]`: choice i's, `None` when nothing pairs it): a pair
/// of one run, 2 rounds or more each, is paired; each run's pairs are one Holm family.
pub fn resolve_runs(
    cs: &[Choice],
    runs: &[Option<Run>],
    budget: f64,
    alpha: f64,
    floor: &NoiseFloor,
) -> Resolution {
    let n = cs.len();
    let (eligible, best) = best_within(cs, budget);
    // The answer's comparisons: best against each rival within the budget; every pair where
    // the point estimates put one off the front.
    let with_error: Vec<usize> = (0..n).filter(|&i| cs[i].error.is_some()).collect();
    let needed = needed_pairs(cs, &eligible, best, &with_error);
    let answer_pairs = needed.len();
    // The Holm family is every pair: a family chosen by the data does not hold its level
    // (5.5% with 4 identical variants, tests/it/monte_carlo/sequential.rs).
    let mut family = needed.clone();
    for i in 0..n {
        for k in i + 1..n {
            push_pair(&mut family, i, k);
        }
    }
    let (rule, verdicts) = judge_runs(cs, runs, &family, alpha, floor);
    let v = &verdicts;
    let best_ties = (eligible.iter().copied())
        .filter(|&e| best.is_some_and(|b| e != b && tie(v, b, e)))
        .collect();
    let front = front(cs, &with_error, v);
    let front_ties = front_ties(&front, v);
    let open = open_pairs(cs, &needed[..answer_pairs], best, &eligible, v);
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

/// The choices within `budget` (every choice when none has an error), and the fastest.
fn best_within(cs: &[Choice], budget: f64) -> (Vec<usize>, Option<usize>) {
    let any_error = cs.iter().any(|c| c.error.is_some());
    let eligible: Vec<usize> = (0..cs.len())
        .filter(|&i| match cs[i].error {
            Some(e) => e.value <= budget,
            None => !any_error,
        })
        .collect();
    let best = eligible
        .iter()
        .copied()
        .max_by(|&a, &b| cs[a].speed.value.total_cmp(&cs[b].speed.value));
    (eligible, best)
}

/// Whether `x` is established faster than `y` by the family's verdicts: paired by round
/// where the pair was measured together, against the noise floor where it was not.
fn faster(verdicts: &[PairVerdict], x: usize, y: usize) -> bool {
    verdicts.iter().any(|v| {
        (v.a, v.b) == (y, x) && v.established > 0 || (v.a, v.b) == (x, y) && v.established < 0
    })
}

fn tie(verdicts: &[PairVerdict], x: usize, y: usize) -> bool {
    !faster(verdicts, x, y) && !faster(verdicts, y, x)
}

/// For each choice, whether it is on the Pareto front of speed against error among those
/// with an error (`with_error`), a choice leaving it only when established slower.
fn front(cs: &[Choice], with_error: &[usize], v: &[PairVerdict]) -> Vec<bool> {
    let points: Vec<(Figure, Figure)> = with_error
        .iter()
        .map(|&i| (cs[i].speed, cs[i].error.unwrap()))
        .collect();
    let front_sub = pareto_front_by(&points, &|j, i| faster(v, with_error[j], with_error[i]));
    let mut front = vec![false; cs.len()];
    for (&i, on) in with_error.iter().zip(front_sub) {
        front[i] = on;
    }
    front
}

fn front_ties(front: &[bool], v: &[PairVerdict]) -> Vec<Vec<usize>> {
    let n = front.len();
    let ties = |i: usize| (0..n).filter(move |&k| front[i] && k != i && front[k] && tie(v, i, k));
    (0..n).map(|i| ties(i).collect()).collect()
}

/// The comparisons of `needed` that are not established: their speeds tie and, for a front
/// pair, their errors do not settle it either.
fn open_pairs(
    cs: &[Choice],
    needed: &[(usize, usize)],
    best: Option<usize>,
    eligible: &[usize],
    v: &[PairVerdict],
) -> Vec<(usize, usize)> {
    needed
        .iter()
        .filter(|&&(a, b)| {
            let error_apart = match (cs[a].error, cs[b].error) {
                (Some(ea), Some(eb)) => ea.established_above(&eb) || eb.established_above(&ea),
                _ => false,
            };
            // A best-within-budget pair needs the speed; a front pair is settled by either.
            let is_best_pair = best.is_some_and(|x| x == a) && eligible.contains(&b);
            tie(v, a, b) && (is_best_pair || !error_apart)
        })
        .copied()
        .collect()
}

fn push_pair(v: &mut Vec<(usize, usize)>, a: usize, b: usize) {
    if a != b && !v.iter().any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a)) {
        v.push((a, b));
    }
}

/// The comparisons the answer depends on: `best` against each rival within the budget
/// (`eligible`), and every pair of `with_error` where the point estimates put one off the
/// front (the dominating one first).
fn needed_pairs(
    cs: &[Choice],
    eligible: &[usize],
    best: Option<usize>,
    with_error: &[usize],
) -> Vec<(usize, usize)> {
    let mut needed: Vec<(usize, usize)> = Vec::new();
    if let Some(b) = best {
        for &e in eligible {
            push_pair(&mut needed, b, e);
        }
    }
    let dominates = |j: usize, i: usize| {
        let (sj, ej) = (cs[j].speed.value, cs[j].error.unwrap().value);
        let (si, ei) = (cs[i].speed.value, cs[i].error.unwrap().value);
        sj >= si && ej <= ei && (sj > si || ej < ei)
    };
    for &i in with_error {
        for &j in with_error {
            if i != j && dominates(j, i) {
                push_pair(&mut needed, j, i);
            }
        }
    }
    needed
}

/// Whether choices `a` and `b` were measured together: one run, 2 or more rounds each.
fn pairable(cs: &[Choice], runs: &[Option<Run>], a: usize, b: usize) -> bool {
    let run_of = |i: usize| runs.get(i).copied().flatten();
    cs[a].rounds.len() >= 2
        && cs[b].rounds.len() >= 2
        && matches!((run_of(a), run_of(b)), (Some(x), Some(y)) if x.id == y.id)
}

/// The verdicts on `family`: the pairs measured together paired by round (each run's pairs
/// one Holm family), the others against the noise floor (one Holm family), each family at
/// its share of `alpha` by count; and the rule that describes the table.
fn judge_runs(
    cs: &[Choice],
    runs: &[Option<Run>],
    family: &[(usize, usize)],
    alpha: f64,
    floor: &NoiseFloor,
) -> (Rule, Vec<PairVerdict>) {
    let n = cs.len();
    let run_of = |i: usize| runs.get(i).copied().flatten();
    type Pairs = Vec<(usize, usize)>;
    let (paired_family, apart_family): (Pairs, Pairs) = family
        .iter()
        .copied()
        .partition(|&(a, b)| pairable(cs, runs, a, b));
    let rounds: Vec<Vec<f64>> = cs.iter().map(|c| c.rounds.clone()).collect();
    let paired_runs = paired_family.iter().filter_map(|&(a, _)| run_of(a));
    let ids = crate::util::sorted_unique(paired_runs.map(|r| r.id));
    let share = |k: usize| alpha * k as f64 / family.len().max(1) as f64;
    let mut verdicts = Vec::new();
    for id in &ids {
        let of_run: Vec<(usize, usize)> = paired_family
            .iter()
            .copied()
            .filter(|&(a, _)| run_of(a).is_some_and(|r| r.id == *id))
            .collect();
        let design = run_of(of_run[0].0).map_or(Design::Fixed, |r| r.design);
        let level = share(of_run.len());
        verdicts.extend(judge(&rounds, &of_run, level, design, INDIFFERENCE));
    }
    let level = share(apart_family.len());
    verdicts.extend(judge_apart(cs, &apart_family, level, floor.sd));
    let in_pairs: Vec<usize> = (0..n)
        .filter(|&i| paired_family.iter().any(|&(a, b)| a == i || b == i))
        .collect();
    let fewest = (in_pairs.iter().map(|&i| cs[i].rounds.len()))
        .min()
        .unwrap_or(0);
    let first_design = paired_family
        .first()
        .and_then(|&(a, _)| run_of(a))
        .map_or(Design::Fixed, |r| r.design);
    let rule = if paired_family.is_empty() {
        Rule::Apart {
            family: family.len(),
            floor: floor.clone(),
        }
    } else if paired_family.len() == family.len() {
        Rule::Paired {
            rounds: fewest,
            family: family.len(),
            design: first_design,
        }
    } else {
        Rule::Mixed {
            rounds: fewest,
            family: paired_family.len(),
            of: family.len(),
            design: first_design,
            apart: n - in_pairs.len(),
            floor: floor.clone(),
        }
    };
    (rule, verdicts)
}

/// The sd of a choice's mean log rate: half its 95% interval's log width over 1.96 (for a t
/// interval an overstatement, the safe side).
fn log_se(f: &Figure) -> f64 {
    if f.lo > 0.0 && f.hi > f.lo {
        (f.hi.ln() - f.lo.ln()) / (2.0 * 1.959_964)
    } else {
        0.0
    }
}

/// Unpaired pairs: a z test on the log ratio with variance se_a² + se_b² + 2·floor² (a
/// launch's level, which its own repetitions cannot show), Holm over `pairs` at `alpha`.
fn judge_apart(
    cs: &[Choice],
    pairs: &[(usize, usize)],
    alpha: f64,
    floor: f64,
) -> Vec<PairVerdict> {
    let m = pairs.len().max(1) as f64;
    let z_family = normal_quantile(1.0 - alpha / m / 2.0);
    let tests: Vec<(f64, f64, f64)> = pairs
        .iter()
        .map(|&(a, b)| {
            let (fa, fb) = (&cs[a].speed, &cs[b].speed);
            let d = fb.value.max(f64::MIN_POSITIVE).ln() - fa.value.max(f64::MIN_POSITIVE).ln();
            let se = (log_se(fa).powi(2) + log_se(fb).powi(2) + 2.0 * floor * floor).sqrt();
            // Established only beyond the indifference, as paired pairs are.
            let p = p_beyond(d, se, INDIFFERENCE, |z| 2.0 * (1.0 - normal_cdf(z.abs())));
            (d, se, p)
        })
        .collect();
    let p: Vec<f64> = tests.iter().map(|t| t.2).collect();
    let rejected = holm(&p, alpha);
    pairs
        .iter()
        .zip(tests)
        .zip(rejected)
        .map(|((&(a, b), (d, se, p)), rejected)| {
            let (established, verdict) = match (rejected, d > 0.0) {
                (false, _) => (0, Verdict::Inconclusive),
                (true, true) => (1, Verdict::Faster),
                (true, false) => (-1, Verdict::Slower),
            };
            PairVerdict {
                a,
                b,
                comparison: Comparison {
                    speedup: d.exp(),
                    ci: Interval::exp_around(d, z_family * se),
                    p_value: p,
                    method: Method::NoiseFloor,
                    rounds: (cs[a].rounds.len().max(1), cs[b].rounds.len().max(1)),
                    rounds_needed: None,
                    verdict,
                },
                established,
                at_rounds: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
