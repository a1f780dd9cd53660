//! Racing (issue 46), checked on `stats::race` itself. The spaces are synthetic with known
//! speeds: n candidates, each 5% slower than the one before it (candidate i runs at
//! 1.05^-i of the best). Each round every survivor's log rate is its level plus the round's
//! swing, shared by every survivor of that round, plus its own noise; both sds are the
//! published ladder's decode noise as measured on this VM (`published_noise`: own ≈ 6.8%,
//! shared ≈ 4.5% per round).
//!
//! Counted per trial:
//! - a wrong pick: the answer's leader is more than 5% slower than the best (candidate 2 or
//!   later; candidate 1, 1/1.05 of the best, is a right answer);
//! - a false claim: any elimination or tie the race states that the true speeds contradict
//!   (every true gap here is 5% or more, beyond the 2% indifference: an elimination of a
//!   faster candidate, or any tie) — the family-wise error the race promises to hold at 5%;
//! - the cost: candidate-rounds run.
//!
//! Against fixed rounds: every candidate runs R rounds, judged once with the same test at
//! the same family-wise 5% (`race::judge`, one look). R is the fewest rounds at which that
//! design resolves the space (the leader established apart from, or tied with, every
//! other candidate) at least as often as the race did, or in 95% of trials if the race did
//! more often (which favours the fixed design). The race's budget is large (1,000 rounds)
//! so that it, too, stops by resolving.

use super::sequential::published_noise;
use super::*;
use tpsbench::stats::analysis::{Covers, LevelInterval};
use tpsbench::stats::race::{self as racing, Out, Race, Stop, claims_per_look, judge};

/// The noise of a space: each candidate's own sd per round, the shared swing's sd.
struct Space {
    n: usize,
    own: Vec<f64>,
    shared: f64,
    /// Candidate i's speed relative to the best; 1.05^-i unless an A-A space.
    speed: Vec<f64>,
}

impl Space {
    fn steps(n: usize, own: f64, shared: f64) -> Space {
        Space {
            n,
            own: vec![own; n],
            shared,
            speed: (0..n).map(|i| 1.05f64.powi(-(i as i32))).collect(),
        }
    }

    /// One round of the candidates `who`.
    fn round(&self, noise: &mut Noise, who: &[usize]) -> Vec<f64> {
        let swing = (self.shared * noise.z()).exp();
        who.iter()
            .map(|&i| MU * self.speed[i] * swing * (self.own[i] * noise.z()).exp())
            .collect()
    }

    /// The leader is more than 5% slower than the best.
    fn wrong(&self, pick: usize) -> bool {
        self.speed[pick] * 1.05 < 1.0 - 1e-9
    }

    /// A claim the true speeds contradict: `by` established faster than `who` beyond 2%.
    fn false_elimination(&self, who: usize, by: usize) -> bool {
        self.speed[by] <= self.speed[who] * 1.02
    }

    /// A tie (within 2%) the true speeds contradict.
    fn false_tie(&self, a: usize, b: usize) -> bool {
        let r = self.speed[a] / self.speed[b];
        !(1.0 / 1.02..=1.02).contains(&r)
    }
}

struct Trial {
    wrong: bool,
    false_claim: bool,
    resolved: bool,
    cost: usize,
    /// The leader's 95% interval holds its true level (the median of its rounds' rates).
    covered: bool,
}

fn race_trial(noise: &mut Noise, sp: &Space, max_rounds: usize) -> Trial {
    let mut race = Race::new(sp.n, racing::Settings::new(max_rounds));
    while race.stop().is_none() {
        let who = race.survivors();
        let vals = sp.round(noise, &who);
        let round: Vec<(usize, Option<f64>)> =
            who.into_iter().zip(vals.into_iter().map(Some)).collect();
        race.add_round(&round);
    }
    let a = race.answer().unwrap();
    let eliminations = (0..sp.n).any(|i| match race.out(i) {
        Some(Out::Slower { by, .. }) => sp.false_elimination(i, *by),
        _ => false,
    });
    let ties = a.ties.iter().any(|&t| sp.false_tie(a.leader, t));
    let truth = MU * sp.speed[a.leader];
    // The interval the answer prints: between the winner's rounds.
    let interval = LevelInterval::of(Covers::BetweenRounds, race.rounds_of(a.leader));
    Trial {
        wrong: sp.wrong(a.leader),
        false_claim: eliminations || ties,
        resolved: !matches!(race.stop(), Some(Stop::Budget(_))),
        cost: race.cost(),
        covered: interval.is_some_and(|i| i.lo <= truth && truth <= i.hi),
    }
}

