//! `tpsbench tune` with the goodput objective and the latency limits (issue 46), on the real
//! llama.cpp with the tiny synthetic model: every candidate serves `[serving]`'s requests
//! in process at one load each round, its round figure is its goodput, the file replays
//! (`record::verify`), and an edited figure or verdict is refused.

use std::path::PathBuf;

use serde_json::Value;

use assert_cmd::cargo::cargo_bin;

use crate::support::{self, only_result, read_json as json, tune_into, verify_edited as verify};

/// The tiny model, a sweep of `axes`, a `[serving]` table of `serving` and `[tune]` of
/// `tune`.
fn config(axes: &str, serving: &str, tune: &str) -> (tempfile::TempDir, PathBuf) {
    support::tiny_with(&format!(
        "[sweep]\nrepetitions = 1\n{axes}\n\n[serving]\n{serving}\n\n[[model]]\nname = \
         \"tiny\"\npath = \"tiny.gguf\"\n\n[tune]\n{tune}\n"
    ))
}

/// 4 synthetic requests of 8 prompt tokens and 4 output tokens, 2 slots, all arriving at
/// once (a rate far above the tiny model's), under `slo`.
fn load(slo: &str) -> String {
    format!(
        "n_prompt = 8\nn_gen = 4\nn_requests = 4\nslots = 2\narrival_rate = [1000]\nslo = {slo}"
    )
}

#[test]
fn a_goodput_race_serves_every_candidate_each_round_and_replays_from_its_counts() {
    let (dir, cfg) = config(
        "n_threads = [1]\nn_ubatch = [16, 32]\nflash_attn = [\"on\", \"off\"]",
        &load("{ ttft_ms = 60000, itl_ms = 60000 }"),
        "objective = \"goodput\"\nmax_rounds = 3\nslots = [1, 2]",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("## tune: goodput at 1000 req/s, 4 requests pp8+tg4, slots 1/2: TTFT ≤ 60000 ms, ITL ≤ 60000 ms for 90% of requests\n"),
        "{out}"
    );
    assert!(out.contains(" good req/s ("), "{out}");
    assert!(
        out.contains("as vLLM's bench serve --goodput counts them"),
        "{out}"
    );
    assert!(
        out.contains("the answer's last round: 4 of 4 requests good"),
        "{out}"
    );
    let path = only_result(&results);
    let r = json(&path);
    let t = &r["run"]["tune"];
    // The sweep's 4 configurations, each served in 1 and in 2 slots.
    assert_eq!(t["space"], 8);
    assert_eq!(t["slo"]["goodput"]["slots"], serde_json::json!([1, 2]));
    assert_eq!(t["slo"]["goodput"]["slo"]["ttft_ms"], 60000.0);
    let cands = t["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 8);
    let winner_slots = if t["winner"].as_str().unwrap().contains("-slots1/") {
        1
    } else {
        2
    };
    assert!(
        out.contains(&format!(" -np {winner_slots} ")),
        "the server line carries the winner's slots: {out}"
    );
    let tests = r["tests"].as_array().unwrap();
    let mut total = 0;
    for c in cands {
        let x = tests.iter().find(|x| x["id"] == c["id"]).unwrap();
        assert_eq!(x["kind"], "goodput", "{x}");
        let id = x["id"].as_str().unwrap();
        let slots = x["serving"]["n_parallel"].as_u64().unwrap();
        assert!(
            id.contains(&format!("/serve-goodput-pp8+tg4-1000rps-slots{slots}/")),
            "{id}"
        );
        // Every round is one pass of the 4 requests; its figure is its goodput, counted.
        let steps = x["serving"]["goodput"]["steps"].as_array().unwrap();
        assert_eq!(steps.len() as u64, c["rounds"].as_u64().unwrap(), "{x}");
        let ts = x["samples_ts"].as_array().unwrap();
        assert_eq!(ts.len(), steps.len());
        for (s, v) in steps.iter().zip(ts) {
            assert_eq!(s["n_requests"], 4);
            assert_eq!(s["n_good"], 4, "a generous SLO: every request good");
            let counted = 4.0 / s["duration_s"].as_f64().unwrap();
            assert!(
                (v.as_f64().unwrap() - counted).abs() < 1e-6 * counted,
                "{s} {v}"
            );
        }
        total += steps.len();
    }
    assert_eq!(total as u64, t["tests_run"].as_u64().unwrap());
    // The file replays; an edited count or figure is refused.
    verify(dir.path(), &r).unwrap();
    let winner = t["winner"].as_str().unwrap();
    let wi = tests.iter().position(|x| x["id"] == winner).unwrap();
    let mut edited = r.clone();
    edited["tests"][wi]["serving"]["goodput"]["steps"][0]["n_good"] = 3.into();
    let e = verify(dir.path(), &edited).unwrap_err();
    assert!(e.contains("slo.goodput"), "{e}");
}

#[test]
fn a_goodput_race_whose_load_no_candidate_meets_says_so_and_names_the_rounds() {
    // No request has its first token within a microsecond: every candidate's first round
    // has no good request, so every one leaves the race at round 1.
    let (dir, cfg) = config(
        "n_threads = [1]\nn_ubatch = [16, 32]",
        &load("{ ttft_ms = 0.001 }"),
        "objective = \"goodput\"\nmax_rounds = 3",
    );
    let results = dir.path().join("results");
    let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("no answer: no candidate served a request within the SLO (TTFT ≤ 0.001 ms for 90% of requests) at 1000 req/s, 2 slots: "),
        "{out}"
    );
    assert!(out.contains("(round 1: 0 of 4 good)"), "{out}");
    let r = json(&only_result(&results));
    let t = &r["run"]["tune"];
    for c in t["candidates"].as_array().unwrap() {
        assert_eq!(c["outcome"], "failed", "{c}");
        assert_eq!(c["at_round"], 1, "{c}");
    }
    assert!(t.get("winner").is_none(), "{t}");
    assert_eq!(t["tests_run"], 2);
    verify(dir.path(), &r).unwrap();
}

