//! `tpsbench merge` checks that its inputs are one whole sweep: one plan hash, every shard
//! once, every shard finished. The shard files are the leaderboard fixture split three ways,
//! with the shard and plan hash a sharded run records.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

fn fixture() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/leaderboard/variants.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Writes shard `index` of 3 of plan `hash` (every third test of the fixture) to `dir`.
fn shard(dir: &Path, file: &str, index: usize, hash: &str) -> PathBuf {
    let mut v = fixture();
    let tests: Vec<Value> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .skip(index)
        .step_by(3)
        .cloned()
        .collect();
    v["tests"] = Value::Array(tests);
    v["run"]["shard"] = json!({ "index": index, "count": 3 });
    v["run"]["plan_hash"] = json!(hash);
    let p = dir.join(file);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

/// Runs `tpsbench merge OUT FILES... [EXTRA]`: (exit code, stderr).
fn merge(out: &Path, files: &[PathBuf], extra: &[&str]) -> (i32, String) {
    let r = Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("merge")
        .arg(out)
        .args(files)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
    (r.status.code().unwrap(), stderr)
}

fn read_json(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

#[test]
fn a_whole_sweep_merges_every_test_once_without_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..3)
        .map(|i| shard(dir.path(), &format!("s{i}.json"), i, "h1"))
        .collect();
    let out = dir.path().join("merged.json");
    let (code, stderr) = merge(&out, &files, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("note:") && !stderr.contains("warning:"),
        "{stderr}"
    );
    let v = read_json(&out);
    assert_eq!(v["tests"].as_array().unwrap().len(), 18);
    assert_eq!(v["run"]["plan_hash"], "h1");
    assert!(v["run"].get("shard").is_none() && v.get("incomplete_shards").is_none());
}

#[test]
fn a_missing_shard_is_named_and_refused_unless_partial_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        shard(dir.path(), "s0.json", 0, "h1"),
        shard(dir.path(), "s2.json", 2, "h1"),
    ];
    let out = dir.path().join("merged.json");
    let (code, stderr) = merge(&out, &files, &[]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: the sweep is incomplete: missing shard 1/3"),
        "{stderr}"
    );
    assert!(!out.exists());

    let (code, stderr) = merge(&out, &files, &["--allow-partial"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("missing shard 1/3"), "{stderr}");
    let v = read_json(&out);
    assert_eq!(v["incomplete_shards"], json!(["1/3"]));
    assert_eq!(v["tests"].as_array().unwrap().len(), 12);

    // Shard 1 killed before its first test ended leaves its reserved file empty.
    let empty = dir.path().join("s1.json");
    std::fs::write(&empty, "").unwrap();
    let (code, stderr) = merge(&out, &[files[0].clone(), empty, files[1].clone()], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("missing shard 1/3, ") && stderr.contains("s1.json is empty"),
        "{stderr}"
    );
}

#[test]
fn a_duplicated_shard_and_another_plan_are_refused_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = (0..3)
        .map(|i| shard(dir.path(), &format!("s{i}.json"), i, "h1"))
        .collect();
    files.push(shard(dir.path(), "again.json", 1, "h1"));
    let out = dir.path().join("merged.json");
    let (code, stderr) = merge(&out, &files, &["--allow-partial"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("shard 1/3 appears twice") && stderr.contains("again.json"),
        "{stderr}"
    );

    files[3] = shard(dir.path(), "other.json", 1, "h2");
    files.remove(1);
    let (code, stderr) = merge(&out, &files, &[]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("s0.json and ")
            && stderr.contains("other.json are not shards of one sweep"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn older_files_without_shard_info_merge_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_string(&fixture()).unwrap()).unwrap();
    let out = dir.path().join("merged.json");
    let (code, stderr) = merge(&out, &[old.clone(), old], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("no shard or plan hash") && stderr.contains("old.json"),
        "{stderr}"
    );
    assert_eq!(read_json(&out)["tests"].as_array().unwrap().len(), 18);
}

/// Runs `tpsbench run --shard i/n` for every i of a two-test sweep of the tiny model into
/// `dir/shards/<i>/`; returns the result file of each shard that wrote one.
fn run_shards(dir: &Path, n: usize) -> Vec<PathBuf> {
    let bin = || Command::cargo_bin("tpsbench").unwrap();
    crate::support::synth_to(&dir.join("tiny.gguf"), &[]);
    let config = dir.join("models.toml");
    std::fs::write(
        &config,
        "[sweep]\nn_prompt = 16\nn_gen = 4\nn_batch = 16\nn_threads = 1\nrepetitions = 1\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n",
    )
    .unwrap();
    let mut files = Vec::new();
    for i in 0..n {
        let out = dir.join(format!("shards/{i}"));
        bin()
            .args(["run", "--quiet", "--shard", &format!("{i}/{n}"), "--config"])
            .arg(&config)
            .arg("--results-dir")
            .arg(&out)
            .assert()
            .success();
        files.extend(
            std::fs::read_dir(&out)
                .into_iter()
                .flatten()
                .map(|e| e.unwrap().path()),
        );
    }
    files
}

#[test]
fn real_shards_merge_whole_even_when_one_had_no_tests_and_a_lost_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let files = run_shards(dir.path(), 3);
    assert_eq!(
        files.len(),
        2,
        "two tests over three shards: one shard writes no file"
    );
    let out = dir.path().join("merged.json");
    let (code, stderr) = merge(&out, &files, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr
            .contains("note: shard 2/3 wrote no file, and every test of the plan is in the others"),
        "{stderr}"
    );
    let v = read_json(&out);
    assert_eq!(v["tests"].as_array().unwrap().len(), 2);
    assert!(v["run"].get("shard").is_none() && v["run"]["plan_hash"].is_string());

    let (code, stderr) = merge(&out, &files[..1], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("missing shard 1/3")
            && stderr.contains("1 of the plan's 2 tests in no file (first: tiny/F32/"),
        "{stderr}"
    );
}
