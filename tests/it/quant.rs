//! Variants built as publishers build them, on the tiny model (256 wide, so every K- and
//! IQ-type applies): Q4_K_M with and without an importance matrix computed in process, with
//! attn_v and ffn_down overrides, with a template's tensor types; IQ types that need the
//! imatrix; and the in-process imatrix against llama.cpp's own llama-imatrix (built from the
//! pinned sources by `scripts/reference-tools --quant`), and llama-quantize and llama-imatrix
//! reading the imatrix tpsbench writes (SKIPPED without those tools unless
//! TPSBENCH_REQUIRE_LLAMA_SERVER is set, as scripts/test sets it).

use std::path::{Path, PathBuf};

use tpsbench::config::quant_types::QuantType;
use tpsbench::config::recipe::{Recipe, tensor_type};
use tpsbench::engine::LoadParams;
use tpsbench::engine::imatrix::{ComputeParams, Imatrix, compute};
use tpsbench::engine::quantize::{Overrides, QuantizeParams, overrides_for, quantize};
use tpsbench::gguf::reader::{Header, read_header};

use crate::support;

/// Ordinary words of the tiny vocabulary: about 600 tokens.
fn calibration_text(dir: &Path) -> PathBuf {
    let w = [
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was",
    ];
    let text: Vec<&str> = (0..600).map(|i| w[(i * 7 + i / 3) % w.len()]).collect();
    let p = dir.join("calib.txt");
    std::fs::write(&p, text.join(" ") + "\n").unwrap();
    p
}

fn imatrix_of(model: &Path, text: &Path) -> Imatrix {
    let p = ComputeParams {
        text: std::fs::read_to_string(text).unwrap(),
        dataset: text.display().to_string(),
        n_ctx: 64,
        n_chunks: None,
        n_threads: 2,
    };
    compute(model, &LoadParams::default(), &p, &mut |_, _| {}).unwrap()
}

fn build(
    base: &Path,
    out: &Path,
    t: &str,
    o: &Overrides,
) -> Result<Header, tpsbench::engine::EngineError> {
    let params = QuantizeParams {
        ftype: QuantType::parse_recipe(t, true).unwrap().ftype,
        allow_requantize: false,
        n_threads: 2,
    };
    quantize(base, out, &params, o, &mut |_, _| {})?;
    Ok(read_header(out).unwrap())
}

fn type_of(h: &Header, name: &str) -> u32 {
    h.tensors.iter().find(|t| t.name == name).unwrap().ggml_type
}

fn bytes_of(h: &Header, path: &Path, name: &str) -> Vec<u8> {
    let t = h.tensors.iter().find(|t| t.name == name).unwrap();
    let all = std::fs::read(path).unwrap();
    let start = (h.data_offset + t.offset) as usize;
    all[start..start + t.n_bytes as usize].to_vec()
}

const Q4_K: u32 = 12;
const Q6_K: u32 = 14;

#[test]
fn q4_k_m_is_built_with_and_without_an_imatrix_and_with_attn_v_and_ffn_down_at_q6_k() {
    let dir = tempfile::tempdir().unwrap();
    let base = support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let m = imatrix_of(&base, &calibration_text(dir.path()));
    assert_eq!(m.check_model(&read_header(&base).unwrap()), Ok(()));
    assert!(
        m.entries.contains_key("blk.1.ffn_down.weight"),
        "{:?}",
        m.entries.keys()
    );
    assert_eq!(m.chunk_size, 64);

    let plain_path = dir.path().join("plain.gguf");
    let plain = build(&base, &plain_path, "Q4_K_M", &Overrides::default()).unwrap();
    let imat_path = dir.path().join("imat.gguf");
    let with_imatrix = Overrides {
        imatrix: Some(&m),
        ..Overrides::default()
    };
    let imat = build(&base, &imat_path, "Q4_K_M", &with_imatrix).unwrap();
    // The same types, other rounding: the imatrix reached the quantizer.
    for t in &plain.tensors {
        assert_eq!(t.ggml_type, type_of(&imat, &t.name), "{}", t.name);
    }
    let q = "blk.0.attn_q.weight";
    assert_eq!(type_of(&plain, q), Q4_K);
    assert_ne!(
        bytes_of(&plain, &plain_path, q),
        bytes_of(&imat, &imat_path, q)
    );

    // Q4_K_M keeps layer 0's attn_v and ffn_down at Q4_K; the recipe raises both.
    assert_eq!(type_of(&plain, "blk.0.attn_v.weight"), Q4_K);
    let recipe = Recipe {
        tensor_types: vec![
            tensor_type("attn_v=Q6_K").unwrap(),
            tensor_type("ffn_down=Q6_K").unwrap(),
        ],
        output: Some(Q6_K),
        ..Recipe::default()
    };
    let o = overrides_for(&recipe, &plain).unwrap();
    let mixed_path = dir.path().join("mixed.gguf");
    let mixed = build(&base, &mixed_path, "Q4_K_M", &o).unwrap();
    for layer in 0..2 {
        for w in ["attn_v", "ffn_down"] {
            assert_eq!(
                type_of(&mixed, &format!("blk.{layer}.{w}.weight")),
                Q6_K,
                "{w}"
            );
        }
    }
    assert_eq!(type_of(&mixed, "output.weight"), Q6_K);
    assert_eq!(type_of(&mixed, q), Q4_K);

    // The mix copied from that file as a template, onto the base: the same types.
    let from_template = Recipe {
        template: Some(mixed_path.clone()),
        ..Recipe::default()
    };
    let o = overrides_for(&from_template, &read_header(&base).unwrap()).unwrap();
    let cloned = build(&base, &dir.path().join("cloned.gguf"), "Q4_K_M", &o).unwrap();
    for t in &mixed.tensors {
        assert_eq!(t.ggml_type, type_of(&cloned, &t.name), "{}", t.name);
    }
}

