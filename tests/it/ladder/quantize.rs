//! Engine-level tests on the tiny model: quantizing it, its KLD against itself and a lower
//! type, the shrunk architecture presets, and the tensor types of direct Q4_0 blocks.

use super::*;
use tpsbench::engine::ServingModel;

/// The model on the CPU, as the tests' machines run it.
fn load(path: &Path) -> Result<LlamaModel, tpsbench::engine::EngineError> {
    LlamaModel::load(path, &LoadParams::default())
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
        let m = load(&out).unwrap();
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
    assert!(quantize(&q8, &again, &params, &Default::default(), &mut |_, _| {}).is_err());
    quantize_to(&q8, &again, "Q4_0", true);
    assert_eq!(read_header(&again).unwrap().file_type(), Some("Q4_0"));
}

#[test]
fn the_reference_against_its_stored_rows_is_near_zero_kld_and_a_lower_type_diverges() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth(dir.path(), "tiny.gguf", &[]);
    let q4 = dir.path().join("q4.gguf");
    quantize_to(&base, &q4, "Q2_K", false);
    let reference = load(&base).unwrap();
    let tokens = reference.tokenize(&eval_text(400), true, false).unwrap();
    let tokens = whole_chunks(&tokens, 64, 3);
    assert_eq!(tokens.len(), 3 * 64);
    let path = dir.path().join("ref.logits");
    reference_pass(&reference, tokens, 64, 2, &path, &mut |_, _| {}).unwrap();
    let store = BaseFile::open(&path).unwrap();
    assert_eq!(store.n_vocab, reference.n_vocab());
    let self_q = stored_pass(&store).unwrap().finish("ref");
    assert_eq!(
        self_q.n_tokens,
        3 * 31,
        "n_ctx - 1 - n_ctx/2 tokens per chunk"
    );
    assert!(self_q.ppl > 1.0 && self_q.kld_mean == 0.0 && self_q.same_top_p == 1.0);

    // A second load of the same file against the 16-bit rows: KLD within their rounding.
    let same = load(&base).unwrap();
    let q = variant_pass(&same, &store, 2, &mut |_, _| {})
        .unwrap()
        .finish("ref");
    assert!(q.kld_mean.abs() < 1e-4 && q.kld_max < 1e-3, "{q:?}");
    assert_eq!(q.same_top_p, 1.0);
    assert!(q.ln_ppl_ratio.abs() < 1e-4, "{q:?}");

    let low = load(&q4).unwrap();
    let q = variant_pass(&low, &store, 2, &mut |_, _| {})
        .unwrap()
        .finish("ref");
    assert!(q.kld_mean > 1e-4, "{q:?}");
    let k = q.kld_percentiles.unwrap();
    assert!(k.max >= k.p99_9 && k.p99_9 >= q.kld_p99 && q.kld_p99 >= q.kld_p90);
    assert!(q.kld_p90 >= q.kld_median && q.kld_median >= k.p10 && k.p10 >= k.min);
    assert!(q.same_top_p < 1.0 && q.rms_dp > 0.0, "{q:?}");
    assert_eq!(q.n_tokens, self_q.n_tokens);
    assert!((q.ppl_ref - self_q.ppl).abs() < 1e-9);
}

#[test]
fn every_preset_shrunk_is_written_and_loaded_by_llama_cpp_with_a_working_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    for p in presets() {
        let f = synth(
            dir.path(),
            &format!("{p}.gguf"),
            &["--preset", p, "--shrink", "16", "--layers", "1"],
        );
        let h = read_header(&f).unwrap();
        // tiny-moe and tiny-mtp are for tests and stay F32 by default; the published shapes
        // are Q8_0.
        let want = if p.starts_with("tiny-") {
            "F32"
        } else {
            "Q8_0"
        };
        assert_eq!(h.file_type(), Some(want), "{p}");
        let m = load(&f).unwrap_or_else(|e| panic!("{p}: {e}"));
        let toks = m.tokenize("the quick brown fox", false, false).unwrap();
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
    load(&f).unwrap();
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

#[test]
fn a_quality_pass_on_a_file_with_a_broken_header_fails_with_the_validators_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = synth(dir.path(), "tiny.gguf", &[]);
    // The header cut short: llama.cpp must not see it.
    let broken = dir.path().join("broken.gguf");
    let bytes = std::fs::read(&base).unwrap();
    std::fs::write(&broken, &bytes[..200]).unwrap();
    let why = read_header(&broken).unwrap_err();
    let want = format!("{}: {why}", broken.display());

    let cfg = ladder_config(dir.path(), "tiny.gguf", r#"["Q8_0", "Q4_0"]"#, "");
    let src = std::fs::read_to_string(&cfg).unwrap();
    let config = tpsbench::config::parse(&cfg, &src, 1).unwrap();
    let l = &config.ladders[0];
    let rep = Reporter::new(true);
    let Err(e) = quality::reference(l, &broken, 1, &rep) else {
        panic!("the reference pass loaded a broken file");
    };
    let e = e.to_string();
    assert_eq!(e, want);
    assert!(!e.contains('\n'), "{e}");
    // The same refusal as the timed tests' load.
    let Err(e) = LlamaModel::load(&broken, &LoadParams::default()) else {
        panic!("loaded a broken file");
    };
    assert_eq!(e.to_string(), want);
}

#[test]
fn the_ladders_split_mode_reaches_the_quality_load_so_a_cpu_only_build_refuses_tensor_split() {
    tpsbench::engine::llama::ensure_init().unwrap();
    if tpsbench::engine::llama::devices()
        .iter()
        .any(|d| d.kind != tpsbench::engine::DeviceKind::Cpu)
    {
        eprintln!("SKIPPED: this build sees an accelerator, where a tensor split may load");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    synth(dir.path(), "tiny.gguf", &[]);
    let cfg = ladder_config(
        dir.path(),
        "tiny.gguf",
        r#"["F32", "Q8_0"]"#,
        "[ladder.sweep]\nsplit_mode = \"tensor\"\n",
    );
    let (_, v) = support::run_json_any(&cfg);
    let quality: Vec<&Value> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "quality")
        .collect();
    assert_eq!(quality.len(), 2, "{v}");
    for t in quality {
        assert_eq!(t["status"], "failed", "{t}");
        let e = t["error"].as_str().unwrap();
        assert!(
            e.contains("LLAMA_SPLIT_MODE_TENSOR needs >= 1 devices"),
            "{e}"
        );
    }
}
