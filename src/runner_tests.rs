use super::*;
use crate::config::parse;
use crate::engine::mock::MockEngine;
use crate::export::fixtures;
use crate::gguf::{tiny, writer::write_gguf};
use crate::progress::NoProgress;

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
        command: vec![],
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
    let on_disk = crate::results::read(out.path.as_ref().unwrap()).unwrap();
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
    m.path = other;
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
