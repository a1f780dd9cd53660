//! Quantization ladders and synthetic shapes on the real llama.cpp: the tiny model that
//! `tpsbench synth` writes is quantized, evaluated and compared; the architecture presets
//! are written shrunk and loaded. No download.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use tpsbench::config::quant_types::QuantType;
use tpsbench::engine::logits::EvalModel;
use tpsbench::engine::quantize::{QuantizeParams, quantize};
use tpsbench::gguf::presets::PRESETS;
use tpsbench::gguf::reader::read_header;
use tpsbench::ladder::eval::{chunks, reference_pass, variant_pass};

fn tpsbench() -> Command {
    Command::cargo_bin("tpsbench").unwrap()
}

fn synth(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    tpsbench()
        .arg("synth")
        .args(args)
        .arg("--output")
        .arg(&out)
        .assert()
        .success();
    out
}

fn quantize_to(input: &Path, out: &Path, t: &str, requant: bool) {
    let params = QuantizeParams {
        ftype: QuantType::parse(t).unwrap().ftype,
        allow_requantize: requant,
        n_threads: 2,
    };
    quantize(input, out, &params, &mut |_, _| {}).unwrap();
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

#[test]
fn quantizing_the_tiny_model_to_three_types_gives_loadable_files_of_decreasing_size() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth(dir.path(), "tiny.gguf", &[]);
    let mut sizes = Vec::new();
    for t in ["Q8_0", "Q4_K_M", "Q2_K"] {
        let out = dir.path().join(format!("tiny-{t}.gguf"));
        quantize_to(&base, &out, t, false);
        let h = read_header(&out).unwrap();
        assert_eq!(h.file_type(), Some(t), "general.file_type is set");
        let m = EvalModel::load(&out).unwrap();
        assert!(m.n_vocab() > 300);
        sizes.push(h.file_size);
    }
    assert!(sizes[0] > sizes[1] && sizes[1] > sizes[2], "{sizes:?}");
    // A quantized input is refused unless requantization is allowed.
    let again = dir.path().join("again.gguf");
    let params = QuantizeParams {
        ftype: 2,
        allow_requantize: false,
        n_threads: 1,
    };
    let q8 = dir.path().join("tiny-Q8_0.gguf");
    assert!(quantize(&q8, &again, &params, &mut |_, _| {}).is_err());
    quantize_to(&q8, &again, "Q4_0", true);
    assert_eq!(read_header(&again).unwrap().file_type(), Some("Q4_0"));
}

#[test]
fn the_reference_against_itself_has_zero_kld_and_a_lower_type_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth(dir.path(), "tiny.gguf", &[]);
    let q4 = dir.path().join("q4.gguf");
    quantize_to(&base, &q4, "Q2_K", false);
    let reference = EvalModel::load(&base).unwrap();
    let tokens = reference.tokenize(&eval_text(400), true).unwrap();
    let c = chunks(&tokens, 64, 3, reference.bos());
    assert_eq!(c.len(), 3);
    let (spill, self_acc) = reference_pass(&reference, &c, 2, dir.path(), &mut |_, _| {}).unwrap();
    let self_q = self_acc.finish("ref");
    assert_eq!(
        self_q.n_tokens,
        3 * 31,
        "n_ctx - 1 - n_ctx/2 tokens per chunk"
    );
    assert!(self_q.ppl > 1.0);

    // A second load of the same file, through the spill file: exactly the same figures.
    let same = EvalModel::load(&base).unwrap();
    let q = variant_pass(&same, &c, 2, &spill, &mut |_, _| {})
        .unwrap()
        .finish("ref");
    assert_eq!(q.kld_mean, 0.0);
    assert_eq!(q.kld_max, 0.0);
    assert_eq!(q.same_top_p, 1.0);
    assert_eq!(q.rms_dp, 0.0);
    assert_eq!(q.ln_ppl_ratio, 0.0);

    let low = EvalModel::load(&q4).unwrap();
    let q = variant_pass(&low, &c, 2, &spill, &mut |_, _| {})
        .unwrap()
        .finish("ref");
    assert!(q.kld_mean > 1e-4, "{q:?}");
    assert!(q.kld_max >= q.kld_p99 && q.kld_p99 >= q.kld_p90 && q.kld_p90 >= q.kld_median);
    assert!(q.same_top_p < 1.0 && q.rms_dp > 0.0, "{q:?}");
    assert_eq!(q.n_tokens, self_q.n_tokens);
    assert_eq!(q.ppl_ref, self_q.ppl);
}

#[test]
fn every_preset_shrunk_is_written_and_loaded_by_llama_cpp_with_a_working_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    for p in PRESETS {
        let f = synth(
            dir.path(),
            &format!("{p}.gguf"),
            &["--preset", p, "--shrink", "16", "--layers", "1"],
        );
        let h = read_header(&f).unwrap();
        assert_eq!(h.file_type(), Some("Q8_0"), "{p}");
        let m = EvalModel::load(&f).unwrap_or_else(|e| panic!("{p}: {e}"));
        let toks = m.tokenize("the quick brown fox", false).unwrap();
        assert!(!toks.is_empty(), "{p}");
        let text = m.detokenize(&toks).unwrap();
        assert!(text.contains("the quick brown fox"), "{p}: {text:?}");
    }
    // A mix goes through llama.cpp's quantizer; Qwen2's biases must survive it.
    let f = synth(
        dir.path(),
        "qwen-q4km.gguf",
        &[
            "--preset",
            "qwen2.5-7b",
            "--shrink",
            "16",
            "--layers",
            "2",
            "--type",
            "Q4_K_M",
        ],
    );
    let h = read_header(&f).unwrap();
    assert_eq!(h.file_type(), Some("Q4_K_M"));
    assert!(h.tensors.iter().any(|t| t.name == "blk.1.attn_k.bias"));
    EvalModel::load(&f).unwrap();
}

#[test]
fn direct_q4_0_blocks_get_the_tensor_types_llama_cpp_would_choose() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--preset", "llama-3-8b", "--shrink", "16", "--layers", "2"];
    let q8 = synth(dir.path(), "q8.gguf", &args);
    let via_llama = dir.path().join("via.gguf");
    quantize_to(&q8, &via_llama, "Q4_0", true);
    let mut direct_args = args.to_vec();
    direct_args.extend(["--type", "Q4_0"]);
    let direct = synth(dir.path(), "direct.gguf", &direct_args);
    let types = |p: &Path| {
        let mut v: Vec<(String, u32)> = read_header(p)
            .unwrap()
            .tensors
            .into_iter()
            .map(|t| (t.name, t.ggml_type))
            .collect();
        v.sort();
        v
    };
    assert_eq!(types(&direct), types(&via_llama));
    // The same bytes of tensor data (the metadata differs a little).
    let data = |p: &Path| -> u64 {
        read_header(p)
            .unwrap()
            .tensors
            .iter()
            .map(|t| t.n_bytes)
            .sum()
    };
    assert_eq!(data(&direct), data(&via_llama));
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
    let out = tpsbench()
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--output",
            "json",
            "--config",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["models"][0]["provenance"];
    assert_eq!(p["synthetic"], true);
    assert_eq!(p["preset"], "mistral-7b");
    assert_eq!(p["type"], "Q8_0");
    assert!(v["models"][1].get("provenance").is_none());
}
