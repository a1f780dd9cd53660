use super::*;
use crate::config::parse;
use crate::engine::tests::mock::MockEngine;
use crate::gguf::{tiny, writer::write_gguf};
use crate::output::progress::NoProgress;
use crate::report::export::fixtures;
use std::path::Path;
use std::time::Duration;

/// A directory holding a valid GGUF named "mock.gguf" (the mock engine loads only "mock"
/// paths; the runner's header check reads the real file) and a config that uses it.
fn setup(sweep: &str, extra_models: &str) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("mock.gguf")).unwrap();
    write_gguf(&mut f, &tiny::document(1)).unwrap();
    let src = format!("[sweep]\n{sweep}\n[[model]]\nname='m'\npath='mock.gguf'\n{extra_models}");
    let cfg = parse(&dir.path().join("models.toml"), &src, 2).unwrap();
    (dir, cfg)
}

fn opts(cfg: Config, dir: &Path) -> RunOptions {
    RunOptions {
        config: cfg,
        filters: vec![],
        shard: None,
        results_dir: Some(dir.join("results")),
        resume: None,
        only_model: None,
        stop: None,
        bandwidth: Default::default(),
        power: false,
        scope: Scope::All,
        quiet: true,
    }
}

#[test]
fn a_sweep_measures_every_test_and_writes_the_file() {
    let (dir, cfg) = setup("n_prompt=[64,128]\nn_gen=16\nrepetitions=3\nn_batch=32", "");
    let e = MockEngine::new(1_000_000, 10_000_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.failed, 0);
    assert_eq!(out.record.tests.len(), 3);
    let pp64 = &out.record.tests[0];
    assert_eq!(pp64.test, "pp64");
    assert_eq!(pp64.samples_ns, vec![64_000_000; 3]);
    assert!((pp64.avg_ts.unwrap() - 1000.0).abs() < 1e-6);
    assert_eq!(out.record.tests[2].avg_ts, Some(100.0));
    assert_eq!(out.record.models[0].quantization.as_deref(), Some("F32"));
    assert_eq!(
        out.record.models[0].model_type.as_deref(),
        Some("mock 1M F32")
    );
    assert_eq!(e.log.borrow().loads, 1, "one load for the whole model");
    assert_eq!(e.log.borrow().sessions, 3, "a fresh context per test");
    let on_disk = crate::record::results::read(out.path.as_ref().unwrap()).unwrap();
    assert_eq!(on_disk, out.record);
    assert!(on_disk.run.finished_at.is_some());
}

#[test]
fn a_failing_test_is_recorded_and_the_sweep_goes_on() {
    let (dir, cfg) = setup("n_prompt=[64, 4000]\nn_gen=0\nrepetitions=1", "");
    let mut e = MockEngine::new(1_000, 1_000);
    e.max_ctx = 1000;
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.failed, 1);
    assert_eq!(out.record.tests[0].status, Status::Ok);
    let f = &out.record.tests[1];
    assert_eq!(f.status, Status::Failed);
    assert!(f.error.as_deref().unwrap().contains("4000"));
    assert!(f.avg_ts.is_none() && f.samples_ns.is_empty());
}

#[test]
fn a_missing_model_is_refused_before_anything_runs() {
    let (dir, cfg) = setup(
        "n_prompt=8\nn_gen=0\nrepetitions=1",
        "[[model]]\nname='gone'\npath='nothere.gguf'\n",
    );
    let e = MockEngine::new(1_000, 1_000);
    let err = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .err()
    .unwrap();
    assert!(matches!(&err, RunnerError::BadModels { models } if models[0].0 == "gone"));
    let err = err.to_string();
    assert!(
        err.contains("model \"gone\"") && err.contains("nothere.gguf: no such file"),
        "{err}"
    );
    assert_eq!(e.log.borrow().loads, 0);
    assert!(
        !dir.path().join("results").exists(),
        "no empty result file is left behind"
    );
}

