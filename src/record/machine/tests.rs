//! The end-of-run check of the host ceiling, with a fake probe.

use super::*;
use crate::record::RunRecord;

/// A committed run whose decode tests have host-probe rooflines.
fn published_with_host_rooflines() -> RunRecord {
    crate::record::testdata::published_runs()
        .into_iter()
        .find(|r| r.run.host_bandwidth.is_some() && !host_percents(r).is_empty())
        .expect("a published run with host rooflines")
}

fn host_percents(r: &RunRecord) -> Vec<f64> {
    r.tests
        .iter()
        .filter_map(|t| t.resources.as_ref()?.roofline.as_ref())
        .filter(|r| r.is_from_host_probe())
        .map(|r| r.percent_of_roofline)
        .collect()
}

/// `r` with its host ceiling lowered so that its fastest decode sits at `percent`.
fn at_percent(mut r: RunRecord, percent: f64) -> RunRecord {
    let top = host_percents(&r).into_iter().fold(0.0, f64::max);
    let b = r.run.host_bandwidth.as_mut().unwrap();
    let scale = top / percent;
    b.read_gbs *= scale;
    b.llc_read_gbs = b.llc_read_gbs.map(|g| g * scale);
    let b = b.clone();
    rebase_host_rooflines(&mut r, &b);
    r
}

#[test]
fn a_run_well_below_its_ceiling_does_not_probe_again() {
    let mut r = at_percent(published_with_host_rooflines(), 60.0);
    let before = r.clone();
    let line = recheck_with(&mut r, |_| panic!("probed"));
    assert_eq!(line, None);
    assert_eq!(r, before);
}

#[test]
fn a_decode_above_a_slow_probe_moves_every_host_roofline_to_the_higher_read() {
    let mut r = at_percent(published_with_host_rooflines(), 134.0);
    let slow = r.run.host_bandwidth.clone().unwrap();
    let line = recheck_with(&mut r, |b| {
        let mut fast = b.clone();
        fast.read_gbs = b.read_gbs * 2.0;
        fast.llc_read_gbs = b.llc_read_gbs.map(|g| g * 2.0);
        fast.measured_at = "the end of the run".into();
        fast
    })
    .unwrap();
    assert!(
        line.contains("reached 134% of its host bandwidth ceiling"),
        "{line}"
    );
    assert!(line.contains("the ceiling is now"), "{line}");
    let now = r.run.host_bandwidth.as_ref().unwrap();
    assert_eq!(now.read_gbs, slow.read_gbs * 2.0);
    assert_eq!(now.measured_at, "the end of the run");
    let top = host_percents(&r).into_iter().fold(0.0, f64::max);
    assert!((top - 67.0).abs() < 1e-6, "{top}");
    assert!(
        r.tests
            .iter()
            .filter_map(|t| t.resources.as_ref()?.roofline.as_ref())
            .all(|roof| !roof.above_ceiling)
    );
}

#[test]
fn a_probe_that_reads_no_faster_changes_nothing_and_says_so() {
    let mut r = at_percent(published_with_host_rooflines(), 95.0);
    let before = r.clone();
    let line = recheck_with(&mut r, |b| b.clone()).unwrap();
    assert!(line.ends_with("nothing read faster"), "{line}");
    assert_eq!(r, before);
}
