//! Quantization ladders and synthetic shapes on the real llama.cpp: the tiny model that
//! `tpsbench synth` writes is quantized, evaluated and compared; the architecture presets
//! are written shrunk and loaded. No download. One module: `quantize.rs` holds the
//! engine-level tests (quantize, KLD, presets), this file the `ladder` command's.

mod fidelity;
mod files;
mod quantize;

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use tpsbench::config::quant_types::QuantType;
use tpsbench::engine::LoadParams;
use tpsbench::engine::llama::LlamaModel;
use tpsbench::engine::quantize::{QuantizeParams, quantize};
use tpsbench::gguf::presets::presets;
use tpsbench::gguf::reader::read_header;
use tpsbench::ladder::Reporter;
use tpsbench::ladder::base_file::BaseFile;
use tpsbench::ladder::eval::{reference_pass, stored_pass, variant_pass, whole_chunks};
use tpsbench::ladder::quality;

use crate::support;
use crate::support::tpsbench;

/// `name` in `dir`: a copy of the model `tpsbench synth ARGS` writes (once per process).
fn synth(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    support::synth_to(&dir.join(name), args)
}

fn quantize_to(input: &Path, out: &Path, t: &str, requant: bool) {
    let params = QuantizeParams {
        ftype: QuantType::parse(t).unwrap().ftype,
        allow_requantize: requant,
        n_threads: 2,
    };
    quantize(input, out, &params, &Default::default(), &mut |_, _| {}).unwrap();
}

/// Ordinary words of the tiny vocabulary, so the text tokenizes into word tokens.
fn eval_text(words: usize) -> String {
    let w = [
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on",
        "time", "new", "some", "could", "other", "only", "can",
    ];
    (0..words)
        .map(|i| w[(i * 7 + i / 3) % w.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn ladder_config(dir: &Path, base: &str, types: &str, extra: &str) -> PathBuf {
    std::fs::write(dir.join("eval.txt"), eval_text(300)).unwrap();
    let cfg = dir.join("ladder.toml");
    std::fs::write(
        &cfg,
        format!(
            "[sweep]\nn_prompt = 16\nn_gen = 4\nrepetitions = 1\nn_threads = 1\n\n\
             [[ladder]]\nname = \"tiny\"\nbase = \"{base}\"\ntypes = {types}\n\
             cache_dir = \"cache\"\n{extra}\n[ladder.eval]\ntext = \"eval.txt\"\nctx = 64\nchunks = 3\n"
        ),
    )
    .unwrap();
    cfg
}

fn result(dir: &Path) -> Value {
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap()
}

#[test]
fn ladder_builds_measures_and_tabulates_the_tiny_model() {
    let dir = tempfile::tempdir().unwrap();
    synth(dir.path(), "tiny.gguf", &[]);
    let tok = dir.path().join("tokenizer.json");
    std::fs::write(
        &tok,
        r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0,"the":1},
            "unk_token":"[UNK]"}}"#,
    )
    .unwrap();
    let cfg = ladder_config(
        dir.path(),
        "tiny.gguf",
        r#"["Q2_K", "F32", "Q8_0"]"#,
        "tokenizer = \"tokenizer.json\"",
    );
    tpsbench()
        .args(["ladder", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("| tiny-F32 ")
                .and(predicate::str::contains(" ref "))
                .and(predicate::str::contains("tg4 t/s")),
        )
        .stderr(predicate::str::contains("[quantize] tiny-Q8_0"));
    let v = result(dir.path());
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 3);
    let m = |name: &str| models.iter().find(|m| m["name"] == name).unwrap();
    let (q2, f32_, q8) = (m("tiny-Q2_K"), m("tiny-F32"), m("tiny-Q8_0"));
    assert_eq!(f32_["provenance"]["requantized"], false);
    assert_eq!(q2["provenance"]["type"], "Q2_K");
    assert_eq!(q2["provenance"]["base_type"], "F32");
    assert_eq!(f32_["quality"]["kld_mean"], 0.0);
    assert!(f32_["quality"]["kld_percentiles"]["p99_9"].is_number());
    assert_eq!(f32_["quality"]["same_top_p"], 1.0);
    assert_eq!(f32_["quality"]["reference"], "tiny-F32");
    let kld = |m: &Value| m["quality"]["kld_mean"].as_f64().unwrap();
    assert!(
        kld(q2) > kld(q8) && kld(q8) > 0.0,
        "{} {}",
        kld(q2),
        kld(q8)
    );
    assert_eq!(
        q8["quality"]["text_source"].as_str().unwrap(),
        format!("file:{}", dir.path().join("eval.txt").display())
    );
    let bpw = |m: &Value| m["bits_per_weight"].as_f64().unwrap();
    assert!((bpw(f32_) - 32.0).abs() < 0.01);
    assert!(bpw(q8) > bpw(q2));
    // "the of and ...": bytes per token is the text's length over its token count
    assert!(q8["bytes_per_token"].as_f64().unwrap() > 1.0);
    // the toy tokenizer.json knows only "the": every word is one token there as well
    let r = q8["ref_tokens_per_token"].as_f64().unwrap();
    assert!(r > 0.2 && r < 2.0, "{r}");
    assert!(dir.path().join("cache").read_dir().unwrap().count() >= 3);

    // The table again, from the file, as JSON.
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let out = tpsbench()
        .args(["ladder", "--output", "json", "--from"])
        .arg(&files[0])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 3);
    assert!(rows.as_array().unwrap().iter().any(|r| r["pareto"] == true));
}

