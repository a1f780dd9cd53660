//! `tpsbench compare A B`: joins the tests of two result sets on their key properties, as
//! llama.cpp's compare-llama-bench.py does, and gives each pair a speedup with a confidence
//! interval and a verdict from a significance test on the raw samples.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::record::{RunRecord, Status, TestRecord};
use crate::results;
use crate::stats::compare::{Comparison, Settings, Verdict, compare};

/// Default location of named baselines (like criterion's target/criterion/*/NAME).
pub const BASELINE_DIR: &str = "target/tpsbench/baselines";

/// One side of a comparison: tests with the model's sha256 alongside.
pub struct Side {
    pub label: String,
    pub tests: Vec<(String, TestRecord)>,
}

/// Resolves a file, a directory of result files, or a named baseline in `baseline_dir`.
pub fn load_side(spec: &str, baseline_dir: &Path) -> Result<Side, String> {
    let path = PathBuf::from(spec);
    let files: Vec<PathBuf> = if path.is_file() {
        vec![path.clone()]
    } else if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|e| format!("{spec}: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(format!(
                "{spec}: no result files (*.json) in this directory"
            ));
        }
        v
    } else {
        let b = baseline_dir.join(format!("{spec}.json"));
        if !b.is_file() {
            return Err(format!(
                "{spec}: no such file or directory, and no baseline named {spec:?} in {}",
                baseline_dir.display()
            ));
        }
        vec![b]
    };
    // Later files win for the same test identity: sorted names are start times.
    let mut by_identity: BTreeMap<String, (String, TestRecord)> = BTreeMap::new();
    for f in &files {
        let run = results::read(f)?;
        for t in sides_tests(&run) {
            by_identity.insert(t.1.identity.clone(), t);
        }
    }
    let mut tests: Vec<(String, TestRecord)> = by_identity.into_values().collect();
    tests.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    Ok(Side {
        label: spec.to_string(),
        tests,
    })
}

/// The successful tests of one run as a comparison side.
pub fn side_of_run(label: &str, run: &RunRecord) -> Side {
    Side {
        label: label.to_string(),
        tests: sides_tests(run),
    }
}

fn sides_tests(run: &RunRecord) -> Vec<(String, TestRecord)> {
    run.tests
        .iter()
        .filter(|t| t.status == Status::Ok && !t.samples_ts.is_empty())
        .map(|t| {
            let sha = run
                .models
                .iter()
                .find(|m| m.name == t.model)
                .map(|m| m.sha256.clone())
                .unwrap_or_default();
            (sha, t.clone())
        })
        .collect()
}

/// The properties a test is joined on: the model file and every parameter.
fn properties(sha: &str, t: &TestRecord) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("model".to_string(), sha.to_string());
    for (k, v) in t.params.all_fields() {
        m.insert(k, v.to_string());
    }
    m
}

