//! A result file's figures checked against its own raw samples: a file from another machine
//! is untrusted, and its stored summaries are what tables and pages print. Every reader goes
//! through [`read`], which recomputes each test's figures with the functions the run used
//! and refuses the file at the first that differs, naming the file, the test and the field.
//!
//! Recomputed per successful test: `samples_ts`, the mean, stddev and median, each round's
//! samples, median and interval, `stats` (interval, CV, bootstrap intervals up to
//! [`BOOTSTRAP_MAX`] samples), and `run.tune` replayed (`verify/tune.rs`).
//!
//! The bootstrap intervals cost thousands of resamples per test and no table shows them, so
//! they are checked where the file is passed on ([`Scope::Complete`]: `export`, `publish`,
//! `merge`); readers that show figures ([`read_shown`]) check every figure they show.

use std::collections::HashMap;
use std::fmt::Display;
use std::path::Path;

use super::{Contradiction, Disagreement, RecordError, RunRecord, Status, TestRecord, results};
use crate::stats::analysis::{Covers, LevelInterval, TestStats};
use crate::stats::bootstrap::Interval;
/// Figures in a refusal line are written short: a tampered `1e308` is not 309 digits.
use crate::util::units::short_number as short;

/// Above this many samples the seeded bootstrap intervals are not recomputed on reading:
/// its cost grows with the samples, and the interval that tables show is checked anyway.
pub(crate) const BOOTSTRAP_MAX: usize = 2000;

/// Which of a file's figures a reader recomputes from the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every figure a report shows: rates, means, medians, spreads, rounds, intervals and
    /// the coefficient of variation; not the bootstrap intervals, which no report shows.
    Shown,
    /// Those and the bootstrap intervals: for readers that pass the stored figures on.
    Complete,
}

/// Reads a result file and checks all its figures against its samples: a file whose stored
/// figures its samples contradict is refused with one line naming file, test and field.
pub fn read(path: &Path) -> Result<RunRecord, RecordError> {
    read_scoped(path, Scope::Complete)
}

/// [`read`] for readers that show figures and do not pass the file on: every figure a
/// report shows is checked, the bootstrap intervals are not (see the module doc).
pub fn read_shown(path: &Path) -> Result<RunRecord, RecordError> {
    read_scoped(path, Scope::Shown)
}

fn read_scoped(path: &Path, scope: Scope) -> Result<RunRecord, RecordError> {
    let run = results::read(path)?;
    check_scoped(&run, scope).map_err(|source| RecordError::Contradicted {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(run)
}

/// The first figure of `run` that its samples contradict, as "test ID: FIELD ...". No file
/// is named here: [`read`] adds it.
pub fn check(run: &RunRecord) -> Result<(), Contradiction> {
    check_scoped(run, Scope::Complete)
}

/// [`check`] of the figures `scope` names.
pub fn check_scoped(run: &RunRecord, scope: Scope) -> Result<(), Contradiction> {
    let mut bootstraps = Bootstraps {
        scope,
        seen: HashMap::new(),
    };
    for t in &run.tests {
        check_test(t, &mut bootstraps).map_err(|disagreement| Contradiction {
            test: t.id.clone(),
            disagreement,
        })?;
    }
    // After the tests: the race is replayed from their rounds, checked just above.
    tune::check(run).map_err(|disagreement| Contradiction {
        test: "run.tune".into(),
        disagreement,
    })
}

/// The bootstrap intervals recomputed so far, by seed and samples: a sample set read again
/// (a merged file beside its shards, a copied test) is resampled once.
struct Bootstraps {
    scope: Scope,
    seen: HashMap<(u64, Vec<u64>), [Interval; 2]>,
}

impl Bootstraps {
    /// The mean's and the median's intervals of `ts` under `seed`, as the run computed them;
    /// None where they are not checked (`Scope::Shown`, more than [`BOOTSTRAP_MAX`] samples).
    fn of(&mut self, ts: &[f64], stats: &TestStats, seed: u64) -> Option<[Interval; 2]> {
        if self.scope == Scope::Shown || ts.len() > BOOTSTRAP_MAX {
            return None;
        }
        let key = (seed, ts.iter().map(|x| x.to_bits()).collect());
        let again = self.seen.entry(key).or_insert_with(|| {
            let a = crate::stats::analysis::analyse(ts, stats.stop_reason, None, seed);
            [a.mean_ci, a.median_ci]
        });
        Some(*again)
    }
}

/// Equal to 6 significant digits: a file written by another tool (or by hand) that rounds
/// its rates or sums in another order agrees; an edited figure does not (a tampered median is
/// off by percents, not by parts per million).
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-300)
}

fn mismatch<T>(field: &str, stored: impl Display, got: impl Display) -> Result<T, Disagreement> {
    Err(Disagreement::Figure {
        field: field.to_string(),
        stored: stored.to_string(),
        recomputed: got.to_string(),
    })
}

