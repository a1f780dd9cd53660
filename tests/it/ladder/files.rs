//! Variants given as files, as publishers upload them: measured where they lie against a
//! reference file, with the reference's rows stored once and reused.

use std::path::Path;

use predicates::prelude::*;
use serde_json::Value;

use super::{eval_text, quantize_to, result, synth};
use crate::support::tpsbench;

fn files_config(dir: &Path, files: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("eval.txt"), eval_text(300)).unwrap();
    let cfg = dir.join("files.toml");
    let body = format!(
        "[sweep]\nn_prompt = 16\nn_gen = 4\nrepetitions = 1\nn_threads = 1\n\n\
         [[ladder]]\nname = \"tiny\"\nreference = \"ref-F16.gguf\"\nfiles = {files}\n\
         cache_dir = \"cache\"\n[ladder.eval]\ntext = \"eval.txt\"\nctx = 64\nchunks = 3\n"
    );
    std::fs::write(&cfg, body).unwrap();
    cfg
}

fn ladder(cfg: &Path, results: &Path) -> assert_cmd::assert::Assert {
    tpsbench()
        .args(["ladder", "--config"])
        .arg(cfg)
        .arg("--results-dir")
        .arg(results)
        .assert()
}

#[test]
fn downloaded_files_get_kld_against_a_reference_file_read_where_it_lies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = synth(d, "tiny.gguf", &[]);
    quantize_to(&tiny, &d.join("ref-F16.gguf"), "F16", false);
    quantize_to(&tiny, &d.join("pub-Q8_0.gguf"), "Q8_0", false);
    quantize_to(&tiny, &d.join("pub-Q4_0.gguf"), "Q4_0", false);
    let cfg = files_config(
        d,
        r#"["pub-Q8_0.gguf", { name = "other-q4", path = "pub-Q4_0.gguf" }]"#,
    );
    ladder(&cfg, &d.join("results"))
        .success()
        .stdout(predicate::str::contains("| other-q4 ").and(predicate::str::contains(" ref ")))
        .stderr(predicate::str::contains(
            "storing the reference's log-probabilities",
        ));
    let v = result(d);
    let models = v["models"].as_array().unwrap();
    let m = |name: &str| models.iter().find(|m| m["name"] == name).unwrap();
    let (r, q8, q4) = (m("ref-F16"), m("pub-Q8_0"), m("other-q4"));
    assert_eq!(r["quality"]["kld_mean"], 0.0);
    assert_eq!(q4["quality"]["reference"], "ref-F16");
    for x in [r, q8, q4] {
        assert_eq!(x["provenance"]["given"], true, "{x}");
        assert_eq!(
            x["provenance"]["base_file"],
            d.join("ref-F16.gguf").display().to_string()
        );
    }
    // One model whatever the quantization, whatever the name.
    assert_eq!(r["identity"].as_str().unwrap().len(), 16);
    assert!(q8["identity"] == r["identity"] && q4["identity"] == r["identity"]);
    // Each row is named by what its tensors are, beside the file's own name.
    assert_eq!(q4["provenance"]["type"], "Q4_0");
    assert_eq!(q4["model_filename"], "pub-Q4_0.gguf");
    let kld = |m: &Value| m["quality"]["kld_mean"].as_f64().unwrap();
    assert!(
        kld(q4) > kld(q8) && kld(q8) > 0.0,
        "{} {}",
        kld(q4),
        kld(q8)
    );
    // No copy of the reference: the cache holds its stored rows only.
    let cached: Vec<String> = std::fs::read_dir(d.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(cached.iter().all(|f| f.ends_with(".logits")), "{cached:?}");

    // A second run pays no reference pass.
    std::fs::remove_dir_all(d.join("results")).unwrap();
    ladder(&cfg, &d.join("results"))
        .success()
        .stderr(predicate::str::contains("reusing the stored reference"));
}

#[test]
fn a_file_of_another_model_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = synth(d, "tiny.gguf", &[]);
    quantize_to(&tiny, &d.join("ref-F16.gguf"), "F16", false);
    synth(
        d,
        "l3.gguf",
        &["--preset", "llama-3-8b", "--shrink", "16", "--layers", "1"],
    );
    let cfg = files_config(d, r#"["l3.gguf"]"#);
    let out = ladder(&cfg, &d.join("results"))
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("l3.gguf") && err.contains("not the model of ladder tiny"),
        "{err}"
    );
}

#[test]
fn tune_max_kld_limits_file_variants_by_their_kld() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tiny = synth(d, "tiny.gguf", &[]);
    quantize_to(&tiny, &d.join("ref-F16.gguf"), "F16", false);
    quantize_to(&tiny, &d.join("pub-Q4_0.gguf"), "Q4_0", false);
    let cfg = files_config(d, r#"["pub-Q4_0.gguf"]"#);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let tune = "\n[tune]\nobjective = \"tg4\"\nmax_kld = 1e-9\nmax_rounds = 2\n";
    std::fs::write(&cfg, format!("{text}{tune}")).unwrap();
    let out = tpsbench()
        .args(["tune", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(d.join("results"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // The file whose KLD is above the budget leaves the race; the reference (KLD 0) stays.
    let v = result(d);
    let excluded = v["run"]["tune"]["excluded"].to_string();
    assert!(
        excluded.contains("pub-Q4_0: KLD"),
        "{excluded}\n{stdout}\n{stderr}"
    );
    assert!(!excluded.contains("ref-F16"), "{excluded}");
}