/// Fixed rounds: every candidate `rounds` rounds, judged once at 5% over the family.
fn fixed_trial(noise: &mut Noise, sp: &Space, rounds: usize) -> (bool, bool) {
    let all: Vec<usize> = (0..sp.n).collect();
    let mut values = vec![Vec::with_capacity(rounds); sp.n];
    for _ in 0..rounds {
        for (i, v) in sp.round(noise, &all).into_iter().enumerate() {
            values[i].push(v);
        }
    }
    let j = judge(&values, 0.05 / claims_per_look(sp.n), 0.02).unwrap();
    (j.resolved(), sp.wrong(j.leader))
}

/// The share of `trials` fixed designs of `rounds` rounds that resolve (common seed, so the
/// share grows with the rounds as it should).
fn fixed_resolves(sp: &Space, rounds: usize, trials: usize) -> f64 {
    let mut noise = Noise::new(900 + sp.n as u64);
    let ok = (0..trials)
        .filter(|_| fixed_trial(&mut noise, sp, rounds).0)
        .count();
    ok as f64 / trials as f64
}

/// The fewest fixed rounds that resolve at least `target` of trials (bisection).
fn fixed_rounds_for(sp: &Space, target: f64, trials: usize) -> usize {
    let (mut lo, mut hi) = (2usize, 4usize);
    while fixed_resolves(sp, hi, trials) < target {
        lo = hi;
        hi *= 2;
        assert!(hi <= 1 << 14, "fixed rounds never resolve");
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fixed_resolves(sp, mid, trials) >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

struct Row {
    wrong: f64,
    false_claim: f64,
    resolved: f64,
    cost: f64,
    covered: f64,
}

fn race_row(sp: &Space, trials: usize, max_rounds: usize, seed: u64) -> Row {
    let mut noise = Noise::new(seed);
    let ts: Vec<Trial> = (0..trials)
        .map(|_| race_trial(&mut noise, sp, max_rounds))
        .collect();
    let share =
        |f: &dyn Fn(&Trial) -> bool| ts.iter().filter(|t| f(t)).count() as f64 / trials as f64;
    Row {
        wrong: share(&|t| t.wrong),
        false_claim: share(&|t| t.false_claim),
        resolved: share(&|t| t.resolved),
        cost: ts.iter().map(|t| t.cost).sum::<usize>() as f64 / trials as f64,
        covered: share(&|t| t.covered),
    }
}

#[test]
fn racing_picks_within_5_percent_of_the_best_at_a_fraction_of_fixed_rounds_cost() {
    let m = published_noise();
    println!(
        "racing, candidates 5% apart, own noise {:.1}%, shared round swing {:.1}% per round; \
         race budget 1000 rounds; fixed: the fewest rounds that resolve as often (at most 95%)",
        100.0 * m.context,
        100.0 * m.shared
    );
    println!(
        "| candidates | trials | P(pick > 5% slower) | P(any false claim) | race resolved | \
         race candidate-rounds | fixed rounds | fixed candidate-rounds | race / fixed | \
         winner's 95% interval covers |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, trials) in [(2usize, 400usize), (5, 400), (20, 300), (100, 100)] {
        let sp = Space::steps(n, m.context, m.shared);
        let r = race_row(&sp, trials, 1000, 460 + n as u64);
        let target = r.resolved.min(0.95);
        let rounds = fixed_rounds_for(&sp, target, 200);
        let fixed = (rounds * n) as f64;
        println!(
            "| {n} | {trials} | {:.3} | {:.3} | {:.3} | {:.1} | {rounds} | {fixed:.0} | {:.2} | {:.3} |",
            r.wrong,
            r.false_claim,
            r.resolved,
            r.cost,
            r.cost / fixed,
            r.covered
        );
        assert!(
            r.wrong <= ceiling(0.05, trials),
            "{n}: wrong {:.3}",
            r.wrong
        );
        assert!(
            r.false_claim <= ceiling(0.05, trials),
            "{n}: false claims {:.3}",
            r.false_claim
        );
        assert!(
            r.covered >= 0.95 - 3.0 * (0.0475 / trials as f64).sqrt(),
            "{n}: covers {:.3}",
            r.covered
        );
        if n == 20 {
            assert!(
                r.cost / fixed <= 0.30,
                "20 candidates: the race costs {:.2} of fixed rounds",
                r.cost / fixed
            );
        }
    }
}

/// A realistic budget (tune's default, 20 rounds) beside full sweeps of 5 and 20 fixed
/// rounds (the pick: the fastest mean): what the race cut, what its pick is worth, and the
/// pooled variance's assumption broken (half the candidates twice as noisy).
#[test]
fn on_a_short_budget_the_race_still_picks_well_and_says_what_stays_open() {
    let m = published_noise();
    let trials = 300;
    println!("budget 20 rounds, 20 candidates 5% apart, {trials} trials");
    println!("| design | P(pick > 5% slower) | P(any false claim) | resolved | candidate-rounds |");
    println!("|---|---:|---:|---:|---:|");
    let sp = Space::steps(20, m.context, m.shared);
    let r = race_row(&sp, trials, 20, 71);
    println!(
        "| race ≤ 20 rounds | {:.3} | {:.3} | {:.3} | {:.1} |",
        r.wrong, r.false_claim, r.resolved, r.cost
    );
    let fixed_wrong = |rounds: usize, seed: u64| {
        let mut noise = Noise::new(seed);
        (0..trials)
            .filter(|_| fixed_trial(&mut noise, &sp, rounds).1)
            .count() as f64
            / trials as f64
    };
    for rounds in [5usize, 20] {
        println!(
            "| fixed {rounds} rounds, fastest mean | {:.3} | | | {} |",
            fixed_wrong(rounds, 72 + rounds as u64),
            20 * rounds
        );
    }
    assert!(r.wrong <= ceiling(0.05, trials), "{:.3}", r.wrong);
    assert!(
        r.false_claim <= ceiling(0.05, trials),
        "{:.3}",
        r.false_claim
    );
    // The same 20 rounds for every candidate cost 400 tests.
    assert!(
        r.cost < 0.5 * 400.0,
        "the race cut less than half of a 20-round sweep: {}",
        r.cost
    );
    let mut noisy = Space::steps(20, m.context, m.shared);
    for i in (1..20).step_by(2) {
        noisy.own[i] *= 2.0;
    }
    let h = race_row(&noisy, trials, 20, 73);
    println!(
        "| race ≤ 20 rounds, odd candidates twice as noisy | {:.3} | {:.3} | {:.3} | {:.1} |",
        h.wrong, h.false_claim, h.resolved, h.cost
    );
    assert!(h.wrong <= ceiling(0.05, trials), "{:.3}", h.wrong);
    assert!(
        h.false_claim <= ceiling(0.05, trials),
        "{:.3}",
        h.false_claim
    );
    // The best alone three times as noisy: the pooled noise understates its own.
    let mut loud = Space::steps(20, m.context, m.shared);
    loud.own[0] *= 3.0;
    let b = race_row(&loud, trials, 20, 74);
    println!(
        "| race ≤ 20 rounds, the best alone three times as noisy | {:.3} | {:.3} | {:.3} | {:.1} |",
        b.wrong, b.false_claim, b.resolved, b.cost
    );
    assert!(b.wrong <= ceiling(0.05, trials), "{:.3}", b.wrong);
    assert!(
        b.false_claim <= ceiling(0.05, trials),
        "{:.3}",
        b.false_claim
    );
}

/// Identical candidates: any elimination or tie-free answer is a false claim of a
/// difference; the race must leave them all in (or tie them) at least 95% of the time.
#[test]
fn identical_candidates_are_eliminated_at_most_5_percent_of_the_time() {
    let m = published_noise();
    let trials = 400;
    let sp = Space {
        n: 5,
        own: vec![m.context; 5],
        shared: m.shared,
        speed: vec![1.0; 5],
    };
    let mut noise = Noise::new(81);
    let mut bad = 0usize;
    for _ in 0..trials {
        if race_trial(&mut noise, &sp, 40).false_claim {
            bad += 1;
        }
    }
    let p = bad as f64 / trials as f64;
    println!("5 identical candidates, ≤ 40 rounds: P(any elimination) {p:.3}");
    assert!(p <= ceiling(0.05, trials), "{p:.3}");
}
