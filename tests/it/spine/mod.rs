//! One plan and one runner for every kind of test, end to end on the real engine: a
//! configuration with a `[[model]]` sweep, a `[serving]` table and a `[[ladder]]` runs in one
//! `tpsbench run`; shards, kill -9 and `--resume`, `--isolate` and the refusal of a resume
//! that does not match behave alike for every kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use predicates::prelude::*;
use serde_json::Value;

mod interrupts;
use crate::support::{run_json, tiny_dir, tpsbench};

const CONFIG: &str = r#"[sweep]
n_prompt = [32]
n_gen = [8]
repetitions = REPS
n_threads = 1

[[model]]
name = "tiny"
path = "tiny.gguf"

[serving]
modes = ["parallel"]
n_parallel = [1, 2]
n_prompt = 16
n_gen = 4
repetitions = 1

[[ladder]]
name = "tl"
base = "tiny.gguf"
types = ["Q8_0", "Q4_0"]
reference = "Q8_0"
cache_dir = "cache"
[ladder.eval]
text = "eval.txt"
ctx = 64
chunks = 2
"#;

/// A temp dir with the tiny model, an evaluation text and `models.toml` (CONFIG with `reps`
/// repetitions).
fn workspace(reps: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tiny_dir();
    let words = [
        "the", "of", "and", "to", "in", "was", "for", "on", "that", "with",
    ];
    let text: Vec<&str> = (0..2000)
        .map(|i| words[(i * 7 + i / 3) % words.len()])
        .collect();
    std::fs::write(dir.path().join("eval.txt"), text.join(" ")).unwrap();
    let config = dir.path().join("models.toml");
    std::fs::write(&config, CONFIG.replace("REPS", &reps.to_string())).unwrap();
    (dir, config)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Test id → kind, for every test of a result file.
fn kinds(v: &Value) -> BTreeMap<String, String> {
    v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const IDS: [&str; 10] = [
    "tiny/F32/pp32",
    "tiny/F32/serve-parallel/pp16+tg4/B1",
    "tiny/F32/serve-parallel/pp16+tg4/B2",
    "tiny/F32/tg8",
    "tl-Q4_0/Q4_0/pp32",
    "tl-Q4_0/Q4_0/quality",
    "tl-Q4_0/Q4_0/tg8",
    "tl-Q8_0/Q8_0/pp32",
    "tl-Q8_0/Q8_0/quality",
    "tl-Q8_0/Q8_0/tg8",
];

#[test]
fn one_run_measures_the_sweep_the_serving_table_and_the_ladder_into_one_file() {
    let (dir, config) = workspace(2);
    tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .assert()
        .success();
    let v = read(&files(&dir.path().join("results"))[0]);
    assert_eq!(v["schema_version"], 3);
    let k = kinds(&v);
    assert_eq!(k.keys().map(String::as_str).collect::<Vec<_>>(), IDS);
    assert_eq!(k["tiny/F32/pp32"], "pp");
    assert_eq!(k["tiny/F32/tg8"], "tg");
    assert_eq!(k["tiny/F32/serve-parallel/pp16+tg4/B2"], "parallel");
    assert_eq!(k["tl-Q4_0/Q4_0/quality"], "quality");
    let q4 = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "tl-Q4_0/Q4_0/quality")
        .unwrap();
    assert_eq!(q4["status"], "ok");
    assert!(q4["quality"]["kld_mean"].as_f64().unwrap() > 0.0);
    assert!(
        v["tests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "ok")
    );
    let variant = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "tl-Q4_0")
        .unwrap();
    assert_eq!(variant["provenance"]["type"], "Q4_0");
    assert!(
        variant["quality"].is_object(),
        "the ladder table reads it there"
    );
    assert!(v["run"]["plan_hash"].as_str().unwrap().len() == 64);
}

#[test]
fn two_shards_merged_hold_exactly_the_tests_of_the_whole_run() {
    let (dir, config) = workspace(1);
    let shards = dir.path().join("shards");
    for s in ["0/2", "1/2"] {
        tpsbench()
            .args(["run", "--quiet", "--shard", s, "--config"])
            .arg(&config)
            .arg("--results-dir")
            .arg(&shards)
            .assert()
            .success();
    }
    let parts = files(&shards);
    assert_eq!(parts.len(), 2);
    let (a, b) = (read(&parts[0]), read(&parts[1]));
    assert_eq!(a["run"]["plan_hash"], b["run"]["plan_hash"]);
    assert_ne!(a["run"]["shard"], b["run"]["shard"]);
    let merged = dir.path().join("merged.json");
    tpsbench()
        .arg("merge")
        .arg(&merged)
        .args(&parts)
        .assert()
        .success();
    let m = read(&merged);
    let mut ids: Vec<String> = m["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(ids, IDS, "every test once, each on one shard");
}

#[test]
fn isolate_numbers_tests_across_children_and_reports_the_file_once() {
    let (dir, config) = workspace(1);
    let out = tpsbench()
        .args(["run", "--isolate", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("resuming"), "{err}");
    assert_eq!(err.matches("results written to").count(), 1, "{err}");
    for i in 1..=IDS.len() {
        assert!(
            err.contains(&format!("[{i}/{}] ", IDS.len())),
            "[{i}/..] in {err}"
        );
    }
    let v = read(&files(&dir.path().join("results"))[0]);
    assert_eq!(kinds(&v).len(), IDS.len());
}

#[test]
fn serving_only_and_ladder_only_configurations_run_and_one_without_tests_is_refused() {
    let (_dir, config) = workspace(1);
    let src = CONFIG.replace("REPS", "1");
    let serving_only = src
        .replace(
            "n_prompt = [32]\nn_gen = [8]",
            "n_prompt = [0]\nn_gen = [0]",
        )
        .split("[[ladder]]")
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&config, &serving_only).unwrap();
    let v = run_json(&config);
    let k = kinds(&v);
    assert_eq!(k.len(), 2);
    assert!(k.values().all(|k| k == "parallel"));

    let ladder_only = format!(
        "[sweep]\nn_prompt = [16]\nn_gen = [0]\nrepetitions = 1\n[[ladder]]{}",
        src.split("[[ladder]]").nth(1).unwrap()
    );
    std::fs::write(&config, &ladder_only).unwrap();
    let v = run_json(&config);
    let k = kinds(&v);
    assert_eq!(k.values().filter(|k| *k == "quality").count(), 2, "{k:?}");

    std::fs::write(
        &config,
        "[sweep]\nn_prompt = [0]\nn_gen = [0]\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n",
    )
    .unwrap();
    tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("nothing to measure")
                .and(predicate::str::contains("\n").count(1)),
        );
}

#[test]
fn llama_bench_exports_hold_only_llama_bench_tests_and_say_what_they_left_out() {
    let (dir, config) = workspace(1);
    let results = dir.path().join("results");
    tpsbench()
        .args(["run", "--quiet", "--filter", "tiny/", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .assert()
        .success();
    let out = tpsbench()
        .args(["export", "--format", "llama-bench-json"])
        .arg(&files(&results)[0])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2, "pp32 and tg8 only");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("left out 2 tests of kind parallel"), "{err}");
}
