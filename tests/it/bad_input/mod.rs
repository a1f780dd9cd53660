//! Bad input, table-driven: each row sets up a directory, runs the real `tpsbench` binary,
//! and checks the exit code, that stderr is one line (or a bounded few) containing the
//! expected text, and that nothing panicked, aborted or died of a signal.
//! docs/bad-input.md lists the same cases with what each prints.

mod cases;
mod gpu_cases;
mod knob_cases;
mod ladder_cases;
mod more_cases;
mod recipe_cases;
mod tune_cases;
mod untrusted_cases;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use assert_cmd::Command;

use cases::{Case, SWEEP, case, cases, model, sweep, tiny_bytes, write_config};
struct Outcome {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
    stdout: String,
    /// The errors the result file records for its tests.
    recorded: Vec<String>,
}

fn run_case(c: &Case) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let args = (c.setup)(dir.path());
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .args(&args)
        .current_dir(dir.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let mut recorded = Vec::new();
    for f in std::fs::read_dir(dir.path().join("results"))
        .into_iter()
        .flatten()
    {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for t in v["tests"].as_array().unwrap() {
            recorded.extend(t["error"].as_str().map(str::to_string));
        }
    }
    Outcome {
        code: out.status.code(),
        signal: out.status.signal(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        recorded,
    }
}

/// Everything a bad-input error must be, whatever the input.
fn problems(c: &Case, o: &Outcome) -> Vec<String> {
    let mut p = Vec::new();
    if let Some(s) = o.signal {
        p.push(format!("died of signal {s}"));
    }
    if o.code != Some(c.code) {
        p.push(format!("exit code {:?}, expected {}", o.code, c.code));
    }
    let lines = o.stderr.lines().count();
    if lines == 0 || lines > c.max_lines {
        p.push(format!(
            "{lines} stderr lines, expected 1 to {}",
            c.max_lines
        ));
    }
    if !o.stderr.contains(c.stderr) {
        p.push(format!("stderr lacks {:?}", c.stderr));
    }
    for bad in [
        "panicked",
        "Aborted",
        "RUST_BACKTRACE",
        "stack backtrace",
        "GGML_ASSERT",
    ] {
        if o.stderr.contains(bad) {
            p.push(format!("stderr contains {bad:?}"));
        }
    }
    if c.code == 2 && !o.stdout.is_empty() {
        p.push("stdout is not empty".into());
    }
    if let Some(r) = c.recorded {
        if !o.recorded.iter().any(|e| e.contains(r)) {
            p.push(format!(
                "the result file records {:?}, not {r:?}",
                o.recorded
            ));
        }
    }
    p
}

#[test]
fn every_bad_input_gets_one_clear_line_and_a_non_zero_exit() {
    let mut failures = Vec::new();
    for c in cases() {
        let o = run_case(&c);
        let p = problems(&c, &o);
        if !p.is_empty() {
            failures.push(format!(
                "{}: {}\n  stderr: {}",
                c.what,
                p.join("; "),
                o.stderr.trim_end().replace('\n', "\n          ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n")
    );
}

/// Prints the table of docs/bad-input.md from the real binary:
/// `cargo test --release --test it -- --ignored --nocapture bad_input::print_the_table`.
#[test]
#[ignore = "prints the documentation table; run by hand"]
fn print_the_table() {
    println!("| input | exit | stderr |\n| --- | ---: | --- |");
    for c in cases() {
        let o = run_case(&c);
        let mut line = o.stderr.lines().next().unwrap_or("").to_string();
        if let Some(e) = o.recorded.first() {
            line = format!("{line}` (recorded: `{e}");
        }
        let line = line.replace('|', "\\|");
        let line = line.replace(&*std::env::temp_dir().to_string_lossy(), "/tmp");
        println!(
            "| {} | {} | `{}` |",
            c.what,
            o.code.map_or("signal".into(), |x| x.to_string()),
            line
        );
    }
}

/// Permission errors, when they can happen: root reads and writes files whatever their
/// mode, so the check is skipped (saying so) when the test runs as root.
#[test]
fn unreadable_files_and_read_only_results_directories_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::write(&locked, "x").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        eprintln!("skipped: running as root, file permissions do not apply");
        return;
    }
    let table = [
        (
            "unreadable config",
            (|d: &Path| {
                let a = write_config(d, SWEEP, "tiny.gguf");
                lock(&d.join("models.toml"));
                a
            }) as fn(&Path) -> Vec<OsString>,
            "cannot read the configuration: Permission denied",
        ),
        (
            "unreadable model",
            |d: &Path| {
                let a = model(d, tiny_bytes());
                lock(&d.join("tiny.gguf"));
                a
            },
            "tiny.gguf: permission denied",
        ),
        (
            "read-only results directory",
            |d: &Path| {
                let a = sweep(d, "");
                std::fs::create_dir(d.join("results")).unwrap();
                std::fs::set_permissions(d.join("results"), PermissionsExt::from_mode(0o555))
                    .unwrap();
                a
            },
            "cannot write to the results directory",
        ),
    ];
    for (what, setup, stderr) in table {
        let c = case(what, setup, 2, stderr);
        let o = run_case(&c);
        let p = problems(&c, &o);
        assert!(p.is_empty(), "{what}: {}\n{}", p.join("; "), o.stderr);
    }
}

fn lock(p: &Path) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000)).unwrap();
}