#[test]
fn latency_limits_of_a_decode_objective_exclude_what_broke_them_and_replay() {
    // A microsecond per token: every candidate breaks it; a minute: none does.
    for (max, broke) in [(0.001, 2), (60000.0, 0)] {
        let (dir, cfg) = support::tiny_with(&format!(
            "[sweep]\nrepetitions = 2\nn_ubatch = [16, 32]\n\n[[model]]\nname = \"tiny\"\n\
             path = \"tiny.gguf\"\n\n[tune]\nobjective = \"tg4\"\nmax_rounds = 2\n\
             max_itl_ms = {max}\nlatency_quantile = 0.5\n"
        ));
        let results = dir.path().join("results");
        let (code, out, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains(&format!(
                "max_itl_ms {max} (p50 of each raced candidate's measured repetitions; what \
                 the rounds showed, not a guarantee): "
            )),
            "{out}"
        );
        let r = json(&only_result(&results));
        let s = &r["run"]["tune"]["slo"];
        assert_eq!(s["max_itl_ms"], max);
        let got = s["broke"].as_array().map_or(0, Vec::len);
        assert_eq!(got, broke, "{s}");
        if broke > 0 {
            assert!(out.contains("the answer breaks a latency limit"), "{out}");
            assert!(
                s["broke"][0]["why"]
                    .as_str()
                    .unwrap()
                    .starts_with("p50 ITL "),
                "{s}"
            );
        } else {
            assert!(out.contains("none broke it"), "{out}");
        }
        verify(dir.path(), &r).unwrap();
        // A limit's verdict is the samples': one dropped from `broke`, or added, is refused.
        let mut edited = r.clone();
        if broke > 0 {
            edited["run"]["tune"]["slo"]["broke"] = Value::Array(vec![]);
        } else {
            edited["run"]["tune"]["slo"]["max_itl_ms"] = 0.001.into();
        }
        let e = verify(dir.path(), &edited).unwrap_err();
        assert!(e.contains("slo.broke"), "{e}");
    }
}

/// Each slot holds a request's context: a memory limit that holds one slot's KV cache but
/// not 8 excludes the 8-slot candidate, saying how many cells its slots make.
#[test]
fn a_memory_limit_counts_the_kv_cache_of_every_slot() {
    let file = std::fs::metadata(support::synth(&[])).unwrap().len() as f64;
    // 1 KiB of f16 K and V per cell: one slot of 12 tokens makes 256 cells (256 KiB), 8
    // slots 8 × 256 (2 MiB). The file and 1 MiB hold the first, not the second.
    let gib = (file + 1024.0 * 1024.0) / (1024.0 * 1024.0 * 1024.0);
    let (dir, cfg) = config(
        "n_threads = [1]",
        &load("{ ttft_ms = 60000, itl_ms = 60000 }"),
        &format!(
            "objective = \"goodput\"\nmax_rounds = 2\nslots = [1, 8]\nmax_memory_gib = {gib:.9}"
        ),
    );
    let results = dir.path().join("results");
    let (code, _, err) = tune_into(&cargo_bin("tpsbench"), &cfg, &results);
    assert_eq!(code, 0, "{err}");
    let t = &json(&only_result(&results))["run"]["tune"];
    assert_eq!(t["space"], 2, "{t}");
    let ex = t["excluded"].as_array().unwrap();
    assert_eq!(ex.len(), 1, "{t}");
    assert!(ex[0]["id"].as_str().unwrap().contains("slots8"), "{t}");
    assert_eq!(ex[0]["limit"], "memory");
    let why = ex[0]["why"].as_str().unwrap();
    assert!(
        why.contains("+ KV 2.00 MiB at 8 × 12 tokens (2048 cells)) > "),
        "{why}"
    );
    let ids: Vec<&str> = (t["candidates"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].contains("slots1"), "{ids:?}");
}
