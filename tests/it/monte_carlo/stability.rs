//! Does the answer hold from one launch to the next? Issue 44 found that the default (one
//! round of 5 repetitions, ties judged by the variants' own intervals) excluded, in half of
//! the launches, a variant that another launch named the leader or a tie: each variant sits
//! in its own stretch of time, and its level moves between launches by an sd of about 7% of
//! the log, which 5 repetitions inside that stretch cannot show.
//!
//! Here two launches are drawn per trial, each resolved by the real code (`stats::resolve`),
//! and a contradiction is counted as the issue defines it: a variant that one launch
//! excluded (within the KLD budget, neither the leader nor tied with it) which the other
//! named the leader or tied with the leader. Designs:
//!
//! - one round, ties by overlapping intervals: the old rule, for contrast;
//! - one round, judged against the noise between launches (the assumed 7% floor): fewer
//!   contradictions, but not within 5% on this ladder (F16's gap is at the edge of what one
//!   launch resolves);
//! - auto rounds with one repetition per round, as the default now runs: rounds interleaved,
//!   paired, looked at sequentially until resolved or the budget ends; a variant is excluded
//!   only when established slower by more than the 2% indifference (`stats::resolve`).
//!
//! The ladder is the default one's shape: F16 well behind, Q8_0, Q6_K and Q4_K_M within a
//! few percent of each other (the auto-rounds study found them not established apart by
//! round 10), and Q4_0 fastest but outside the 0.05-nat KLD budget.

use super::sequential::published_noise;
use super::*;
use tpsbench::stats::compare::NoiseFloor;
use tpsbench::stats::pairs::Design;
use tpsbench::stats::resolve::{Choice, Resolution, resolve};
use tpsbench::stats::ties::Figure;

/// Decode relative to the fastest within the budget, and KLD (nats).
type Ladder = [(&'static str, f64, f64)];

/// The default ladder as measured: the geometric means of 6 quiet launches of the old
/// default on this 2-core VM (2026-12-04; decode tg128 189 t/s for Q6_K), relative to Q6_K,
/// with their KLD. Each variant's level moved by an sd of 5-8% of the log between launches.
const DEFAULT_LADDER: [(&str, f64, f64); 5] = [
    ("F16", 0.73, 0.0),
    ("Q8_0", 0.99, 0.0015),
    ("Q6_K", 1.0, 0.0028),
    ("Q4_K_M", 0.97, 0.028),
    ("Q4_0", 1.36, 0.117),
];

const BUDGET: f64 = 0.05;
/// Issue 44: a variant's level between launches, sd of ln t/s.
const LAUNCH_SD: f64 = 0.07;
const TRIALS: usize = 300;

/// What a launch claims: the variants it named (the leader and its ties) and the ones it
/// excluded (within the budget, not named).
#[derive(Debug, Default)]
struct Claims {
    named: Vec<usize>,
    excluded: Vec<usize>,
}

fn claims(r: &Resolution, ladder: &Ladder) -> Claims {
    let Some(best) = r.best else {
        return Claims::default();
    };
    let mut named = vec![best];
    named.extend(&r.best_ties);
    let excluded = (0..ladder.len())
        .filter(|&i| ladder[i].2 <= BUDGET && !named.contains(&i))
        .collect();
    Claims { named, excluded }
}

fn contradict(a: &Claims, b: &Claims) -> bool {
    a.excluded.iter().any(|x| b.named.contains(x)) || b.excluded.iter().any(|x| a.named.contains(x))
}

fn kld(k: f64) -> Option<Figure> {
    Some(Figure::around(k, 0.0005))
}

/// One launch of one round of 5 repetitions: each variant in its own stretch of time.
fn one_round_launch(noise: &mut Noise, ladder: &Ladder) -> Vec<Choice> {
    ladder
        .iter()
        .map(|&(_, ratio, k)| {
            let (_, reps) = noise.launch(MU * ratio, LAUNCH_SD, REPS);
            let i = LevelInterval::of(Covers::WithinLaunch, &reps).unwrap();
            let v = tpsbench::stats::mean(&reps);
            Choice {
                speed: Figure {
                    value: v,
                    lo: i.lo.min(v),
                    hi: i.hi.max(v),
                },
                rounds: Vec::new(),
                error: kld(k),
            }
        })
        .collect()
}

/// The old rule: the fastest within the budget ties with every variant whose interval
/// overlaps its own.
fn overlap_claims(cs: &[Choice], ladder: &Ladder) -> Claims {
    let eligible: Vec<usize> = (0..cs.len()).filter(|&i| ladder[i].2 <= BUDGET).collect();
    let best = *eligible
        .iter()
        .max_by(|&&a, &&b| cs[a].speed.value.total_cmp(&cs[b].speed.value))
        .unwrap();
    let mut named = vec![best];
    named.extend(
        eligible
            .iter()
            .filter(|&&e| e != best && cs[e].speed.ties(&cs[best].speed)),
    );
    let excluded = eligible
        .into_iter()
        .filter(|e| !named.contains(e))
        .collect();
    Claims { named, excluded }
}

/// Round noise of the auto design: `own` each variant's own level per round (sd of its log),
/// `shared` the round's swing shared by all.
#[derive(Clone, Copy)]
struct RoundNoise {
    own: f64,
    shared: f64,
}

/// One launch with auto rounds of one repetition each, looked at from round 3 on with the
/// sequential design until nothing the answer depends on is open or `max_rounds` ran.
/// Returns the final resolution and the rounds used.
fn auto_launch(
    noise: &mut Noise,
    ladder: &Ladder,
    n: RoundNoise,
    max_rounds: usize,
) -> (Resolution, usize) {
    let design = Design::Sequential { max_rounds };
    let floor = NoiseFloor::assumed();
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); ladder.len()];
    for k in 1..=max_rounds {
        let swing = (n.shared * noise.z()).exp();
        for (v, &(_, ratio, _)) in ladder.iter().enumerate() {
            rounds[v].push(MU * ratio * swing * (n.own * noise.z()).exp());
        }
        if k < 3 && k < max_rounds {
            continue;
        }
        let cs: Vec<Choice> = ladder
            .iter()
            .enumerate()
            .map(|(v, &(_, _, kl))| {
                let r = &rounds[v];
                let m = tpsbench::stats::mean(r);
                let i = LevelInterval::of(Covers::BetweenRounds, r).unwrap();
                Choice {
                    speed: Figure {
                        value: m,
                        lo: i.lo.min(m),
                        hi: i.hi.max(m),
                    },
                    rounds: r.clone(),
                    error: kld(kl),
                }
            })
            .collect();
        let res = resolve(&cs, BUDGET, Some(design), 0.05, &floor);
        if res.open.is_empty() || k == max_rounds {
            return (res, k);
        }
    }
    unreachable!("the last round returns")
}

