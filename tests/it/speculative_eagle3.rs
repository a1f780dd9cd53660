//! draft-eagle3 (issue 45) on real llama.cpp: the `tiny-eagle3` synthetic preset (an Eagle3
//! draft made for the `tiny-moe` preset: its width, three of its layers, its vocabulary)
//! loads as llama.cpp's eagle3 architecture and drafts from the target's extracted hidden
//! states. Its weights are random, so what is accepted means nothing and the record says so;
//! that the output equals plain decoding's and that drafts are made and counted is what
//! these tests hold, and that a draft which does not fit its target is one recorded line
//! (llama.cpp itself would abort). The drafted and accepted counts are llama.cpp's own
//! llama-speculative-simple's with the same draft (skipped, saying so, without that tool, as
//! speculative::draft_simple is).

use std::path::PathBuf;

use serde_json::Value;

use crate::speculative::n;
use crate::support::{run_json_any, synth_to, tpsbench};

const PROMPTS: &str = "The quick brown fox jumps over the lazy dog and runs into the woods\n\
                       Once upon a time there was a robot who wanted to learn to paint\n";

/// A dir with `moe.gguf` (tiny-moe, the target), `eagle3.gguf` (tiny-eagle3, its draft),
/// `models` as extra `[[model]]` tables, the prompts and a config whose [speculative] table
/// is `spec`.
fn eagle3_config(models: &str, spec: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    synth_to(&dir.path().join("moe.gguf"), &["--preset", "tiny-moe"]);
    synth_to(
        &dir.path().join("eagle3.gguf"),
        &["--preset", "tiny-eagle3"],
    );
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    let path = dir.path().join("models.toml");
    std::fs::write(
        &path,
        format!(
            "[sweep]\nn_prompt = [0]\nn_gen = [0]\nn_threads = [2]\n\n\
             [[model]]\nname = \"moe\"\npath = \"moe.gguf\"\n\n{models}\
             [speculative]\ndataset = \"prompts.txt\"\n{spec}"
        ),
    )
    .unwrap();
    (dir, path)
}

/// The speculative test records whose id contains `part`.
fn tests_with<'a>(v: &'a Value, part: &str) -> Vec<&'a Value> {
    v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "spec" && t["id"].as_str().unwrap().contains(part))
        .collect()
}

#[test]
fn draft_eagle3_with_the_synthetic_draft_decodes_as_plain_decoding_does_and_counts_its_drafts() {
    let (dir, cfg) = eagle3_config(
        "",
        "n_prompts = 2\nn_gen = 12\nrounds = 2\ndrafters = [\"draft-eagle3\"]\n\
         draft = [\"eagle3.gguf\"]\ndraft_max = [2, 3]\n",
    );
    let (out, v) = run_json_any(&cfg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tests = tests_with(&v, "draft-eagle3");
    assert_eq!(tests.len(), 2, "K = 2 and K = 3");
    let h = tpsbench::gguf::reader::read_header(&dir.path().join("eagle3.gguf")).unwrap();
    let weights: u64 = h.tensors.iter().map(|t| t.n_bytes).sum();
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        let k = n(t, "draft_max");
        // Greedy speculative decoding reproduces plain decoding, whatever the drafts were.
        assert_eq!(n(t, "mismatches"), 0, "{t}");
        assert!(n(t, "compared") >= 4, "2 prompts × 2 rounds: {t}");
        // The Eagle3 head drafted (K at most per step), and what the target kept of it is
        // counted, position by position.
        let (drafted, accepted) = (n(t, "n_drafted"), n(t, "n_accepted"));
        assert!(drafted > 0, "{t}");
        assert!(accepted <= drafted, "{t}");
        assert!(drafted <= k * n(t, "n_drafts"), "{t}");
        let by_position = t["speculative"]["by_position"].as_array().unwrap();
        assert_eq!(by_position.len() as u64, k);
        let sum = |f: &str| -> u64 { by_position.iter().map(|p| p[f].as_u64().unwrap()).sum() };
        assert_eq!((sum("drafted"), sum("accepted")), (drafted, accepted));
        assert!(t["speculative"]["draft_s"].as_f64().unwrap() > 0.0, "{t}");
        // The drafter holds the draft's weights (d2t and fc included) and its context.
        assert!(
            n(t, "draft_bytes") > weights,
            "weights {weights} plus the context: {t}"
        );
        assert_eq!(t["speculative"]["draft"], "eagle3.gguf");
        // Both files are tpsbench synth's: the record says the acceptance means nothing.
        let notes: Vec<&str> = t["speculative"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            notes,
            [
                "the target and the draft have random weights (tpsbench synth): acceptance \
                 means nothing; the cost is real"
            ],
            "{t}"
        );
    }
}

