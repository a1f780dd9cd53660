//! `tpsbench merge OUT.json IN...`: joins the result files of one sweep run in shards
//! (`tpsbench run --shard i/n` on several machines of one kind) into one result file.
//!
//! The output is an ordinary schema-1 result: `run` is the metadata of the earliest-started
//! input, with its start the earliest start, its end the latest end (null if any input did not
//! finish) and `command` the merge command; `models` and `tests` are the inputs' concatenated,
//! a test measured twice (same identity) kept once, the newest. What each input's own run was
//! is kept in an extra top-level `merged_from` array (`{file, run}`), which readers that do
//! not know it ignore.
//!
//! Inputs must come from the same hardware (CPU model and GPUs; host names may differ, as on
//! the nodes of a cluster): results from different hardware are not one run, and belong side
//! by side in `tpsbench leaderboard`, which keeps machines apart.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::leaderboard::load::{hardware, newer};
use crate::record::{RunRecord, TestRecord};
use crate::results;

/// The merged record and what the caller should tell the user.
pub struct Merged {
    pub record: RunRecord,
    /// `merged_from`: one `{file, run}` per input, in input order.
    pub sources: Vec<Value>,
    pub warnings: Vec<String>,
}

/// Merges already-read records (pure). `files[k]` names `records[k]` in messages.
pub fn merge(
    records: Vec<RunRecord>,
    files: &[PathBuf],
    command: Vec<String>,
) -> Result<Merged, String> {
    let first = records.first().ok_or("nothing to merge: no input file")?;
    let name = |k: usize| {
        files
            .get(k)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| format!("input {}", k + 1))
    };
    let hw = hardware(&first.run);
    for (k, r) in records.iter().enumerate().skip(1) {
        let other = hardware(&r.run);
        if other != hw {
            return Err(format!(
                "{} was measured on other hardware ({other}) than {} ({hw}): merge joins shards \
                 of one sweep on one kind of machine; pass both files to `tpsbench leaderboard` \
                 to compare machines",
                name(k),
                name(0)
            ));
        }
    }
    let mut warnings = Vec::new();
    let build = |r: &RunRecord| {
        format!(
            "tpsbench {} {} / llama-cpp-sys-2 {} {}",
            r.run.tool.version,
            r.run.tool.git_commit.as_deref().unwrap_or("-"),
            r.run.llama_cpp.sys_crate_version,
            r.run.llama_cpp.build_commit.as_deref().unwrap_or("-")
        )
    };
    for (k, r) in records.iter().enumerate().skip(1) {
        if build(r) != build(first) {
            warnings.push(format!(
                "warning: {} was made by {} but {} by {}: figures of different builds are merged",
                name(k),
                build(r),
                name(0),
                build(first)
            ));
        }
    }

    let earliest = (0..records.len())
        .min_by(|&a, &b| {
            newer(
                &records[a].run.started_at,
                "",
                &records[b].run.started_at,
                "",
            )
        })
        .unwrap_or(0);
    let mut run = records[earliest].run.clone();
    run.command = command;
    run.finished_at = records
        .iter()
        .map(|r| r.run.finished_at.clone())
        .collect::<Option<Vec<String>>>()
        .and_then(|ends| ends.into_iter().max_by(|a, b| newer(a, "", b, "")));

    let mut models = Vec::new();
    let mut tests: Vec<(TestRecord, String)> = Vec::new();
    let mut replaced = 0;
    for r in &records {
        for m in &r.models {
            match models
                .iter_mut()
                .find(|x: &&mut crate::record::ModelRecord| {
                    x.name == m.name && x.sha256 == m.sha256
                }) {
                // Prefer a record that llama.cpp loaded (it has model_type and sizes).
                Some(x) if x.model_type.is_none() && m.model_type.is_some() => *x = m.clone(),
                Some(_) => {}
                None => models.push(m.clone()),
            }
        }
        for t in &r.tests {
            match tests.iter_mut().find(|(x, _)| x.identity == t.identity) {
                Some((x, started)) => {
                    replaced += 1;
                    if newer(&t.test_time, &r.run.started_at, &x.test_time, started).is_gt() {
                        *x = t.clone();
                        *started = r.run.started_at.clone();
                    }
                }
                None => tests.push((t.clone(), r.run.started_at.clone())),
            }
        }
    }
    if replaced > 0 {
        warnings.push(format!(
            "note: {replaced} test(s) appeared in more than one input; the newest measurement of each is kept"
        ));
    }
    let sources = records
        .iter()
        .enumerate()
        .map(|(k, r)| json!({ "file": name(k), "run": r.run }))
        .collect();
    Ok(Merged {
        record: RunRecord {
            schema_version: crate::record::SCHEMA_VERSION,
            run,
            models,
            tests: tests.into_iter().map(|(t, _)| t).collect(),
        },
        sources,
        warnings,
    })
}

