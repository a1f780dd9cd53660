//! `tpsbench compare A B`, and `tpsbench noise`, the floor it judges separate launches by.
//!
//! Exit code 1 when a pair fails CI: a significant slowdown beyond --fail-threshold, or an
//! inconclusive pair (too few samples for the test to reach alpha) whose whole interval lies
//! beyond the threshold: an underpowered test cannot call a 2x slowdown significant, and it
//! must not pass CI either. Other inconclusive pairs exit 0 with a warning on stderr.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::outcome::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    a: String,
    b: String,
    /// Significance level.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// "no change" needs the whole interval inside ±this fraction.
    ///
    /// Example: tpsbench compare a.json b.json --threshold 0.03
    #[arg(long, default_value_t = 0.02)]
    threshold: f64,
    /// The sd of ln t/s between launches (0.03 = 3%) for separate launches; default: the
    /// floor `tpsbench noise` stored for B's machine, else 7%.
    ///
    /// Example: tpsbench compare a.json b.json --noise 0.03
    #[arg(long, value_name = "FRACTION")]
    noise: Option<f64>,
    /// A significant slowdown beyond this fraction fails (exit 1).
    #[arg(long, default_value_t = 0.05)]
    fail_threshold: f64,
    /// Also leave these properties out of the join (e.g. n_batch).
    #[arg(long)]
    ignore: Vec<String>,
    /// Where named baselines live.
    #[arg(long, default_value = crate::report::compare::BASELINE_DIR)]
    baseline_dir: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct NoiseArgs {
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Where measured floors live, one file per machine.
    #[arg(long, default_value = crate::report::compare::NOISE_DIR)]
    noise_dir: PathBuf,
}

/// Compares A with B; separate launches are judged against the floor stored in `noise_dir`.
pub(super) fn compare(c: &Args, noise_dir: &Path) -> Result<Outcome> {
    let noise = c.noise.unwrap_or(0.0);
    let fractions = [c.alpha, c.threshold, c.fail_threshold, noise];
    if !fractions.iter().all(|x| (0.0..1.0).contains(x)) {
        bail!("--alpha, --threshold, --noise and --fail-threshold are fractions between 0 and 1");
    }
    let sa = crate::report::compare::load_side(&c.a, &c.baseline_dir)?;
    let sb = crate::report::compare::load_side(&c.b, &c.baseline_dir)?;
    let settings = crate::stats::compare::Settings {
        alpha: c.alpha,
        threshold: c.threshold,
        floor: crate::report::compare::floor_for(c.noise, sb.machine.as_deref(), noise_dir),
        interleaved: false,
    };
    let report = crate::report::compare::compare_sides(&sa, &sb, &c.ignore, &settings);
    if report.rows.is_empty() {
        let (a, b) = (&c.a, &c.b);
        bail!("no test of {a} matches a test of {b} (try --ignore with the property that differs)");
    }
    print!("{}", report.to_markdown(&c.a, &c.b));
    let undecided = report.inconclusive().len();
    if undecided > 0 {
        eprintln!(
            "warning: {undecided} pair(s) inconclusive at ±{:.1}%: more rounds decide them \
             (tpsbench run --rounds N on both sides)",
            c.threshold * 100.0
        );
    }
    if let Some(line) = report.regression_line(c.fail_threshold) {
        eprintln!("error: {line}");
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Done)
}

/// `tpsbench noise FILE...`: stores the machine's noise floor measured from A/A launches
/// (files, or directories of result files).
pub(super) fn noise(a: &NoiseArgs) -> Result<Outcome> {
    let mut runs = Vec::new();
    for p in &a.files {
        let files: Vec<PathBuf> = if p.is_dir() {
            crate::record::results::json_files(p).with_context(|| p.display().to_string())?
        } else {
            vec![p.clone()]
        };
        for f in files {
            let run = crate::record::verify::read_shown(&f).map_err(anyhow::Error::msg)?;
            runs.push((f.display().to_string(), run));
        }
    }
    let f = crate::report::compare::measure_floor(&runs)?;
    let p = crate::report::compare::save_floor(&f, &a.noise_dir)?;
    println!(
        "noise floor of {}: {:.2}% between launches (sd of ln t/s over {} launches, {} tests, {} degrees of freedom)",
        f.machine,
        f.sd * 100.0,
        f.launches,
        f.tests,
        f.degrees_of_freedom
    );
    eprintln!(
        "saved to {}: compare and --baseline use it for separate launches on this machine",
        p.display()
    );
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two result files of one test with `n` repetitions, B's rates at `ratio` of A's.
    fn files(n: usize, ratio: f64) -> (tempfile::TempDir, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (name, scale) in [("a.json", 1.0), ("b.json", ratio)] {
            let mut run = crate::report::export::fixtures::run();
            run.tests.truncate(1);
            let t = &mut run.tests[0];
            let ns: Vec<u64> = [1_000_000_000, 1_010_000_000, 990_000_000, 1_005_000_000][..n]
                .iter()
                .map(|&x| (x as f64 / scale) as u64)
                .collect();
            t.set_samples(ns);
            let p = dir.path().join(name);
            crate::record::results::write_atomic(&p, &run).unwrap();
            paths.push(p.display().to_string());
        }
        (dir, paths.remove(0), paths.remove(0))
    }

    fn exit_code(n: usize, ratio: f64) -> i32 {
        let (dir, a, b) = files(n, ratio);
        let args = Args {
            a,
            b,
            alpha: 0.05,
            threshold: 0.02,
            noise: None,
            fail_threshold: 0.05,
            ignore: vec![],
            baseline_dir: dir.path().to_path_buf(),
        };
        compare(&args, &dir.path().join("noise"))
            .unwrap()
            .exit_code()
    }

    #[test]
    fn a_two_fold_slowdown_fails_ci_at_every_sample_count_on_single_launches() {
        for n in [2, 3, 4] {
            assert_eq!(exit_code(n, 0.52), 1, "n = {n}");
        }
    }

    #[test]
    fn an_unchanged_pair_passes_ci_at_every_sample_count() {
        for n in [2, 3, 4] {
            assert_eq!(exit_code(n, 1.0), 0, "n = {n}");
        }
    }

    #[test]
    fn a_slowdown_inside_the_noise_floor_passes_ci_on_single_launches() {
        // 8% slower on one launch each: within what a launch moves by (the assumed 7%).
        assert_eq!(exit_code(3, 0.92), 0);
    }
}
