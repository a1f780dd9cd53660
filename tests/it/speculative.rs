//! Speculative tests (issue 45) on real llama.cpp with tiny synthetic models: a draft equal
//! to the target, n-gram drafting, refusals, bad settings, and the drafted and accepted
//! counts against llama.cpp's own llama-speculative-simple (built from the pinned sources by
//! `scripts/reference-tools --speculative`; the test prints SKIPPED without it unless
//! TPSBENCH_REQUIRE_LLAMA_SERVER=1, which scripts/test sets after building it).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{run_json_any, synth_to, tiny_with, tpsbench};

const PROMPTS: &str = "The quick brown fox jumps over the lazy dog and runs into the woods\n\
                       Once upon a time there was a robot who wanted to learn to paint\n";

/// A config with the tiny model as target and `spec` as its [speculative] table, the prompts
/// beside it; the dir holds both.
fn spec_config(spec: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = tiny_with(&format!(
        "[sweep]\nn_prompt = [0]\nn_gen = [0]\nn_threads = [2]\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n[speculative]\n{spec}"
    ));
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    (dir, path)
}

fn spec_tests(v: &Value) -> Vec<&Value> {
    v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "spec")
        .collect()
}

/// A count of a speculative test's record (`speculative.KEY`), which must be there.
pub(crate) fn n(v: &Value, key: &str) -> u64 {
    v["speculative"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: {v}"))
}

#[test]
fn a_draft_identical_to_the_target_accepts_every_drafted_token_and_the_output_is_identical() {
    let (_dir, cfg) = spec_config(
        "dataset = \"prompts.txt\"\nn_prompts = 2\nn_gen = 24\nrounds = 2\n\
         drafters = [\"draft-simple\"]\ndraft = [\"tiny.gguf\"]\ndraft_max = [2, 4]\n",
    );
    let (out, v) = run_json_any(&cfg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tests = spec_tests(&v);
    assert_eq!(tests.len(), 2, "K = 2 and K = 4");
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        let (drafted, accepted) = (n(t, "n_drafted"), n(t, "n_accepted"));
        assert!(drafted > 0, "{t}");
        assert_eq!(
            accepted, drafted,
            "every drafted token accepted: {}",
            t["id"]
        );
        for p in t["speculative"]["by_position"].as_array().unwrap() {
            assert_eq!(p["accepted"], p["drafted"], "at every position: {p}");
        }
        assert_eq!(n(t, "mismatches"), 0);
        assert_eq!(t["speculative"]["acceptance_rate"], 1.0);
        let k = t["speculative"]["draft_max"].as_f64().unwrap();
        let len = t["speculative"]["acceptance_length"].as_f64().unwrap();
        assert!(len > 1.0 && len <= k + 1.0, "length {len} for K {k}");
        let sp = &t["speculative"]["speedup"];
        assert!(sp["lo"].as_f64().unwrap() <= sp["ratio"].as_f64().unwrap());
        assert_eq!(sp["level"], 0.95);
    }
}

#[test]
fn ngram_drafting_on_a_repetitive_prompt_accepts_most_drafted_tokens() {
    // A random-weight model falls into a loop under greedy decoding: once it repeats itself,
    // n-gram lookup over the prompt and the output drafts what comes next. (Its near-uniform
    // logits also make batched verification flip near-ties, llama.cpp's own behaviour: the
    // output comparison is the identical-draft test's, not this one's.)
    let (dir, cfg) = spec_config(
        "dataset = \"loop.txt\"\nn_prompts = 1\nn_gen = 96\nrounds = 2\n\
         drafters = [\"ngram-simple\", \"ngram-mod\"]\ndraft_max = [4]\n",
    );
    let line = "one two three four five six seven eight nine ten ".repeat(12);
    std::fs::write(dir.path().join("loop.txt"), format!("{line}\n")).unwrap();
    let v = crate::support::run_json(&cfg);
    let tests = spec_tests(&v);
    assert_eq!(tests.len(), 2);
    let mut best = 0.0f64;
    for t in &tests {
        assert_eq!(t["status"], "ok", "{t}");
        let d = n(t, "n_drafted");
        if d > 0 {
            best = best.max(n(t, "n_accepted") as f64 / d as f64);
        }
    }
    assert!(
        best > 0.5,
        "an n-gram drafter accepted {best} of its drafts"
    );
}

#[test]
fn an_incompatible_draft_is_refused_and_the_sweep_goes_on() {
    let (dir, cfg) = spec_config(
        "dataset = \"prompts.txt\"\nn_prompts = 1\nn_gen = 8\nrounds = 2\n\
         drafters = [\"draft-simple\", \"ngram-simple\"]\ndraft = [\"other.gguf\"]\n",
    );
    // Another vocabulary: llama-3-8b's shapes divided by 64.
    synth_to(
        &dir.path().join("other.gguf"),
        &[
            "--preset",
            "llama-3-8b",
            "--shrink",
            "64",
            "--layers",
            "1",
            "--type",
            "F16",
        ],
    );
    let (out, v) = run_json_any(&cfg);
    assert_eq!(out.status.code(), Some(1), "a failed test: exit 1");
    let tests = spec_tests(&v);
    let draft = tests
        .iter()
        .find(|t| t["id"].as_str().unwrap().contains("draft-simple"))
        .unwrap();
    assert_eq!(draft["status"], "failed");
    let e = draft["error"].as_str().unwrap();
    assert!(e.contains("compatible") && !e.contains('\n'), "{e}");
    let ngram = tests
        .iter()
        .find(|t| t["id"].as_str().unwrap().contains("ngram"))
        .unwrap();
    assert_eq!(ngram["status"], "ok", "the sweep went on: {ngram}");
}

#[test]
fn draft_mtp_on_a_model_without_nextn_layers_is_a_recorded_failure() {
    let (_dir, cfg) = spec_config(
        "dataset = \"prompts.txt\"\nn_prompts = 1\nn_gen = 8\nrounds = 2\n\
         drafters = [\"draft-mtp\"]\n",
    );
    let (out, v) = run_json_any(&cfg);
    assert_eq!(out.status.code(), Some(1));
    let t = spec_tests(&v)[0];
    let e = t["error"].as_str().unwrap();
    assert!(e.contains("nextn") && e.contains("has none"), "{e}");
}

#[test]
fn bad_speculative_settings_are_one_line_and_exit_2() {
    let cases: &[(&str, &str)] = &[
        (
            "dataset = \"prompts.txt\"\ndraft_max = [0]\ndrafters = [\"ngram-mod\"]\n",
            "draft_max",
        ),
        (
            "dataset = \"prompts.txt\"\ndrafters = [\"draft-eagle\"]\n",
            "did you mean \"draft-eagle3\"",
        ),
        (
            "dataset = \"prompts.txt\"\ndrafters = [\"draft-simple\"]\n",
            "draft model",
        ),
        ("drafters = [\"ngram-mod\"]\n", "real text"),
        (
            "dataset = \"none.txt\"\ndrafters = [\"ngram-mod\"]\n",
            "none.txt",
        ),
        (
            "dataset = \"prompts.txt\"\ndraft = [\"Q2_K\"]\n",
            "no [[ladder]] builds it",
        ),
        ("dataset = \"prompts.txt\"\nk = 4\n", "unknown"),
    ];
    for (spec, says) in cases {
        let (_dir, cfg) = spec_config(spec);
        let out = tpsbench()
            .args(["run", "--no-save", "--quiet", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(says), "{spec}: expected {says:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// llama-speculative-simple of the pinned sources, when built (speculative_eagle3 too).
pub(crate) fn reference_tool(test: &str) -> Option<PathBuf> {
    let found = tpsbench::engine::endpoint::launch::pinned_llama_server()
        .map(|p| p.with_file_name("llama-speculative-simple"))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("TPSBENCH_REQUIRE_LLAMA_SERVER").as_deref() != Ok("1"),
            "{test}: no llama-speculative-simple (run scripts/reference-tools --speculative)"
        );
        eprintln!(
            "SKIPPED {test}: no llama-speculative-simple (run scripts/reference-tools --speculative)"
        );
    }
    found
}

/// `n_drafted`, `n_accept` and `n_predict` from llama-speculative-simple's log.
pub(crate) fn reference_counts(log: &str) -> (u64, u64, u64) {
    let field = |name: &str| {
        log.lines()
            .find_map(|l| {
                // "n_accept  = 46": the tool pads the names to one width.
                let rest = l.split_once(&format!(" {name} "))?.1;
                rest.trim_start().strip_prefix('=')?.trim().parse().ok()
            })
            .unwrap_or_else(|| panic!("no {name} in llama-speculative-simple's log:\n{log}"))
    };
    (field("n_drafted"), field("n_accept"), field("n_predict"))
}

/// The log of llama-speculative-simple (`tool`) generating `n_gen` tokens greedily after
/// `prompt` with the target and draft of `models`, drafter `spec` (its type and K). The tool
/// logs through llama.cpp's asynchronous common log, which a process ending may cut short
/// before its last lines (the counts; more often on a loaded machine): it runs again, up to
/// 10 times, until the counts are there.
pub(crate) fn reference_log(
    tool: &Path,
    models: (&Path, &Path),
    spec: (&str, u64),
    n_gen: u32,
    prompt: &str,
) -> String {
    let mut log = String::new();
    for _ in 0..10 {
        let out = std::process::Command::new(tool)
            .arg("-m")
            .arg(models.0)
            .arg("-md")
            .arg(models.1)
            .args([
                "--spec-type",
                spec.0,
                "--spec-draft-n-max",
                &spec.1.to_string(),
            ])
            .args([
                "-n",
                &n_gen.to_string(),
                "--temp",
                "0",
                "-t",
                "2",
                "-c",
                "256",
                "-p",
                prompt,
            ])
            .output()
            .unwrap();
        log = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{log}");
        if [" n_drafted ", " n_accept ", " n_predict "]
            .iter()
            .all(|f| log.contains(f))
        {
            break;
        }
    }
    log
}

#[test]
fn draft_simple_drafts_and_accepts_what_llama_speculative_simple_does() {
    let Some(tool) = reference_tool("draft_simple_counts") else {
        return;
    };
    // The target's weights quantized to Q4_0 as the draft: partial acceptance.
    let prompt = "Once upon a time there was a robot who wanted to learn to paint";
    let (dir, cfg) = spec_config(
        "dataset = \"one.txt\"\nn_prompts = 1\nn_gen = 48\nrounds = 2\n\
         drafters = [\"draft-simple\"]\ndraft = [\"draft.gguf\"]\ndraft_max = [3, 5]\n",
    );
    std::fs::write(dir.path().join("one.txt"), format!("{prompt}\n")).unwrap();
    synth_to(&dir.path().join("draft.gguf"), &["--type", "Q4_0"]);
    let v = crate::support::run_json(&cfg);
    for t in spec_tests(&v) {
        let k = n(t, "draft_max");
        let rounds = t["speculative"]["rounds"].as_array().unwrap().len() as u64;
        let log = reference_log(
            &tool,
            (
                &dir.path().join("tiny.gguf"),
                &dir.path().join("draft.gguf"),
            ),
            ("draft-simple", k),
            48,
            prompt,
        );
        same_counts_as_the_reference(t, &log, rounds, k);
    }
}

/// Test record `t`'s drafted, accepted and generated counts against llama-speculative-simple's
/// `log` of one generation: every round generates the prompt once speculatively, so the record
/// sums `rounds` of them.
pub(crate) fn same_counts_as_the_reference(t: &Value, log: &str, rounds: u64, k: u64) {
    let (drafted, accepted, predicted) = reference_counts(log);
    assert!(drafted > 0, "{log}");
    assert_eq!(n(t, "n_drafted"), drafted * rounds, "K {k}: drafted");
    assert_eq!(n(t, "n_accepted"), accepted * rounds, "K {k}: accepted");
    let spec_tokens: u64 = t["speculative"]["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["spec_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(spec_tokens, predicted * rounds, "K {k}: generated");
}

#[test]
fn k_beyond_the_batch_and_a_prompt_beyond_the_context_are_recorded_failures_and_the_sweep_goes_on()
{
    let (dir, cfg) = tiny_with(
        "[sweep]\nn_prompt = [0]\nn_gen = [0]\nn_threads = [2]\nn_batch = [4]\nn_ubatch = [4]\n\n\
         [[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n[speculative]\n\
         dataset = \"prompts.txt\"\nn_prompts = 1\nn_gen = 8\nrounds = 2\n\
         drafters = [\"ngram-simple\"]\ndraft_max = [3, 8]\n",
    );
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    let (out, v) = run_json_any(&cfg);
    assert_eq!(out.status.code(), Some(1), "a failed test exits 1");
    let tests = spec_tests(&v);
    let k8 = tests
        .iter()
        .find(|t| t["speculative"].is_null() && t["status"] != "ok")
        .unwrap_or_else(|| panic!("K = 8 failed: {tests:?}"));
    let e = k8["error"].as_str().unwrap();
    assert!(
        e.contains("K = 8 is beyond the batch") && e.contains("n_batch is 4"),
        "{e}"
    );
    assert!(
        tests.iter().any(|t| t["status"] == "ok"),
        "K = 3 fits a batch of 4 and ran: {tests:?}"
    );

    // One prompt longer than the tiny model's trained context.
    let long = "the quick brown fox jumps over the lazy dog ".repeat(400);
    std::fs::write(dir.path().join("prompts.txt"), format!("{long}\n")).unwrap();
    let (out, v) = run_json_any(&cfg);
    assert_eq!(out.status.code(), Some(1));
    for t in spec_tests(&v) {
        let e = t["error"].as_str().unwrap_or_default();
        assert!(
            e.contains("beyond the model's trained context") || e.contains("beyond the batch"),
            "{t}"
        );
    }
}

#[test]
fn the_other_ngram_drafters_run_on_a_repetitive_prompt_and_their_counts_hold_together() {
    let (dir, cfg) = spec_config(
        "dataset = \"loop.txt\"\nn_prompts = 1\nn_gen = 64\nrounds = 2\n\
         drafters = [\"ngram-map-k\", \"ngram-map-k4v\", \"ngram-cache\"]\ndraft_max = [4]\n",
    );
    let line = "one two three four five six seven eight nine ten ".repeat(12);
    std::fs::write(dir.path().join("loop.txt"), format!("{line}\n")).unwrap();
    let v = crate::support::run_json(&cfg);
    let tests = spec_tests(&v);
    assert_eq!(tests.len(), 3);
    for t in &tests {
        assert_eq!(t["status"], "ok", "{t}");
        let (d, a) = (n(t, "n_drafted"), n(t, "n_accepted"));
        assert!(a <= d, "{t}");
        let by_pos: u64 = t["speculative"]["by_position"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["drafted"].as_u64().unwrap())
            .sum();
        assert_eq!(by_pos, d, "drafted by position adds up: {}", t["id"]);
        eprintln!("{}: drafted {d}, accepted {a}", t["id"]);
    }
}
