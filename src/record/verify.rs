//! A result file's figures checked against its own raw samples (issue 35). A file from
//! another machine is untrusted: its stored means, medians and intervals are what tables,
//! comparisons and the page print, so a stale or edited summary would be believed. Every
//! reader that turns a file into figures (`compare`, `merge`, the leaderboard, the ladder
//! table, `publish`) reads it through [`read`], which recomputes each test's figures from
//! its samples with the very functions the run used (`stats::summarize`,
//! `stats::rates_per_second`, `LevelInterval::of`, `stats::analysis::analyse`) and refuses
//! the file at the first figure that differs, naming the file, the test and the field.
//!
//! What is recomputed, per successful test:
//! - `samples_ts` from `samples_ns` (llama-bench kinds: n_tokens / time);
//! - `avg_ts`, `stddev_ts`, `median_ts` from `samples_ts`; `avg_ns` from `samples_ns`;
//! - each round: its samples are the next stretch of the test's, its `median_ts` and its
//!   interval those of its own samples;
//! - `stats`: the interval that applies (between rounds from the round medians, else within
//!   one launch), the coefficient of variation, and the seeded bootstrap intervals (up to
//!   [`BOOTSTRAP_MAX`] samples).
//!
//! An interval recomputed from the samples is the one the statistics give: a stale interval
//! that misses its estimate (the "57.1 (57.1–182)" of issue 35) differs from it and is refused.

use std::path::Path;

use super::{Contradiction, Disagreement, RecordError, RunRecord, Status, TestRecord, results};
use crate::stats::analysis::{Covers, LevelInterval};

/// Above this many samples the seeded bootstrap intervals are not recomputed on reading:
/// its cost grows with the samples, and the interval that tables show is checked anyway.
pub(crate) const BOOTSTRAP_MAX: usize = 2000;

/// Reads a result file and checks its figures against its samples: a file whose stored
/// figures its samples contradict is refused with one line naming file, test and field.
pub fn read(path: &Path) -> Result<RunRecord, RecordError> {
    let run = results::read(path)?;
    check(&run).map_err(|source| RecordError::Contradicted {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(run)
}

/// The first figure of `run` that its samples contradict, as "test ID: FIELD ...". No file
/// is named here: [`read`] adds it.
pub fn check(run: &RunRecord) -> Result<(), Contradiction> {
    for t in &run.tests {
        check_test(t).map_err(|disagreement| Contradiction {
            test: t.id.clone(),
            disagreement,
        })?;
    }
    Ok(())
}

/// Equal to 6 significant digits: a file written by another tool (or by hand) that rounds
/// its rates or sums in another order agrees; an edited figure does not (a tampered median is
/// off by percents, not by parts per million).
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-300)
}

fn mismatch(
    field: &str,
    stored: impl std::fmt::Display,
    recomputed: impl std::fmt::Display,
) -> Disagreement {
    Disagreement::Figure {
        field: field.to_string(),
        stored: stored.to_string(),
        recomputed: recomputed.to_string(),
    }
}

fn same(field: &str, stored: Option<f64>, recomputed: f64) -> Result<(), Disagreement> {
    match stored {
        Some(s) if !close(s, recomputed) => Err(mismatch(field, s, recomputed)),
        _ => Ok(()),
    }
}

fn same_ns(field: &str, stored: Option<u64>, recomputed: f64) -> Result<(), Disagreement> {
    match stored {
        // Stored rounded to whole ns.
        Some(s) if (s as f64 - recomputed).abs() > 1.0 + 1e-6 * recomputed.abs() => {
            Err(mismatch(field, s, recomputed.round()))
        }
        _ => Ok(()),
    }
}

fn same_interval(
    field: &str,
    stored: &LevelInterval,
    recomputed: Option<LevelInterval>,
) -> Result<(), Disagreement> {
    let shown = |i: &LevelInterval| format!("[{}, {}] ({} values)", i.lo, i.hi, i.n);
    match recomputed {
        None => Err(mismatch(
            field,
            shown(stored),
            "no interval (fewer than 2 values)",
        )),
        Some(r) if r.n != stored.n || !close(r.lo, stored.lo) || !close(r.hi, stored.hi) => {
            Err(mismatch(field, shown(stored), shown(&r)))
        }
        Some(_) => Ok(()),
    }
}