#[test]
fn a_model_the_engine_cannot_load_fails_its_tests_and_the_sweep_goes_on() {
    let (dir, mut cfg) = setup("n_prompt=8\nn_gen=0\nrepetitions=1", "");
    // A valid GGUF the (mock) engine refuses: the test is recorded as failed.
    let other = dir.path().join("other.gguf");
    std::fs::copy(dir.path().join("mock.gguf"), &other).unwrap();
    let mut m = cfg.models[0].clone();
    m.name = "other".into();
    m.path = Some(other);
    cfg.models.push(m);
    let e = MockEngine::new(1_000, 1_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.failed, 1);
    assert_eq!(out.record.tests[0].status, Status::Ok);
    assert!(
        out.record.tests[1]
            .error
            .as_deref()
            .unwrap()
            .contains("cannot load")
    );
}

#[test]
fn filters_select_tests_by_id_and_an_empty_selection_is_an_error() {
    let (dir, cfg) = setup("n_prompt=8\nn_gen=4\nrepetitions=1", "");
    let e = MockEngine::new(1_000, 1_000);
    let mut o = opts(cfg, dir.path());
    o.filters = vec!["m/F32/tg4".into()];
    let out = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    assert_eq!(out.record.tests.len(), 1);
    o.filters = vec!["nothing".into()];
    assert!(run(&e, fixtures::run().run, &o, &mut NoProgress).is_err());
}

#[test]
fn adaptive_stopping_ends_on_precision_or_on_the_maximum_and_says_why() {
    use crate::stats::analysis::StopReason;
    let (dir, cfg) = setup(
        "n_prompt=64\nn_gen=0\nrepetitions=3\nci_target=0.01\nmax_repetitions=12",
        "",
    );
    // Deterministic costs: the interval is zero-width after the minimum.
    let e = MockEngine::new(1_000_000, 1_000_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg.clone(), dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    let st = out.record.tests[0].stats.as_ref().unwrap();
    assert_eq!(st.stop_reason, StopReason::Precision);
    // Precise at 6 and at 7 repetitions: the stop needs two looks in a row.
    assert_eq!(out.record.tests[0].samples_ns.len(), 7);
    // Noise of up to 50% of a repetition: the 1% target cannot be met in 12 repetitions.
    let mut noisy = MockEngine::new(1_000_000, 1_000_000);
    noisy.jitter_ns = 32_000_000;
    let out = run(
        &noisy,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    let t = &out.record.tests[0];
    assert_eq!(
        t.stats.as_ref().unwrap().stop_reason,
        StopReason::MaxRepetitions
    );
    assert_eq!(t.samples_ns.len(), 12);
    assert!(
        t.stats
            .as_ref()
            .unwrap()
            .flags
            .contains(&"imprecise".to_string())
    );
}

#[test]
fn fixed_repetitions_record_the_fixed_stop_reason_and_intervals() {
    let (dir, cfg) = setup("n_prompt=64\nn_gen=0\nrepetitions=4", "");
    let mut e = MockEngine::new(1_000_000, 1_000_000);
    e.jitter_ns = 1_000_000;
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    let t = &out.record.tests[0];
    let st = t.stats.as_ref().unwrap();
    assert_eq!(st.stop_reason, crate::stats::analysis::StopReason::Fixed);
    assert_eq!(t.samples_ns.len(), 4);
    assert!(st.median_ci.lo <= t.median_ts.unwrap() && t.median_ts.unwrap() <= st.median_ci.hi);
}

#[test]
fn resume_runs_only_the_tests_the_file_does_not_hold() {
    let (dir, cfg) = setup("n_prompt=[8,16,32]\nn_gen=4\nrepetitions=1", "");
    let e = MockEngine::new(1_000, 1_000);
    let mut o = opts(cfg, dir.path());
    let first = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    assert_eq!(first.record.tests.len(), 4);
    // As if interrupted before tg4: the file holds the first three tests.
    let path = first.path.clone().unwrap();
    let mut cut = crate::record::results::read(&path).unwrap();
    cut.tests.truncate(3);
    crate::record::results::write_atomic(&path, &cut).unwrap();
    e.log.borrow_mut().sessions = 3;
    o.resume = first.path.clone();
    let second = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    assert_eq!(second.path, first.path, "the same file is continued");
    let ids: Vec<&str> = second.record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["m/F32/pp8", "m/F32/pp16", "m/F32/pp32", "m/F32/tg4"]);
    assert_eq!(second.record.run.resumed_at.len(), 1);
    assert_eq!(e.log.borrow().sessions, 4, "no test measured twice");
}

#[test]
fn resume_runs_the_second_copy_of_a_test_the_sweep_lists_twice() {
    // `n_prompt = [8, 8]` (what `compare-llama-bench --contexts 2` writes): two tests.
    let (dir, cfg) = setup("n_prompt=[8,8]\nn_gen=0\nrepetitions=1", "");
    let e = MockEngine::new(1_000, 1_000);
    let mut o = opts(cfg, dir.path());
    let first = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    let ids: Vec<&str> = first.record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["m/F32/pp8", "m/F32/pp8/copy=2"]);
    let path = first.path.clone().unwrap();
    let mut cut = crate::record::results::read(&path).unwrap();
    cut.tests.truncate(1);
    crate::record::results::write_atomic(&path, &cut).unwrap();
    e.log.borrow_mut().sessions = 1;
    o.resume = first.path.clone();
    let second = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
    let ids: Vec<&str> = second.record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["m/F32/pp8", "m/F32/pp8/copy=2"],
        "the copy is not taken as done"
    );
    assert_eq!(
        e.log.borrow().sessions,
        2,
        "only the copy is measured again"
    );
}

