use super::*;
use crate::export::fixtures;

fn side(label: &str, threads: u32, scale: f64) -> Side {
    side_n(label, threads, scale, 5)
}

/// A side of one test with `n` repetitions, its rates scaled by `scale`.
fn side_n(label: &str, threads: u32, scale: f64, n: usize) -> Side {
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
    t.set_samples(ns[..n].to_vec());
    t.samples_ts = t.samples_ts.iter().map(|x| x * scale).collect();
    Side {
        label: label.into(),
        tests: vec![("sha".into(), t)],
    }
}

#[test]
fn the_same_configuration_compares_as_no_change() {
    let r = compare_sides(
        &side("a", 2, 1.0),
        &side("b", 2, 1.0),
        &[],
        Settings::default(),
    );
    assert_eq!(r.rows.len(), 1);
    assert!(r.varied.is_empty());
    assert_eq!(r.rows[0].comparison.verdict, Verdict::NoChange);
    assert!(r.regressions(0.05).is_empty());
}

#[test]
fn a_property_that_differs_wholesale_is_what_gets_compared() {
    let r = compare_sides(
        &side("a", 2, 1.0),
        &side("b", 1, 0.6),
        &[],
        Settings::default(),
    );
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
    assert!(e.contains("no baseline named"), "{e}");
}

#[test]
fn kv_offload_on_one_side_and_the_default_on_the_other_is_what_gets_compared() {
    // The default (false) is left out of the file: it must still join and compare.
    let a = side("a", 2, 1.0);
    let mut b = side("b", 2, 0.8);
    b.tests[0].1.params.no_kv_offload = true;
    let r = compare_sides(&a, &b, &[], Settings::default());
    assert_eq!(
        r.varied,
        vec![(
            "no_kv_offload".to_string(),
            "false".to_string(),
            "true".to_string()
        )]
    );
    assert_eq!(r.rows.len(), 1);
    let r = compare_sides(&b, &a, &[], Settings::default());
    assert_eq!(r.rows.len(), 1, "either way round");
}

#[test]
fn a_two_fold_slowdown_at_three_repetitions_is_inconclusive_and_still_fails_ci() {
    let r = compare_sides(
        &side_n("a", 2, 1.0, 3),
        &side_n("b", 2, 0.52, 3),
        &["n_threads".to_string()],
        Settings::default(),
    );
    let c = &r.rows[0].comparison;
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    let md = r.to_markdown("a", "b");
    assert!(!md.contains("no change"), "{md}");
    assert!(md.contains("inconclusive: too few samples (n = 3;"), "{md}");
    assert!(
        md.contains(&format!("interval [{:.3}, {:.3}]", c.ci.lo, c.ci.hi)),
        "{md}"
    );
    assert_eq!(
        r.regressions(0.05).len(),
        1,
        "the whole interval is beyond 5%"
    );
    assert_eq!(r.inconclusive().len(), 1);
}

#[test]
fn an_unchanged_pair_at_three_repetitions_is_inconclusive_and_passes_ci() {
    let r = compare_sides(
        &side_n("a", 2, 1.0, 3),
        &side_n("b", 2, 1.0, 3),
        &[],
        Settings::default(),
    );
    assert_eq!(r.rows[0].comparison.verdict, Verdict::Inconclusive);
    assert!(r.regressions(0.05).is_empty());
    let md = r.to_markdown("a", "b");
    assert!(md.contains("inconclusive: too few samples (n = 3;"), "{md}");
}

#[test]
fn unequal_sample_counts_are_both_named() {
    let r = compare_sides(
        &side_n("a", 2, 1.0, 2),
        &side_n("b", 2, 0.5, 3),
        &["n_threads".to_string()],
        Settings::default(),
    );
    let md = r.to_markdown("a", "b");
    assert!(md.contains("too few samples (n = 2 and 3;"), "{md}");
}
