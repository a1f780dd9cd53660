//! Serving tests on the real llama.cpp engine and the tiny model `tpsbench synth` writes:
//! invariants only (token counts, positions, orderings, definitions), never speed-ups.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tpsbench::config::Axes;
use tpsbench::engine::llama::LlamaEngine;
use tpsbench::engine::{BatchParams, Engine, LoadParams};
use tpsbench::plan::expand_axes;
use tpsbench::serving::arrivals::run_arrivals;
use tpsbench::serving::bench::{Request, run_together};
use tpsbench::serving::sampling::Sampler;

use crate::support::{synth_to, tpsbench};

fn tiny(dir: &Path) -> PathBuf {
    synth_to(&dir.join("tiny.gguf"), &[])
}

fn batch_params(n_ctx: u32, n_seq_max: u32, kv_unified: bool) -> BatchParams {
    let mut a = Axes::llama_bench_defaults(2);
    a.n_threads = vec![1];
    BatchParams {
        base: expand_axes(&a)[0].clone(),
        n_ctx,
        n_seq_max,
        kv_unified,
    }
}

fn greedy(n: usize) -> Vec<Sampler> {
    (0..n).map(|j| Sampler::new(0.0, j as u64)).collect()
}

fn prompt(n: usize, salt: i32) -> Vec<i32> {
    std::iter::once(1)
        .chain((1..n as i32).map(|i| 3 + (i * 13 + salt) % 300))
        .collect()
}

#[test]
fn sequences_decoded_together_keep_exact_counts_and_positions() {
    let dir = tempfile::tempdir().unwrap();
    let engine = LlamaEngine::new(false).unwrap();
    let model = engine
        .load(&tiny(dir.path()), &LoadParams::default())
        .unwrap();
    let sm = model.serving().unwrap();
    let n_vocab = model.info().n_vocab;
    let (b, pp, n_gen) = (3usize, 20usize, 5u32);
    for unified in [false, true] {
        for shared in [false, true] {
            let mut s = sm
                .batch_session(&batch_params(256 * 3, 3, unified))
                .unwrap();
            let reqs: Vec<Request> = (0..b)
                .map(|j| Request {
                    prompt: prompt(pp, if shared { 0 } else { j as i32 }),
                    n_gen,
                })
                .collect();
            let case = format!("unified {unified}, shared {shared}");
            let r = run_together(
                s.as_mut(),
                &engine,
                &reqs,
                shared,
                unified,
                2048,
                &mut greedy(b),
            )
            .unwrap();
            let p = r.phases;
            assert_eq!(p.n_pp, if shared { pp } else { b * pp } as u64, "{case}");
            assert_eq!((p.n_tg, p.n_out), (b as u64 * 4, b as u64 * 5), "{case}");
            assert!(p.t_pp_ns <= p.t_ns && p.t_tg_ns <= p.t_ns && p.engine_ns <= p.t_ns);
            for (j, t) in r.traces.iter().enumerate() {
                assert_eq!(t.token_ns.len(), n_gen as usize, "{case}");
                assert!(
                    t.tokens.iter().all(|&x| (0..n_vocab).contains(&x)),
                    "{case}"
                );
                assert!(t.token_ns.windows(2).all(|w| w[0] <= w[1]), "{case}");
                assert!(t.ttft_ns() <= t.e2e_ns(), "{case}");
                // The prompt and every generated token but the last are in the cache.
                let last = (pp + n_gen as usize - 2) as i32;
                assert_eq!(s.seq_pos_range(j as i32), Some((0, last)), "{case}");
            }
            if shared {
                let first: Vec<i32> = r.traces.iter().map(|t| t.tokens[0]).collect();
                assert!(
                    first.iter().all(|&x| x == first[0]),
                    "one prompt, one first token"
                );
            }
        }
    }
}

