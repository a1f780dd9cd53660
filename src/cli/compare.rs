//! `tpsbench compare A B`.

use anyhow::{Result, bail};

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
    let regressions = report.regressions(fail);
    if !regressions.is_empty() {
        eprintln!(
            "error: {} significant regression(s) beyond {:.1}%",
            regressions.len(),
            fail * 100.0
        );
        return Ok(1);
    }
    Ok(0)
}
