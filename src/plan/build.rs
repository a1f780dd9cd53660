//! The whole plan of a configuration in run order, each test with its identity; what the
//! files hold comes in as [`Facts`]. Order: model by model; within one, tests grouped by
//! load key, the llama-bench tests, then serving, then the variant's quality test.

use super::serving::{ServingTest, serving_identity};
use super::{
    ModelSource, PlanModel, PlannedTest, TestKind, TestParams, expand_axes, number_repeats, test_id,
};
use crate::config::ladder::RefSpec;
use crate::config::{Axes, Config, RunSettings};
use crate::util::hash::sha256_hex;

/// What the runner read from the files that the plan depends on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Per `[[model]]`, in order: the quantization label used in ids and the file's SHA-256.
    pub models: Vec<ModelFacts>,
    pub ladders: Vec<LadderFacts>,
    /// SHA-256 of the `[serving]` prompt file, when there is one.
    pub dataset_sha256: Option<String>,
    pub speculative_sha256: Option<String>,
    /// SHA-256 of the `[sweep] text` file, when there is one: in the identity of every
    /// `tokens = "text"` test.
    pub text_sha256: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelFacts {
    pub label: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LadderFacts {
    /// The base file's SHA-256: with the type, it names a variant before it is built.
    pub sha256: String,
    /// Random weights: speed only, no quality tests.
    pub synthetic: bool,
    /// Per file variant, in order: its tensor mix's label and its SHA-256.
    pub files: Vec<ModelFacts>,
}

/// What a test of each kind needs beyond its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// pp, tg, pg: llama-bench's loop.
    Bench,
    /// request, parallel, arrival: one test of the `[serving]` table. Boxed: inline it made
    /// every planned test 384 bytes instead of 192, and a run holds several lists of them.
    Serving(Box<ServingTest>),
    /// KLD and perplexity of a ladder variant against the ladder's reference.
    Quality { ladder: usize },
    /// A drafter setting against plain decoding (`[speculative]`).
    Speculative(Box<super::speculative::SpecTest>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub models: Vec<PlanModel>,
    pub tests: Vec<PlannedTest>,
}

/// The plan of `config` with `facts`, keeping the tests whose id contains one of `filters`
/// (all when there is none).
pub fn build(config: &Config, facts: &Facts, filters: &[String]) -> Plan {
    let mut models = Vec::new();
    let mut tests: Vec<PlannedTest> = Vec::new();
    let labels: Vec<String> = facts.models.iter().map(|m| m.label.clone()).collect();
    let serving = super::serving::expand(config, &labels, &[]);
    for (mi, m) in config.models.iter().enumerate() {
        let f = facts.models.get(mi).cloned().unwrap_or_default();
        models.push(PlanModel {
            name: m.name.clone(),
            label: f.label.clone(),
            // A served-only entry has no file and no in-process test; it keeps its place so
            // that plan models and `[[model]]` entries share indices.
            source: ModelSource::File(m.path.clone().unwrap_or_default()),
            key: f.sha256.clone(),
        });
        let mut own = match m.path {
            Some(_) => bench_tests(mi, &models[mi], &m.axes, facts),
            None => Vec::new(),
        };
        for s in serving.iter().filter(|s| s.model == mi) {
            own.push(serving_test(s, config, facts, &f.sha256));
        }
        tests.extend(by_load_key(own));
    }
    for (li, l) in config.ladders.iter().enumerate() {
        let lf = facts.ladders.get(li).cloned().unwrap_or_default();
        for (name, label, key, source) in ladder_models(li, l, &lf) {
            let mi = models.len();
            let m = PlanModel {
                name,
                label,
                source,
                key,
            };
            let mut own = bench_tests(mi, &m, &l.axes, facts);
            if !lf.synthetic {
                own.push(quality_test(mi, li, &m, config));
            }
            tests.extend(by_load_key(own));
            models.push(m);
        }
    }
    let spec = super::speculative::expand(config, &models, facts.speculative_sha256.as_deref());
    for mi in 0..models.len() {
        // A setting listed twice (`draft_max = [4, 4]`) is two tests, as for the sweep's axes.
        let own = spec.iter().filter(|t| t.model == mi).cloned().collect();
        tests.extend(by_load_key(own));
    }
    Plan {
        models,
        tests: super::filter(tests, filters),
    }
}

/// Ladder `li`'s models, built variants then files: name, label, key and source.
fn ladder_models(
    li: usize,
    l: &crate::config::ladder::Ladder,
    lf: &LadderFacts,
) -> Vec<(String, String, String, ModelSource)> {
    // A recipe variant is named, labelled and keyed by its recipe.
    let plain = l
        .types
        .iter()
        .map(|&t| (t, None, t.name.to_string(), String::new()));
    let recipes = l
        .recipes
        .iter()
        .enumerate()
        .map(|(ri, r)| (r.quant, Some(ri), r.name.clone(), format!("{:?}", r.recipe)));
    let built = plain.chain(recipes).map(|(t, recipe, label, how)| {
        let key = sha256_hex(format!("{}\n{label}{how}", lf.sha256));
        let source = ModelSource::Variant {
            ladder: li,
            quant: t,
            recipe,
        };
        (format!("{}-{label}", l.name), label, key, source)
    });
    // A file variant is keyed by its own SHA-256, as a `[[model]]` is.
    let given = l.files.iter().enumerate().map(|(fi, f)| {
        let ff = lf.files.get(fi).cloned().unwrap_or_default();
        let source = ModelSource::LadderFile {
            ladder: li,
            file: fi,
        };
        (f.name.clone(), ff.label, ff.sha256, source)
    });
    built.chain(given).collect()
}

fn bench_tests(mi: usize, m: &PlanModel, axes: &Axes, facts: &Facts) -> Vec<PlannedTest> {
    let (name, label, key) = (&m.name, &m.label, &m.key);
    expand_axes(axes)
        .into_iter()
        .map(|params| {
            let mut t = PlannedTest::bench(mi, test_id(name, label, &params, axes), params);
            t.identity = match (t.params.tokens.is_random(), &facts.text_sha256) {
                (true, _) | (false, None) => test_identity(key, &t.params),
                // The text is part of what the test measures: another file, another test.
                (false, Some(text)) => test_identity(&format!("{key}\ntext {text}"), &t.params),
            };
            t
        })
        .collect()
}

fn serving_test(s: &ServingTest, config: &Config, facts: &Facts, key: &str) -> PlannedTest {
    let sc = config
        .serving
        .as_ref()
        .expect("serving tests come from [serving]");
    let seed = sc.seed.unwrap_or(config.settings.seed);
    PlannedTest {
        model: s.model,
        id: s.id.clone(),
        params: s.params.clone(),
        kind: TestKind::of_serving_mode(s.mode.name()).expect("serving modes are kinds"),
        identity: serving_identity(key, s, sc, seed, facts.dataset_sha256.as_deref()),
        detail: Detail::Serving(Box::new(s.clone())),
    }
}

/// The quality test of a variant: its parameters say how the evaluation runs (n_prompt is
/// the chunk size, n_threads the evaluation threads).
fn quality_test(mi: usize, li: usize, m: &PlanModel, config: &Config) -> PlannedTest {
    let l = &config.ladders[li];
    let a = &l.axes;
    let params = TestParams {
        n_prompt: l.eval.n_ctx,
        n_batch: l.eval.n_ctx,
        n_ubatch: l.eval.n_ctx,
        // Where the pass loads the model: the first value of each model-level axis, as
        // `ladder::quality::load_params` loads it.
        n_gpu_layers: a.n_gpu_layers[0],
        n_threads: l.eval.n_threads.unwrap_or(a.n_threads[0]),
        flash_attn: a.flash_attn[0].as_i32(),
        type_k: a.type_k[0].clone(),
        type_v: a.type_v[0].clone(),
        split_mode: a.split_mode[0],
        main_gpu: a.main_gpu[0],
        ..Default::default()
    };
    let e = &l.eval;
    let reference = match l.reference {
        RefSpec::Type(t) => t.name.to_string(),
        RefSpec::File(i) => l.files[i].name.clone(),
    };
    let spec = format!(
        "quality\nreference {}\nctx {} chunks {}\ntext {:?} logits {:?}",
        reference, e.n_ctx, e.n_chunks, e.text, l.reference_logits
    );
    PlannedTest {
        model: mi,
        id: format!("{}/{}/quality", m.name, m.label),
        identity: sha256_hex(format!("{}\n{spec}", m.key)),
        params,
        kind: TestKind::Quality,
        detail: Detail::Quality { ladder: li },
    }
}

/// One model's tests, repeats numbered, grouped by load key (stable, in order of first
/// appearance): one model load per key.
fn by_load_key(mut tests: Vec<PlannedTest>) -> Vec<PlannedTest> {
    number_repeats(&mut tests);
    let keys = crate::config::values::once_each(tests.iter().map(|t| t.load_key()).collect());
    tests.sort_by_cached_key(|t| keys.iter().position(|k| *k == t.load_key()));
    tests
}

/// The identity of a llama-bench test (`super::identity` with nothing beyond its parameters).
pub fn test_identity(model_sha256: &str, params: &TestParams) -> String {
    super::identity(model_sha256, params, "")
}

impl Plan {
    /// SHA-256 over the measurement settings and every test's id and identity: equal for
    /// the files of one sweep (its shards, a resumed run), different when the configuration,
    /// a model file or the filters change what is measured.
    pub fn hash(&self, s: &RunSettings) -> String {
        let mut text = settings_line(s);
        for t in &self.tests {
            text.push_str(&format!("\n{} {}", t.id, t.identity));
        }
        sha256_hex(text)
    }
}

/// The settings that decide how a test is measured, as one line (also what a refused
/// `--resume` names).
pub fn settings_line(s: &RunSettings) -> String {
    format!(
        "warmup={} repetitions={} ci_target={:?} max_repetitions={} max_seconds={} seed={}",
        s.warmup, s.repetitions, s.ci_target, s.max_repetitions, s.max_seconds, s.seed
    )
}

#[cfg(test)]
mod tests;
