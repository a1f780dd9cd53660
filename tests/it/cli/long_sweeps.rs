//! Long sweeps: kill -9 and resume, isolation, shards, and exit codes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{result_files, tpsbench, workspace};
use crate::support::synth_to;

/// Waits until the run writing in `dir` has at least `n` tests on disk (its result file
/// with its journal replayed, as `--resume` reads them).
fn wait_for_tests(dir: &Path, n: usize, timeout: std::time::Duration) -> PathBuf {
    let start = std::time::Instant::now();
    loop {
        if let Some(f) = result_files(dir)
            .into_iter()
            .find(|f| f.extension().is_some_and(|e| e == "json"))
        {
            if let Ok(r) = tpsbench::record::journal::read_resumable(&f) {
                if r.tests.len() >= n {
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
    let partial = tpsbench::record::journal::read_resumable(&file).unwrap();
    let partial = serde_json::to_value(partial).unwrap();
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
    synth_to(&dir.path().join("tiny2.gguf"), &["--seed", "2"]);
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
    synth_to(&dir.path().join("tiny2.gguf"), &["--seed", "2"]);
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