#[test]
fn a_panic_is_one_line_and_exit_2_and_rust_backtrace_still_works() {
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("info")
        .env("TPSBENCH_TEST_PANIC", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "error: internal error: panic requested by TPSBENCH_TEST_PANIC (at src/main.rs:"
        ),
        "{err}"
    );
    let out = Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("info")
        .env("TPSBENCH_TEST_PANIC", "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("panicked at") && err.contains("stack backtrace"),
        "{err}"
    );
}

/// `results::read` on damaged result files: an error naming the file, never a panic.
#[test]
fn corrupt_result_files_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let deep = "[".repeat(100_000);
    let table: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", b"".to_vec(), "not valid JSON"),
        (
            "truncated",
            br#"{"schema_version": 1, "run": {"#.to_vec(),
            "not valid JSON",
        ),
        (
            "not UTF-8",
            b"\xff\xfe{}".to_vec(),
            "stream did not contain valid UTF-8",
        ),
        ("a JSON array", b"[1, 2]".to_vec(), "no schema_version"),
        ("null", b"null".to_vec(), "no schema_version"),
        (
            "version as a string",
            br#"{"schema_version": "1"}"#.to_vec(),
            "no schema_version",
        ),
        (
            "future version",
            br#"{"schema_version": 99}"#.to_vec(),
            "schema_version 99 is not supported",
        ),
        (
            "fields missing",
            br#"{"schema_version": 1}"#.to_vec(),
            "invalid result file: missing field",
        ),
        (
            "nesting 100000 deep",
            deep.into_bytes(),
            // Read straight into the typed record (issue 47), the parser stops at the end of
            // the unclosed lists or at serde_json's recursion limit, whichever it meets
            // first: either way one line, never a stack overflow.
            "not valid JSON",
        ),
    ];
    for (what, bytes, expected) in table {
        let p = dir.path().join(format!("{what}.json"));
        std::fs::write(&p, &bytes).unwrap();
        let e = tpsbench::record::results::read(&p)
            .expect_err(what)
            .to_string();
        assert!(e.starts_with(&p.display().to_string()), "{what}: {e}");
        assert!(e.contains(expected), "{what}: {e}");
        assert_eq!(e.lines().count(), 1, "{what}: {e}");
    }
    for p in [dir.path().to_path_buf(), dir.path().join("missing.json")] {
        let e = tpsbench::record::results::read(&p).unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
    }
}

/// `tpsbench info | head -0`: the reader is gone before anything is written. Other tools
/// end quietly on a closed pipe, and so does every command that writes to stdout.
#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/leaderboard/variants.json");
    let f = fixture.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["info"],
        &["info", "--json"],
        &["export", f, "--format", "json"],
        &["export", f, "--format", "md"],
        &["compare", f, f],
    ];
    for args in commands {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
            .args(args)
            .env("RUST_BACKTRACE", "1") // not a bug: no backtrace even when asked for
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        let noise: Vec<&str> = err.lines().filter(|l| !l.starts_with("warning:")).collect();
        assert!(noise.is_empty(), "{args:?}: {err}");
    }
}

/// A write that fails for another reason (a full disk) is still an error.
#[test]
fn a_full_stdout_is_one_error_line_and_exit_2() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .arg("info")
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "error: writing to stdout: No space left on device (os error 28)"
    );
}
