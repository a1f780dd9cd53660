//! Hand-made result files for the leaderboard's unit tests.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::plan::TestParams;
use crate::record::{ModelRecord, RunRecord, TestRecord};
use crate::report::export::fixtures;

pub fn model(name: &str, quant: &str) -> ModelRecord {
    ModelRecord {
        name: name.into(),
        path: format!("{name}.gguf"),
        model_filename: format!("{name}.gguf"),
        file_size: 1 << 20,
        sha256: format!("sha-{name}"),
        architecture: Some("llama".into()),
        quantization: Some(quant.into()),
        model_type: Some(format!("llama 135M {quant}")),
        model_size: Some(1 << 20),
        model_n_params: Some(134_515_008),
        error: None,
        bits_per_weight: None,
        tensor_types: vec![],
        provenance: None,
        quality: None,
        bytes_per_token: None,
        ref_tokens_per_token: None,
    }
}

/// A measured test; its identity is derived from model, test and threads so that equal
/// arguments give equal identities.
pub fn test(
    model: &str,
    np: u32,
    ng: u32,
    depth: u32,
    threads: u32,
    ts: f64,
    time: &str,
) -> TestRecord {
    let mut t = fixtures::run().tests[0].clone();
    t.params = TestParams {
        n_prompt: np,
        n_gen: ng,
        n_depth: depth,
        n_threads: threads,
        ..t.params
    };
    t.model = model.into();
    t.test = t.params.name();
    t.kind = crate::plan::TestKind::of_sizes(np, ng);
    t.id = format!("{model}/{}/t={threads}", t.test.replace(" @ ", "@"));
    t.identity = format!("{model}|{}|{threads}", t.test);
    t.test_time = time.into();
    t.avg_ts = Some(ts);
    t.stddev_ts = Some(ts / 50.0);
    t.median_ts = Some(ts);
    t
}

pub fn run(
    host: &str,
    started: &str,
    models: Vec<ModelRecord>,
    tests: Vec<TestRecord>,
) -> RunRecord {
    let mut r = fixtures::run();
    r.run.system.hostname = host.into();
    r.run.started_at = started.into();
    r.models = models;
    r.tests = tests;
    r
}

/// The file as `load::board` takes it, with the raw JSON edited by `extend`.
pub fn file(
    name: &str,
    rec: RunRecord,
    extend: impl FnOnce(&mut Value),
) -> (PathBuf, RunRecord, Value) {
    let mut raw = serde_json::to_value(&rec).unwrap();
    extend(&mut raw);
    (PathBuf::from(name), rec, raw)
}

pub fn quality(kld: f64) -> Value {
    json!({ "reference": "base", "n_tokens": 1000, "kld_mean": kld })
}

pub fn serving(n: u64, per_request: f64, aggregate: f64) -> Value {
    json!({ "mode": "parallel", "n_parallel": n, "per_request_ts": per_request, "aggregate_ts": aggregate })
}

/// A parallel serving test with a shared (or separate) prompt.
pub fn serving_shared(n: u64, per_request: f64, aggregate: f64, shared: bool) -> Value {
    let mut v = serving(n, per_request, aggregate);
    v["shared_prompt"] = shared.into();
    v
}
