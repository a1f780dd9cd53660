//! The check on a published file and on copies of it tampered with, one field at a time.

use super::*;

/// The field that disagrees, as the file names it (`median_ts`, `rounds[1].interval`).
fn field_of(d: &Disagreement) -> String {
    match d {
        Disagreement::Figure { field, .. } => field.clone(),
        Disagreement::SampleCounts { .. } => "samples_ts".into(),
        Disagreement::RoundSamples { round, .. } => format!("rounds[{round}].samples_ns"),
        Disagreement::RoundsTotal { .. } => "rounds".into(),
    }
}

/// A committed, published run with rounds.
fn published() -> RunRecord {
    crate::record::testdata::published_runs()
        .into_iter()
        .find(|r| r.tests.iter().any(|t| t.rounds.len() >= 2))
        .expect("a published run with rounds")
}

fn first_with_rounds(r: &mut RunRecord) -> &mut TestRecord {
    r.tests.iter_mut().find(|t| t.rounds.len() >= 2).unwrap()
}

#[test]
fn a_file_as_written_passes() {
    check(&published()).unwrap();
}

#[test]
fn a_stored_median_its_samples_contradict_is_refused_naming_test_and_field() {
    let mut r = published();
    let t = &mut r.tests[0];
    let id = t.id.clone();
    let m = t.median_ts.unwrap();
    t.median_ts = Some(m * 1.1);
    let e = check(&r).unwrap_err().to_string();
    assert!(e.starts_with(&format!("test {id}: median_ts is ")), "{e}");
    assert!(e.contains("but its samples give"), "{e}");
}

#[test]
fn samples_edited_without_their_summaries_are_refused() {
    let mut r = published();
    let t = &mut r.tests[0];
    t.samples_ns[0] = t.samples_ns[0] * 11 / 10;
    let e = check(&r).unwrap_err().to_string();
    assert!(e.contains("samples_ts[0] is"), "{e}");
    // Rates edited too: the summaries no longer follow.
    let mut r = published();
    let t = first_with_rounds(&mut r);
    t.samples_ns[0] = t.samples_ns[0] * 11 / 10;
    t.samples_ts = crate::stats::rates_per_second(t.params.n_tokens(), &t.samples_ns);
    let e = check(&r).unwrap_err().to_string();
    assert!(
        e.contains("avg_ts is") && e.contains("but its samples give"),
        "{e}"
    );
}

#[test]
fn equal_round_medians_over_different_samples_are_refused() {
    // two files with equal stored round medians compared as "no change" although
    // their samples differed by 10%.
    let mut r = published();
    let t = first_with_rounds(&mut r);
    let medians: Vec<f64> = t.rounds.iter().map(|x| x.median_ts).collect();
    t.set_samples(t.samples_ns.iter().map(|x| x * 11 / 10).collect());
    let mut at = 0;
    for (round, m) in t.rounds.iter_mut().zip(medians) {
        let n = round.samples_ns.len();
        round.samples_ns = t.samples_ns[at..at + n].to_vec();
        round.median_ts = m;
        at += n;
    }
    let e = check(&r).unwrap_err().to_string();
    assert!(e.contains("rounds[0].median_ts is"), "{e}");
}

#[test]
fn a_stale_interval_is_refused() {
    let mut r = published();
    let t = r
        .tests
        .iter_mut()
        .find(|t| t.stats.as_ref().is_some_and(|s| s.interval.is_some()))
        .unwrap();
    let i = t.stats.as_mut().unwrap().interval.as_mut().unwrap();
    // The page once drew "57.1 (57.1–182)": an interval that misses its own estimate.
    i.lo = t.median_ts.unwrap() * 1.5;
    i.hi = t.median_ts.unwrap() * 3.0;
    let e = check(&r).unwrap_err().to_string();
    assert!(e.contains("stats.interval is ["), "{e}");
}

#[test]
fn a_failed_test_and_a_test_without_samples_pass_but_figures_without_samples_do_not() {
    let mut r = published();
    r.tests[0].fail("boom");
    r.tests[0].median_ts = Some(1e9);
    check(&r).unwrap();
    let mut r = published();
    r.tests[1].samples_ns.clear();
    r.tests[1].samples_ts.clear();
    r.tests[1].rounds.clear();
    let e = check(&r).unwrap_err().to_string();
    assert!(e.contains("there are no samples"), "{e}");
}

#[test]
fn the_refusal_carries_file_test_and_field() {
    let mut r = published();
    r.tests[0].median_ts = r.tests[0].median_ts.map(|m| m * 1.1);
    let c = check(&r).unwrap_err();
    assert_eq!(c.test, r.tests[0].id);
    assert_eq!(field_of(&c.disagreement), "median_ts");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.json");
    results::write_atomic(&p, &r).unwrap();
    match read(&p).unwrap_err() {
        RecordError::Contradicted { path, source } => {
            assert_eq!(path, p);
            assert_eq!(source, c);
        }
        e => panic!("{e}"),
    }
}

#[test]
fn an_absurd_stored_figure_is_named_in_a_short_line() {
    // a tampered 1e308 was printed as 309 digits.
    let mut r = published();
    r.tests[0].median_ts = Some(1e308);
    let e = check(&r).unwrap_err().to_string();
    assert!(
        e.contains("median_ts is 1e308 but its samples give "),
        "{e}"
    );
    assert!(e.len() < 200, "{e}");
}