fn check_test(t: &TestRecord) -> Result<(), Disagreement> {
    if t.status != Status::Ok {
        return Ok(());
    }
    if t.samples_ts.is_empty() {
        // A test without repetitions (quality) has no rates to show.
        return match (t.avg_ts, t.median_ts) {
            (None, None) => Ok(()),
            (a, m) => Err(mismatch(
                "median_ts",
                m.or(a).unwrap_or(0.0),
                "nothing (there are no samples)",
            )),
        };
    }
    if t.samples_ns.len() != t.samples_ts.len() {
        return Err(Disagreement::SampleCounts {
            ns: t.samples_ns.len(),
            ts: t.samples_ts.len(),
        });
    }
    if t.kind.is_llama_bench() {
        let rates = crate::stats::rates_per_second(t.params.n_tokens(), &t.samples_ns);
        for (i, (s, r)) in t.samples_ts.iter().zip(&rates).enumerate() {
            if !close(*s, *r) {
                return Err(mismatch(&format!("samples_ts[{i}]"), s, r));
            }
        }
    }
    let ts = &t.samples_ts;
    let ns: Vec<f64> = t.samples_ns.iter().map(|&x| x as f64).collect();
    same("avg_ts", t.avg_ts, crate::stats::mean(ts))?;
    same("stddev_ts", t.stddev_ts, crate::stats::stddev(ts))?;
    same("median_ts", t.median_ts, crate::stats::median(ts))?;
    // `stddev_ns` is llama-bench's, exported as stored and read by no figure: not checked.
    same_ns("avg_ns", t.avg_ns, crate::stats::mean(&ns))?;
    check_rounds(t)?;
    check_stats(t)
}

fn check_rounds(t: &TestRecord) -> Result<(), Disagreement> {
    if t.rounds.is_empty() {
        return Ok(());
    }
    let mut at = 0;
    for (k, r) in t.rounds.iter().enumerate() {
        let end = at + r.samples_ns.len();
        if t.samples_ns.get(at..end) != Some(r.samples_ns.as_slice()) {
            return Err(Disagreement::RoundSamples {
                round: k,
                from: at,
                to: end,
            });
        }
        let ts = &t.samples_ts[at..end];
        at = end;
        if t.kind.is_llama_bench() {
            same(
                &format!("rounds[{k}].median_ts"),
                Some(r.median_ts),
                crate::stats::median(ts),
            )?;
        }
        if let Some(i) = &r.interval {
            same_interval(
                &format!("rounds[{k}].interval"),
                i,
                LevelInterval::of(Covers::WithinLaunch, ts),
            )?;
        }
    }
    if at != t.samples_ns.len() {
        return Err(Disagreement::RoundsTotal {
            held: at,
            total: t.samples_ns.len(),
        });
    }
    Ok(())
}

fn check_stats(t: &TestRecord) -> Result<(), Disagreement> {
    let Some(s) = &t.stats else {
        return Ok(());
    };
    let ts = &t.samples_ts;
    let m = crate::stats::mean(ts);
    let cv = if m > 0.0 {
        crate::stats::stddev(ts) / m
    } else {
        0.0
    };
    same("stats.cv", Some(s.cv), cv)?;
    if let Some(i) = &s.interval {
        let recomputed = if t.rounds.len() >= 2 {
            LevelInterval::of(Covers::BetweenRounds, &t.round_medians())
        } else {
            LevelInterval::of(Covers::WithinLaunch, ts)
        };
        same_interval("stats.interval", i, recomputed)?;
    }
    if ts.len() <= BOOTSTRAP_MAX {
        let again = crate::stats::analysis::analyse(ts, s.stop_reason, None, t.seed);
        for (field, stored, r) in [
            ("stats.mean_ci", &s.mean_ci, &again.mean_ci),
            ("stats.median_ci", &s.median_ci, &again.median_ci),
        ] {
            if !close(stored.lo, r.lo) || !close(stored.hi, r.hi) {
                return Err(mismatch(
                    field,
                    format!("[{}, {}]", stored.lo, stored.hi),
                    format!("[{}, {}]", r.lo, r.hi),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