#[test]
fn greedy_decoding_is_repeatable_and_arrivals_serve_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let engine = LlamaEngine::new(false).unwrap();
    let model = engine
        .load(&tiny(dir.path()), &LoadParams::default())
        .unwrap();
    let sm = model.serving().unwrap();
    let mut s = sm.batch_session(&batch_params(512, 2, false)).unwrap();
    let req = Request {
        prompt: prompt(12, 5),
        n_gen: 6,
    };
    let a = run_together(
        s.as_mut(),
        &engine,
        std::slice::from_ref(&req),
        false,
        false,
        64,
        &mut greedy(1),
    )
    .unwrap();
    let b = run_together(
        s.as_mut(),
        &engine,
        std::slice::from_ref(&req),
        false,
        false,
        64,
        &mut greedy(1),
    )
    .unwrap();
    assert_eq!(
        a.traces[0].tokens, b.traces[0].tokens,
        "same prompt, same greedy tokens"
    );

    let reqs: Vec<Request> = (0..4)
        .map(|j| Request {
            prompt: prompt(10 + j, j as i32),
            n_gen: 3 + j as u32,
        })
        .collect();
    let offsets = [0, 1_000_000, 2_000_000, 3_000_000];
    let r = run_arrivals(s.as_mut(), &engine, &reqs, &offsets, 2, 64, &mut greedy(4)).unwrap();
    for (j, t) in r.traces.iter().enumerate() {
        assert_eq!(t.token_ns.len(), 3 + j, "request {j}");
        assert!(t.arrival_ns <= t.admitted_ns && t.ttft_ns() <= t.e2e_ns());
    }
    assert!(r.max_batch_seqs <= 2);
    for seq in 0..2 {
        assert_eq!(
            s.seq_pos_range(seq),
            None,
            "finished sequences leave the cache"
        );
    }
}

fn run_json(dir: &Path, serving: &str) -> (Value, bool) {
    tiny(dir);
    std::fs::write(
        dir.join("prompts.txt"),
        "hello world\nthe quick brown fox\n",
    )
    .unwrap();
    let config = dir.join("models.toml");
    std::fs::write(
        &config,
        format!(
            "[sweep]\nn_prompt = 8\nn_gen = 4\nn_threads = 1\nrepetitions = 1\n\
             [serving]\n{serving}\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n"
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
            "serve-",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    (v, out.status.success())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_serving_figures_in_the_result_file_are_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let (v, ok) = run_json(
        dir.path(),
        "modes = ['request', 'parallel', 'arrival']\nn_prompt = 16\nn_gen = 5\n\
         n_parallel = [1, 2]\nshared_prompt = [false, true]\nrepetitions = 2\nn_requests = 3\n\
         arrival_rate = 20\nslots = 2",
    );
    assert!(ok);
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 1 + 4 + 1);
    for t in tests {
        let s = &t["serving"];
        let id = t["id"].as_str().unwrap();
        for d in ["ttft_ms", "itl_ms", "e2e_ms", "tpot_ms"] {
            let x = &s[d];
            let q = [
                x["min"].clone(),
                x["p50"].clone(),
                x["p90"].clone(),
                x["p99"].clone(),
                x["max"].clone(),
            ];
            assert!(q.windows(2).all(|w| f(&w[0]) <= f(&w[1])), "{id} {d}: {x}");
        }
        for r in s["requests"].as_array().unwrap() {
            assert!(f(&r["ttft_ms"]) <= f(&r["e2e_ms"]), "{id}: {r}");
            assert_eq!(r["n_gen"], 5, "{id}: exactly n_gen tokens");
        }
        let n_req = s["n_requests"].as_u64().unwrap();
        assert_eq!(s["n_output_tokens"].as_u64().unwrap(), 5 * n_req, "{id}");
        assert!(
            f(&s["overhead_ms"]) >= 0.0 && f(&s["overhead_fraction"]) < 1.0,
            "{id}"
        );
    }
    let b1 = &tests[1]["serving"];
    assert_eq!(tests[1]["id"], "tiny/F32/serve-parallel/pp16+tg5/B1");
    let (agg, per) = (f(&b1["aggregate_ts"]), f(&b1["per_request_ts"]));
    assert!(
        (agg - per).abs() / per < 1e-3,
        "B = 1: aggregate {agg} = per request {per}"
    );
    // N_KV as llama-batched-bench: B·(PP + TG), and PP + ... shared (split cache: B·PP + B·TG)
    assert_eq!(tests[2]["serving"]["n_kv"], 2 * (16 + 4));
    assert_eq!(tests[4]["serving"]["n_kv"], 2 * 16 + 2 * 4);
    assert_eq!(
        tests[4]["serving"]["n_prompt_tokens"], 16,
        "shared prompt decoded once"
    );
    assert_eq!(tests[2]["serving"]["n_prompt_tokens"], 2 * 16);
    assert!(tests[5]["serving"]["queue_ms"].is_object());
}

#[test]
fn a_prompt_file_replays_through_the_real_tokenizer_and_a_missing_template_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (v, ok) = run_json(
        dir.path(),
        "modes = ['request']\ndataset = 'prompts.txt'\nn_gen = 3\nn_requests = 2\nrepetitions = 1",
    );
    assert!(ok);
    let s = &v["tests"][0]["serving"];
    assert_eq!(s["dataset"]["name"], "prompts.txt");
    assert_eq!(s["dataset"]["n_prompts"], 2);
    let lens: Vec<u64> = s["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n_prompt"].as_u64().unwrap())
        .collect();
    assert!(
        lens[0] >= 2 && lens[1] > lens[0],
        "BOS + tokens of each line: {lens:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (v, ok) = run_json(
        dir.path(),
        "modes = ['request']\ndataset = 'prompts.txt'\nchat_template = true\nrepetitions = 1",
    );
    assert!(!ok, "a failed test exits non-zero");
    let e = v["tests"][0]["error"].as_str().unwrap();
    assert!(e.contains("chat template"), "{e}");
}