/// The share of trials whose two launches contradict each other, by `launch`.
fn rate(trials: usize, mut launch: impl FnMut() -> Claims) -> f64 {
    let bad = (0..trials)
        .filter(|_| contradict(&launch(), &launch()))
        .count();
    bad as f64 / trials as f64
}

#[test]
fn the_default_s_answer_contradicts_another_launch_at_most_5_percent_of_the_time() {
    let ladder = &DEFAULT_LADDER;
    let floor = NoiseFloor::assumed();
    let mut noise = Noise::new(44);
    let old = rate(TRIALS, || {
        overlap_claims(&one_round_launch(&mut noise, ladder), ladder)
    });
    let mut noise = Noise::new(45);
    let one = rate(TRIALS, || {
        let cs = one_round_launch(&mut noise, ladder);
        claims(&resolve(&cs, BUDGET, None, 0.05, &floor), ladder)
    });
    let published = published_noise();
    let measured = RoundNoise {
        own: published.context,
        shared: published.shared,
    };
    let wide = RoundNoise {
        own: LAUNCH_SD,
        shared: 0.0,
    };
    println!(
        "answer stability, {TRIALS} pairs of launches, ladder F16 0.73, Q8_0 0.99, Q6_K 1.00, \
         Q4_K_M 0.97 (Q4_0 1.36 outside the budget)"
    );
    println!("| design | P(two launches contradict) | mean rounds |");
    println!("|---|---:|---:|");
    println!("| 1 round × 5 reps, overlapping intervals (before) | {old:.3} | 1 |");
    println!("| 1 round × 5 reps, against the 7% floor | {one:.3} | 1 |");
    let mut auto = Vec::new();
    for (label, n) in [
        (
            format!(
                "round noise as published (own {:.1}%, shared {:.1}%)",
                100.0 * measured.own,
                100.0 * measured.shared
            ),
            measured,
        ),
        (
            "each variant's round in its own stretch, 7%".to_string(),
            wide,
        ),
    ] {
        for max_rounds in [10, 20] {
            let mut noise = Noise::new(46 + max_rounds as u64);
            let mut used = 0usize;
            let p = rate(TRIALS, || {
                let (r, k) = auto_launch(&mut noise, ladder, n, max_rounds);
                used += k;
                claims(&r, ladder)
            });
            let mean_rounds = used as f64 / (2 * TRIALS) as f64;
            println!("| auto rounds ≤ {max_rounds} × 1 rep, {label} | {p:.3} | {mean_rounds:.1} |");
            auto.push(p);
        }
    }
    assert!(
        old >= 0.25,
        "the old rule should show issue 44's failure, got {old:.3}"
    );
    // One round against the floor is no longer the default, and it cannot hold 5% here: F16,
    // 27% behind, sits where one launch's noise (an sd of about 10% on each log ratio)
    // establishes it in some launches and not in others. It contradicts less than the old
    // rule, and its note says interleaved rounds settle more.
    assert!(
        one < old,
        "one round against the floor: {one:.3}, old {old:.3}"
    );
    for p in auto {
        assert!(p <= 0.05, "auto rounds: {p:.3}");
    }
}

/// Not a bound: where a true gap sits at the edge of what the budget resolves, one launch
/// establishes it and the next does not, and the count calls that a contradiction.
/// Printed so that the limit is on record; the only check is that the gap is resolved more
/// often than not, so that the printout describes a real edge.
#[test]
fn a_gap_at_the_edge_of_the_budget_is_where_launches_can_disagree() {
    let ladder: [(&str, f64, f64); 2] = [("A", 1.0, 0.0), ("B", 0.93, 0.01)];
    let published = published_noise();
    let n = RoundNoise {
        own: published.context,
        shared: published.shared,
    };
    let mut noise = Noise::new(7);
    let mut resolved = 0usize;
    let p = rate(TRIALS, || {
        let (r, _) = auto_launch(&mut noise, &ladder, n, 20);
        let c = claims(&r, &ladder);
        if !c.excluded.is_empty() {
            resolved += 1;
        }
        c
    });
    let power = resolved as f64 / (2 * TRIALS) as f64;
    println!(
        "a 7% gap, auto rounds ≤ 20 at the published noise: established in {power:.2} of \
         launches, two launches contradict in {p:.3}"
    );
    assert!(power > 0.0, "{power}");
}
