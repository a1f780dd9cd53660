//! `tpsbench tune` with the speculative objective (issue 46), on the real llama.cpp with the
//! tiny synthetic model: every configuration decodes `[speculative]`'s prompts plain, and a
//! target's configurations also with each drafter setting; each race round is one pass over
//! the prompts, the candidates race on their decode rates, the file replays
//! (`record::verify`), and the winner's commands carry its drafter.

use std::path::PathBuf;

use assert_cmd::cargo::cargo_bin;

use crate::support::{
    self, only_result, read_json as json, tune_into, tune_of, verify_edited as verify,
};

const PROMPTS: &str = "The quick brown fox jumps over the lazy dog and runs into the woods\n\
                       Once upon a time there was a robot who wanted to learn to paint\n";

/// The tiny model swept over `axes`, `[speculative]` of `spec` and `[tune]` of `tune`, the
/// prompts beside it.
fn config(axes: &str, spec: &str, tune: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = support::tiny_with(&format!(
        "[sweep]\nrepetitions = 1\n{axes}\n\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\n\
         [speculative]\ndataset = \"prompts.txt\"\n{spec}\n\n[tune]\n{tune}\n"
    ));
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    (dir, path)
}

/// `tpsbench tune` of `cfg` with its results in `dir`/results: it succeeds; its stdout and
/// its one result file.
fn raced(dir: &std::path::Path, cfg: &std::path::Path) -> (String, serde_json::Value) {
    let results = dir.join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), cfg, &results);
    assert_eq!(code, 0, "{err}");
    (out, json(&only_result(&results)))
}

