//! draft-mtp (issue 45) on real llama.cpp: the `tiny-mtp` synthetic preset (GLM-4.5-Air's
//! glm4moe architecture with its nextn layer, at test size) loads with its MTP layers and
//! drafts through llama.cpp's MTP context. Its weights are random, so what is accepted
//! means nothing and the record says so; that the output equals plain decoding's and that
//! drafts are made and counted is what these tests hold.

use std::path::PathBuf;

use serde_json::Value;

use crate::speculative::n;
use crate::support::{run_json_any, synth_to};

const PROMPTS: &str = "The quick brown fox jumps over the lazy dog and runs into the woods\n\
                       Once upon a time there was a robot who wanted to learn to paint\n";

/// A dir with `mtp.gguf` (the tiny-mtp preset), the prompts and a config of `sweep` and
/// `spec` (its [speculative] table) over that one model.
fn mtp_config(sweep: &str, spec: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    synth_to(&dir.path().join("mtp.gguf"), &["--preset", "tiny-mtp"]);
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    let path = dir.path().join("models.toml");
    std::fs::write(
        &path,
        format!(
            "[sweep]\n{sweep}n_threads = [2]\n\n[[model]]\nname = \"mtp\"\npath = \"mtp.gguf\"\n\n\
             [speculative]\ndataset = \"prompts.txt\"\n{spec}"
        ),
    )
    .unwrap();
    (dir, path)
}

/// The test records whose id contains `part`.
fn tests_with<'a>(v: &'a Value, part: &str) -> Vec<&'a Value> {
    v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["id"].as_str().unwrap().contains(part))
        .collect()
}

fn notes(t: &Value) -> Vec<&str> {
    t["speculative"]["notes"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn draft_mtp_on_the_synthetic_mtp_preset_decodes_as_plain_decoding_does_and_counts_its_drafts() {
    let (dir, cfg) = mtp_config(
        "n_prompt = [0]\nn_gen = [0]\n",
        "n_prompts = 2\nn_gen = 12\nrounds = 2\ndrafters = [\"draft-mtp\"]\ndraft_max = [2]\n",
    );
    let (out, v) = run_json_any(&cfg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tests = tests_with(&v, "draft-mtp");
    assert_eq!(tests.len(), 1);
    let t = tests[0];
    assert_eq!(t["status"], "ok", "{t}");
    // Greedy speculative decoding reproduces plain decoding, whatever the drafts were.
    assert_eq!(n(t, "mismatches"), 0, "{t}");
    assert!(n(t, "compared") >= 4, "2 prompts × 2 rounds: {t}");
    // The MTP head drafted at every step it was asked to (K = 2, at most 2 per step),
    // and what the target kept of it is counted, position by position.
    let (drafted, accepted) = (n(t, "n_drafted"), n(t, "n_accepted"));
    assert!(drafted > 0, "{t}");
    assert!(accepted <= drafted, "{t}");
    assert!(drafted <= 2 * n(t, "n_drafts"), "{t}");
    let by_position = t["speculative"]["by_position"].as_array().unwrap();
    assert_eq!(by_position.len(), 2);
    let sum = |k: &str| -> u64 { by_position.iter().map(|p| p[k].as_u64().unwrap()).sum() };
    assert_eq!((sum("drafted"), sum("accepted")), (drafted, accepted));
    // Drafting cost time of its own (the MTP head's decodes).
    assert!(t["speculative"]["draft_s"].as_f64().unwrap() > 0.0, "{t}");
    // The drafter's memory holds the MTP layer's weights, inside the target's file: every
    // tensor of the block that has the nextn ones, summed here from the header.
    let h = tpsbench::gguf::reader::read_header(&dir.path().join("mtp.gguf")).unwrap();
    let nextn = h
        .tensors
        .iter()
        .find(|t| t.name.contains(".nextn."))
        .map(|t| t.name.split('.').nth(1).unwrap().to_string())
        .expect("tiny-mtp has a nextn layer");
    let layer: u64 = h
        .tensors
        .iter()
        .filter(|t| t.name.starts_with(&format!("blk.{nextn}.")))
        .map(|t| t.n_bytes)
        .sum();
    assert!(layer > 0);
    assert!(
        n(t, "draft_bytes") > layer,
        "weights {layer} plus the MTP context: {t}"
    );
}

#[test]
fn the_record_says_acceptance_means_nothing_on_random_weights_and_the_other_tests_of_the_model_still_run()
 {
    // A decode test and an n-gram drafter on the same model: their load leaves the MTP
    // layers out (llama.cpp's default), draft-mtp's loads them.
    let (_dir, cfg) = mtp_config(
        "n_prompt = [0]\nn_gen = [4]\n",
        "n_prompts = 1\nn_gen = 8\nrounds = 2\ndrafters = [\"ngram-simple\", \"draft-mtp\"]\n\
         draft_max = [3]\n",
    );
    let (out, v) = run_json_any(&cfg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = tests_with(&v, "mtp/");
    assert_eq!(all.len(), 3, "tg4, ngram-simple and draft-mtp");
    assert!(all.iter().all(|t| t["status"] == "ok"), "{all:?}");
    let mtp = tests_with(&v, "draft-mtp")[0];
    assert_eq!(
        notes(mtp),
        [
            "the target and its MTP layers have random weights (tpsbench synth): acceptance \
          means nothing; the cost is real"
        ]
    );
    let ngram = tests_with(&v, "ngram-simple")[0];
    assert!(
        notes(ngram)
            .iter()
            .any(|n| n.starts_with("the target has random weights (tpsbench synth)")),
        "{ngram}"
    );
}
