//! Whether a merge's inputs are one whole sweep (one `run.plan_hash`, every `run.shard` once
//! and finished), else the merged file would pass for one; files recording neither get a note.

use super::MergeError;
use crate::record::{RunRecord, ShardInfo};

/// What the check found that still lets the merge go ahead.
#[derive(Debug, Default, PartialEq)]
pub struct Sweep {
    /// Lines for stderr: notes, and with `allow_partial` what is missing.
    pub notes: Vec<String>,
    /// The shards missing or unfinished ("1/4"), merged anyway under `allow_partial`.
    pub incomplete: Vec<String>,
    /// The plan hash the inputs share, if any records one.
    pub plan_hash: Option<String>,
}

/// Checks `records` (named by `name(k)`); `empty` names the inputs left out for being empty
/// (stopped before their first test ended), which make the sweep incomplete too.
pub fn check(
    records: &[RunRecord],
    name: &dyn Fn(usize) -> String,
    empty: &[String],
    allow_partial: bool,
) -> Result<Sweep, MergeError> {
    let mut sweep = Sweep {
        plan_hash: plan_hash(records, name)?,
        ..Sweep::default()
    };
    sweep.notes.extend(unchecked_note(records, name));
    let shards = Shards::of(records, name)?;
    let absent = super::plan::absent(records);
    let missing = shards.missing(absent.as_deref(), empty, &mut sweep.notes);
    let problems = problems(records, name, &shards, &missing, empty, absent.as_deref());
    if problems.is_empty() {
        return Ok(sweep);
    }
    // Without the plan recorded (older files), a shard that got no tests looks missing.
    let hint = if absent.is_some() || missing.len() <= empty.len() {
        ""
    } else {
        " (a shard with no tests writes no file: use at most as many shards as tests)"
    };
    if !allow_partial {
        let problems = problems.join(", ");
        return Err(MergeError::Incomplete { problems, hint });
    }
    sweep.notes.push(format!(
        "warning: the sweep is incomplete: {}; merged anyway (--allow-partial), the merged file \
         lists them under incomplete_shards",
        problems.join(", ")
    ));
    sweep.incomplete = shards.incomplete(records, missing);
    Ok(sweep)
}

/// The plan hash the inputs share, if any records one; Err when two differ.
fn plan_hash(
    records: &[RunRecord],
    name: &dyn Fn(usize) -> String,
) -> Result<Option<String>, MergeError> {
    let mut hashed = (records.iter().enumerate())
        .filter_map(|(k, r)| r.run.plan_hash.as_deref().map(|h| (k, h)));
    let Some((k0, h0)) = hashed.next() else {
        return Ok(None);
    };
    if let Some((k, h)) = hashed.find(|(_, h)| *h != h0) {
        let (a, b) = (name(k0), name(k));
        let why = super::plan::difference(&records[k0].run, &records[k].run, &a, &b)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        // The start of a hash, enough to tell two apart in a message.
        let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
        let (ha, hb) = (short(h0), short(h));
        return Err(MergeError::NotOneSweep { a, b, ha, hb, why });
    }
    Ok(Some(h0.to_string()))
}

/// The note naming the inputs that record no shard or no plan hash, which nothing checks.
fn unchecked_note(records: &[RunRecord], name: &dyn Fn(usize) -> String) -> Option<String> {
    let unchecked: Vec<String> = (0..records.len())
        .filter(|&k| records[k].run.shard.is_none() || records[k].run.plan_hash.is_none())
        .map(name)
        .collect();
    (!unchecked.is_empty()).then(|| {
        format!(
            "note: {} record(s) no shard or plan hash (written by an older tpsbench or without \
             --shard): merged without checking that the inputs are one whole sweep",
            unchecked.join(", ")
        )
    })
}

struct Shards {
    /// (input index, its shard), in input order.
    files: Vec<(usize, ShardInfo)>,
    count: usize,
    /// The input holding each shard index.
    file_of: Vec<Option<usize>>,
}

impl Shards {
    /// The inputs' shards; Err when they disagree on the count or one appears twice.
    fn of(records: &[RunRecord], name: &dyn Fn(usize) -> String) -> Result<Shards, MergeError> {
        let files: Vec<(usize, ShardInfo)> = (records.iter().enumerate())
            .filter_map(|(k, r)| r.run.shard.map(|s| (k, s)))
            .collect();
        let count = files.first().map_or(0, |&(_, s)| s.count);
        let mut file_of: Vec<Option<usize>> = vec![None; count];
        for &(k, s) in &files {
            if s.count != count || s.index >= count {
                let (k0, s0) = files[0];
                return Err(MergeError::ShardCounts {
                    a: name(k0),
                    a_shard: format!("{}/{}", s0.index, s0.count),
                    b: name(k),
                    b_shard: format!("{}/{}", s.index, s.count),
                });
            }
            if let Some(j) = file_of[s.index] {
                return Err(MergeError::ShardTwice {
                    shard: format!("{}/{count}", s.index),
                    a: name(j),
                    b: name(k),
                });
            }
            file_of[s.index] = Some(k);
        }
        Ok(Shards {
            files,
            count,
            file_of,
        })
    }

