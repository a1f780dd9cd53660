//! What `results/published/` (the published set) may hold: runs of real models on a quiet
//! machine. Test fixtures (the tiny model, `fixture-*` hosts) never go there; a synthetic model
//! is allowed only when its provenance says so; every run records the load average it started
//! at, and that load was low. And the committed LEADERBOARD.md is what the set rebuilds to.
//! The rest of `results/` is the user's own runs (`tpsbench run`'s default), which these
//! checks leave alone, so `scripts/bench` before `scripts/test` cannot fail them.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Highest 1-minute load average a published run may have started at. scripts/make-results
/// waits for 0.5 before each run; this leaves room for a forced run on a nearly idle machine.
const MAX_LOAD: f64 = 1.0;
/// Fewer parameters than this is a test model, not a language model anyone runs.
const MIN_PARAMS: u64 = 10_000_000;

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// Why each result file under `dir` does not belong in a published set (empty: all fine).
fn problems(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    json_files(dir, &mut files);
    let mut out = Vec::new();
    for f in files {
        let name = f.display();
        let Ok(v) = serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap()) else {
            out.push(format!("{name}: not JSON"));
            continue;
        };
        let run = &v["run"];
        if run["system"]["hostname"]
            .as_str()
            .is_some_and(|h| h.starts_with("fixture"))
        {
            out.push(format!("{name}: a test fixture (host fixture-*)"));
        }
        match run["load_average"][0].as_f64() {
            None => out.push(format!(
                "{name}: no run.load_average, so nothing proves a quiet machine"
            )),
            Some(l) if l > MAX_LOAD => out.push(format!(
                "{name}: started at a load average of {l} (above {MAX_LOAD})"
            )),
            Some(_) => {}
        }
        for m in v["models"].as_array().into_iter().flatten() {
            let model = m["name"].as_str().unwrap_or("?");
            let said = |k: &str| m[k].as_str().unwrap_or("").to_lowercase();
            let tiny = ["name", "path", "model_filename"]
                .iter()
                .any(|k| said(k).contains("tiny"))
                || m["provenance"]["base_file"]
                    .as_str()
                    .is_some_and(|b| b.to_lowercase().contains("tiny"));
            let marked = m["provenance"]["synthetic"].as_bool() == Some(true);
            let small = m["model_n_params"].as_u64().is_some_and(|n| n < MIN_PARAMS);
            if tiny {
                out.push(format!("{name}: model {model} is the tiny test model"));
            } else if small && !marked {
                out.push(format!(
                    "{name}: model {model} has under {MIN_PARAMS} parameters and is not marked synthetic (provenance.synthetic)"
                ));
            }
        }
    }
    out
}

/// The published set, relative to the repository.
const PUBLISHED: &str = "results/published";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn published_results_hold_no_fixture_no_unmarked_synthetic_model_and_only_quiet_runs() {
    let p = problems(&root().join(PUBLISHED));
    assert!(
        p.is_empty(),
        "{PUBLISHED}/ must hold real, quiet runs only:\n{}",
        p.join("\n")
    );
}

#[test]
fn the_check_flags_fixtures_unmarked_synthetic_models_and_runs_without_a_load_average() {
    let p = problems(&root().join("tests/fixtures/leaderboard")).join("\n");
    assert!(
        p.contains("variants.json: a test fixture (host fixture-*)"),
        "{p}"
    );
    assert!(p.contains("gpu.json: no run.load_average"), "{p}");
    assert!(p.contains("model tiny-Q4_K is the tiny test model"), "{p}");
    assert!(
        !p.contains("synthetic-llama-3-8b"),
        "a marked synthetic model is allowed: {p}"
    );

    let dir = tempfile::tempdir().unwrap();
    let base: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/machines/fixture-laptop.json"))
            .unwrap(),
    )
    .unwrap();
    let write = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        v["run"]["system"]["hostname"] = "bench-box".into();
        edit(&mut v);
        std::fs::write(dir.path().join(name), v.to_string()).unwrap();
    };
    write("real.json", &|_| {});
    write("unmarked.json", &|v| {
        v["models"][0]["name"] = "random-weights".into();
        v["models"][0]["model_n_params"] = 1_372_928.into();
    });
    write("marked.json", &|v| {
        v["models"][0]["model_n_params"] = 1_372_928.into();
        v["models"][0]["provenance"] = serde_json::json!({"synthetic": true});
    });
    write("busy.json", &|v| {
        v["run"]["load_average"] = serde_json::json!([2.4, 2.1, 1.3])
    });
    let p = problems(dir.path());
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p[0].contains("busy.json: started at a load average of 2.4"),
        "{p:#?}"
    );
    assert!(
        p[1].contains("unmarked.json: model random-weights has under"),
        "{p:#?}"
    );
}

#[test]
fn the_committed_leaderboard_is_what_the_published_results_rebuild_to() {
    let out = tempfile::tempdir().unwrap();
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_tpsbench"))
        .current_dir(root())
        .args(["leaderboard", PUBLISHED, "--out-dir"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let built = std::fs::read_to_string(out.path().join("LEADERBOARD.md")).unwrap();
    let committed = std::fs::read_to_string(root().join(PUBLISHED).join("LEADERBOARD.md")).unwrap();
    assert!(
        built == committed,
        "{PUBLISHED}/LEADERBOARD.md is stale: run scripts/make-results --board"
    );
}
