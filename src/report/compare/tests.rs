use super::*;
use crate::report::export::fixtures;

fn side(threads: u32, scale: f64) -> Side {
    side_n(threads, scale, 5)
}

/// A side of one test with `n` repetitions, its rates scaled by `scale`.
fn side_n(threads: u32, scale: f64, n: usize) -> Side {
    let run = fixtures::run();
    let mut t = run.tests[0].clone();
    t.params.n_threads = threads;
    t.identity = format!("id-{threads}");
    let ns = [
        1_000_000_000,
        1_010_000_000,
        990_000_000,
        1_005_000_000,
        995_000_000,
    ];
    t.set_samples(ns[..n].iter().map(|&x| (x as f64 / scale) as u64).collect());
    Side {
        tests: vec![("sha".into(), t)],
        machine: None,
        launch: None,
    }
}

/// A side of one test run in rounds whose medians are `medians`.
fn side_rounds(medians: &[f64]) -> Side {
    let mut s = side_n(2, 1.0, 3);
    let t = &mut s.tests[0].1;
    let n_tokens = t.params.n_tokens() as f64;
    let round = |m: f64| {
        let mut r = t.clone();
        let ns = (n_tokens * 1e9 / m) as u64;
        r.set_samples(vec![ns, ns, ns]);
        r
    };
    let mut first = round(medians[0]);
    for &m in &medians[1..] {
        first.add_round(round(m), None);
    }
    s.tests[0].1 = first;
    s
}

#[test]
fn the_same_configuration_on_single_launches_is_inconclusive_not_no_change() {
    let r = compare_sides(&side(2, 1.0), &side(2, 1.0), &[], &Settings::default());
    assert_eq!(r.rows.len(), 1);
    assert!(r.varied.is_empty());
    // One launch each: the launch-to-launch floor (7%) is wider than the ±2% band.
    assert_eq!(r.rows[0].comparison.verdict, Verdict::Inconclusive);
    assert!(r.regressions(0.05).is_empty());
}

#[test]
fn a_property_that_differs_wholesale_is_what_gets_compared() {
    let r = compare_sides(&side(2, 1.0), &side(1, 0.6), &[], &Settings::default());
    assert_eq!(
        r.varied,
        vec![("n_threads".to_string(), "2".to_string(), "1".to_string())]
    );
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0].comparison.verdict, Verdict::Slower);
    assert_eq!(r.regressions(0.05).len(), 1);
    assert!(r.to_markdown("a", "b").contains("SLOWER"));
}

#[test]
fn baselines_are_saved_and_found_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixtures::run();
    save_baseline(&run, "main", dir.path()).unwrap();
    let s = load_side("main", dir.path()).unwrap();
    assert_eq!(s.tests.len(), 1, "failed tests are left out");
    assert!(save_baseline(&run, "../x", dir.path()).is_err());
    let e = load_side("nothing-here", dir.path()).err().unwrap();
    assert!(matches!(e, CompareError::NoSide { .. }), "{e:?}");
    assert!(e.to_string().contains("no baseline named"), "{e}");
}

#[test]
fn kv_offload_on_one_side_and_the_default_on_the_other_is_what_gets_compared() {
    // The default (false) is left out of the file: it must still join and compare.
    let a = side(2, 1.0);
    let mut b = side(2, 0.8);
    b.tests[0].1.params.no_kv_offload = true;
    let r = compare_sides(&a, &b, &[], &Settings::default());
    assert_eq!(
        r.varied,
        vec![(
            "no_kv_offload".to_string(),
            "false".to_string(),
            "true".to_string()
        )]
    );
    assert_eq!(r.rows.len(), 1);
    let r = compare_sides(&b, &a, &[], &Settings::default());
    assert_eq!(r.rows.len(), 1, "either way round");
}

#[test]
fn a_two_fold_slowdown_on_single_launches_is_slower_and_fails_ci() {
    let r = compare_sides(
        &side_n(2, 1.0, 3),
        &side_n(2, 0.52, 3),
        &["n_threads".to_string()],
        &Settings::default(),
    );
    let c = &r.rows[0].comparison;
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert_eq!(c.method, Method::NoiseFloor);
    let md = r.to_markdown("a", "b");
    assert!(md.contains("launches + noise floor"), "{md}");
    assert!(
        md.contains("noise floor 7.0% between launches (assumed"),
        "{md}"
    );
    assert_eq!(r.regressions(0.05).len(), 1);
}