#[test]
fn iq_types_get_the_imatrix_and_iq3_xxs_is_refused_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let base = support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let m = imatrix_of(&base, &calibration_text(dir.path()));
    let out = dir.path().join("iq3.gguf");
    let e = build(&base, &out, "IQ3_XXS", &Overrides::default()).unwrap_err();
    assert!(e.to_string().contains("could not quantize"), "{e}");
    let with = Overrides {
        imatrix: Some(&m),
        ..Overrides::default()
    };
    let has = |h: &Header, t: u32| h.tensors.iter().any(|x| x.ggml_type == t);
    assert!(
        has(&build(&base, &out, "IQ3_XXS", &with).unwrap(), 18),
        "IQ3_XXS"
    );
    let iq4 = dir.path().join("iq4.gguf");
    assert!(
        has(&build(&base, &iq4, "IQ4_XS", &with).unwrap(), 23),
        "IQ4_XS"
    );
}

#[test]
fn a_pattern_that_matches_no_tensor_and_an_imatrix_of_another_model_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let h = read_header(&base).unwrap();
    let recipe = Recipe {
        tensor_types: vec![tensor_type("attn_zz=Q6_K").unwrap()],
        ..Recipe::default()
    };
    let e = overrides_for(&recipe, &h).unwrap_err().to_string();
    assert_eq!(
        e,
        "tensor_types pattern \"attn_zz\" matches no tensor of the model"
    );
    let m = imatrix_of(&base, &calibration_text(dir.path()));
    let moe = read_header(&support::synth(&["--preset", "tiny-moe"])).unwrap();
    let e = m.check_model(&moe).unwrap_err().to_string();
    assert!(e.contains("an imatrix of another model"), "{e}");
}

/// A tool of the pinned sources (llama-imatrix, llama-quantize), when built.
fn llama_tool(tool: &str, test: &str) -> Option<PathBuf> {
    let found = tpsbench::engine::endpoint::launch::pinned_llama_server()
        .map(|p| p.with_file_name(tool))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("TPSBENCH_REQUIRE_LLAMA_SERVER").as_deref() != Ok("1"),
            "{test}: no {tool} (run scripts/reference-tools --quant)"
        );
        eprintln!("SKIPPED {test}: no {tool} (run scripts/reference-tools --quant)");
    }
    found
}

fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    let all =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?}: {all}");
    all
}

