//! End-to-end tests: the real `tpsbench` binary and the real llama.cpp engine on the tiny
//! model that `tpsbench synth` generates (no download). One test binary, one file per theme:
//! `run.rs` (a run, its outputs and its refusals), `compare.rs` (compare and baselines),
//! `long_sweeps.rs` (kill and resume, isolation, shards, exit codes).

mod compare;
mod long_sweeps;
mod run;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn tpsbench() -> Command {
    Command::cargo_bin("tpsbench").unwrap()
}

/// A temp dir with a freshly generated tiny model and a small sweep over it.
pub fn workspace(sweep: &str) -> (tempfile::TempDir, PathBuf) {
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

pub fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}
