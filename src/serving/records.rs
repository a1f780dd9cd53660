//! The test records of serving tests: their identity, a fresh record, and which tests a
//! result file already holds (`--resume`, `--isolate` children, a child that died).

use super::config::ServingConfig;
use super::dataset::PromptFile;
use super::plan::ServingTest;
use crate::config::Config;
use crate::plan::PlannedTest;
use crate::record::{ModelRecord, RunRecord, TestRecord};

/// The serving tests still to run: those of `only_model` (when set; `--isolate` children)
/// that `done` (a resumed file) does not hold, matched by identity and model as
/// `runner::select` matches llama-bench tests.
pub fn remaining(
    tests: Vec<ServingTest>,
    config: &Config,
    models: &[ModelRecord],
    prompts: Option<&PromptFile>,
    only_model: Option<&str>,
    done: &RunRecord,
) -> Vec<ServingTest> {
    let Some(sc) = &config.serving else {
        return tests;
    };
    let seed = sc.seed.unwrap_or(config.settings.seed);
    tests
        .into_iter()
        .filter(|t| only_model.is_none_or(|m| config.models[t.model].name == m))
        .filter(|t| {
            let id = identity(&models[t.model].sha256, t, sc, seed, prompts);
            let name = &config.models[t.model].name;
            !done
                .tests
                .iter()
                .any(|d| d.identity == id && &d.model == name)
        })
        .collect()
}

/// Failed records for the serving tests of model `name` that `record` does not hold: what an
/// isolated child that died took with it.
pub fn lost(
    tests: &[ServingTest],
    config: &Config,
    models: &[ModelRecord],
    prompts: Option<&PromptFile>,
    record: &RunRecord,
    name: &str,
    why: &str,
) -> Vec<TestRecord> {
    let Some(sc) = &config.serving else {
        return Vec::new();
    };
    let seed = sc.seed.unwrap_or(config.settings.seed);
    remaining(tests.to_vec(), config, models, prompts, Some(name), record)
        .iter()
        .map(|t| {
            let mut rec = new_record(t, &models[t.model], record, sc, seed, prompts);
            rec.fail(why.to_string());
            rec
        })
        .collect()
}

/// A record with the test's configuration; figures are filled after measuring.
pub(crate) fn new_record(
    t: &ServingTest,
    model: &ModelRecord,
    record: &RunRecord,
    sc: &ServingConfig,
    seed: u64,
    prompts: Option<&PromptFile>,
) -> TestRecord {
    let planned = PlannedTest {
        model: t.model,
        id: t.id.clone(),
        params: t.params.clone(),
    };
    let mut rec = crate::runner::new_test_record(&planned, model, &record.run);
    rec.test = t.name.clone();
    rec.kind = crate::plan::TestKind::of_serving_mode(t.mode.name())
        .expect("serving modes are request, parallel or arrival");
    rec.warmup = 1;
    rec.seed = seed;
    rec.identity = identity(&model.sha256, t, sc, seed, prompts);
    rec
}

/// SHA-256 of the model's SHA-256, the context parameters and everything that defines the
/// serving workload: stable across runs and machines, distinct from llama-bench tests.
fn identity(
    model_sha256: &str,
    t: &ServingTest,
    sc: &ServingConfig,
    seed: u64,
    prompts: Option<&PromptFile>,
) -> String {
    use sha2::{Digest, Sha256};
    let spec = serde_json::json!({
        "mode": t.mode.name(), "n_parallel": t.n_parallel, "n_seq_max": t.n_seq_max,
        "kv_unified": sc.kv_unified, "shared_prompt": t.shared, "arrival_rate": t.rate,
        "n_requests": sc.n_requests, "dataset_sha256": prompts.map(|p| p.sha256.clone()),
        "chat_template": sc.chat_template, "temperature": sc.temperature, "seed": seed,
    });
    let mut h = Sha256::new();
    h.update(model_sha256.as_bytes());
    h.update(b"\n");
    h.update(serde_json::to_vec(&t.params).expect("params serialize"));
    h.update(b"\nserving ");
    h.update(spec.to_string().as_bytes());
    format!("{:x}", h.finalize())
}
