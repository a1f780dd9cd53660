//! Interrupted runs on the spine: kill -9 in the middle and resume, a resume with another
//! plan refused, and the resume command printed after Ctrl-C run as printed.

use super::*;

/// What a run left at `p`, as `--resume` reads it: the result file with its journal
/// replayed (the file itself is rewritten only when its tests double).
fn resumable(p: &Path) -> Value {
    let r = tpsbench::record::journal::read_resumable(p).unwrap();
    serde_json::to_value(r).unwrap()
}

/// Waits until the run writing in `dir` has `n` tests on disk; returns its result file.
fn wait_for_tests(dir: &Path, n: usize) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(p) = files(dir).first() {
            if let Ok(r) = tpsbench::record::journal::read_resumable(p) {
                if r.tests.len() >= n {
                    return p.clone();
                }
            }
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_in_the_middle_then_resume_runs_every_kind_once_and_redoes_nothing() {
    let (dir, config) = workspace(400);
    let results = dir.path().join("results");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let file = wait_for_tests(&results, 3);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = kinds(&resumable(&file));
    assert!(before.len() >= 3 && before.len() < IDS.len(), "{before:?}");
    let journal = tpsbench::record::results::journal_path(&file);
    // The journal exists only while it holds something the result file does not: a kill
    // between a compaction's two writes (the complete file, then a fresh journal) leaves
    // the file alone, and then the file itself holds every finished test (seen under load:
    // 2 of 17 runs beside four to six busy loops).
    if !journal.exists() {
        assert_eq!(
            kinds(&read(&file)),
            before,
            "without a journal, the result file holds every finished test"
        );
    }
    let times: Vec<Value> = resumable(&file)["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["test_time"].clone())
        .collect();
    tpsbench()
        .args(["run", "--config"])
        .arg(&config)
        .arg("--resume")
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "resuming: {} tests done, {} to run",
            before.len(),
            IDS.len() - before.len()
        )));
    assert!(
        !journal.exists(),
        "the finished run's file supersedes its journal"
    );
    let v = read(&file);
    let ids: Vec<&str> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, IDS, "every test exactly once");
    for (i, t) in times.iter().enumerate() {
        assert_eq!(&v["tests"][i]["test_time"], t, "test {i} was not redone");
    }
}

#[test]
fn a_resume_with_another_plan_or_other_settings_is_refused_naming_the_difference() {
    let (dir, config) = workspace(1);
    let results = dir.path().join("results");
    tpsbench()
        .args(["run", "--quiet", "--filter", "tiny/", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .assert()
        .success();
    let file = files(&results).remove(0);
    let resume = |cfg: &Path, extra: &[&str]| {
        let mut c = tpsbench();
        c.args(["run", "--quiet", "--config"])
            .arg(cfg)
            .args(extra)
            .arg("--resume")
            .arg(&file);
        c
    };
    resume(&config, &[])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tl-Q8_0/Q8_0/pp32, which the file's run did not",
        ));
    let reps = dir.path().join("reps.toml");
    std::fs::write(&reps, CONFIG.replace("REPS", "3")).unwrap();
    resume(&reps, &["--filter", "tiny/"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "measurement setting repetitions=1 in the file, repetitions=3 in the configuration",
        ));
    let before = read(&file)["tests"].as_array().unwrap().len();
    resume(&config, &["--filter", "tiny/"]).assert().success();
    assert_eq!(
        read(&file)["tests"].as_array().unwrap().len(),
        before,
        "all done"
    );
}

#[test]
fn the_resume_command_printed_after_an_interrupt_works_as_printed() {
    let (dir, _config) = workspace(300);
    let results = dir.path().join("results");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tpsbench"))
        .current_dir(dir.path())
        .args([
            "run",
            "--filter",
            "tiny/",
            "--config",
            "models.toml",
            "--results-dir",
            "results",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_tests(&results, 1);
    // Ctrl-C: stop after the current test.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr);
    let cmd = err
        .lines()
        .find_map(|l| l.strip_prefix("interrupted: continue with "))
        .unwrap_or_else(|| panic!("no resume command in {err}"))
        .to_string();
    assert!(
        cmd.contains("--config models.toml") && cmd.contains("--filter tiny/"),
        "{cmd}"
    );
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "{cmd}");
    let v = read(&files(&results)[0]);
    assert_eq!(
        kinds(&v).len(),
        4,
        "the four tests of model tiny, once each"
    );
}
