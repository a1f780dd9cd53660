//! `tpsbench compare` and saved baselines.

use predicates::prelude::*;

use super::{result_files, tpsbench, workspace};

#[test]
fn compare_of_a_run_of_rounds_with_itself_is_no_change_and_a_saved_baseline_is_found_by_name() {
    // Three rounds: the pairs are compared round by round, and identical rounds give an
    // interval of exactly 1, inside any threshold.
    let (dir, config) = workspace("n_prompt = 16\nn_gen = 4\nrepetitions = 4\nrounds = 3");
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
            predicate::str::contains("no change")
                .and(predicate::str::contains("| tiny/pp16 |"))
                .and(predicate::str::contains("between rounds, paired")),
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
fn compare_of_single_launches_says_the_interval_leans_on_the_noise_floor() {
    let (dir, config) = workspace("n_prompt = 16\nn_gen = 0\nrepetitions = 3");
    let results = dir.path().join("results");
    tpsbench()
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .assert()
        .success();
    let file = result_files(&results).remove(0);
    tpsbench()
        .arg("compare")
        .arg(&file)
        .arg(&file)
        .args(["--noise", "0.04"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("launches + noise floor")
                .and(predicate::str::contains(
                    "noise floor 4.0% between launches (given",
                ))
                .and(predicate::str::contains(
                    "inconclusive: within what separate launches",
                )),
        );
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