#[test]
fn a_speculative_race_decodes_each_configuration_plain_and_drafted_and_replays_from_its_rounds() {
    let (dir, cfg) = config(
        "n_threads = [1, 2]",
        "n_prompts = 2\nn_gen = 16\ndrafters = [\"draft-simple\", \"ngram-simple\"]\n\
         draft = [\"tiny.gguf\"]\ndraft_max = [2]",
        "objective = \"speculative\"\nmax_rounds = 3",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(
            "## tune: decode after 2 prompts of prompts.txt, up to 16 tokens each, plain or drafted\n"
        ),
        "{out}"
    );
    let path = only_result(&results);
    let r = json(&path);
    let t = &r["run"]["tune"];
    // 2 configurations, each plain and with 2 drafter settings.
    assert_eq!(t["space"], 6);
    let mut ids: Vec<&str> = (t["candidates"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want = Vec::new();
    for th in [1, 2] {
        for d in [
            "spec-plain",
            "spec-draft-simple-tiny.gguf-K2",
            "spec-ngram-simple-K2",
        ] {
            want.push(format!("tiny/F32/{d}/t={th}"));
        }
    }
    want.sort();
    assert_eq!(ids, want);
    let rounds = t["rounds"].as_u64().unwrap();
    assert!(rounds >= 2, "{t}");
    for id in &ids {
        let x = (r["tests"].as_array().unwrap().iter())
            .find(|x| x["id"] == *id)
            .unwrap();
        assert_eq!(
            (&x["kind"], &x["status"]),
            (&"spec".into(), &"ok".into()),
            "{x}"
        );
        let sp = &x["speculative"];
        let rs = sp["rounds"].as_array().unwrap();
        // One pass over the prompts per race round it ran, the first side alternating.
        assert_eq!(rs.len(), x["samples_ts"].as_array().unwrap().len(), "{id}");
        for (i, round) in rs.iter().enumerate() {
            assert_eq!(round["plain_first"], i % 2 == 0, "{id} round {i}");
            assert!(round["plain_tokens"].as_u64().unwrap() > 0, "{id}");
        }
        if id.contains("spec-plain") {
            assert_eq!(sp["drafter"], "none");
            assert!(rs.iter().all(|r| r["spec_tokens"] == 0), "{id}");
        } else {
            assert!(
                rs.iter().all(|r| r["spec_tokens"].as_u64().unwrap() > 0),
                "{id}"
            );
        }
        if id.contains("draft-simple") {
            // The draft is the target: every drafted token is accepted, the output is plain's.
            let (d, a) = (&sp["n_drafted"], &sp["n_accepted"]);
            assert!(d.as_u64().unwrap() > 0 && d == a, "{sp}");
            assert_eq!(sp["mismatches"], 0);
        }
    }
    // The answer's commands carry the winner's drafter, and only a drafted winner's.
    let winner = t["winner"].as_str().unwrap();
    let server = out
        .lines()
        .find(|l| l.starts_with("llama-server "))
        .unwrap();
    if winner.contains("spec-plain") {
        assert!(!server.contains("--spec-type"), "{server}");
    } else if winner.contains("draft-simple") {
        assert!(
            server.ends_with("--spec-type draft-simple -md tiny.gguf --spec-draft-n-max 2"),
            "{server}"
        );
        assert!(out.contains("[speculative]\ntargets = [\"tiny\"]"), "{out}");
    } else {
        assert!(server.ends_with("--spec-type ngram-simple"), "{server}");
        assert!(out.contains("llama-bench has no drafter"), "{out}");
    }
    // The file replays; an edited round of a plain candidate's decoding is refused.
    verify(dir.path(), &r).unwrap();
    let mut edited = r.clone();
    let i = (r["tests"].as_array().unwrap().iter())
        .position(|x| x["id"] == "tiny/F32/spec-plain/t=1")
        .unwrap();
    let ns = &mut edited["tests"][i]["speculative"]["rounds"][0]["plain_ns"];
    *ns = (ns.as_u64().unwrap() * 2).into();
    let e = verify(dir.path(), &edited).unwrap_err();
    assert!(e.contains("speculative"), "{e}");
}

#[test]
fn a_speculative_objective_without_its_table_or_with_latency_limits_is_one_line_and_exit_2() {
    let (dir, cfg) = config(
        "n_threads = [1]",
        "n_gen = 8\ndrafters = [\"ngram-simple\"]",
        "objective = \"speculative\"\nmax_itl_ms = 20",
    );
    let (code, _, err) = tune_of(&cargo_bin("tpsbench"), &cfg, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("times whole generations"), "{err}");
    let bare = dir.path().join("bare.toml");
    std::fs::write(
        &bare,
        "[sweep]\nn_gen = [8]\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\
         [tune]\nobjective = \"speculative\"\n",
    )
    .unwrap();
    let (code, _, err) = tune_of(&cargo_bin("tpsbench"), &bare, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("add a [speculative] table"), "{err}");
}

/// A ladder's variants are plan models past the `[[model]]` entries: a race over them (a
/// panic once indexed them as entries) decodes each variant plain and drafts the target with
/// another variant of the same ladder.
#[test]
fn a_speculative_race_over_a_ladder_drafts_the_target_with_another_variant_of_it() {
    let dir = support::tiny_dir();
    std::fs::write(dir.path().join("prompts.txt"), PROMPTS).unwrap();
    let cfg = dir.path().join("models.toml");
    std::fs::write(
        &cfg,
        "[sweep]\nrepetitions = 1\nn_threads = [1]\n\n\
         [[ladder]]\nname = \"tiny\"\nbase = \"tiny.gguf\"\ntypes = [\"Q8_0\", \"Q4_0\"]\n\
         cache_dir = \"cache\"\n\n\
         [speculative]\ntargets = [\"Q8_0\"]\ndataset = \"prompts.txt\"\nn_prompts = 2\n\
         n_gen = 8\ndrafters = [\"draft-simple\"]\ndraft = [\"Q4_0\"]\ndraft_max = [2]\n\n\
         [tune]\nobjective = \"speculative\"\nmax_rounds = 2\n",
    )
    .unwrap();
    let (out, r) = raced(dir.path(), &cfg);
    let t = &r["run"]["tune"];
    assert_eq!(t["space"], 3, "{t}");
    let ids: Vec<&str> = (t["candidates"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    for want in [
        "Q8_0/spec-plain",
        "Q8_0/spec-draft-simple-Q4_0-K2",
        "Q4_0/spec-plain",
    ] {
        assert!(ids.iter().any(|i| i.contains(want)), "{want} in {ids:?}");
    }
    assert!(out.contains("\nanswer: "), "{out}");
}

/// A drafted candidate loads its draft beside its target: a memory limit that holds the
/// target alone but not with its draft excludes the drafted candidate, naming both parts,
/// and leaves the plain one and the n-gram one (no model of its own) to race.
#[test]
fn a_memory_limit_counts_the_draft_model_beside_its_target() {
    let file = std::fs::metadata(support::synth(&[])).unwrap().len() as f64;
    // The target's file and KV fit in 1.5 files; two files do not.
    let gib = 1.5 * file / (1024.0 * 1024.0 * 1024.0);
    let (dir, cfg) = config(
        "n_threads = [1]",
        "n_prompts = 2\nn_gen = 8\ndrafters = [\"draft-simple\", \"ngram-simple\"]\n\
         draft = [\"tiny.gguf\"]\ndraft_max = [2]",
        &format!("objective = \"speculative\"\nmax_rounds = 2\nmax_memory_gib = {gib:.9}"),
    );
    let (_, r) = raced(dir.path(), &cfg);
    let t = &r["run"]["tune"];
    assert_eq!(t["space"], 3, "{t}");
    let ex = t["excluded"].as_array().unwrap();
    assert_eq!(ex.len(), 1, "{t}");
    assert_eq!(ex[0]["id"], "tiny/F32/spec-draft-simple-tiny.gguf-K2");
    assert_eq!(ex[0]["limit"], "memory");
    let why = ex[0]["why"].as_str().unwrap();
    assert!(
        why.starts_with("tiny: ") && why.contains("; draft tiny.gguf: weights "),
        "{why}"
    );
    let mut ids: Vec<&str> = (t["candidates"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        ["tiny/F32/spec-ngram-simple-K2", "tiny/F32/spec-plain"]
    );
}