    /// The shard indices no input holds; with the plan recorded (`absent`), none when no test
    /// is absent: a shard that got no tests writes no file (said in `notes`).
    fn missing(
        &self,
        absent: Option<&[String]>,
        empty: &[String],
        notes: &mut Vec<String>,
    ) -> Vec<usize> {
        let count = self.count;
        let missing: Vec<usize> = (0..count).filter(|&i| self.file_of[i].is_none()).collect();
        if absent.is_some_and(|a| a.is_empty()) && !missing.is_empty() && empty.is_empty() {
            let which: Vec<String> = missing.iter().map(|i| format!("{i}/{count}")).collect();
            notes.push(format!(
                "note: shard {} wrote no file, and every test of the plan is in the others: it \
                 had no tests",
                which.join(", ")
            ));
            return Vec::new();
        }
        missing
    }

    /// The shards missing or unfinished ("1/4"), in index order.
    fn incomplete(&self, records: &[RunRecord], missing: Vec<usize>) -> Vec<String> {
        let unfinished = (self.files.iter())
            .filter(|(k, _)| records[*k].run.finished_at.is_none())
            .map(|(_, s)| s.index);
        let mut incomplete: Vec<usize> = missing.into_iter().chain(unfinished).collect();
        incomplete.sort_unstable();
        (incomplete.into_iter())
            .map(|i| format!("{i}/{}", self.count))
            .collect()
    }
}

