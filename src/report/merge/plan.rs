//! What the plan a sharded run records (`run.plan_settings`, `run.plan_ids`) tells a merge:
//! why two files are of different sweeps, and which tests of the sweep no file holds.

use std::collections::HashSet;

use crate::record::{RunInfo, RunRecord};

/// Why the plans of runs `a` and `b` (named `na`, `nb`) differ; None when they cannot tell.
pub fn difference(a: &RunInfo, b: &RunInfo, na: &str, nb: &str) -> Option<String> {
    if let (Some(x), Some(y)) = (&a.plan_settings, &b.plan_settings) {
        if let Some((p, q)) = x.split(' ').zip(y.split(' ')).find(|(p, q)| p != q) {
            return Some(format!("measurement setting {p} in {na}, {q} in {nb}"));
        }
    }
    if a.plan_ids.is_empty() || b.plan_ids.is_empty() {
        return None;
    }
    let only =
        |x: &RunInfo, y: &RunInfo| x.plan_ids.iter().find(|i| !y.plan_ids.contains(i)).cloned();
    if let Some(id) = only(a, b) {
        return Some(format!("{na} plans {id}, {nb} does not"));
    }
    if let Some(id) = only(b, a) {
        return Some(format!("{nb} plans {id}, {na} does not"));
    }
    if a.plan_ids != b.plan_ids {
        return Some("the same tests in another order".into());
    }
    Some("a test is defined differently: a model file or a test's parameters".into())
}

/// The plan's test ids no record holds, in plan order; None when no shard records a plan.
pub fn absent(records: &[RunRecord]) -> Option<Vec<String>> {
    let sharded = |r: &&RunRecord| r.run.shard.is_some() && !r.run.plan_ids.is_empty();
    let plan = &records.iter().find(sharded)?.run.plan_ids;
    let ids = records.iter().flat_map(|r| &r.tests).map(|t| t.id.as_str());
    let held: HashSet<&str> = ids.collect();
    let absent = plan.iter().filter(|id| !held.contains(id.as_str()));
    Some(absent.cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    fn planned(settings: &str, ids: &[&str]) -> RunInfo {
        let mut r = fixtures::run().run;
        r.plan_settings = Some(settings.into());
        r.plan_ids = ids.iter().map(|s| s.to_string()).collect();
        r
    }

    #[test]
    fn the_first_difference_of_two_plans_is_named() {
        let a = planned("warmup=1 repetitions=5", &["x", "y"]);
        let diff = |b: &RunInfo| difference(&a, b, "a.json", "b.json").unwrap();
        assert_eq!(
            diff(&planned("warmup=1 repetitions=3", &["x", "y"])),
            "measurement setting repetitions=5 in a.json, repetitions=3 in b.json"
        );
        assert_eq!(
            diff(&planned("warmup=1 repetitions=5", &["x"])),
            "a.json plans y, b.json does not"
        );
        assert_eq!(
            diff(&planned("warmup=1 repetitions=5", &["x", "y", "z"])),
            "b.json plans z, a.json does not"
        );
        assert!(diff(&planned("warmup=1 repetitions=5", &["y", "x"])).contains("order"));
        assert!(diff(&a).contains("defined differently"));
        assert_eq!(difference(&fixtures::run().run, &a, "a", "b"), None);
    }
}
