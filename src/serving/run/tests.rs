//! The serving pipeline through the runner, on the mock engine (exact figures) and a real
//! GGUF header (the runner inspects the file before the mock "loads" it).

use std::path::Path;

use crate::config::{Config, parse};
use crate::engine::tests::mock::MockEngine;
use crate::gguf::{tiny, writer::write_gguf};
use crate::output::progress::NoProgress;
use crate::record::Status;
use crate::report::export::{Format, fixtures};
use crate::runner::{RunOptions, run};

const PP_NS: u64 = 1_000;
const GEN_NS: u64 = 1_000_000;

fn setup(serving: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("mock.gguf")).unwrap();
    write_gguf(&mut f, &tiny::document(1)).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let src = format!(
        "[sweep]\nn_prompt=8\nn_gen=4\nrepetitions=1\n[serving]\n{serving}\n\
         [[model]]\nname='m'\npath='mock.gguf'\n"
    );
    let cfg = parse(&dir.path().join("models.toml"), &src, 2).unwrap();
    (dir, cfg)
}

fn opts(cfg: Config, dir: &Path, filters: &[&str]) -> RunOptions {
    RunOptions {
        config: cfg,
        filters: filters.iter().map(|s| s.to_string()).collect(),
        shard: None,
        results_dir: Some(dir.join("results")),
        resume: None,
        only_model: None,
        stop: None,
        bandwidth: Default::default(),
        power: false,
        scope: crate::runner::Scope::All,
        quiet: true,
    }
}

#[test]
fn serving_tests_follow_the_llama_bench_tests_with_exact_figures() {
    let (dir, cfg) = setup(
        "modes=['request','parallel','arrival']\nn_prompt=16\nn_gen=5\nn_parallel=[1,2]\n\
         repetitions=2\nn_requests=3\narrival_rate=1000\nslots=2\n\
         targets={per_request_ts=100, ttft_ms=1000}\nprice_per_hour=3.6",
        &[],
    );
    let e = MockEngine::new(PP_NS, GEN_NS);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path(), &[]),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.failed, 0);
    let ids: Vec<&str> = out.record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "m/F32/pp8",
            "m/F32/tg4",
            "m/F32/serve-request/pp16+tg5",
            "m/F32/serve-parallel/pp16+tg5/B1",
            "m/F32/serve-parallel/pp16+tg5/B2",
            "m/F32/serve-arrival/pp16+tg5/rate1000/slots2",
        ]
    );
    assert!(out.record.tests[..2].iter().all(|t| t.serving.is_none()));

    let b2 = &out.record.tests[4];
    let s = b2.serving.as_ref().unwrap();
    assert_eq!(b2.test, "parallel pp16+tg5 B2");
    assert_eq!(
        (s.mode.name(), s.n_parallel, s.n_seq_max),
        ("parallel", 2, 2)
    );
    // 4 steps of 2 tokens, each GEN_NS + PP_NS: S_TG = 8 / (4 · 1.001 ms)
    let s_tg = 8.0 / (4.0 * (GEN_NS + PP_NS) as f64 * 1e-9);
    assert!((s.aggregate_ts.unwrap() - s_tg).abs() < 1e-6);
    assert!((s.per_request_ts.unwrap() - s_tg / 2.0).abs() < 1e-6);
    assert_eq!(b2.samples_ts.len(), 2, "one sample per repetition");
    assert_eq!(
        b2.avg_ts, s.aggregate_ts,
        "avg_ts is S_TG for parallel tests"
    );
    assert_eq!(
        (s.n_prompt_tokens, s.n_output_tokens, s.n_kv),
        (32, 10, Some(2 * 20))
    );
    assert_eq!(s.requests.len(), 2 * 2, "B requests per repetition");
    assert_eq!(s.ttft_ms.n, 4);
    // 1.001 ms per token: 999 t/s ≥ 100; TTFT 1.031 ms ≤ 1000
    assert_eq!(s.meets_targets, Some(true));
    assert!(s.cost_per_mtok.unwrap() > 0.0);

    let b1 = out.record.tests[3].serving.as_ref().unwrap();
    assert_eq!(b1.aggregate_ts, b1.per_request_ts, "B = 1");
    assert_ne!(out.record.tests[3].identity, out.record.tests[4].identity);
    assert_eq!(out.record.tests[3].params, out.record.tests[4].params);

    let req = out.record.tests[2].serving.as_ref().unwrap();
    assert_eq!((req.n_requests, req.requests.len()), (3, 6));
    assert_eq!(req.tpot_ms.p50, GEN_NS as f64 / 1e6);

    let arr = out.record.tests[5].serving.as_ref().unwrap();
    assert_eq!(arr.arrival_rate, Some(1000.0));
    assert_eq!(arr.n_output_tokens, 15);
    assert!(arr.queue_ms.is_some() && arr.aggregate_pp_ts.is_none());

    // The file holds what the run measured (compared as JSON: floats print shortest).
    let on_disk = crate::record::results::read(out.path.as_ref().unwrap()).unwrap();
    let reparsed: serde_json::Value =
        serde_json::from_str(&serde_json::to_string(&out.record).unwrap()).unwrap();
    assert_eq!(serde_json::to_value(&on_disk).unwrap(), reparsed);

    let md = String::from_utf8(Format::Md.render(&out.record)).unwrap();
    assert!(
        md.contains("| S_TG t/s |") && md.contains("parallel pp16+tg5 B2"),
        "{md}"
    );
    assert!(md.contains("capacity, m parallel: B = 2 meets"), "{md}");
    assert!(md.lines().next().unwrap().starts_with("| model "), "{md}");
}