/// Properties that take one value in A and a different single value in B: the thing being
/// compared (1 thread against 2, one build against another model file...).
fn varied(a: &Side, b: &Side) -> Vec<String> {
    let values = |s: &Side, k: &str| -> Vec<String> {
        let mut v: Vec<String> = s
            .tests
            .iter()
            .map(|(sha, t)| properties(sha, t)[k].clone())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let Some((sha, t)) = a.tests.first() else {
        return Vec::new();
    };
    properties(sha, t)
        .keys()
        .filter(|k| !matches!(k.as_str(), "n_prompt" | "n_gen" | "n_depth"))
        .filter(|k| {
            let (va, vb) = (values(a, k), values(b, k));
            va.len() == 1 && vb.len() == 1 && va != vb
        })
        .cloned()
        .collect()
}

/// One joined pair.
pub struct Row {
    pub test: String,
    pub a_median: f64,
    pub b_median: f64,
    pub a_n: usize,
    pub b_n: usize,
    pub comparison: Comparison,
}

pub struct Report {
    /// Properties ignored in the join because they are what differs: (name, A value, B value).
    pub varied: Vec<(String, String, String)>,
    pub rows: Vec<Row>,
    pub unmatched: usize,
}

/// Joins and compares; `ignore` adds properties to leave out of the join.
pub fn compare_sides(a: &Side, b: &Side, ignore: &[String], settings: Settings) -> Report {
    let mut skip = varied(a, b);
    for i in ignore {
        if !skip.contains(i) {
            skip.push(i.clone());
        }
    }
    let key = |sha: &str, t: &TestRecord| {
        let mut p = properties(sha, t);
        p.retain(|k, _| !skip.contains(k));
        p
    };
    let described = skip
        .iter()
        .map(|k| {
            let first = |s: &Side| {
                s.tests
                    .first()
                    .map(|(sha, t)| properties(sha, t).get(k).cloned().unwrap_or_default())
                    .unwrap_or_default()
            };
            let short = |v: String| {
                if k == "model" {
                    v.chars().take(12).collect()
                } else {
                    v
                }
            };
            (k.clone(), short(first(a)), short(first(b)))
        })
        .collect();
    let mut rows = Vec::new();
    let mut unmatched = 0;
    for (sha, ta) in &a.tests {
        let ka = key(sha, ta);
        match b.tests.iter().find(|(shb, tb)| key(shb, tb) == ka) {
            None => unmatched += 1,
            Some((_, tb)) => rows.push(Row {
                test: format!("{}/{}", ta.model, ta.test),
                a_median: crate::stats::median(&ta.samples_ts),
                b_median: crate::stats::median(&tb.samples_ts),
                a_n: ta.samples_ts.len(),
                b_n: tb.samples_ts.len(),
                comparison: compare(&ta.samples_ts, &tb.samples_ts, settings),
            }),
        }
    }
    unmatched += b.tests.len().saturating_sub(rows.len());
    Report {
        varied: described,
        rows,
        unmatched,
    }
}

impl Report {
    /// Rows that fail CI at `threshold` (0.05 = 5%): a significant slowdown beyond it, or an
    /// inconclusive pair (e.g. too few samples for the test) whose whole interval lies beyond
    /// it. An underpowered test cannot say "slower", but a 2x slowdown it cannot miss.
    pub fn regressions(&self, threshold: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| {
                let c = &r.comparison;
                match c.verdict {
                    Verdict::Slower => c.speedup < 1.0 - threshold,
                    Verdict::Inconclusive => c.interval_slower_than(threshold),
                    Verdict::Faster | Verdict::NoChange => false,
                }
            })
            .collect()
    }

    /// The line that fails CI at `threshold`, e.g. "2 regression(s) beyond 5.0%: 1
    /// significant, 1 with too few samples ..."; None when no row fails. An underpowered
    /// pair is never called significant.
    pub fn regression_line(&self, threshold: f64) -> Option<String> {
        let regressions = self.regressions(threshold);
        if regressions.is_empty() {
            return None;
        }
        let significant = regressions
            .iter()
            .filter(|r| r.comparison.verdict == Verdict::Slower)
            .count();
        Some(format!(
            "{} regression(s) beyond {:.1}%: {significant} significant, {} with too few \
             samples for the test but the whole interval beyond",
            regressions.len(),
            threshold * 100.0,
            regressions.len() - significant
        ))
    }

    /// Rows the data cannot decide.
    pub fn inconclusive(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.comparison.verdict == Verdict::Inconclusive)
            .collect()
    }

    pub fn to_markdown(&self, a: &str, b: &str) -> String {
        let mut out = String::new();
        for (k, va, vb) in &self.varied {
            out.push_str(&format!("compared across {k}: {va} (A) vs {vb} (B)\n"));
        }
        out.push_str(&format!("A = {a}\nB = {b}\n\n"));
        out.push_str(
            "| test | A t/s (median) | B t/s (median) | speedup B/A | 95% CI | p | verdict |\n",
        );
        out.push_str("| --- | ---: | ---: | ---: | --- | ---: | --- |\n");
        for r in &self.rows {
            let c = &r.comparison;
            out.push_str(&format!(
                "| {} | {:.2} (n={}) | {:.2} (n={}) | {:.3} | [{:.3}, {:.3}] | {:.4} | {} |\n",
                r.test,
                r.a_median,
                r.a_n,
                r.b_median,
                r.b_n,
                c.speedup,
                c.ci.lo,
                c.ci.hi,
                c.p_value,
                verdict_text(r)
            ));
        }
        if self.unmatched > 0 {
            out.push_str(&format!(
                "\n{} test(s) had no counterpart and were left out.\n",
                self.unmatched
            ));
        }
        out
    }
}

/// The verdict column: what the data says, and for an inconclusive pair, why.
fn verdict_text(r: &Row) -> String {
    let c = &r.comparison;
    match c.verdict {
        Verdict::Faster => "faster".into(),
        Verdict::Slower => "SLOWER".into(),
        Verdict::NoChange => "no change (within noise)".into(),
        Verdict::Inconclusive if c.too_few_samples => {
            let n = if r.a_n == r.b_n {
                format!("n = {}", r.a_n)
            } else {
                format!("n = {} and {}", r.a_n, r.b_n)
            };
            format!(
                "inconclusive: too few samples ({n}; the smallest attainable p is {:.3}), \
                 interval [{:.3}, {:.3}]",
                c.min_attainable_p, c.ci.lo, c.ci.hi
            )
        }
        Verdict::Inconclusive => format!(
            "inconclusive: interval [{:.3}, {:.3}] is beyond the noise band but p = {:.3} is not significant",
            c.ci.lo, c.ci.hi, c.p_value
        ),
    }
}

/// Saves a run as the named baseline.
pub fn save_baseline(run: &RunRecord, name: &str, dir: &Path) -> Result<PathBuf, String> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!(
            "invalid baseline name {name:?}: use letters, digits, '-' or '_'"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let p = dir.join(format!("{name}.json"));
    results::write_atomic(&p, run)?;
    Ok(p)
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