#[test]
fn an_eagle3_draft_that_does_not_fit_its_target_is_one_recorded_line_and_the_sweep_goes_on() {
    // Against tiny (llama, 2 layers: the draft reads layers 1 to 3), tiny-mtp (glm4moe,
    // whose graph hands out no layer inputs) and with a draft that is no Eagle3 file.
    let dir_models = "[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
                      [[model]]\nname = \"mtp\"\npath = \"mtp.gguf\"\n\n";
    let (dir, cfg) = eagle3_config(
        dir_models,
        "n_prompts = 1\nn_gen = 8\nrounds = 2\ndrafters = [\"draft-eagle3\", \"ngram-simple\"]\n\
         draft = [\"eagle3.gguf\", \"moe.gguf\"]\ndraft_max = [2]\n",
    );
    synth_to(&dir.path().join("tiny.gguf"), &[]);
    synth_to(&dir.path().join("mtp.gguf"), &["--preset", "tiny-mtp"]);
    let (out, v) = run_json_any(&cfg);
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed tests: exit 1; {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let error = |model: &str, draft: &str| -> String {
        let t = tests_with(&v, "draft-eagle3")
            .into_iter()
            .find(|t| {
                let id = t["id"].as_str().unwrap();
                id.starts_with(&format!("{model}/")) && id.contains(draft)
            })
            .unwrap_or_else(|| panic!("{model} with {draft}: {v}"));
        if t["status"] == "ok" {
            return String::new();
        }
        let e = t["error"].as_str().unwrap().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    };
    assert_eq!(
        error("moe", "eagle3.gguf"),
        "",
        "the draft's own target runs"
    );
    let e = error("tiny", "eagle3.gguf");
    assert!(
        e.contains("reads the target's layer 2, and the target has 2 layers"),
        "{e}"
    );
    let e = error("mtp", "eagle3.gguf");
    assert!(e.contains("glm4moe graph does not hand them out"), "{e}");
    let e = error("moe", "moe.gguf");
    assert!(
        e.contains("needs an Eagle3 draft GGUF") && e.contains("the draft is qwen3moe"),
        "{e}"
    );
    // The n-gram drafter on every model ran: the refusals stopped nothing else.
    let ngram = tests_with(&v, "ngram-simple");
    assert_eq!(ngram.len(), 3, "{v}");
    assert!(ngram.iter().all(|t| t["status"] == "ok"), "{ngram:?}");
}

#[test]
fn the_eagle3_preset_refuses_options_its_target_fixes_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.gguf");
    for (args, says) in [
        (
            &["--shrink", "2"][..],
            "tiny-eagle3: a draft made for tiny-moe: --shrink and --layers do not apply",
        ),
        (&["--layers", "1"][..], "--shrink and --layers do not apply"),
        (
            &["--type", "Q4_K_M"][..],
            "tiny-eagle3: Q4_K_M is not written directly at rows of 64",
        ),
    ] {
        let o = tpsbench()
            .args(["synth", "--preset", "tiny-eagle3", "--output"])
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists(), "nothing written");
    }
    // Q8_0 is written directly, block by block.
    let o = tpsbench()
        .args([
            "synth",
            "--preset",
            "tiny-eagle3",
            "--type",
            "Q8_0",
            "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h = tpsbench::gguf::reader::read_header(&out).unwrap();
    assert_eq!(h.architecture(), Some("eagle3"));
    assert_eq!(h.file_type(), Some("Q8_0"));
}

#[test]
fn draft_eagle3_drafts_and_accepts_what_llama_speculative_simple_does() {
    let Some(tool) = crate::speculative::reference_tool("draft_eagle3_counts") else {
        return;
    };
    let prompt = "The quick brown fox jumps over the lazy dog and runs into the woods";
    let (dir, cfg) = eagle3_config(
        "",
        "n_prompts = 1\nn_gen = 12\nrounds = 2\ndrafters = [\"draft-eagle3\"]\n\
         draft = [\"eagle3.gguf\"]\ndraft_max = [2, 3]\n",
    );
    std::fs::write(dir.path().join("prompts.txt"), format!("{prompt}\n")).unwrap();
    let v = crate::support::run_json(&cfg);
    let tests = tests_with(&v, "draft-eagle3");
    assert_eq!(tests.len(), 2);
    for t in tests {
        let k = n(t, "draft_max");
        let rounds = t["speculative"]["rounds"].as_array().unwrap().len() as u64;
        let log = crate::speculative::reference_log(
            &tool,
            (
                &dir.path().join("moe.gguf"),
                &dir.path().join("eagle3.gguf"),
            ),
            ("draft-eagle3", k),
            12,
            prompt,
        );
        crate::speculative::same_counts_as_the_reference(t, &log, rounds, k);
    }
}
