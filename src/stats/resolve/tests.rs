use super::*;
use crate::stats::compare::NoiseFloor;

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
    let paired = resolve(&cs, 0.05, Some(Design::Fixed), 0.05, &NoiseFloor::assumed());
    assert!(matches!(paired.rule, Rule::Paired { rounds: 5, .. }));
    assert_eq!(paired.best, Some(1));
    assert!(paired.best_ties.is_empty(), "{paired:?}");
    assert!(paired.open.is_empty(), "{paired:?}");
    let overlap = resolve(&cs, 0.05, None, 0.05, &NoiseFloor::assumed());
    assert_eq!(
        overlap.rule,
        Rule::Apart {
            family: 1,
            floor: NoiseFloor::assumed()
        }
    );
    assert_eq!(overlap.best_ties, vec![0]);
    assert_eq!(overlap.open, vec![(1, 0)]);
    // Both on the front: a trade-off (faster, worse KLD), and tied only unpaired.
    assert_eq!(paired.front, vec![true, true]);
    assert!(paired.front_ties[0].is_empty());
    assert_eq!(overlap.front_ties[0], vec![1]);
}

#[test]
fn a_row_from_another_run_ties_by_overlap_while_the_run_s_own_pairs_stay_paired() {
    // A ladder run (a, b: one shared swing of 15%, b 10% faster) beside its base model's
    // own run (c): a and b are told apart paired; c, measured apart, ties with both.
    let a = choice(100.0, &SWINGS, Some(0.01));
    let mut b = choice(110.0, &SWINGS, Some(0.03));
    jitter(&mut b, &[1.004, 0.997, 1.002, 0.998, 1.001]);
    let c = choice(105.0, &[1.0, 1.12, 0.9], None);
    let ladder = Some(Run {
        id: 0,
        design: Design::Fixed,
    });
    let base = Some(Run {
        id: 1,
        design: Design::Fixed,
    });
    let cs = [a, b, c];
    let r = resolve_runs(
        &cs,
        &[ladder, ladder, base],
        0.05,
        0.05,
        &NoiseFloor::assumed(),
    );
    assert_eq!(
        r.rule,
        Rule::Mixed {
            rounds: 5,
            family: 1,
            of: 3,
            design: Design::Fixed,
            apart: 1,
            floor: NoiseFloor::assumed(),
        }
    );
    // One pair paired by round; the two with the other run's row against the floor.
    let paired = |m: Method| r.pairs.iter().filter(|p| p.comparison.method == m).count();
    assert_eq!(
        (paired(Method::PairedRounds), paired(Method::NoiseFloor)),
        (1, 2)
    );
    assert_eq!(r.best, Some(1));
    assert!(r.best_ties.is_empty(), "{r:?}");
    assert!(r.rule.describe().contains("1 row measured apart from it"));
    // Unpaired, the same three tie all round.
    let overlap = resolve_runs(&cs, &[None, None, None], 0.05, 0.05, &NoiseFloor::assumed());
    assert_eq!(
        overlap.rule,
        Rule::Apart {
            family: 3,
            floor: NoiseFloor::assumed()
        }
    );
    assert_eq!(overlap.best_ties, vec![0]);
    // All in one run: the plain paired rule, as `resolve` gives it.
    let one = resolve(
        &cs[..2],
        0.05,
        Some(Design::Fixed),
        0.05,
        &NoiseFloor::assumed(),
    );
    assert_eq!(
        one,
        resolve_runs(
            &cs[..2],
            &[ladder, ladder],
            0.05,
            0.05,
            &NoiseFloor::assumed()
        )
    );
    assert!(matches!(one.rule, Rule::Paired { family: 1, .. }));
}

#[test]
fn a_dominated_choice_leaves_the_front_once_established_and_stays_open_until_then() {
    let a = choice(100.0, &SWINGS, Some(0.01));
    let mut b = choice(99.0, &SWINGS, Some(0.0105));
    jitter(&mut b, &[1.02, 0.98, 1.01, 0.99, 1.0]);
    let r = resolve(
        &[a.clone(), b],
        0.05,
        Some(Design::Fixed),
        0.05,
        &NoiseFloor::assumed(),
    );
    // 1% slower and its KLD within the other's error: not established, both stay.
    assert_eq!(r.front, vec![true, true]);
    assert!(r.open.contains(&(0, 1)), "{r:?}");
    let mut c = choice(80.0, &SWINGS, Some(0.0105));
    jitter(&mut c, &[1.004, 0.997, 1.002, 0.998, 1.001]);
    let r = resolve(
        &[a, c],
        0.05,
        Some(Design::Fixed),
        0.05,
        &NoiseFloor::assumed(),
    );
    assert_eq!(r.front, vec![true, false]);
    assert!(r.open.is_empty(), "{r:?}");
}

#[test]
fn without_errors_the_answer_is_the_fastest_and_one_round_is_judged_against_the_floor() {
    let a = choice(100.0, &[1.0], None);
    let b = choice(50.0, &[1.0], None);
    let r = resolve(
        &[a, b],
        0.05,
        Some(Design::Fixed),
        0.05,
        &NoiseFloor::assumed(),
    );
    assert_eq!(
        r.rule,
        Rule::Apart {
            family: 1,
            floor: NoiseFloor::assumed()
        }
    );
    assert_eq!(r.best, Some(0));
    assert!(
        r.best_ties.is_empty(),
        "twice as fast is beyond any launch's noise"
    );
    assert!(r.front.iter().all(|f| !f));
}

/// One launch, one round: the issue-44 case. Two variants 10% apart whose own intervals
/// (5 repetitions in one stretch of time) are far apart are not established apart: the
/// next launch may land either way. 40% apart is beyond the noise between launches.
#[test]
fn one_launch_s_tight_intervals_do_not_establish_what_the_launch_noise_can_undo() {
    let tight = |v: f64| Choice {
        speed: Figure {
            value: v,
            lo: v * 0.985,
            hi: v * 1.015,
        },
        rounds: vec![v],
        error: None,
    };
    let (a, b) = (tight(151.0), tight(136.0));
    assert!(
        a.speed.established_above(&b.speed),
        "the old rule's verdict"
    );
    let r = resolve(&[a.clone(), b], 0.05, None, 0.05, &NoiseFloor::assumed());
    assert_eq!(r.best, Some(0));
    assert_eq!(r.best_ties, vec![1]);
    assert_eq!(r.open, vec![(0, 1)]);
    assert!(r.rule.describe().contains("noise between launches"));
    let r = resolve(&[a, tight(100.0)], 0.05, None, 0.05, &NoiseFloor::assumed());
    assert!(r.best_ties.is_empty(), "{r:?}");
    // A measured, smaller floor resolves less wide gaps; the rule names it.
    let measured = NoiseFloor {
        sd: 0.02,
        source: crate::stats::compare::FloorSource::Given,
    };
    let r = resolve(&[tight(151.0), tight(136.0)], 0.05, None, 0.05, &measured);
    assert!(r.best_ties.is_empty(), "{r:?}");
    assert!(r.rule.describe().contains("2.0%"), "{}", r.rule.describe());
}