#[test]
fn a_filter_can_select_serving_tests_alone() {
    let (dir, cfg) = setup("modes=['parallel']\nn_parallel=[1,4]\nrepetitions=1", &[]);
    let e = MockEngine::new(PP_NS, GEN_NS);
    let o = opts(cfg, dir.path(), &["serve-parallel/pp128+tg64/B1"]);
    let out = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    assert_eq!(out.record.tests.len(), 1);
    let s = out.record.tests[0].serving.as_ref().unwrap();
    assert_eq!(
        (s.n_parallel, s.n_seq_max),
        (1, 4),
        "the group's context, not the filter's"
    );
    let md = String::from_utf8(Format::Md.render(&out.record)).unwrap();
    assert!(md.trim_start().starts_with("| model | test "), "{md}");
    assert!(md.contains("| parallel pp128+tg64 B1 |   1 |"), "{md}");
}

#[test]
fn a_prompt_file_is_tokenized_templated_hashed_and_replayed() {
    let jsonl = "{\"prompt\": \"one two three\", \"max_tokens\": 3}\n{\"prompt\": \"four\"}\n";
    let (dir, cfg) = setup(
        "modes=['request','arrival']\ndataset='p.jsonl'\nchat_template=true\nn_gen=2\n\
         n_requests=3\narrival_rate=5\nrepetitions=1",
        &[("p.jsonl", jsonl)],
    );
    let e = MockEngine::new(PP_NS, GEN_NS);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path(), &["serve-"]),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.record.tests[0].id, "m/F32/serve-request/p.jsonl");
    let s = out.record.tests[0].serving.as_ref().expect("measured");
    let d = s.dataset.as_ref().expect("dataset info");
    assert_eq!(
        (d.name.as_str(), d.n_prompts, d.chat_template),
        ("p.jsonl", 2, true)
    );
    assert_eq!(d.sha256.len(), 64);
    // mock template "<|user|> ... <|assistant|>" adds 2 words; BOS adds 1
    let lens: Vec<u32> = s.requests.iter().map(|r| r.n_prompt).collect();
    assert_eq!(lens, [6, 4, 6], "prompts cycle");
    let gens: Vec<u32> = s.requests.iter().map(|r| r.n_gen).collect();
    assert_eq!(gens, [3, 2, 3], "max_tokens, else n_gen");
    assert_eq!(d.prompt_tokens.max, 6.0);
    assert_eq!(
        out.record.tests[0].params.n_prompt, 0,
        "a dataset has no fixed n_prompt"
    );
    let a = out.record.tests[1].serving.as_ref().unwrap();
    assert_eq!(a.n_output_tokens, 8);
    assert_eq!(a.dataset, s.dataset);
}