/// Reads the inputs, merges them and writes `output` atomically. Returns the warnings.
pub fn merge_files(
    output: &Path,
    inputs: &[PathBuf],
    command: Vec<String>,
) -> Result<Vec<String>, String> {
    let records = inputs
        .iter()
        .map(|p| results::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let m = merge(records, inputs, command)?;
    let mut doc = serde_json::to_value(&m.record).map_err(|e| e.to_string())?;
    doc["merged_from"] = Value::Array(m.sources);
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = output.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, output)
    };
    write().map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    Ok(m.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::fixtures;

    fn shard(host: &str, started: &str, ids: &[(&str, &str)]) -> RunRecord {
        let mut r = fixtures::run();
        r.run.system.hostname = host.into();
        r.run.started_at = started.into();
        r.run.finished_at = Some(started.replace("00:00", "00:59"));
        let t = r.tests[0].clone();
        r.tests = ids
            .iter()
            .map(|(identity, time)| {
                let mut x = t.clone();
                x.identity = identity.to_string();
                x.id = format!("m/Q4_1/{identity}");
                x.test_time = time.to_string();
                x
            })
            .collect();
        r
    }

    #[test]
    fn shards_are_concatenated_and_duplicates_keep_the_newest() {
        let a = shard(
            "node1",
            "2026-01-01T10:00:00Z",
            &[("a", "2026-01-01T10:00:01Z"), ("b", "2026-01-01T10:00:02Z")],
        );
        let mut b = shard(
            "node2",
            "2026-01-01T09:00:00Z",
            &[("c", "2026-01-01T09:00:01Z"), ("b", "2026-01-01T11:00:00Z")],
        );
        b.tests[1].avg_ts = Some(1.0);
        let m = merge(vec![a, b], &[], vec!["tpsbench".into(), "merge".into()]).unwrap();
        let ids: Vec<&str> = m.record.tests.iter().map(|t| t.identity.as_str()).collect();
        assert_eq!(ids, vec!["a", "b", "c"]);
        assert_eq!(
            m.record.tests[1].avg_ts,
            Some(1.0),
            "the newer b (from node2) wins"
        );
        assert_eq!(
            m.record.run.system.hostname, "node2",
            "earliest run's metadata"
        );
        assert_eq!(m.record.run.started_at, "2026-01-01T09:00:00Z");
        assert_eq!(
            m.record.run.finished_at.as_deref(),
            Some("2026-01-01T10:00:59Z")
        );
        assert_eq!(m.record.run.command, vec!["tpsbench", "merge"]);
        assert_eq!(m.sources.len(), 2);
        assert_eq!(m.sources[0]["run"]["system"]["hostname"], "node1");
        assert!(
            m.warnings.iter().any(|w| w.contains("1 test(s)")),
            "{:?}",
            m.warnings
        );
    }

    #[test]
    fn other_hardware_is_refused_and_other_builds_warned() {
        let a = shard(
            "n",
            "2026-01-01T10:00:00Z",
            &[("a", "2026-01-01T10:00:01Z")],
        );
        let mut b = a.clone();
        b.run.system.cpu_model = "other cpu".into();
        let e = merge(
            vec![a.clone(), b],
            &[PathBuf::from("x.json"), PathBuf::from("y.json")],
            vec![],
        )
        .err()
        .unwrap();
        assert!(
            e.starts_with("y.json was measured on other hardware"),
            "{e}"
        );
        let mut c = a.clone();
        c.run.tool.version = "9.9.9".into();
        let m = merge(vec![a, c], &[], vec![]).unwrap();
        assert!(m.warnings.iter().any(|w| w.contains("different builds")));
        assert!(merge(vec![], &[], vec![]).is_err());
    }

    #[test]
    fn an_unfinished_input_leaves_the_merge_unfinished() {
        let a = shard(
            "n",
            "2026-01-01T10:00:00Z",
            &[("a", "2026-01-01T10:00:01Z")],
        );
        let mut b = shard(
            "n",
            "2026-01-01T10:00:00Z",
            &[("b", "2026-01-01T10:00:01Z")],
        );
        b.run.finished_at = None;
        assert_eq!(
            merge(vec![a, b], &[], vec![])
                .unwrap()
                .record
                .run
                .finished_at,
            None
        );
    }

    #[test]
    fn merged_file_reads_back_as_a_result() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
        results::write_atomic(
            &pa,
            &shard(
                "n",
                "2026-01-01T10:00:00Z",
                &[("a", "2026-01-01T10:00:01Z")],
            ),
        )
        .unwrap();
        results::write_atomic(
            &pb,
            &shard(
                "n",
                "2026-01-01T10:05:00Z",
                &[("b", "2026-01-01T10:05:01Z")],
            ),
        )
        .unwrap();
        let out = dir.path().join("sub/merged.json");
        merge_files(&out, &[pa.clone(), pb], vec![]).unwrap();
        let back = results::read(&out).unwrap();
        assert_eq!(back.tests.len(), 2);
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(raw["merged_from"][0]["file"], pa.display().to_string());
        std::fs::write(&pa, "{}").unwrap();
        let e = merge_files(&out, &[pa], vec![]).unwrap_err();
        assert!(e.contains("a.json"), "{e}");
    }
}
