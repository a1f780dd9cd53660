//! `tpsbench merge OUT.json IN...`: the shards of one sweep joined into one file, as
//! docs/sharding.md says; a test measured twice is kept once (the newest).

mod error;
mod plan;
mod sweep;

pub use error::MergeError;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::record::{ModelRecord, RunInfo, RunRecord, TestRecord};
use crate::report::leaderboard::load::{hardware, newer};

/// The merged record and what the caller should tell the user.
pub struct Merged {
    pub record: RunRecord,
    /// `merged_from`: one `{file, run}` per input, in input order.
    pub sources: Vec<Value>,
    pub warnings: Vec<String>,
    /// Shards ("1/4") missing or unfinished in a merge allowed to be partial.
    pub incomplete: Vec<String>,
}

/// Merges already-read records (pure); `files[k]` names `records[k]`, `empty` the inputs left
/// out for being empty (see `merge_files`).
pub fn merge(
    records: Vec<RunRecord>,
    files: &[PathBuf],
    empty: &[PathBuf],
    command: Vec<String>,
    allow_partial: bool,
) -> Result<Merged, MergeError> {
    if records.is_empty() {
        return Err(MergeError::NoInput);
    }
    let name = |k: usize| match files.get(k) {
        Some(p) => p.display().to_string(),
        None => format!("input {}", k + 1),
    };
    let empty: Vec<String> = empty.iter().map(|p| p.display().to_string()).collect();
    let sweep = sweep::check(&records, &name, &empty, allow_partial)?;
    same_hardware(&records, &name)?;
    let mut warnings = sweep.notes;
    warnings.extend(build_warnings(&records, &name));
    let mut run = merged_run(&records);
    run.command = command;
    run.plan_hash = sweep.plan_hash;
    let (tests, replaced) = joined_tests(&records);
    if replaced > 0 {
        warnings.push(format!(
            "note: {replaced} test(s) appeared in more than one input; the newest measurement of each is kept"
        ));
    }
    let sources = (records.iter().enumerate())
        .map(|(k, r)| json!({ "file": name(k), "run": r.run }))
        .collect();
    Ok(Merged {
        record: RunRecord {
            schema_version: crate::record::SCHEMA_VERSION,
            run,
            models: joined_models(&records),
            tests,
        },
        sources,
        warnings,
        incomplete: sweep.incomplete,
    })
}

/// Err when an input was measured on other hardware than the first.
fn same_hardware(records: &[RunRecord], name: &dyn Fn(usize) -> String) -> Result<(), MergeError> {
    let hw = hardware(&records[0].run);
    for (k, r) in records.iter().enumerate().skip(1) {
        let other = hardware(&r.run);
        if other != hw {
            return Err(MergeError::OtherHardware {
                file: name(k),
                other,
                first: name(0),
                hw,
            });
        }
    }
    Ok(())
}

/// A warning per input made by another build (tpsbench or llama.cpp) than the first.
fn build_warnings(records: &[RunRecord], name: &dyn Fn(usize) -> String) -> Vec<String> {
    let build = |r: &RunRecord| {
        format!(
            "tpsbench {} {} / llama-cpp-sys-2 {} {}",
            r.run.tool.version,
            r.run.tool.git_commit.as_deref().unwrap_or("-"),
            r.run.llama_cpp.sys_crate_version,
            r.run.llama_cpp.build_commit.as_deref().unwrap_or("-")
        )
    };
    let first = &records[0];
    (records.iter().enumerate().skip(1))
        .filter(|(_, r)| build(r) != build(first))
        .map(|(k, r)| {
            format!(
                "warning: {} was made by {} but {} by {}: figures of different builds are merged",
                name(k),
                build(r),
                name(0),
                build(first)
            )
        })
        .collect()
}

/// The earliest-started input's `run`, ending at the latest end (None if one did not finish).
fn merged_run(records: &[RunRecord]) -> RunInfo {
    let runs = records.iter().map(|r| &r.run);
    let earliest = runs.min_by(|a, b| newer(&a.started_at, "", &b.started_at, ""));
    let mut run = earliest.unwrap_or(&records[0].run).clone();
    run.shard = None;
    run.finished_at = (records.iter())
        .map(|r| r.run.finished_at.clone())
        .collect::<Option<Vec<String>>>()
        .and_then(|ends| ends.into_iter().max_by(|a, b| newer(a, "", b, "")));
    run
}

/// The inputs' models, each (name and file hash) once: preferably a record that llama.cpp
/// loaded (it has model_type and sizes).
fn joined_models(records: &[RunRecord]) -> Vec<ModelRecord> {
    let mut models: Vec<ModelRecord> = Vec::new();
    for m in records.iter().flat_map(|r| &r.models) {
        match models
            .iter_mut()
            .find(|x| x.name == m.name && x.sha256 == m.sha256)
        {
            Some(x) if x.model_type.is_none() && m.model_type.is_some() => *x = m.clone(),
            Some(_) => {}
            None => models.push(m.clone()),
        }
    }
    models
}

/// The inputs' tests, each identity once in first-seen order, the newest measurement kept;
/// and how many were measured more than once (repeats counted).
fn joined_tests(records: &[RunRecord]) -> (Vec<TestRecord>, usize) {
    let mut tests: Vec<(TestRecord, String)> = Vec::new();
    let mut replaced = 0;
    for r in records {
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
    (tests.into_iter().map(|(t, _)| t).collect(), replaced)
}

/// Reads the inputs, merges them and writes `output` atomically; returns the warnings. An
/// empty input is a run stopped before its first test ended (`run` reserves its file at
/// the start): it is left out, and the sweep check counts it as what is missing.
pub fn merge_files(
    output: &Path,
    inputs: &[PathBuf],
    command: Vec<String>,
    allow_partial: bool,
) -> Result<Vec<String>, MergeError> {
    let (empty, kept): (Vec<PathBuf>, Vec<PathBuf>) = inputs
        .iter()
        .cloned()
        .partition(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == 0));
    let records = (kept.iter())
        .map(|p| crate::record::verify::read(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(MergeError::Record)?;
    let m = merge(records, &kept, &empty, command, allow_partial)?;
    let mut doc = serde_json::to_value(&m.record).expect("a record always serializes");
    doc["merged_from"] = Value::Array(m.sources);
    if !m.incomplete.is_empty() {
        doc["incomplete_shards"] = json!(m.incomplete);
    }
    let bytes = crate::record::results::to_json_bytes(&doc);
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(MergeError::io("create", dir))?;
    }
    crate::report::write_atomic(output, &bytes).map_err(MergeError::io("write", output))?;
    Ok(m.warnings)
}

#[cfg(test)]
mod tests;
