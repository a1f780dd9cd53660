//! End-to-end tests of publishing: `leaderboard` on the synthetic fixtures in
//! tests/fixtures/leaderboard here; `run --shard` + `merge` + `export` on the real llama.cpp
//! engine in `shards`; hostile result files and redaction in their own files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::tpsbench;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/leaderboard")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}

#[test]
fn leaderboard_skips_the_invalid_file_and_writes_markdown_and_a_self_contained_page() {
    let out = tempfile::tempdir().unwrap();
    let r = tpsbench()
        .arg("leaderboard")
        .arg(fixtures())
        .arg("--out-dir")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("skipped: "))
        .collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    assert!(skipped[0].contains("broken.json") && skipped[0].contains("schema_version 99"));

    let md = read(&out.path().join("LEADERBOARD.md"));
    assert!(md.contains("## fixture-cpu: Fixture CPU 9000\n"), "{md}");
    assert!(
        md.contains("## fixture-gpu: Fixture CPU 9000 + NVIDIA H200\n"),
        "{md}"
    );
    assert!(md.contains("## Summary ranking") && md.contains("### tg128 @ d2048"));
    let header = md
        .lines()
        .find(|l| l.starts_with("| quant ") && l.contains("| test ") && l.contains("bytes/s"))
        .expect("a detail table with bytes/s");
    assert!(
        !header.contains("KLD"),
        "KLD is the answer table's: {header}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| Q4_K ") && l.contains(" 0.0300")),
        "KLD of Q4_K in the answer: {md}"
    );
    assert!(md.contains("broken.json"), "left-out files are listed");

    let html = read(&out.path().join("index.html"));
    assert!(html.starts_with("<!doctype html>"));
    for external in ["http://", "https://", " src=", "@import", "url("] {
        assert!(
            !html.contains(external),
            "page must be self-contained: {external}"
        );
    }
    // Every chart is drawn twice, wide and narrow, in one card.
    let charts = html.matches(r#"<svg class="chart""#).count() / 2;
    assert_eq!(
        charts,
        html.matches(r#"<div class="card chart-card""#).count()
    );
    assert!(
        html.contains(&format!(r#"data-charts-expected="{charts}""#)),
        "{charts} charts"
    );
    assert!(charts >= 6, "{charts}");
    assert!(
        !html.contains(r#"<g class="empty">"#),
        "the fixtures have data for every chart"
    );
    // Rankings of 8 test names (pp512, tg128, each at depth 0, 512, 1024, 2048); on
    // fixture-cpu a runs table and 14 models' tables, on fixture-gpu a runs table and 1.
    assert_eq!(
        html.matches(r#"<table class="sortable">"#).count(),
        8 + 15 + 2
    );
    // Badges where the models are synthetic or requantized.
    assert!(md.contains("| Q4_K_M [synthetic] |"), "{md}");
    assert!(md.contains("| SmolLM2-135M-Q2_K [requantized] |"), "{md}");
    assert!(html.contains(r#"<span class="badge badge-requantized">requantized</span>"#));
    // Rows of a ranking that differ only in settings show those settings.
    let pp512 = md.split("### pp512\n\n").nth(1).unwrap();
    let head = pp512.lines().next().unwrap();
    for col in ["threads", "n_ubatch", "fa", "type_k"] {
        assert!(head.contains(&format!(" {col} ")), "{head}");
    }
}

#[test]
fn leaderboard_exits_2_when_no_valid_file_remains() {
    let out = tempfile::tempdir().unwrap();
    let r = tpsbench()
        .arg("leaderboard")
        .arg(fixtures().join("broken.json"))
        .arg("--out-dir")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("skipped: ") && stderr.contains("broken.json"),
        "{stderr}"
    );
    assert!(stderr.contains("error: no valid result file"), "{stderr}");
    assert!(!out.path().join("index.html").exists());

    let r = tpsbench()
        .arg("leaderboard")
        .arg(fixtures())
        .args(["--exclude-build", "e7af607"])
        .arg("--out-dir")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("all 6 valid result files were excluded"),
        "{stderr}"
    );
}

#[test]
fn excluded_tool_versions_leave_the_other_files() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["variants.json", "gpu.json"] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    let gpu = dir.path().join("gpu.json");
    let mut v: Value = serde_json::from_str(&read(&gpu)).unwrap();
    v["run"]["tool"]["git_commit"] = "v0.0.1-stale".into();
    std::fs::write(&gpu, v.to_string()).unwrap();
    let out = dir.path().join("out");
    let r = tpsbench()
        .arg("leaderboard")
        .arg(dir.path())
        .args(["--exclude-tool-version", "stale", "--out-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(
        stderr.contains("excluded: ") && stderr.contains("gpu.json"),
        "{stderr}"
    );
    let md = read(&out.join("LEADERBOARD.md"));
    assert!(
        md.contains("fixture-cpu") && !md.contains("## fixture-gpu"),
        "{md}"
    );
}

/// Runs `tpsbench leaderboard ARGS…`: (exit code, stderr).
fn leaderboard(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let r = tpsbench().arg("leaderboard").args(args).output().unwrap();
    (
        r.status.code(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    )
}

#[test]
fn the_answer_comes_first_in_both_files_and_names_files_relative_to_the_input() {
    let out = tempfile::tempdir().unwrap();
    let (code, stderr) = leaderboard(&[
        fixtures().as_os_str(),
        "--out-dir".as_ref(),
        out.path().as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let md = read(&out.path().join("LEADERBOARD.md"));
    let first = md.lines().find(|l| l.starts_with("## ")).unwrap();
    assert_eq!(first, "## Which quantization?");
    // ladder.json: the SmolLM2-135M ladder on fixture-cpu, one table, with its sentence.
    let answer = md
        .split("### SmolLM2-135M (llama) on fixture-cpu: Fixture CPU 9000\n\n")
        .nth(1)
        .expect(&md);
    assert!(
        answer.starts_with("For SmolLM2-135M on fixture-cpu, the fastest quantization within a KLD budget of 0.05 nats is "),
        "{answer}"
    );
    let head = answer.lines().find(|l| l.starts_with("| quant ")).unwrap();
    assert!(
        head.starts_with("| quant ") && head.contains("| decode tg128 t/s |"),
        "{head}"
    );
    for col in ["KLD ± se", "best trade-off", "bits/weight", "size"] {
        assert!(head.contains(col), "{col}: {head}");
    }
    assert!(answer.contains("★ front"), "{answer}");
    // Fixtures are flagged (badged on the page, one warning per run on stderr).
    assert!(answer.contains("[fixture]"), "{answer}");
    assert!(
        stderr.contains("warning: ladder.json: a test fixture"),
        "{stderr}"
    );
    // No absolute path: files are named relative to the input directory.
    let abs = fixtures().display().to_string();
    assert!(!md.contains(&abs), "an absolute path in LEADERBOARD.md");
    assert!(md.contains("| ladder.json [fixture] "), "{md}");
    // The Markdown answer keeps each figure on one line (non-breaking spaces).
    let row = answer.lines().find(|l| l.starts_with("| Q8_0 ")).unwrap();
    assert!(
        row.contains("\u{a0}±\u{a0}") && !row.contains(" ± "),
        "{row}"
    );

    let html = read(&out.path().join("index.html"));
    let answer_at = html
        .find(r#"<section id="answer">"#)
        .expect("an answer section");
    assert!(answer_at < html.find(r#"<section id="charts">"#).unwrap());
    assert!(answer_at < html.find("<svg").unwrap(), "before any chart");
    assert!(html.contains(r#"<table class="sortable answer-table">"#));
    assert!(!html.contains(&abs), "an absolute path in index.html");
    assert!(html.contains(r#"<span class="badge badge-fixture">fixture</span>"#));
}

#[test]
fn kld_budget_changes_the_answer() {
    let out = tempfile::tempdir().unwrap();
    let ladder = fixtures().join("ladder.json");
    let (code, stderr) = leaderboard(&[
        ladder.as_os_str(),
        "--kld-budget".as_ref(),
        "0.001".as_ref(),
        "--out-dir".as_ref(),
        out.path().as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let md = read(&out.path().join("LEADERBOARD.md"));
    assert!(
        md.contains("For SmolLM2-135M on fixture-cpu, the fastest quantization within a KLD budget of 0.001 nats is F16"),
        "{md}"
    );
}

#[test]
fn check_passes_on_a_freshly_built_directory_and_fails_after_one_byte_changes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("board");
    let build = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            fixtures().into_os_string().leak(),
            "--out-dir".as_ref(),
            out.as_os_str(),
        ];
        args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
        leaderboard(&args)
    };
    let (code, stderr) = build(&["--check"]);
    assert_eq!(code, Some(1), "nothing built yet: {stderr}");
    assert!(stderr.contains("LEADERBOARD.md"), "{stderr}");
    assert_eq!(build(&[]).0, Some(0));
    let first = (
        read(&out.join("LEADERBOARD.md")),
        read(&out.join("index.html")),
    );
    // Deterministic: a second build writes the same bytes (no build time on the page).
    assert_eq!(build(&[]).0, Some(0));
    assert!(
        first
            == (
                read(&out.join("LEADERBOARD.md")),
                read(&out.join("index.html"))
            )
    );
    let (code, stderr) = build(&["--check"]);
    assert_eq!(code, Some(0), "{stderr}");
    // One byte changed: exit 1 and one line that names the file.
    let html = out.join("index.html");
    let mut bytes = std::fs::read(&html).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&html, bytes).unwrap();
    let (code, stderr) = build(&["--check"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ")
            && stderr.contains("index.html differs from what the result files build"),
        "{stderr}"
    );
    // --check writes nothing: the edited file is still there.
    assert_ne!(read(&html), first.1);
}

/// What CI runs on the published set (docs/leaderboard.md, "Submitting results"): the
/// committed LEADERBOARD.md and index.html are what results/published/ builds to.
#[test]
fn the_committed_published_page_passes_check() {
    let r = tpsbench()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "leaderboard",
            "results/published",
            "--out-dir",
            "results/published",
            "--check",
        ])
        .output()
        .unwrap();
    assert!(
        r.status.success(),
        "{} (rebuild with scripts/make-results --board)",
        String::from_utf8_lossy(&r.stderr)
    );
}

#[test]
fn strict_leaves_out_the_flagged_runs_that_a_plain_build_warns_about() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let base: Value = serde_json::from_str(&read(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machines/fixture-laptop.json"),
    ))
    .unwrap();
    let write = |name: &str, host: &str, edit: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        v["run"]["system"]["hostname"] = host.into();
        v["run"]["tool"]["git_commit"] = "0123abcd".into();
        edit(&mut v);
        std::fs::write(inputs.join(name), v.to_string()).unwrap();
    };
    write("quiet.json", "quiet-box", &|_| {});
    write("dirty.json", "dirty-box", &|v| {
        v["run"]["tool"]["git_commit"] = "0123abcd-dirty".into()
    });
    write("busy.json", "busy-box", &|v| {
        // Above 1 and above 0.5 per logical CPU of any fixture machine.
        v["run"]["load_average"] = serde_json::json!([40.4, 2.1, 1.3])
    });
    write("copy.json", "quiet-box", &|_| {});
    let out = dir.path().join("out");
    let (code, stderr) = leaderboard(&[inputs.as_os_str(), "--out-dir".as_ref(), out.as_os_str()]);
    assert_eq!(code, Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|l| l.starts_with("warning: dirty.json: dirty build: tpsbench 0123abcd-dirty")),
        "{stderr}"
    );
    assert!(
        warnings
            .iter()
            .any(|l| l.starts_with("warning: busy.json: started at a load average of 40.40")),
        "{stderr}"
    );
    assert!(
        warnings
            .iter()
            .any(|l| l.contains("duplicate of") && l.contains("quiet.json")),
        "{stderr}"
    );
    let md = read(&out.join("LEADERBOARD.md"));
    assert!(
        md.contains("busy-box") && md.contains("dirty-box") && md.contains("[busy]"),
        "{md}"
    );

    let (code, stderr) = leaderboard(&[
        inputs.as_os_str(),
        "--strict".as_ref(),
        "--out-dir".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning: "), "{stderr}");
    let excluded: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("excluded: "))
        .collect();
    assert!(
        excluded
            .iter()
            .any(|l| l.contains("dirty.json: left out by --strict: dirty build")),
        "{stderr}"
    );
    assert!(
        excluded
            .iter()
            .any(|l| l.contains("busy.json: left out by --strict: started at a load average")),
        "{stderr}"
    );
    let md = read(&out.join("LEADERBOARD.md"));
    assert!(
        md.contains("quiet-box") && !md.contains("## busy-box") && !md.contains("## dirty-box"),
        "{md}"
    );
}

mod hostile;
mod redact;
mod shards;
