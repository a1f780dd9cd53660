//! A run on the tiny model: its result file and outputs, and what it refuses.

use predicates::prelude::*;
use serde_json::Value;

use super::{result_files, tpsbench, workspace};

#[test]
fn run_on_the_tiny_model_writes_a_result_file_with_sane_values() {
    let (dir, config) =
        workspace("n_prompt = [32, 64]\nn_gen = 8\nrepetitions = 3\nn_batch = 16\nn_threads = 1");
    let results = dir.path().join("results");
    tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .assert()
        .success()
        .stdout(predicate::str::contains("| pp32 ").and(predicate::str::contains("| tg8 ")));
    let files = result_files(&results);
    assert_eq!(files.len(), 1, "one result file per run");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 3);
    assert!(v["run"]["finished_at"].is_string());
    assert!(
        v["run"]["llama_cpp"]["system_info"]
            .as_str()
            .unwrap()
            .contains("CPU")
    );
    let model = &v["models"][0];
    assert_eq!(model["architecture"], "llama");
    assert_eq!(model["quantization"], "F32");
    assert_eq!(model["sha256"].as_str().unwrap().len(), 64);
    assert!(model["model_n_params"].as_u64().unwrap() > 1_000_000);
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        let samples = t["samples_ns"].as_array().unwrap();
        assert_eq!(samples.len(), 3);
        assert!(samples.iter().all(|s| s.as_u64().unwrap() > 0));
        let avg = t["avg_ts"].as_f64().unwrap();
        assert!(avg.is_finite() && avg > 0.0, "{t}");
        let rates: Vec<f64> = t["samples_ts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!(
            (mean - avg).abs() < 1e-6 * avg,
            "avg_ts is the mean of per-sample rates"
        );
        assert!(t["stddev_ts"].as_f64().unwrap() >= 0.0);
        assert_eq!(t["n_threads"], 1);
        assert_eq!(t["n_batch"], 16);
        assert_eq!(
            t["model_type"].as_str().unwrap(),
            model["model_type"].as_str().unwrap()
        );
    }
    assert_eq!(tests[0]["test"], "pp32");
    assert_eq!(tests[0]["n_ctx"], 32);
    assert_eq!(tests[2]["test"], "tg8");
}

#[test]
fn json_on_stdout_is_clean_of_llama_cpp_logs_even_when_verbose() {
    let (dir, config) = workspace("n_prompt = 16\nn_gen = 0\nrepetitions = 1");
    let out = tpsbench()
        .args([
            "run",
            "--verbose",
            "--no-save",
            "--output",
            "json",
            "--config",
        ])
        .arg(&config)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value =
        serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON document");
    assert_eq!(v["tests"][0]["test"], "pp16");
    assert!(
        !String::from_utf8_lossy(&out.stderr).is_empty(),
        "llama.cpp's log went to stderr"
    );
    assert!(
        result_files(&dir.path().join("results")).is_empty(),
        "--no-save writes nothing"
    );
}

#[test]
fn jsonl_and_csv_have_one_row_per_test() {
    let (_dir, config) = workspace("n_prompt = 16\nn_gen = 4\nrepetitions = 1");
    for (format, lines) in [("jsonl", 2), ("csv", 3)] {
        let out = tpsbench()
            .args([
                "run",
                "--quiet",
                "--no-save",
                "--output",
                format,
                "--config",
            ])
            .arg(&config)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).lines().count(),
            lines,
            "{format}"
        );
    }
}

#[test]
fn a_filter_runs_only_the_matching_tests() {
    let (_dir, config) = workspace("n_prompt = 16\nn_gen = 4\nrepetitions = 1");
    let out = tpsbench()
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--output",
            "jsonl",
            "--filter",
            "tiny/F32/tg4",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("\"test\":\"tg4\""));
}

#[test]
fn a_bad_models_toml_gives_one_clear_error_naming_file_line_and_key() {
    let (dir, config) = workspace("n_batch = 0");
    let out = tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("models.toml:2: key `sweep.n_batch`"), "{err}");
    assert!(!err.contains("panicked"));
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unknown_key_is_reported_with_its_line() {
    let (_dir, config) = workspace("repetitons = 3");
    tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "models.toml:2: key `sweep.repetitons`: unknown field `repetitons`, did you mean `repetitions`?",
        ));
}

#[test]
fn a_missing_model_file_gives_one_clear_error_and_a_non_zero_exit() {
    let (dir, config) = workspace("n_prompt = 16");
    std::fs::remove_file(dir.path().join("tiny.gguf")).unwrap();
    let out = tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("model \"tiny\"") && err.contains("tiny.gguf: no such file"),
        "{err}"
    );
}

#[test]
fn a_garbage_model_file_is_refused_before_llama_cpp_sees_it() {
    let (dir, config) = workspace("n_prompt = 16");
    std::fs::write(dir.path().join("tiny.gguf"), b"GGUF\x03\x00\x00\x00garbage").unwrap();
    tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truncated or corrupt"));
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    tpsbench()
        .args(["run", "--config", "/nonexistent/models.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/nonexistent/models.toml: cannot read the configuration",
        ));
}

#[test]
fn info_shows_the_llama_cpp_build_and_its_simd_features() {
    tpsbench()
        .arg("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("llama-cpp-sys-2").and(predicate::str::contains("SIMD:")));
    let out = tpsbench().args(["info", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "cpu")
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        assert_eq!(
            v["cpu_features"]["AVX2"], true,
            "llama.cpp must be built with the CPU's AVX2"
        );
    }
}

#[test]
fn synth_refuses_an_unknown_preset() {
    tpsbench()
        .args(["synth", "--preset", "gpt-9", "--output", "/tmp/x.gguf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown preset \"gpt-9\""));
}
