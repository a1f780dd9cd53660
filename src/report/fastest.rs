//! The answer a placement sweep is for: per model and test (one machine's records), the
//! fastest placement that ran (one that did not fit failed) and those it ties with, by the
//! answer's rule (`stats::resolve`): paired by round within a run, else against the noise
//! between launches, so one launch's tight intervals never exclude the next one's fastest.

use std::collections::BTreeMap;

use crate::config::knobs::{PLACEMENT, placement};
use crate::record::{Status, TestRecord};
use crate::stats::analysis::{Covers, LevelInterval};
use crate::stats::compare::NoiseFloor;
use crate::stats::resolve::{Choice, Run, resolve_runs};
use crate::stats::ties::Figure;

#[derive(Debug, Clone, PartialEq)]
pub struct Fastest {
    pub model: String,
    pub test: String,
    /// The placement with the highest median, e.g. "ngl 99, ncmoe 12".
    pub best: String,
    pub median_ts: f64,
    /// Placements not established slower than the best one.
    pub ties: Vec<String>,
    /// Placements measured in the group.
    pub of: usize,
}

impl Fastest {
    pub fn line(&self) -> String {
        let ties = super::wrapped("; tied with ", &self.ties.join(" | "), "");
        format!(
            "fastest placement, {} {}: {} at {:.2} t/s (of {} placements{ties})",
            self.model, self.test, self.best, self.median_ts, self.of
        )
    }
}

/// `v`, a rate of `t`, with the test's recorded 95% interval (older files: computed from
/// the repetitions) widened to hold it, and that interval.
pub(crate) fn figure(t: &TestRecord, v: f64) -> (Figure, Option<LevelInterval>) {
    let i = (t.stats.as_ref().and_then(|s| s.interval))
        .or_else(|| LevelInterval::of(Covers::WithinLaunch, &t.samples_ts));
    (Figure::widened(v, i.as_ref()), i)
}

/// The answer per group of `tests` (one machine's) at two or more placements, all else equal;
/// `runs[i]`: the run test i was measured in (pairs by round), `None` when nothing pairs it.
pub fn fastest(tests: &[&TestRecord], runs: &[Option<Run>]) -> Vec<Fastest> {
    type Group = Vec<(String, Figure, Vec<f64>, Option<Run>)>;
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    for (i, t) in tests.iter().enumerate() {
        if !t.kind.is_llama_bench() || t.status != Status::Ok {
            continue;
        }
        let Some(v) = t.median_ts else { continue };
        let mut rest = t.params.all_fields();
        for k in PLACEMENT {
            rest.remove(*k);
        }
        let rest = serde_json::Value::Object(rest).to_string();
        let run = runs.get(i).copied().flatten();
        let placed = (placement(&t.params), figure(t, v).0, t.round_medians(), run);
        let key = (t.model.clone(), t.test.clone(), rest);
        groups.entry(key).or_default().push(placed);
    }
    let mut out = Vec::new();
    for ((model, test, _), mut v) in groups {
        // A placement listed twice keeps its first measurement.
        let mut seen = Vec::new();
        v.retain(|(p, ..)| {
            let new = !seen.contains(p);
            seen.push(p.clone());
            new
        });
        if v.len() < 2 {
            continue;
        }
        v.sort_by(|a, b| b.1.value.total_cmp(&a.1.value));
        let choices: Vec<Choice> = (v.iter())
            .map(|(_, f, rounds, _)| Choice {
                speed: *f,
                rounds: rounds.clone(),
                error: None,
            })
            .collect();
        let group_runs: Vec<Option<Run>> = v.iter().map(|x| x.3).collect();
        let r = resolve_runs(&choices, &group_runs, 0.0, 0.05, &NoiseFloor::assumed());
        let Some(best) = r.best else { continue };
        out.push(Fastest {
            model,
            test,
            best: v[best].0.clone(),
            median_ts: v[best].1.value,
            ties: r.best_ties.iter().map(|&k| v[k].0.clone()).collect(),
            of: v.len(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::knobs::KnobValue;

    fn rec(ncmoe: i64, samples: &[f64], ok: bool) -> TestRecord {
        let mut t = crate::report::export::fixtures::run().tests[0].clone();
        t.params.knobs.set("n_cpu_moe", KnobValue::Int(ncmoe));
        t.samples_ts = samples.to_vec();
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        t.median_ts = Some(s[s.len() / 2]);
        t.stats = None;
        if !ok {
            t.status = Status::Failed;
        }
        t
    }

    #[test]
    fn the_fastest_placement_is_named_with_the_ones_it_ties_with() {
        let a = rec(0, &[100.0, 101.0, 99.0], true);
        let b = rec(8, &[200.0, 201.0, 199.0], true);
        let c = rec(16, &[199.5, 202.0, 197.0], true);
        let d = rec(24, &[500.0, 500.0, 500.0], false);
        let f = fastest(&[&a, &b, &c, &d], &[]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].best, "ngl 99, ncmoe 8");
        assert_eq!(f[0].ties, vec!["ngl 99, ncmoe 16".to_string()]);
        assert_eq!(
            f[0].of, 3,
            "the failed placement (did not fit) is no candidate"
        );
        assert!(f[0].line().contains("tied with ngl 99, ncmoe 16"));
        // One placement: nothing to choose.
        assert!(fastest(&[&a], &[]).is_empty());
    }
}