fn pair(lo: f64, hi: f64) -> String {
    format!("[{}, {}]", short(lo), short(hi))
}

fn same(field: &str, stored: Option<f64>, recomputed: f64) -> Result<(), Disagreement> {
    match stored {
        Some(s) if !close(s, recomputed) => mismatch(field, short(s), short(recomputed)),
        _ => Ok(()),
    }
}

fn same_ns(field: &str, stored: Option<u64>, recomputed: f64) -> Result<(), Disagreement> {
    match stored {
        // Stored rounded to whole ns.
        Some(s) if (s as f64 - recomputed).abs() > 1.0 + 1e-6 * recomputed.abs() => {
            mismatch(field, s, short(recomputed.round()))
        }
        _ => Ok(()),
    }
}

fn same_interval(
    field: &str,
    stored: &LevelInterval,
    recomputed: Option<LevelInterval>,
) -> Result<(), Disagreement> {
    let shown = |i: &LevelInterval| format!("{} ({} values)", pair(i.lo, i.hi), i.n);
    match recomputed {
        None => mismatch(field, shown(stored), "no interval (fewer than 2 values)"),
        Some(r) if r.n != stored.n || !close(r.lo, stored.lo) || !close(r.hi, stored.hi) => {
            mismatch(field, shown(stored), shown(&r))
        }
        Some(_) => Ok(()),
    }
}

fn check_test(t: &TestRecord, bootstraps: &mut Bootstraps) -> Result<(), Disagreement> {
    if t.status != Status::Ok {
        return Ok(());
    }
    if t.samples_ts.is_empty() {
        // A test without repetitions (quality) has no rates to show.
        return match (t.avg_ts, t.median_ts) {
            (None, None) => Ok(()),
            (a, m) => mismatch(
                "median_ts",
                short(m.or(a).unwrap_or(0.0)),
                "nothing (there are no samples)",
            ),
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
                return mismatch(&format!("samples_ts[{i}]"), short(*s), short(*r));
            }
        }
    }
    if let Some(s) = &t.speculative {
        if !s.consistent() {
            return mismatch(
                "speculative",
                "its speedup, rates or acceptance",
                "other figures from its rounds and counts",
            );
        }
        let rates = s.rates();
        if rates.len() != t.samples_ts.len()
            || rates.iter().zip(&t.samples_ts).any(|(a, b)| !close(*a, *b))
        {
            return mismatch(
                "samples_ts",
                format!("{} rates", t.samples_ts.len()),
                format!("the {} speculative rounds' rates", rates.len()),
            );
        }
    }
    if let Some(why) = t
        .serving
        .as_ref()
        .and_then(|s| s.drafts.as_ref())
        .and_then(|d| d.inconsistent())
    {
        return mismatch(
            "serving.drafts",
            why,
            "accepted ≤ drafted, answers counted ≤ answers",
        );
    }
    let ts = &t.samples_ts;
    let ns: Vec<f64> = t.samples_ns.iter().map(|&x| x as f64).collect();
    same("avg_ts", t.avg_ts, crate::stats::mean(ts))?;
    same("stddev_ts", t.stddev_ts, crate::stats::stddev(ts))?;
    same("median_ts", t.median_ts, crate::stats::median(ts))?;
    // `stddev_ns` is llama-bench's, exported as stored and read by no figure: not checked.
    same_ns("avg_ns", t.avg_ns, crate::stats::mean(&ns))?;
    check_rounds(t)?;
    check_stats(t, bootstraps)
}

fn check_rounds(t: &TestRecord) -> Result<(), Disagreement> {
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
    if !t.rounds.is_empty() && at != t.samples_ns.len() {
        return Err(Disagreement::RoundsTotal {
            held: at,
            total: t.samples_ns.len(),
        });
    }
    Ok(())
}

fn check_stats(t: &TestRecord, bootstraps: &mut Bootstraps) -> Result<(), Disagreement> {
    let Some(s) = &t.stats else {
        return Ok(());
    };
    let ts = &t.samples_ts;
    same("stats.cv", Some(s.cv), crate::stats::analysis::cv(ts))?;
    if let Some(i) = &s.interval {
        let recomputed = if t.rounds.len() >= 2 {
            LevelInterval::of(Covers::BetweenRounds, &t.round_medians())
        } else {
            LevelInterval::of(Covers::WithinLaunch, ts)
        };
        same_interval("stats.interval", i, recomputed)?;
    }
    if let Some([mean_ci, median_ci]) = bootstraps.of(ts, s, t.seed) {
        for (field, stored, r) in [
            ("stats.mean_ci", &s.mean_ci, &mean_ci),
            ("stats.median_ci", &s.median_ci, &median_ci),
        ] {
            if !close(stored.lo, r.lo) || !close(stored.hi, r.hi) {
                return mismatch(field, pair(stored.lo, stored.hi), pair(r.lo, r.hi));
            }
        }
    }
    Ok(())
}

mod bisect;
#[cfg(test)]
mod tests;
mod tune;