/// A published run whose first test's bootstrap interval of the median is edited.
fn with_edited_bootstrap() -> RunRecord {
    let mut r = published();
    let s = r.tests[0]
        .stats
        .as_mut()
        .expect("published tests carry stats");
    s.median_ci.hi *= 1.5;
    r
}

#[test]
fn the_bootstrap_intervals_are_checked_where_the_file_is_passed_on_not_where_it_is_shown() {
    let r = with_edited_bootstrap();
    let e = check(&r).unwrap_err().to_string();
    assert!(e.contains("stats.median_ci is ["), "{e}");
    // No table, comparison or page shows them: readers that show figures skip them, and
    // still refuse every figure they show.
    check_scoped(&r, Scope::Shown).unwrap();
    let mut r = with_edited_bootstrap();
    r.tests[0].median_ts = r.tests[0].median_ts.map(|m| m * 1.1);
    let e = check_scoped(&r, Scope::Shown).unwrap_err().to_string();
    assert!(e.contains("median_ts is"), "{e}");
}

#[test]
fn a_sample_set_read_again_is_resampled_once_and_judged_alike() {
    // The copies share their samples and seed: one bootstrap serves them all, and a copy
    // whose stored interval was edited is still refused.
    let mut r = published();
    let copy = r.tests[0].clone();
    r.tests.extend(std::iter::repeat_n(copy, 3));
    check(&r).unwrap();
    let last = r.tests.len() - 1;
    r.tests[last].stats.as_mut().unwrap().mean_ci.lo *= 0.5;
    let c = check(&r).unwrap_err();
    assert_eq!(field_of(&c.disagreement), "stats.mean_ci");
}

/// The published run with a race over its tests that have rounds, as `tune` records one.
fn raced() -> RunRecord {
    use crate::stats::race::{Race, Settings};
    let mut r = published();
    let ids: Vec<String> = (r.tests.iter())
        .filter(|t| t.rounds.len() >= 2 && t.status == Status::Ok)
        .map(|t| t.id.clone())
        .collect();
    assert!(ids.len() >= 2, "{ids:?}");
    let rounds: Vec<Vec<f64>> = (ids.iter())
        .map(|id| {
            r.tests
                .iter()
                .find(|t| &t.id == id)
                .unwrap()
                .round_medians()
        })
        .collect();
    let most = rounds.iter().map(Vec::len).min().unwrap();
    let mut race = Race::new(ids.len(), Settings::new(most.max(2)));
    while race.stop().is_none() {
        let k = race.rounds_done();
        let v: Vec<(usize, Option<f64>)> = (race.survivors().into_iter())
            .map(|i| (i, rounds[i].get(k).copied()))
            .collect();
        race.add_round(&v);
    }
    let (candidates, winner) = crate::record::tune::verdicts(&race, &ids);
    r.run.tune = Some(crate::record::tune::TuneRecord {
        objective: "tg128".into(),
        limits: vec![],
        space: ids.len(),
        excluded: vec![],
        alpha: 0.05,
        indifference: crate::stats::resolve::INDIFFERENCE,
        max_rounds: most.max(2) as u32,
        max_seconds: None,
        looks: crate::stats::race::looks(most.max(2)),
        level: race.level(),
        candidates,
        winner,
        loads: vec![],
        stopped: race.stop().unwrap().describe(),
        rounds: race.rounds_done(),
        tests_run: race.cost(),
        seconds: 1.0,
        first_round_seconds: 0.5,
        slo: None,
        bisections: vec![],
    });
    r
}

fn tune(r: &mut RunRecord) -> &mut crate::record::tune::TuneRecord {
    r.run.tune.as_mut().unwrap()
}

#[test]
fn a_race_its_rounds_replay_passes_and_an_edited_verdict_is_refused() {
    let r = raced();
    check(&r).unwrap();
    let refused = |r: &RunRecord, field: &str| {
        let e = check(r).unwrap_err();
        assert_eq!(e.test, "run.tune", "{e}");
        assert_eq!(field_of(&e.disagreement), field, "{e}");
    };
    let mut edited = r.clone();
    let other = (tune(&mut edited).candidates.iter())
        .find(|c| c.outcome != crate::record::tune::Outcome::Winner)
        .unwrap()
        .id
        .clone();
    tune(&mut edited).winner = Some(other);
    refused(&edited, "winner");
    let mut edited = r.clone();
    let c = &mut tune(&mut edited).candidates[0];
    use crate::record::tune::Outcome;
    c.outcome = if c.outcome == Outcome::Winner {
        Outcome::Open
    } else {
        Outcome::Winner
    };
    refused(&edited, "candidates[0]");
    let mut edited = r.clone();
    tune(&mut edited).tests_run += 1;
    refused(&edited, "tests_run");
    let mut edited = r.clone();
    tune(&mut edited).alpha = 0.5 + 0.5;
    refused(&edited, "alpha");
}

#[test]
fn a_race_the_limits_refused_may_name_no_winner() {
    let mut r = raced();
    let t = r.run.tune.as_mut().unwrap();
    t.candidates.clear();
    t.winner = None;
    check(&r).unwrap();
    r.run.tune.as_mut().unwrap().winner = Some("x".into());
    let e = check(&r).unwrap_err();
    assert_eq!(field_of(&e.disagreement), "winner", "{e}");
}