#[test]
fn requantized_and_synthetic_bases_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    synth(dir.path(), "q8.gguf", &["--type", "Q8_0"]);
    let cfg = ladder_config(dir.path(), "q8.gguf", r#"["Q8_0", "Q4_0"]"#, "");
    tpsbench()
        .args(["ladder", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .assert()
        .success()
        .stderr(predicate::str::contains("requantized"))
        .stdout(predicate::str::contains("(requant)"));
    let v = result(dir.path());
    for m in v["models"].as_array().unwrap() {
        assert_eq!(m["provenance"]["requantized"], true, "{m}");
        assert_eq!(m["provenance"]["base_type"], "Q8_0");
        assert!(m["quality"].is_object());
    }

    let dir = tempfile::tempdir().unwrap();
    synth(
        dir.path(),
        "l3.gguf",
        &["--preset", "llama-3-8b", "--shrink", "16", "--layers", "1"],
    );
    let cfg = ladder_config(dir.path(), "l3.gguf", r#"["Q8_0", "Q4_0"]"#, "");
    tpsbench()
        .args(["ladder", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .assert()
        .success()
        .stdout(predicate::str::contains("(synthetic)"));
    let v = result(dir.path());
    for m in v["models"].as_array().unwrap() {
        assert_eq!(m["provenance"]["synthetic"], true, "{m}");
        assert_eq!(m["provenance"]["preset"], "llama-3-8b");
        assert!(
            m.get("quality").is_none(),
            "synthetic models carry no quality: {m}"
        );
    }
}

#[test]
fn synth_and_ladder_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    tpsbench()
        .args(["synth", "--preset", "gpt-9", "--output"])
        .arg(dir.path().join("x.gguf"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("unknown preset").and(predicate::str::contains("llama-3-8b")),
        );
    let cfg = dir.path().join("m.toml");
    std::fs::write(
        &cfg,
        "[[ladder]]\nname = \"x\"\nbase = \"b.gguf\"\ntypes = [\"Q4_K_Z\"]\n",
    )
    .unwrap();
    tpsbench()
        .args(["ladder", "--config"])
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("m.toml:4: key `ladder[0].types`"));
    std::fs::write(
        &cfg,
        "[[ladder]]\nname = \"x\"\nbase = \"missing.gguf\"\ntypes = [\"Q4_0\"]\n",
    )
    .unwrap();
    tpsbench()
        .args(["ladder", "--config"])
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.gguf"));
}

#[test]
fn run_records_a_synthetic_preset_as_synthetic_and_a_plain_model_without_provenance() {
    let dir = tempfile::tempdir().unwrap();
    synth(
        dir.path(),
        "m7.gguf",
        &["--preset", "mistral-7b", "--shrink", "16", "--layers", "1"],
    );
    synth(dir.path(), "tiny.gguf", &[]);
    let cfg = dir.path().join("m.toml");
    std::fs::write(
        &cfg,
        "[sweep]\nn_prompt = 8\nn_gen = 0\nrepetitions = 1\n\
         [[model]]\nname = \"m7\"\npath = \"m7.gguf\"\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n",
    )
    .unwrap();
    let v = support::run_json(&cfg);
    let p = &v["models"][0]["provenance"];
    assert_eq!(p["synthetic"], true);
    assert_eq!(p["preset"], "mistral-7b");
    assert_eq!(p["type"], "Q8_0");
    assert!(v["models"][1].get("provenance").is_none());
}