#[test]
fn an_isolated_child_that_dies_in_a_serving_test_loses_only_that_models_serving_tests() {
    let dir = tempfile::tempdir().unwrap();
    tiny(dir.path());
    synth_to(&dir.path().join("tiny2.gguf"), &["--seed", "2"]);
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        "[sweep]\nn_prompt = 8\nn_gen = 0\nn_threads = 1\nrepetitions = 1\n\
         [serving]\nmodes = [\"parallel\"]\nn_prompt = 8\nn_gen = 4\nn_parallel = [1, 2]\n\
         repetitions = 1\n\
         [[model]]\nname = \"a\"\npath = \"tiny.gguf\"\n\
         [[model]]\nname = \"b\"\npath = \"tiny2.gguf\"\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = tpsbench()
        .args(["run", "--quiet", "--isolate", "--config"])
        .arg(&config)
        .arg("--results-dir")
        .arg(&results)
        .env("TPSBENCH_FAULT_ABORT_AT", "a/F32/serve-parallel/pp8+tg4/B1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = std::fs::read_dir(&results)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut got: Vec<(String, String)> = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().into(),
                t["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    got.sort();
    let want = [
        ("a/F32/pp8", "ok"),
        ("a/F32/serve-parallel/pp8+tg4/B1", "failed"),
        ("a/F32/serve-parallel/pp8+tg4/B2", "failed"),
        ("b/F32/pp8", "ok"),
        ("b/F32/serve-parallel/pp8+tg4/B1", "ok"),
        ("b/F32/serve-parallel/pp8+tg4/B2", "ok"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(
        got, want,
        "each test once; the crashed model's serving tests recorded as failed"
    );
    let err = v["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["status"] == "failed")
        .unwrap()["error"]
        .to_string();
    assert!(err.contains("signal 6"), "{err}");
}

#[test]
fn a_sharegpt_file_is_sampled_as_vllm_samples_it_and_each_request_generates_its_replys_length() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sg.json"),
        r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Tell me a story about a robot who wanted to learn to paint"},
    {"from": "gpt", "value": "Once upon a time there was a robot who dreamed of colours and light, and every night it painted the sky"}]},
  {"id": "b", "conversations": [
    {"from": "human", "value": "What is the quick brown fox known for in typing practice"},
    {"from": "gpt", "value": "It uses every letter of the alphabet"}]}
]"#,
    )
    .unwrap();
    let (v, ok) = run_json(
        dir.path(),
        "modes = ['request']\ndataset = 'sg.json'\nn_gen = 3\nn_requests = 4\nrepetitions = 1",
    );
    assert!(ok, "{v}");
    let s = &v["tests"][0]["serving"];
    assert_eq!(s["dataset"]["format"], "sharegpt");
    assert_eq!(s["dataset"]["n_prompts"], 2);
    let gens: Vec<u64> = s["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n_gen"].as_u64().unwrap())
        .collect();
    assert_eq!(gens.len(), 4);
    assert!(
        gens.iter().all(|&g| g > 3),
        "each reply's token count, not n_gen = 3: {gens:?}"
    );
    let mut distinct = gens.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 2, "both replies' lengths, cycled: {gens:?}");
}