#[test]
fn a_missing_prompt_file_is_refused_before_anything_runs() {
    let (dir, cfg) = setup("dataset='none.jsonl'", &[]);
    let e = MockEngine::new(PP_NS, GEN_NS);
    let err = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path(), &[]),
        &mut NoProgress,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("none.jsonl"), "{err}");
    assert_eq!(e.log.borrow().loads, 0);
}

#[test]
fn a_serving_test_that_does_not_fit_fails_alone() {
    let (dir, cfg) = setup("modes=['parallel']\nn_parallel=[1,2]\nrepetitions=1", &[]);
    let mut e = MockEngine::new(PP_NS, GEN_NS);
    e.max_ctx = 300; // the group needs 2 · (128 + 63)
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path(), &[]),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.failed, 2, "both tests of the group");
    assert_eq!(out.record.tests[0].status, Status::Ok, "pp8 ran");
    let md = String::from_utf8(Format::Md.render(&out.record)).unwrap();
    assert!(md.contains("failed: failed to create a context"), "{md}");
}

#[test]
fn a_resumed_run_keeps_its_serving_tests_and_an_isolated_child_runs_only_its_model() {
    let (dir, cfg) = setup(
        "modes=['parallel']\nn_prompt=16\nn_gen=5\nn_parallel=[1,2]",
        &[],
    );
    let e = MockEngine::new(PP_NS, GEN_NS);
    let first = run(
        &e,
        fixtures::run().run,
        &opts(cfg.clone(), dir.path(), &[]),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(first.record.tests.len(), 4);
    let sessions = e.log.borrow().sessions;
    let mut again = opts(cfg.clone(), dir.path(), &[]);
    again.resume = first.path.clone();
    let resumed = run(&e, fixtures::run().run, &again, &mut NoProgress).unwrap();
    let ids = |r: &crate::record::RunRecord| -> Vec<String> {
        r.tests.iter().map(|t| t.identity.clone()).collect()
    };
    assert_eq!(
        ids(&resumed.record),
        ids(&first.record),
        "nothing run twice"
    );
    assert_eq!(e.log.borrow().sessions, sessions, "no context made");
    // An `--isolate` child for another model runs none of this model's serving tests.
    let mut other = opts(cfg, dir.path(), &[]);
    other.only_model = Some("another".into());
    other.results_dir = None;
    let err = run(&e, fixtures::run().run, &other, &mut NoProgress);
    let ran = err.map(|o| o.record.tests.len()).unwrap_or(0);
    assert_eq!(ran, 0);
}

#[test]
fn shards_split_serving_groups_so_each_serving_test_runs_once() {
    let (dir, cfg) = setup(
        "modes=['request','parallel']\nn_prompt=16\nn_gen=5\nn_parallel=[1,2]",
        &[],
    );
    let e = MockEngine::new(PP_NS, GEN_NS);
    let mut ids: Vec<String> = Vec::new();
    for index in 0..3 {
        let mut o = opts(cfg.clone(), dir.path(), &[]);
        o.shard = Some(crate::plan::Shard { index, count: 3 });
        let out = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
        ids.extend(out.record.tests.iter().map(|t| t.id.clone()));
    }
    ids.sort();
    assert_eq!(
        ids,
        [
            "m/F32/pp8",
            "m/F32/serve-parallel/pp16+tg5/B1",
            "m/F32/serve-parallel/pp16+tg5/B2",
            "m/F32/serve-request/pp16+tg5",
            "m/F32/tg4",
        ]
    );
}
