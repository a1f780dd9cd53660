//! pp/tg tests on real text (`tokens = "text"`, issue 45): the same llama-bench loop, its
//! tokens read from a ShareGPT or prompt file with the model's tokenizer, recorded and named
//! as text tests beside the random-token ones.

use crate::support::{run_json, synth_to, tpsbench};

const SHAREGPT: &str = r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Tell me a story about a robot who wanted to learn to paint"},
    {"from": "gpt", "value": "Once upon a time there was a robot who dreamed of colours and light"}]},
  {"id": "b", "conversations": [
    {"from": "human", "value": "What is the quick brown fox known for in typing practice"},
    {"from": "gpt", "value": "It uses every letter of the alphabet"}]}
]"#;

/// A temp dir with the tiny MoE (routing is what text changes most) and `sg.json`, and a
/// config of `sweep` over it.
fn moe_with(sweep: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    synth_to(&dir.path().join("moe.gguf"), &["--preset", "tiny-moe"]);
    std::fs::write(dir.path().join("sg.json"), SHAREGPT).unwrap();
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        format!("[sweep]\n{sweep}\n[[model]]\nname = \"moe\"\npath = \"moe.gguf\"\n"),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn a_text_axis_runs_each_test_on_random_ids_and_on_the_files_text_recording_which() {
    let (_d, config) = moe_with(
        "n_prompt = 16\nn_gen = 4\nn_threads = 1\nrepetitions = 2\nrounds = 2\n\
         tokens = ['random', 'text']\ntext = 'sg.json'",
    );
    let v = run_json(&config);
    let tests = v["tests"].as_array().unwrap();
    let ids: Vec<&str> = tests.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "moe/F32/pp16",
            "moe/F32/pp16/tokens=text",
            "moe/F32/tg4",
            "moe/F32/tg4/tokens=text"
        ]
    );
    for t in tests {
        assert_eq!(t["status"], "ok", "{t}");
        assert_eq!(t["rounds"].as_array().unwrap().len(), 2);
        let text = t["id"].as_str().unwrap().ends_with("/tokens=text");
        assert_eq!(
            t.get("tokens").is_some(),
            text,
            "only text tests carry tokens"
        );
        if !text {
            assert!(t.get("text").is_none());
            continue;
        }
        assert_eq!(t["tokens"], "text");
        assert!(
            t["test"].as_str().unwrap().ends_with(" (text)"),
            "{}",
            t["test"]
        );
        let src = &t["text"];
        assert_eq!(src["name"], "sg.json");
        assert_eq!(src["format"], "sharegpt");
        assert_eq!(src["sha256"].as_str().unwrap().len(), 64);
        let n = src["stream_tokens"].as_u64().unwrap();
        assert!(
            n > 20,
            "both conversations, prompts and replies: {n} tokens"
        );
        assert_eq!(
            src["start"].as_u64().unwrap(),
            42 % n,
            "the run's seed picks it"
        );
    }
    assert_ne!(
        tests[0]["identity"], tests[1]["identity"],
        "text and random are different tests"
    );
}

#[test]
fn the_markdown_table_names_text_tests_and_llama_bench_json_marks_them() {
    let (_d, config) = moe_with(
        "n_prompt = 8\nn_gen = 0\nn_threads = 1\nrepetitions = 1\n\
         tokens = ['random', 'text']\ntext = 'sg.json'",
    );
    let md = tpsbench()
        .args(["run", "--quiet", "--no-save", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    let tests: Vec<&str> = md
        .lines()
        .filter_map(|l| l.split('|').nth(6).map(str::trim))
        .filter(|c| c.starts_with("pp"))
        .collect();
    assert_eq!(tests, ["pp8", "pp8 (text)"], "{md}");
    let out = tpsbench()
        .args([
            "run",
            "--quiet",
            "--no-save",
            "--output",
            "llama-bench-json",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens: Vec<Option<&str>> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.get("tokens").and_then(|t| t.as_str()))
        .collect();
    assert_eq!(tokens, [None, Some("text")]);
}

#[test]
fn a_missing_text_file_is_one_line_and_exit_2_before_any_test() {
    let (dir, config) = moe_with("n_prompt = 8\nn_gen = 0\ntokens = 'text'\ntext = 'none.json'");
    let out = tpsbench()
        .args(["run", "--quiet", "--no-save", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot read the prompt file"), "{err}");
    assert!(err.contains("none.json"), "{err}");
    drop(dir);
}
