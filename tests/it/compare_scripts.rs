//! The compare scripts' own logic (the order of the sides in a round, the statistics behind
//! every verdict, how llama-batched-bench's rows are read) is checked by their Python unit
//! tests, `scripts/test-compare-scripts`; this runs them with every `cargo test`.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_compare_scripts_unit_tests_pass() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/test-compare-scripts");
    let out = Command::new("python3")
        .arg(&script)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 is needed for the compare scripts' tests (scripts/setup installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", stderr);
    assert!(stderr.contains("OK"), "{}", stderr);
}

/// llama.cpp's own `scripts/compare-llama-bench.py`, from the pinned sources that
/// `scripts/reference-tools` unpacks (scripts/test runs it first). None when they are absent.
fn upstream_compare_script() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
        .join("tpsbench/src");
    std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .map(|e| e.path().join("llama.cpp/scripts/compare-llama-bench.py"))
        .find(|p| p.is_file())
}

#[test]
fn upstream_compare_llama_bench_py_reads_the_llama_bench_export_with_the_moe_and_fit_fields() {
    let Some(script) = upstream_compare_script() else {
        // scripts/test unpacks the sources (reference-tools) before the tests and sets this.
        assert!(
            std::env::var_os("TPSBENCH_REQUIRE_LLAMA_SERVER").is_none(),
            "the pinned llama.cpp sources are missing (scripts/reference-tools)"
        );
        eprintln!("SKIPPED: no pinned llama.cpp sources (run scripts/reference-tools)");
        return;
    };
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tpsbench"));
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-moe.gguf");
    let synth = Command::new(&bin)
        .args(["synth", "--preset", "tiny-moe", "--output"])
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        synth.status.success(),
        "{}",
        String::from_utf8_lossy(&synth.stderr)
    );
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        "[sweep]\nn_prompt = 8\nn_gen = 0\nn_threads = 1\nrepetitions = 1\nwarmup = 0\n\
         n_cpu_moe = [0, 1]\nfit_target = [0, 256]\n\
         [[model]]\nname = \"moe\"\npath = \"tiny-moe.gguf\"\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let run = Command::new(&bin)
        .args(["run", "--quiet", "--results-dir"])
        .arg(&results)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let file = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a result file");
    let export = Command::new(&bin)
        .args(["export", "--format", "llama-bench-json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let build = rows[0]["build_commit"].as_str().unwrap().to_string();
    let exported = dir.path().join("export.json");
    std::fs::write(&exported, &export.stdout).unwrap();
    // The script loads every row into SQLite with its own field list, which fails on a
    // missing field; the table then shows the parameters that vary, ours among them.
    let out = Command::new("python3")
        .arg(&script)
        .args(["-t", "llama-bench", "-i"])
        .arg(&exported)
        .args(["-b", &build, "-c", &build])
        .current_dir(dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 (scripts/setup installs it, with GitPython and tabulate)");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let header = stdout
        .lines()
        .find(|l| l.contains("Model"))
        .unwrap_or_else(|| panic!("{stdout}"));
    for column in ["n_cpu_moe", "fit_target"] {
        assert!(header.contains(column), "{column} missing: {stdout}");
    }
    // One row per test: 2 n_cpu_moe x 2 fit_target, each against itself (one build).
    let body: Vec<&str> = stdout.lines().filter(|l| l.contains("pp8")).collect();
    assert_eq!(body.len(), 4, "{stdout}");
    assert!(body.iter().all(|l| l.contains("1.00")), "{stdout}");
}