#[test]
fn the_in_process_imatrix_has_llama_imatrix_entries_equal_within_float_rounding() {
    let test = "the_in_process_imatrix_has_llama_imatrix_entries";
    let Some(tool) = llama_tool("llama-imatrix", test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let text = calibration_text(dir.path());
    let out = dir.path().join("ref.gguf");
    let run = std::process::Command::new(&tool)
        .args(["-m", &base.to_string_lossy(), "-f", &text.to_string_lossy()])
        .args([
            "-c",
            "64",
            "-t",
            "2",
            "--no-ppl",
            "-o",
            &out.to_string_lossy(),
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let theirs = Imatrix::read(&out).unwrap();
    let ours = imatrix_of(&base, &text);
    let names = |m: &Imatrix| m.entries.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    assert_eq!(
        (ours.chunk_count, ours.chunk_size),
        (theirs.chunk_count, theirs.chunk_size)
    );
    for (name, e) in &theirs.entries {
        let o = &ours.entries[name];
        assert_eq!(o.counts, e.counts, "{name}");
        for (a, b) in o.sums.iter().zip(&e.sums) {
            assert!(
                (a - b).abs() <= 2e-3 * b.abs().max(1e-3),
                "{name}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn llama_quantize_quantizes_with_the_imatrix_tpsbench_writes_and_llama_imatrix_reads_it_back() {
    let test = "llama_quantize_quantizes_with_the_imatrix_tpsbench_writes";
    let (Some(quantize), Some(imatrix)) = (
        llama_tool("llama-quantize", test),
        llama_tool("llama-imatrix", test),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    let ours = imatrix_of(&base, &calibration_text(dir.path()));
    let written = dir.path().join("ours.gguf");
    ours.write(&written).unwrap();

    // llama-quantize rounds as tpsbench's quantizer does with the same imatrix.
    let theirs_path = dir.path().join("theirs-q4_k_m.gguf");
    let log = run_ok(
        std::process::Command::new(&quantize)
            .arg("--imatrix")
            .args([&written, &base, &theirs_path])
            .args(["Q4_K_M", "2"]),
    );
    let loaded = format!("loaded {} importance matrix entries", ours.entries.len());
    assert!(log.contains(&loaded), "{log}");
    let with = Overrides {
        imatrix: Some(&ours),
        ..Overrides::default()
    };
    let ours_path = dir.path().join("ours-q4_k_m.gguf");
    let ours_q = build(&base, &ours_path, "Q4_K_M", &with).unwrap();
    let theirs_q = read_header(&theirs_path).unwrap();
    for t in &ours_q.tensors {
        let n = &t.name;
        assert_eq!(
            bytes_of(&ours_q, &ours_path, n),
            bytes_of(&theirs_q, &theirs_path, n),
            "{n}"
        );
    }

    // llama-imatrix reads it and writes back the same entries, counts and metadata.
    let back = dir.path().join("back.gguf");
    run_ok(
        std::process::Command::new(&imatrix)
            .arg("-m")
            .args([&base])
            .arg("--in-file")
            .args([&written])
            .arg("-o")
            .args([&back]),
    );
    let back = Imatrix::read(&back).unwrap();
    assert_eq!(back.entries, ours.entries);
    assert_eq!(
        (&back.datasets, back.chunk_count, back.chunk_size),
        (&ours.datasets, ours.chunk_count, ours.chunk_size)
    );
}

#[test]
fn a_ladder_builds_recipe_variants_and_records_their_recipes() {
    let dir = tempfile::tempdir().unwrap();
    support::synth_to(&dir.path().join("tiny.gguf"), &[]);
    calibration_text(dir.path());
    let cfg = dir.path().join("ladder.toml");
    std::fs::write(
        &cfg,
        "[sweep]\nn_prompt = 16\nn_gen = 4\nrepetitions = 1\nn_threads = 1\n\n\
         [[ladder]]\nname = \"tiny\"\nbase = \"tiny.gguf\"\ncache_dir = \"cache\"\n\
         types = [\"Q8_0\",\n\
           { name = \"Q4_K_M-imat\", type = \"Q4_K_M\", imatrix = { text = \"calib.txt\", ctx = 64 } },\n\
           { name = \"Q4_K_M-v6\", type = \"Q4_K_M\", tensor_types = [\"attn_v=Q6_K\", \"ffn_down=Q6_K\"] }]\n\
         [ladder.eval]\ntext = \"calib.txt\"\nctx = 64\nchunks = 2\n",
    )
    .unwrap();
    support::tpsbench()
        .args(["ladder", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.path().join("results"))
        .assert()
        .success();
    let v = support::read_json(&support::only_result(&dir.path().join("results")));
    let models = v["models"].as_array().unwrap();
    let m = |name: &str| models.iter().find(|m| m["name"] == name).unwrap();
    let imat = &m("tiny-Q4_K_M-imat")["provenance"]["recipe"];
    assert_eq!(imat["name"], "Q4_K_M-imat");
    assert_eq!(imat["imatrix_text"], "calib.txt");
    let cached: Vec<_> = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("-imatrix-"))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let sha = std::process::Command::new("sha256sum")
        .arg(&cached[0])
        .output()
        .unwrap();
    let sha = String::from_utf8_lossy(&sha.stdout);
    assert_eq!(imat["imatrix_sha256"].as_str(), sha.split(' ').next());
    let v6 = m("tiny-Q4_K_M-v6");
    assert_eq!(
        v6["provenance"]["recipe"]["overrides"],
        serde_json::json!(["attn_v=Q6_K", "ffn_down=Q6_K"])
    );
    assert!(v6["quality"]["kld_mean"].as_f64().is_some(), "{v6}");
    let h = read_header(Path::new(v6["path"].as_str().unwrap())).unwrap();
    assert_eq!(type_of(&h, "blk.0.attn_v.weight"), Q6_K);
    assert!(m("tiny-Q8_0")["provenance"].get("recipe").is_none());
}
