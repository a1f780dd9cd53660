//! What several test binaries share: the real `tpsbench` binary, and a temp dir holding the
//! tiny model that `tpsbench synth` writes with a `models.toml` beside it. Each binary
//! includes this module and uses part of it, hence the allow.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub fn tpsbench() -> Command {
    Command::cargo_bin("tpsbench").unwrap()
}

/// A temp dir holding `tiny.gguf`, the default tiny model.
pub fn tiny_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tpsbench()
        .args(["synth", "--output"])
        .arg(dir.path().join("tiny.gguf"))
        .assert()
        .success();
    dir
}

/// `tiny_dir` with `config` written as its `models.toml`; returns the dir and that path.
pub fn tiny_with(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tiny_dir();
    let path = dir.path().join("models.toml");
    std::fs::write(&path, config).unwrap();
    (dir, path)
}

/// `tiny_with` a `[sweep]` table of `sweep` over the one model `tiny`.
pub fn tiny_sweep(sweep: &str) -> (tempfile::TempDir, PathBuf) {
    tiny_with(&format!(
        "[sweep]\n{sweep}\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"
    ))
}

/// `tpsbench run --quiet --no-save --output json --config CONFIG`: asserts it succeeds
/// (showing its stderr if not) and returns the JSON it prints.
pub fn run_json(config: &Path) -> serde_json::Value {
    let (out, v) = run_json_any(config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// The same run, whatever its exit code (a run whose tests fail exits 1 and still prints
/// them): its output and the JSON it printed (showing its stderr if it printed none).
pub fn run_json_any(config: &Path) -> (std::process::Output, serde_json::Value) {
    run_json_of(&assert_cmd::cargo::cargo_bin("tpsbench"), config)
}

/// `run_json_any` with another tpsbench binary (a Vulkan build, say).
pub fn run_json_of(bin: &Path, config: &Path) -> (std::process::Output, serde_json::Value) {
    let out = std::process::Command::new(bin)
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--output",
            "json",
            "--config",
        ])
        .arg(config)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out, v)
}
