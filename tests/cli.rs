//! End-to-end tests: the real `tpsbench` binary and the real llama.cpp engine on the tiny
//! model that `tpsbench synth` generates (no download).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn tpsbench() -> Command {
    Command::cargo_bin("tpsbench").unwrap()
}

/// A temp dir with a freshly generated tiny model and a small sweep over it.
fn workspace(sweep: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    tpsbench()
        .args(["synth", "--output"])
        .arg(dir.path().join("tiny.gguf"))
        .assert()
        .success();
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        format!("[sweep]\n{sweep}\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"),
    )
    .unwrap();
    (dir, config)
}

fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

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

#[test]
fn compare_of_a_run_with_itself_is_no_change_and_a_saved_baseline_is_found_by_name() {
    let (dir, config) = workspace("n_prompt = 16\nn_gen = 4\nrepetitions = 4");
    let results = dir.path().join("results");
    let baselines = dir.path().join("baselines");
    tpsbench()
        .args(["run", "--quiet", "--save-baseline", "before", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .arg("--baseline-dir")
        .arg(&baselines)
        .assert()
        .success();
    assert!(baselines.join("before.json").is_file());
    let file = result_files(&results).remove(0);
    tpsbench()
        .arg("compare")
        .arg(&file)
        .arg(&file)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("no change").and(predicate::str::contains("| tiny/pp16 |")),
        );
    // The named baseline resolves and a run can be checked against it.
    tpsbench()
        .args(["compare", "before"])
        .arg(&file)
        .arg("--baseline-dir")
        .arg(&baselines)
        .assert()
        .success();
    tpsbench()
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--baseline",
            "before",
            "--config",
        ])
        .arg(&config)
        .arg("--baseline-dir")
        .arg(&baselines)
        .assert()
        .stderr(predicate::str::contains("baseline before"));
}

#[test]
fn compare_refuses_a_corrupt_result_file_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let out = tpsbench()
        .arg("compare")
        .arg(&bad)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.json: not valid JSON"), "{err}");
    tpsbench()
        .args(["run", "--baseline", "nope", "--config", "/nonexistent.toml"])
        .assert()
        .code(2);
}

/// Waits until the result file in `dir` holds at least `n` tests.
fn wait_for_tests(dir: &Path, n: usize, timeout: std::time::Duration) -> PathBuf {
    let start = std::time::Instant::now();
    loop {
        if let Some(f) = result_files(dir)
            .into_iter()
            .find(|f| f.extension().is_some_and(|e| e == "json"))
        {
            if let Ok(v) =
                serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap_or_default())
            {
                if v["tests"].as_array().is_some_and(|t| t.len() >= n) {
                    return f;
                }
            }
        }
        assert!(
            start.elapsed() < timeout,
            "the sweep did not write {n} tests in time"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn kill_9_then_resume_gives_every_test_exactly_once() {
    let (dir, config) = workspace(
        "n_prompt = [16, 32, 48, 64, 80, 96]\nn_gen = [4, 8]\nrepetitions = 30\nn_threads = 1",
    );
    let results = dir.path().join("results");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = wait_for_tests(&results, 2, std::time::Duration::from_secs(120));
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let partial: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let done = partial["tests"].as_array().unwrap().len();
    assert!(
        (2..8).contains(&done),
        "killed mid-sweep after {done} tests"
    );
    assert!(partial["run"]["finished_at"].is_null());
    tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--resume")
        .arg(&file)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut ids: Vec<String> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 8, "{ids:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 8, "no test doubled");
    assert!(v["run"]["finished_at"].is_string());
    assert_eq!(
        result_files(&results).len(),
        1,
        "no second file, no temporary left"
    );
}

/// The workspace with a second tiny model `b` beside `a`, and `two.toml` sweeping both at
/// pp16 and the given `n_gen`.
fn two_models(n_gen: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, _) = workspace("");
    tpsbench()
        .args(["synth", "--seed", "2", "--output"])
        .arg(dir.path().join("tiny2.gguf"))
        .assert()
        .success();
    let config = dir.path().join("two.toml");
    std::fs::write(
        &config,
        format!(
            "[sweep]\nn_prompt = 16\nn_gen = {n_gen}\nrepetitions = 1\n\
             [[model]]\nname = \"a\"\npath = \"tiny.gguf\"\n[[model]]\nname = \"b\"\npath = \"tiny2.gguf\"\n"
        ),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn isolate_loses_only_the_crashed_models_current_test() {
    let (dir, config) = two_models("[4, 8]");
    let results = dir.path().join("results");
    let out = tpsbench()
        .args([
            "run",
            "--quiet",
            "--isolate",
            "--output",
            "jsonl",
            "--config",
        ])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .env("TPSBENCH_FAULT_ABORT_AT", "a/F32/tg4")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = result_files(&results).remove(0);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let tests = v["tests"].as_array().unwrap();
    let status = |id: &str| {
        tests
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["status"].as_str().unwrap().to_string())
    };
    assert_eq!(tests.len(), 6);
    assert_eq!(
        status("a/F32/pp16").as_deref(),
        Some("ok"),
        "finished before the crash: kept"
    );
    assert_eq!(status("a/F32/tg4").as_deref(), Some("failed"));
    assert_eq!(status("a/F32/tg8").as_deref(), Some("failed"));
    for id in ["b/F32/pp16", "b/F32/tg4", "b/F32/tg8"] {
        assert_eq!(
            status(id).as_deref(),
            Some("ok"),
            "the next model still ran: {id}"
        );
    }
    let err = tests.iter().find(|t| t["id"] == "a/F32/tg4").unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(err.contains("signal 6"), "{err}");
}

#[test]
fn isolated_shards_together_run_every_test_once() {
    let (dir, _) = workspace("");
    tpsbench()
        .args(["synth", "--seed", "2", "--output"])
        .arg(dir.path().join("tiny2.gguf"))
        .assert()
        .success();
    let config = dir.path().join("two.toml");
    std::fs::write(
        &config,
        "[sweep]\nn_prompt = 16\nn_gen = [4, 8]\nrepetitions = 1\n\
         [[model]]\nname = \"a\"\npath = \"tiny.gguf\"\n[[model]]\nname = \"b\"\npath = \"tiny2.gguf\"\n",
    )
    .unwrap();
    let mut ids: Vec<String> = Vec::new();
    for shard in ["0/2", "1/2"] {
        let results = dir.path().join(format!("results-{}", &shard[..1]));
        tpsbench()
            .args(["run", "--quiet", "--isolate", "--shard", shard, "--config"])
            .arg(&config)
            .arg("--results-dir")
            .arg(&results)
            .assert()
            .success();
        let files = result_files(&results);
        assert_eq!(files.len(), 1, "one file per shard");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        ids.extend(
            v["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_string()),
        );
    }
    ids.sort();
    assert_eq!(
        ids,
        [
            "a/F32/pp16",
            "a/F32/tg4",
            "a/F32/tg8",
            "b/F32/pp16",
            "b/F32/tg4",
            "b/F32/tg8"
        ]
    );
}

/// `tpsbench run ... | head -1` with a failed test: the reader left, but the run is on disk
/// and a failed test still makes the exit code 1 (a closed pipe is not success).
#[test]
fn a_run_with_a_failed_test_exits_1_even_when_stdout_is_closed() {
    let (dir, config) = two_models("4");
    let results = dir.path().join("results");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .args(["run", "--quiet", "--isolate", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .env("TPSBENCH_FAULT_ABORT_AT", "a/F32/tg4")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(result_files(&results).len(), 1);
}