/// What makes the sweep incomplete, in order: the missing shards, the unfinished ones, the
/// empty inputs, and the plan's tests that no input holds.
fn problems(
    records: &[RunRecord],
    name: &dyn Fn(usize) -> String,
    shards: &Shards,
    missing: &[usize],
    empty: &[String],
    absent: Option<&[String]>,
) -> Vec<String> {
    let count = shards.count;
    let missing_shard = |i: &usize| format!("missing shard {i}/{count}");
    let mut problems: Vec<String> = missing.iter().map(missing_shard).collect();
    for &(k, s) in &shards.files {
        if records[k].run.finished_at.is_none() {
            let (i, file) = (s.index, name(k));
            problems.push(format!("shard {i}/{count} did not finish ({file})"));
        }
    }
    for f in empty {
        problems.push(format!(
            "{f} is empty (its run stopped before its first test ended)"
        ));
    }
    if let Some(first) = absent.and_then(|a| a.first()) {
        let plan_len = (records.iter())
            .map(|r| r.run.plan_ids.len())
            .max()
            .unwrap_or(0);
        let n = absent.map_or(0, |a| a.len());
        problems.push(format!(
            "{n} of the plan's {plan_len} tests in no file (first: {first})"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    /// A finished shard file of plan `hash`; `shard` None is an older file.
    fn file(shard: Option<(usize, usize)>, hash: Option<&str>) -> RunRecord {
        let mut r = fixtures::run();
        r.run.shard = shard.map(|(index, count)| ShardInfo { index, count });
        r.run.plan_hash = hash.map(str::to_string);
        r.run.finished_at = Some("2026-01-01T11:00:00Z".into());
        r
    }

    fn names(k: usize) -> String {
        format!("s{k}.json")
    }

    fn run(records: &[RunRecord], allow_partial: bool) -> Result<Sweep, MergeError> {
        check(records, &names, &[], allow_partial)
    }

    #[test]
    fn a_whole_sweep_passes_without_a_note_and_keeps_its_plan_hash() {
        let all = [file(Some((1, 2)), Some("h")), file(Some((0, 2)), Some("h"))];
        let s = run(&all, false).unwrap();
        assert_eq!(s.notes, Vec::<String>::new());
        assert!(s.incomplete.is_empty());
        assert_eq!(s.plan_hash.as_deref(), Some("h"));
    }

    #[test]
    fn files_of_different_plans_are_refused_naming_both() {
        let a = file(Some((0, 2)), Some("aaaaaaaaaaaaaaaa11"));
        let b = file(Some((1, 2)), Some("bbbbbbbbbbbbbbbb22"));
        let e = run(&[a, b], true).unwrap_err().to_string();
        assert!(
            e.starts_with("s0.json and s1.json are not shards of one sweep")
                && e.contains("aaaaaaaaaaaa vs bbbbbbbbbbbb"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_missing_shard_is_named_and_refused_unless_partial_is_allowed() {
        let some = [file(Some((0, 3)), Some("h")), file(Some((2, 3)), Some("h"))];
        let e = run(&some, false).unwrap_err().to_string();
        assert!(
            e.starts_with("the sweep is incomplete: missing shard 1/3")
                && e.contains("--allow-partial"),
            "{e}"
        );
        let s = run(&some, true).unwrap();
        assert_eq!(s.incomplete, vec!["1/3"]);
        assert!(s.notes[0].contains("missing shard 1/3"), "{:?}", s.notes);
    }

    #[test]
    fn an_unfinished_shard_counts_as_incomplete() {
        let mut b = file(Some((1, 2)), Some("h"));
        b.run.finished_at = None;
        let e = run(&[file(Some((0, 2)), Some("h")), b.clone()], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("shard 1/2 did not finish (s1.json)"), "{e}");
        let s = run(&[b, file(Some((0, 2)), Some("h"))], true).unwrap();
        assert_eq!(s.incomplete, vec!["1/2"]);
    }

    #[test]
    fn an_empty_input_is_named_beside_the_shard_it_leaves_missing() {
        let some = [file(Some((0, 2)), Some("h"))];
        let stopped = ["s1.json".to_string()];
        let e = check(&some, &names, &stopped, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "the sweep is incomplete: missing shard 1/2, s1.json is empty (its run stopped \
                 before its first test ended); rerun"
            ),
            "{e}"
        );
        // Older files: nothing says which shard the empty file held; still incomplete.
        let e = check(&[file(None, None)], &names, &stopped, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("s1.json is empty"), "{e}");
        let s = check(&some, &names, &stopped, true).unwrap();
        assert_eq!(s.incomplete, vec!["1/2"]);
    }

    /// A finished shard file of plan "h" over `plan`, holding the tests `held`.
    fn planned(index: usize, count: usize, plan: &[&str], held: &[&str]) -> RunRecord {
        let mut r = file(Some((index, count)), Some("h"));
        r.run.plan_ids = plan.iter().map(|s| s.to_string()).collect();
        let t = r.tests[0].clone();
        r.tests = held
            .iter()
            .map(|id| {
                let mut x = t.clone();
                x.id = id.to_string();
                x
            })
            .collect();
        r
    }

    #[test]
    fn a_missing_shard_that_had_no_tests_is_no_gap() {
        let plan = ["a", "b"];
        let all = [planned(0, 3, &plan, &["a"]), planned(1, 3, &plan, &["b"])];
        let s = run(&all, false).unwrap();
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(
            s.notes[0].starts_with("note: shard 2/3 wrote no file"),
            "{:?}",
            s.notes
        );
        assert!(s.incomplete.is_empty());
    }

    #[test]
    fn tests_of_the_plan_in_no_file_are_counted_and_the_first_named() {
        let plan = ["a", "b", "c"];
        let e = run(&[planned(0, 3, &plan, &["a"])], false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "the sweep is incomplete: missing shard 1/3, missing shard 2/3, 2 of the plan's \
                 3 tests in no file (first: b); rerun"
            ),
            "{e}"
        );
        // Every shard there and finished, yet a test absent: still refused.
        let all = [planned(0, 2, &plan, &["a"]), planned(1, 2, &plan, &["b"])];
        let e = run(&all, false).unwrap_err().to_string();
        assert!(
            e.contains("1 of the plan's 3 tests in no file (first: c)"),
            "{e}"
        );
    }

    #[test]
    fn files_of_different_plans_name_the_first_difference() {
        let mut a = planned(0, 2, &["a", "b"], &["a"]);
        let mut b = planned(1, 2, &["a", "c"], &["c"]);
        a.run.plan_hash = Some("1".into());
        b.run.plan_hash = Some("2".into());
        let e = run(&[a, b], false).unwrap_err().to_string();
        assert!(
            e.contains("(plan hash 1 vs 2: s0.json plans b, s1.json does not)"),
            "{e}"
        );
    }

    #[test]
    fn a_duplicated_shard_is_refused_even_when_partial_is_allowed() {
        let dup = [
            file(Some((0, 2)), Some("h")),
            file(Some((1, 2)), Some("h")),
            file(Some((0, 2)), Some("h")),
        ];
        let e = run(&dup, true).unwrap_err().to_string();
        assert_eq!(
            e,
            "shard 0/2 appears twice, in s0.json and in s2.json: merge one file per shard"
        );
    }

    #[test]
    fn shards_of_different_counts_are_refused() {
        let e = run(&[file(Some((0, 2)), None), file(Some((1, 3)), None)], true)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s0.json is shard 0/2 but s1.json is shard 1/3"),
            "{e}"
        );
    }

    #[test]
    fn older_files_merge_with_a_note_naming_them() {
        let s = run(&[file(None, None), file(None, None)], false).unwrap();
        assert_eq!(s.notes.len(), 1);
        assert!(
            s.notes[0].starts_with("note: s0.json, s1.json record(s) no shard or plan hash"),
            "{:?}",
            s.notes
        );
        assert_eq!(s.plan_hash, None);
        // An older file beside shard files: the shards are still checked.
        let mixed = [file(None, None), file(Some((0, 2)), Some("h"))];
        let e = run(&mixed, false).unwrap_err().to_string();
        assert!(e.contains("missing shard 1/2"), "{e}");
    }
}
