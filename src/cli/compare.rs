//! `tpsbench compare A B`.
//!
//! Exit code 1 when a pair fails CI: a significant slowdown beyond --fail-threshold, or an
//! inconclusive pair (too few samples for the test to reach alpha) whose whole interval lies
//! beyond the threshold: an underpowered test cannot call a 2x slowdown significant, and it
//! must not pass CI either. Other inconclusive pairs exit 0 with a warning on stderr.

use anyhow::{Result, bail};

use crate::stats::compare::samples_needed;

pub(super) fn compare(
    a: &str,
    b: &str,
    alpha: f64,
    noise: f64,
    fail: f64,
    ignore: &[String],
    dir: &std::path::Path,
) -> Result<i32> {
    if ![alpha, noise, fail].iter().all(|x| (0.0..1.0).contains(x)) {
        bail!("--alpha, --noise and --fail-threshold are fractions between 0 and 1");
    }
    let sa = crate::compare::load_side(a, dir).map_err(anyhow::Error::msg)?;
    let sb = crate::compare::load_side(b, dir).map_err(anyhow::Error::msg)?;
    let settings = crate::stats::compare::Settings {
        alpha,
        noise,
        ..Default::default()
    };
    let report = crate::compare::compare_sides(&sa, &sb, ignore, settings);
    if report.rows.is_empty() {
        bail!("no test of {a} matches a test of {b} (try --ignore with the property that differs)");
    }
    print!("{}", report.to_markdown(a, b));
    let underpowered = report
        .inconclusive()
        .iter()
        .filter(|r| r.comparison.too_few_samples)
        .count();
    if underpowered > 0 {
        eprintln!(
            "warning: {underpowered} pair(s) have too few samples for a verdict at alpha {alpha}: \
             use at least {} repetitions per side",
            samples_needed(alpha)
        );
    }
    if let Some(line) = report.regression_line(fail) {
        eprintln!("error: {line}");
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two result files of one test with `n` repetitions, B's rates at `ratio` of A's.
    fn files(n: usize, ratio: f64) -> (tempfile::TempDir, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (name, scale) in [("a.json", 1.0), ("b.json", ratio)] {
            let mut run = crate::export::fixtures::run();
            run.tests.truncate(1);
            let t = &mut run.tests[0];
            let ns: Vec<u64> = [1_000_000_000, 1_010_000_000, 990_000_000, 1_005_000_000][..n]
                .iter()
                .map(|&x| (x as f64 / scale) as u64)
                .collect();
            t.set_samples(ns);
            let p = dir.path().join(name);
            crate::results::write_atomic(&p, &run).unwrap();
            paths.push(p.display().to_string());
        }
        (dir, paths.remove(0), paths.remove(0))
    }

    fn exit_code(n: usize, ratio: f64) -> i32 {
        let (dir, a, b) = files(n, ratio);
        compare(&a, &b, 0.05, 0.01, 0.05, &[], dir.path()).unwrap()
    }

    #[test]
    fn a_two_fold_slowdown_fails_ci_at_every_sample_count() {
        for n in [2, 3, 4] {
            assert_eq!(exit_code(n, 0.52), 1, "n = {n}");
        }
    }

    #[test]
    fn an_unchanged_pair_passes_ci_whether_or_not_the_test_can_decide() {
        for n in [2, 3, 4] {
            assert_eq!(exit_code(n, 1.0), 0, "n = {n}");
        }
    }

    #[test]
    fn a_slowdown_inside_the_threshold_passes_ci_at_three_samples() {
        // 3% slower, inconclusive, the interval not wholly beyond 5%: exit 0.
        assert_eq!(exit_code(3, 0.97), 0);
    }
}