#[test]
fn an_unchanged_pair_of_single_launches_is_inconclusive_and_passes_ci() {
    let r = compare_sides(
        &side_n(2, 1.0, 3),
        &side_n(2, 1.0, 3),
        &[],
        &Settings::default(),
    );
    assert_eq!(r.rows[0].comparison.verdict, Verdict::Inconclusive);
    assert!(r.regressions(0.05).is_empty());
    let md = r.to_markdown("a", "b");
    assert!(
        md.contains("within what separate launches differ by"),
        "{md}"
    );
    assert!(!md.contains("no change"), "{md}");
}

#[test]
fn interleaved_sides_with_rounds_are_compared_round_by_round() {
    let a = side_rounds(&[100.0, 106.0, 96.0]);
    let b = side_rounds(&[90.1, 95.3, 86.2]);
    let interleaved = Settings {
        interleaved: true,
        ..Default::default()
    };
    let r = compare_sides(&a, &b, &[], &interleaved);
    let c = &r.rows[0].comparison;
    assert_eq!(c.method, Method::PairedRounds, "{c:?}");
    assert_eq!(c.rounds, (3, 3));
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    let md = r.to_markdown("a", "b");
    assert!(
        md.contains("|      3 |") && md.contains("between rounds, paired"),
        "{md}"
    );
    // Different round counts: unpaired, and both counts shown.
    let b4 = side_rounds(&[90.1, 95.3, 86.2, 91.0]);
    let r = compare_sides(&a, &b4, &[], &interleaved);
    assert_eq!(r.rows[0].comparison.method, Method::UnpairedRounds);
    assert!(r.to_markdown("a", "b").contains("|  3 / 4 |"));
}

#[test]
fn a_measured_floor_is_stored_per_machine_and_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let launch = |level: f64| {
        let mut run = fixtures::run();
        run.tests.truncate(1);
        run.tests[0] = side_rounds(&[level, level * 1.01, level * 0.99]).tests[0]
            .1
            .clone();
        (format!("{level}.json"), run)
    };
    let runs = [launch(100.0), launch(104.0), launch(97.0)];
    let f = measure_floor(&runs).unwrap();
    assert_eq!((f.degrees_of_freedom, f.tests, f.launches), (2, 1, 3));
    assert!(f.sd > 0.02 && f.sd < 0.05, "{f:?}");
    save_floor(&f, dir.path()).unwrap();
    let key = machine_key(&runs[0].1);
    let found = floor_for(None, Some(&key), dir.path());
    assert_eq!(found.sd, f.sd);
    assert!(
        found.describe().contains("measured: 3 A/A launches"),
        "{}",
        found.describe()
    );
    assert_eq!(floor_for(Some(0.02), Some(&key), dir.path()).sd, 0.02);
    assert_eq!(floor_for(None, Some("elsewhere"), dir.path()).sd, 0.07);
    // One launch measures nothing between launches.
    let e = measure_floor(&runs[..1]).unwrap_err();
    assert!(matches!(
        e,
        CompareError::TooFewLaunches {
            degrees_of_freedom: 0,
            ..
        }
    ));
    assert!(
        e.to_string()
            .contains("0 degree(s) of freedom between launches"),
        "{e}"
    );
}

#[test]
fn two_sides_of_one_run_are_paired_by_round_and_separate_runs_are_not() {
    let a = side_rounds(&[100.0, 106.0, 96.0]);
    let mut b = side_rounds(&[90.1, 95.3, 86.2]);
    b.tests[0].1.identity = "other".into();
    let separate = compare_sides(&a, &b, &[], &Settings::default());
    assert_eq!(separate.rows[0].comparison.method, Method::NoiseFloor);
    let (mut a1, mut b1) = (a, b);
    a1.launch = Some("vm@t0".into());
    b1.launch = Some("vm@t0".into());
    let one_run = compare_sides(&a1, &b1, &[], &Settings::default());
    assert_eq!(one_run.rows[0].comparison.method, Method::PairedRounds);
    assert_eq!(one_run.rows[0].comparison.verdict, Verdict::Slower);
}
