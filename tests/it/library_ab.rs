//! `tpsbench run --library`: bad input is one clear line and exit 2. And `--rounds`, which
//! `--library` shares with plain runs.

use predicates::prelude::*;

use crate::support;
use crate::support::tpsbench;

#[cfg(not(feature = "dynamic-link"))]
#[test]
fn a_static_build_refuses_an_ab_run_across_libraries_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    tpsbench()
        .current_dir(dir.path())
        .args(["run", "--library", "a", "--library", "b"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("--features dynamic-link"));
}

#[test]
fn rounds_run_each_test_in_fresh_contexts_on_the_real_engine() {
    let (_dir, config) =
        support::tiny_sweep("n_prompt = [16, 32]\nn_gen = 0\nrepetitions = 2\nrounds = 3");
    let v = support::run_json(&config);
    assert_eq!(v["run"]["rounds"], 3);
    for t in v["tests"].as_array().unwrap() {
        assert_eq!(t["rounds"].as_array().unwrap().len(), 3, "{t}");
        assert_eq!(t["samples_ns"].as_array().unwrap().len(), 6);
        assert_eq!(t["stats"]["interval"]["covers"], "between_rounds");
    }
}

#[test]
fn library_cannot_be_combined_with_isolate() {
    tpsbench()
        .args(["run", "--library", "a", "--library", "b", "--isolate"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}
