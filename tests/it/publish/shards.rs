//! A sharded sweep on the real llama.cpp engine (the tiny model that `tpsbench synth`
//! generates): `run --shard`, `merge` into one result, `export` as llama-bench rows; and
//! what `merge` refuses.

use std::path::Path;

use serde_json::Value;
use tpsbench::report::export::llama_bench_row::FIELDS;

use super::{fixtures, json_files, read};
use crate::support::{tiny_sweep, tpsbench};

fn check_llama_bench_row(row: &Value) {
    let obj = row.as_object().expect("a row is an object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    let mut want: Vec<&str> = FIELDS.split(',').collect();
    want.sort();
    assert_eq!(keys, want);
    let ints = [
        "build_number",
        "model_size",
        "model_n_params",
        "n_batch",
        "n_ubatch",
        "n_threads",
        "poll",
        "n_gpu_layers",
        "n_cpu_moe",
        "main_gpu",
        "flash_attn",
        "no_op_offload",
        "fit_target",
        "fit_min_ctx",
        "n_prompt",
        "n_gen",
        "n_depth",
        "avg_ns",
        "stddev_ns",
    ];
    let bools = [
        "cpu_strict",
        "no_kv_offload",
        "use_mmap",
        "embeddings",
        "no_host",
        "repack",
    ];
    for (k, v) in obj {
        let ok = if ints.contains(&k.as_str()) {
            v.is_i64() || v.is_u64()
        } else if bools.contains(&k.as_str()) {
            v.is_boolean()
        } else if k == "avg_ts" || k == "stddev_ts" {
            v.is_f64()
        } else if k == "samples_ns" {
            v.as_array().is_some_and(|a| a.iter().all(Value::is_u64))
        } else if k == "samples_ts" {
            v.as_array().is_some_and(|a| a.iter().all(Value::is_f64))
        } else {
            v.is_string()
        };
        assert!(ok, "{k} has the wrong JSON type: {v}");
    }
    assert!(row["avg_ts"].as_f64().unwrap() > 0.0);
    assert_eq!(row["samples_ns"].as_array().unwrap().len(), 2);
}

#[test]
fn sharded_runs_merge_into_one_result_that_exports_as_llama_bench_rows() {
    let (dir, config) = tiny_sweep(
        "n_prompt = 16\nn_gen = 4\nn_depth = [0, 32]\nn_batch = 16\nn_threads = 1\nrepetitions = 2",
    );
    let shards = dir.path().join("shards");
    for i in 0..2 {
        tpsbench()
            .args(["run", "--quiet", "--shard", &format!("{i}/2"), "--config"])
            .arg(&config)
            .arg("--results-dir")
            .arg(&shards)
            .assert()
            .success();
    }
    let files = json_files(&shards);
    assert_eq!(files.len(), 2, "one file per shard");
    let ids = |p: &Path| -> Vec<String> {
        let v: Value = serde_json::from_str(&read(p)).unwrap();
        v["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&files[0]).len(), 2);
    assert_eq!(ids(&files[1]).len(), 2);

    let merged = dir.path().join("merged.json");
    tpsbench()
        .arg("merge")
        .arg(&merged)
        .args(&files)
        .assert()
        .success();
    let mut all = ids(&merged);
    all.sort();
    assert_eq!(
        all,
        vec![
            "tiny/F32/pp16",
            "tiny/F32/pp16@d32",
            "tiny/F32/tg4",
            "tiny/F32/tg4@d32"
        ]
    );
    let v: Value = serde_json::from_str(&read(&merged)).unwrap();
    assert_eq!(v["merged_from"].as_array().unwrap().len(), 2);
    assert_eq!(v["run"]["command"][1], "merge");

    let out = tpsbench()
        .args(["export", "--format", "llama-bench-json"])
        .arg(&merged)
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).expect("one JSON array");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    rows.iter().for_each(check_llama_bench_row);
    assert_eq!(rows[0]["model_filename"], "tiny.gguf");

    let out = tpsbench()
        .args(["export", "--format", "llama-bench-jsonl"])
        .arg(&files[0])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2);
    for l in text.lines() {
        check_llama_bench_row(&serde_json::from_str(l).unwrap());
    }

    tpsbench()
        .arg("leaderboard")
        .arg(dir.path())
        .arg("--out-dir")
        .arg(dir.path().join("board"))
        .assert()
        .success();
    let md = read(&dir.path().join("board/LEADERBOARD.md"));
    assert!(
        md.contains("4 measurements"),
        "shards and merge deduplicate: {md}"
    );
}

#[test]
fn an_empty_shard_succeeds_without_a_file_and_a_bad_shard_is_refused() {
    let (dir, config) = tiny_sweep(
        "n_prompt = 16\nn_gen = 4\nn_depth = [0, 32]\nn_batch = 16\nn_threads = 1\nrepetitions = 2",
    );
    let results = dir.path().join("results");
    let r = tpsbench()
        .args(["run", "--quiet", "--shard", "5/6", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .output()
        .unwrap();
    assert!(r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("shard 5/6 has no tests"));
    assert!(json_files(&results).is_empty());

    let r = tpsbench()
        .args(["run", "--shard", "2/2", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("expected INDEX/COUNT"));
}

#[test]
fn merge_refuses_a_missing_or_invalid_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = tpsbench()
        .arg("merge")
        .arg(dir.path().join("out.json"))
        .arg(fixtures().join("variants.json"))
        .arg(fixtures().join("broken.json"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("broken.json") && stderr.contains("schema_version"),
        "{stderr}"
    );
    assert!(!dir.path().join("out.json").exists());
}
