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
        identity: None,
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

/// The file as `load::board` takes it, with its JSON edited by `extend`. Optional parts
/// set by `extend` may be partial (`quality(0.01)`, a serving block with its rates only):
/// the fields they leave out are filled with zeros, `false` or empty, so that the record
/// reads back typed.
pub fn file(name: &str, rec: RunRecord, extend: impl FnOnce(&mut Value)) -> (PathBuf, RunRecord) {
    let mut raw = serde_json::to_value(&rec).unwrap();
    extend(&mut raw);
    for m in raw["models"].as_array_mut().unwrap() {
        complete(m, "quality", quality_template());
        complete(m, "provenance", provenance_template());
    }
    for t in raw["tests"].as_array_mut().unwrap() {
        complete(t, "serving", serving_template());
        let s = &mut t["serving"];
        if s.is_object() {
            complete(s, "server", server_template());
            complete(s, "goodput", goodput_template());
        }
    }
    (PathBuf::from(name), serde_json::from_value(raw).unwrap())
}

/// `parent[key]`, when set, over `template`: its fields win, nested objects merged.
fn complete(parent: &mut Value, key: &str, template: Value) {
    fn over(base: &mut Value, top: &Value) {
        match (base, top) {
            (Value::Object(b), Value::Object(t)) => {
                for (k, v) in t {
                    match b.get_mut(k) {
                        Some(x) if x.is_object() && v.is_object() => over(x, v),
                        _ => {
                            b.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (b, t) => *b = t.clone(),
        }
    }
    if let Some(given) = parent.get(key).filter(|v| v.is_object()).cloned() {
        let mut full = template;
        over(&mut full, &given);
        parent[key] = full;
    }
}

fn quality_template() -> Value {
    let mut q = json!({ "reference": "", "n_tokens": 0 });
    for k in [
        "kld_mean",
        "kld_mean_uncertainty",
        "kld_median",
        "kld_p90",
        "kld_p99",
        "kld_max",
        "ln_ppl_ratio",
        "ln_ppl_ratio_uncertainty",
        "ppl",
        "ppl_ref",
        "same_top_p",
        "same_top_p_uncertainty",
        "rms_dp",
    ] {
        q[k] = json!(0.0);
    }
    q
}

fn provenance_template() -> Value {
    json!({ "base_file": "", "base_sha256": "", "type": "", "base_type": "",
            "requantized": false, "synthetic": false, "preset": null })
}

fn serving_template() -> Value {
    let dist =
        json!({ "n": 0, "mean": 0.0, "min": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0 });
    json!({
        "mode": "parallel", "n_parallel": 1, "n_seq_max": 1, "kv_unified": false,
        "shared_prompt": false, "n_requests": 1, "repetitions": 1, "temperature": 0.0,
        "sampling_seed": 0, "n_prompt_tokens": 0, "n_output_tokens": 0,
        "ttft_ms": dist, "itl_ms": dist, "e2e_ms": dist, "tpot_ms": dist,
        "per_request_ts": null, "aggregate_pp_ts": null, "aggregate_ts": null, "total_ts": null,
        "output_ts": 0.0, "t_pp_ms": null, "t_tg_ms": null, "t_ms": 0.0,
        "overhead_ms": 0.0, "overhead_fraction": 0.0, "reps": [], "requests": []
    })
}

fn server_template() -> Value {
    json!({ "endpoint": "", "served_model": "", "api": "completions", "models": [] })
}

fn goodput_template() -> Value {
    json!({
        "slo": { "ttft_ms": null, "itl_ms": null, "e2e_ms": null, "attainment": 0.9 },
        "max_rate": null, "goodput": null, "failed_rate": null, "stopped": "", "steps": []
    })
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
