//! scripts/gpu-session.sh as the GPU device gets it, in its cpu mode: only the carried files
//! (the script, gpu.toml, the binary in .gpu-carry/common), no cargo on PATH, an empty HOME,
//! no .gpu-work/ from an earlier call. The device call returns at most 8 files from $OUT and
//! must end inside its limit, so the summary and the deadline are what is checked.

use std::path::{Path, PathBuf};
use std::process::Command;

const MEASURE_STEPS: [&str; 9] = [
    "unpack",
    "info",
    "synth-8b-q4km",
    "synth-8b-q8",
    "tune",
    "synth-moe",
    "moe",
    "sweep",
    "placement",
];

/// A fresh device-like tree: what one call carries and nothing else.
fn device_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::create_dir_all(root.join(".gpu-carry/common")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::copy(
        repo.join("scripts/gpu-session.sh"),
        root.join("scripts/gpu-session.sh"),
    )
    .unwrap();
    std::fs::copy(repo.join("gpu.toml"), root.join("gpu.toml")).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_tpsbench"),
        root.join(".gpu-carry/common/tpsbench"),
    )
    .unwrap();
    dir
}

/// The system directories of PATH that hold no cargo (the device has no Rust toolchain).
fn path_without_cargo() -> String {
    let dirs: Vec<&str> = [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ]
    .into_iter()
    .filter(|d| !Path::new(d).join("cargo").exists())
    .collect();
    dirs.join(":")
}

/// Runs the `measure` call with `env`; returns $OUT and the summary.
fn measure(dir: &Path, env: &[(&str, &str)]) -> (PathBuf, String) {
    let out = dir.join("out");
    let status = Command::new("bash")
        .arg(dir.join("repo/scripts/gpu-session.sh"))
        .arg("measure")
        .env_clear()
        .env("PATH", path_without_cargo())
        .env("HOME", dir.join("home"))
        .env("OUT", &out)
        .env("BACKEND", "cpu")
        .envs(env.iter().copied())
        .status()
        .unwrap();
    let summary = std::fs::read_to_string(out.join("summary.txt"))
        .unwrap_or_else(|e| panic!("no summary.txt after exit {status}: {e}"));
    (out, summary)
}

/// Files under `dir`, at any depth.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(files(&p));
        } else {
            all.push(p);
        }
    }
    all
}

/// The state column of `step`'s line in the summary.
fn state<'a>(summary: &'a str, step: &str) -> &'a str {
    let line = summary
        .lines()
        .find(|l| l.split_whitespace().next() == Some(step))
        .unwrap_or_else(|| panic!("step {step} missing from the summary:\n{summary}"));
    line[step.len()..].trim()
}

#[test]
fn the_measure_call_runs_every_step_without_cargo_and_returns_two_files() {
    assert!(
        !path_without_cargo()
            .split(':')
            .any(|d| Path::new(d).join("cargo").exists())
    );
    let dir = device_tree();
    let (out, summary) = measure(dir.path(), &[("DEADLINE", "300")]);
    for step in MEASURE_STEPS {
        assert!(
            state(&summary, step).starts_with("ok"),
            "{step} not ok:\n{summary}"
        );
    }
    let mut names: Vec<String> = files(&out)
        .iter()
        .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["gpu-measure.tar.gz", "summary.txt"]);
    assert!(summary.contains("== table.md") && summary.contains("parallel pp32+tg8 B4"));
    assert!(summary.contains("== placement.txt") && summary.contains("nkvo=1"));
    // gpu.toml's tune block, raced first: its answer and the commands it printed.
    assert!(
        summary.contains("== tune.md") && summary.contains("\nanswer: llama-3-8b-synth"),
        "{summary}"
    );
    assert!(
        summary.contains("\nllama-server -m ") && summary.contains("bisected n_gpu_layers"),
        "{summary}"
    );
    // gpu.toml's mixture of experts: its n_cpu_moe sweep (one layer on cpu: 0 and 1).
    assert!(
        summary.contains("== moe.md") && summary.contains("ncmoe"),
        "{summary}"
    );
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(out.join("gpu-measure.tar.gz"))
        .output()
        .unwrap();
    let listing = String::from_utf8(listing.stdout).unwrap();
    for f in [
        "out/summary.txt",
        "out/info.json",
        "out/libs.txt",
        "out/logs/sweep.log",
    ] {
        assert!(
            listing.lines().any(|l| l == f),
            "{f} not in the archive:\n{listing}"
        );
    }
    assert_eq!(
        listing
            .lines()
            .filter(|l| l.starts_with("out/results/") && l.ends_with(".json"))
            .count(),
        4,
        "one result file for the tune, one for the MoE sweep, one for the sweep, one for \
         the placement check:\n{listing}"
    );
}

#[test]
fn a_step_with_too_little_time_before_the_deadline_is_skipped_and_listed() {
    let dir = device_tree();
    // Every call of the carried tpsbench takes at least 1 s more, so that time passes
    // whatever the machine's speed: on a fast one the real steps take under a second each.
    let slow = dir.path().join("repo/.gpu-carry/common/tpsbench");
    let real = dir.path().join("real-tpsbench");
    std::fs::rename(&slow, &real).unwrap();
    std::fs::write(
        &slow,
        format!("#!/bin/sh\nsleep 1\nexec '{}' \"$@\"\n", real.display()),
    )
    .unwrap();
    let started = std::time::Instant::now();
    // 22 s, none kept in reserve, 20 s the least a step starts with: unpack starts, and
    // after the calls of info and the steps after it (1 s or more each) there is too little
    // left for the last step.
    let (out, summary) = measure(
        dir.path(),
        &[("DEADLINE", "22"), ("RESERVE", "0"), ("MIN_STEP", "20")],
    );
    assert!(
        started.elapsed().as_secs() <= 22 + 5,
        "ran past the deadline:\n{summary}"
    );
    assert!(state(&summary, "unpack").starts_with("ok"), "{summary}");
    let skipped: Vec<&str> = MEASURE_STEPS
        .into_iter()
        .filter(|s| state(&summary, s).starts_with("skipped: "))
        .collect();
    assert!(skipped.contains(&"placement"), "{summary}");
    assert!(
        state(&summary, "placement").ends_with("s left"),
        "a skipped step says how little was left:\n{summary}"
    );
    assert!(files(&out).len() <= 8);
}
