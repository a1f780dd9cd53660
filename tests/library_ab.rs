//! `tpsbench run --library`: bad input is one clear line and exit 2.

use predicates::prelude::*;

mod support;
use support::tpsbench;

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
fn rounds_without_libraries_is_refused() {
    tpsbench()
        .args(["run", "--rounds", "4"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--library"));
}

#[test]
fn library_cannot_be_combined_with_isolate() {
    tpsbench()
        .args(["run", "--library", "a", "--library", "b", "--isolate"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}
