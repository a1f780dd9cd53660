//! What the test modules share: the real `tpsbench` binary, the models `tpsbench synth`
//! writes, and a temp dir holding the tiny model with a `models.toml` beside it.
//!
//! `tpsbench synth` runs once per distinct argument list in the whole test process (see
//! [`synth`]); every test gets its own copy of the file, so that a test may overwrite, cut
//! short or delete its model without another test seeing it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use assert_cmd::Command;

pub fn tpsbench() -> Command {
    Command::cargo_bin("tpsbench").unwrap()
}

/// The directory the models of [`synth`] live in, made on first use and removed when the
/// test process exits: a static is never dropped, so an `atexit` handler removes it.
fn models_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("tpsbench-test-models-")
            .tempdir()
            .unwrap()
            .keep();
        // SAFETY: `remove` is a plain function that neither unwinds nor needs anything the
        // process has already torn down when exit handlers run.
        unsafe { libc::atexit(remove) };
        dir
    })
}

/// The model `tpsbench synth ARGS --output FILE` writes, made once per test process for
/// each distinct `args` (tests asking for the same one wait for the first to write it).
/// Read it, or copy it with [`synth_to`]; never write to it.
pub fn synth(args: &[&str]) -> PathBuf {
    // One cell per argument list: the map's lock is held only to find the cell, so that
    // different models are written in parallel.
    static MADE: Mutex<BTreeMap<Vec<String>, Arc<OnceLock<PathBuf>>>> = Mutex::new(BTreeMap::new());
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let key: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let cell = MADE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let out = models_dir().join(format!("model-{n}.gguf"));
        tpsbench()
            .arg("synth")
            .args(args)
            .arg("--output")
            .arg(&out)
            .assert()
            .success();
        out
    })
    .clone()
}

/// A copy of the model [`synth`] makes for `args`, at `dest`; returns `dest`.
pub fn synth_to(dest: &Path, args: &[&str]) -> PathBuf {
    std::fs::copy(synth(args), dest).unwrap();
    dest.to_path_buf()
}

/// A temp dir holding `tiny.gguf`, the default tiny model.
pub fn tiny_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    synth_to(&dir.path().join("tiny.gguf"), &[]);
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

/// `BIN tune --quiet --config CONFIG EXTRA...` (BIN: this build's tpsbench, or another
/// such as the Vulkan one): its exit code, stdout and stderr.
pub fn tune_of(bin: &Path, config: &Path, extra: &[&std::ffi::OsStr]) -> (i32, String, String) {
    quiet_of(bin, "tune", config, extra)
}

/// `BIN COMMAND --quiet --config CONFIG EXTRA...`: its exit code, stdout and stderr.
pub fn quiet_of(
    bin: &Path,
    command: &str,
    config: &Path,
    extra: &[&std::ffi::OsStr],
) -> (i32, String, String) {
    let out = std::process::Command::new(bin)
        .args([command, "--quiet", "--config"])
        .arg(config)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`tune_of`] with its result file written into `results`.
pub fn tune_into(bin: &Path, config: &Path, results: &Path) -> (i32, String, String) {
    tune_of(
        bin,
        config,
        &["--results-dir".as_ref(), results.as_os_str()],
    )
}

/// The one result file in `dir` (asserts there is exactly one).
pub fn only_result(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

/// A JSON file, parsed.
pub fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// `record::verify` on `v` written to a file of its own in `dir`: Ok, or its refusal line.
pub fn verify_edited(dir: &Path, v: &serde_json::Value) -> Result<(), String> {
    let p = dir.join("edited.json");
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    tpsbench::record::verify::read(&p)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