#[test]
fn a_stop_request_ends_the_run_after_the_current_test_and_keeps_it() {
    let (dir, cfg) = setup("n_prompt=[8,16,32]\nn_gen=0\nrepetitions=1", "");
    let e = MockEngine::new(1_000, 1_000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut o = opts(cfg, dir.path());
    o.stop = Some(stop.clone());
    // A progress sink that asks to stop when the first test finishes.
    struct StopAfterFirst(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Progress for StopAfterFirst {
        fn test_started(&mut self, _: usize, _: usize, _: &str) {}
        fn repetition(&mut self, _: u32, _: u32) {}
        fn test_finished(&mut self, _: &str, _: Duration, _: Option<Duration>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        fn note(&mut self, _: &str) {}
    }
    let out = run(&e, fixtures::run().run, &o, &mut StopAfterFirst(stop)).unwrap();
    assert!(out.interrupted);
    assert_eq!(out.record.tests.len(), 1);
    let on_disk = crate::record::results::read(out.path.as_ref().unwrap()).unwrap();
    assert_eq!(on_disk.tests.len(), 1);
    assert!(
        on_disk.run.finished_at.is_none(),
        "an interrupted run is not marked finished"
    );
}

#[test]
fn shards_split_the_plan_and_an_empty_shard_is_not_an_error() {
    let (dir, cfg) = setup("n_prompt=[16,32]\nn_gen=[4]\nrepetitions=1\nn_batch=32", "");
    let e = MockEngine::new(1_000_000, 10_000_000);
    let mut ids = Vec::new();
    for i in 0..4 {
        let mut o = opts(cfg.clone(), dir.path());
        o.shard = Some(crate::plan::Shard { index: i, count: 4 });
        let out = run(&e, fixtures::run().run, &o, &mut NoProgress).unwrap();
        assert_eq!(out.path.is_none(), out.record.tests.is_empty(), "shard {i}");
        ids.extend(out.record.tests.iter().map(|t| t.id.clone()));
    }
    ids.sort();
    assert_eq!(ids, vec!["m/F32/pp16", "m/F32/pp32", "m/F32/tg4"]);
}

#[test]
fn gpu_model_settings_reload_the_model_and_every_test_records_its_placement() {
    use crate::config::SplitMode;
    let (dir, cfg) = setup(
        "n_prompt=16\nn_gen=0\nrepetitions=1\nsplit_mode=['layer','row']\nmain_gpu=[0,1]\n\
         no_kv_offload=[false,true]",
        "",
    );
    let e = MockEngine::new(1_000, 1_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out.record.tests.len(), 8);
    let loads: Vec<(SplitMode, i32)> = e
        .log
        .borrow()
        .load_params
        .iter()
        .map(|l| (l.params.split_mode, l.params.main_gpu))
        .collect();
    assert_eq!(
        loads,
        vec![
            (SplitMode::Layer, 0),
            (SplitMode::Layer, 1),
            (SplitMode::Row, 0),
            (SplitMode::Row, 1)
        ],
        "one load per model-level setting; no_kv_offload only needs a new context"
    );
    for t in &out.record.tests {
        let p = t.placement.as_ref().expect("placement recorded");
        let kv: Vec<&str> = p
            .devices
            .iter()
            .filter(|d| d.kv_bytes > 0)
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(kv, ["CPU"]);
    }
    assert!(out.record.tests[1].params.no_kv_offload);
    let on_disk = crate::record::results::read(out.path.as_ref().unwrap()).unwrap();
    assert_eq!(
        on_disk, out.record,
        "placement round-trips through the file"
    );
}

#[test]
fn a_test_that_fails_before_its_context_exists_gets_no_placement() {
    // 5000 tokens exceed the mock model's training context (4096): refused before a session.
    let (dir, cfg) = setup("n_prompt=[64, 5000]\nn_gen=0\nrepetitions=1", "");
    let e = MockEngine::new(1_000, 1_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    assert!(out.record.tests[0].placement.is_some());
    assert_eq!(out.record.tests[1].status, Status::Failed);
    assert_eq!(
        out.record.tests[1].placement, None,
        "not the previous test's placement"
    );
}

#[test]
fn thread_counts_above_the_physical_cores_are_warned_once_each() {
    let test = |n: u32| {
        let axes = crate::config::Axes::llama_bench_defaults(n);
        let p = crate::plan::expand_axes(&axes).remove(0);
        crate::plan::PlannedTest::bench(0, format!("m/tg16/t{n}"), p)
    };
    let tests = [test(2), test(8), test(8), test(4)];
    let w = prepare::thread_warnings(&tests, 2);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("n_threads 4 exceeds the 2 physical cores"),
        "{w:?}"
    );
    assert!(w[1].starts_with("n_threads 8 exceeds"), "{w:?}");
    assert!(prepare::thread_warnings(&tests, 8).is_empty());
}

/// Progress that keeps the order the tests started in.
#[derive(Default)]
struct Order(Vec<String>);

impl crate::output::progress::Progress for Order {
    fn test_started(&mut self, _i: usize, _n: usize, id: &str) {
        self.0.push(id.to_string());
    }
    fn repetition(&mut self, _: u32, _: u32) {}
    fn test_finished(&mut self, _: &str, _: Duration, _: Option<Duration>) {}
    fn note(&mut self, _: &str) {}
}

#[test]
fn rounds_interleave_the_tests_rotate_the_order_and_keep_each_round() {
    let (dir, cfg) = setup(
        "n_prompt=[32,64]\nn_gen=8\nrepetitions=3\nrounds=3\nn_batch=32",
        "",
    );
    assert_eq!(cfg.settings.rounds, 3);
    let mut e = MockEngine::new(1_000_000, 10_000_000);
    e.jitter_ns = 4_000_000;
    let mut order = Order::default();
    let out = run(&e, fixtures::run().run, &opts(cfg, dir.path()), &mut order).unwrap();
    assert_eq!(out.failed, 0);
    assert_eq!(out.record.run.rounds, 3);
    assert_eq!(out.record.tests.len(), 3, "one record per test");
    // A B C, B C A, C A B: every test is measured once per round, never twice in a row.
    let ids: Vec<&str> = out.record.tests.iter().map(|t| t.id.as_str()).collect();
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let expected: Vec<&str> = vec![a, b, c, b, c, a, c, a, b];
    assert_eq!(order.0, expected);
    for t in &out.record.tests {
        assert_eq!(t.rounds.len(), 3, "{}", t.id);
        assert_eq!(t.samples_ns.len(), 9, "every round's repetitions");
        assert!(t.rounds.iter().all(|r| r.samples_ns.len() == 3));
        let ci = t.stats.as_ref().unwrap().interval.unwrap();
        assert_eq!(ci.covers, crate::stats::analysis::Covers::BetweenRounds);
        assert_eq!(ci.n, 3);
        assert!(
            t.rounds[0]
                .interval
                .is_some_and(|r| r.covers == crate::stats::analysis::Covers::WithinLaunch)
        );
    }
    // On disk as it is in memory, and readable.
    let back = crate::record::results::read(out.path.as_ref().unwrap()).unwrap();
    let samples = |t: &TestRecord| -> Vec<Vec<u64>> {
        t.rounds.iter().map(|r| r.samples_ns.clone()).collect()
    };
    assert_eq!(samples(&back.tests[0]), samples(&out.record.tests[0]));
}

#[test]
fn one_round_writes_no_rounds_and_says_its_interval_covers_one_launch() {
    let (dir, cfg) = setup("n_prompt=32\nn_gen=0\nrepetitions=3", "");
    let e = MockEngine::new(1_000_000, 10_000_000);
    let out = run(
        &e,
        fixtures::run().run,
        &opts(cfg, dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    let t = &out.record.tests[0];
    assert!(t.rounds.is_empty());
    let ci = t.stats.as_ref().unwrap().interval.unwrap();
    assert_eq!(ci.covers, crate::stats::analysis::Covers::WithinLaunch);
    assert_eq!(ci.label(), "95% within one launch");
    let text = std::fs::read_to_string(out.path.unwrap()).unwrap();
    assert!(
        !text.contains("\"rounds\""),
        "one round leaves the file as before"
    );
}

#[test]
fn a_resumed_run_measures_only_the_rounds_it_lacks() {
    let (dir, cfg) = setup("n_prompt=32\nn_gen=8\nrepetitions=2\nn_batch=32", "");
    let e = MockEngine::new(1_000_000, 10_000_000);
    let first = run(
        &e,
        fixtures::run().run,
        &opts(cfg.clone(), dir.path()),
        &mut NoProgress,
    )
    .unwrap();
    // The same plan asked for 2 rounds: the one-round file gets a second round.
    let mut more = cfg.clone();
    more.settings.rounds = 2;
    let mut o = opts(more, dir.path());
    o.resume = first.path.clone();
    let mut order = Order::default();
    let out = run(&e, fixtures::run().run, &o, &mut order).unwrap();
    assert_eq!(
        order.0.len(),
        2,
        "one more round of each test: {:?}",
        order.0
    );
    assert!(out.record.tests.iter().all(|t| t.rounds.len() == 2));
}

#[test]
fn a_busy_machine_gets_a_warning_not_another_default() {
    use super::prepare::busy_warning;
    assert_eq!(busy_warning(Some([0.4, 0.2, 0.1]), 2), None);
    let w = busy_warning(Some([1.83, 1.0, 0.5]), 2).unwrap();
    assert!(
        w.contains("busy (1-minute load average 1.83, above 1.0 for 2 CPUs)"),
        "{w}"
    );
    assert_eq!(busy_warning(None, 2), None);
}
