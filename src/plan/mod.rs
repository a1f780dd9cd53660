//! Expands a configuration into the ordered list of tests. Pure: no files, no engine.
//!
//! The order is llama-bench's: the model outermost, then the model-level parameters (ngl,
//! split_mode, main_gpu, n_cpu_moe, ...), then the context-level ones, so that a model is
//! loaded once per distinct model setting. Expansion and test ids read the parameter table
//! (`config::knobs::PARAMS`): a new parameter needs no change here.

use std::path::PathBuf;

pub use crate::config::TestParams;
use crate::config::knobs::{KnobValue, Level, PARAMS, of_level};
use crate::config::quant_types::QuantType;
use crate::config::{Axes, Config};

pub(crate) mod build;
pub(crate) mod kind;
pub mod serving;
pub(crate) mod shard;
pub mod speculative;
pub use build::{Detail, Facts, LadderFacts, ModelFacts, Plan, build};
pub use kind::TestKind;
pub use shard::{Shard, shard};

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTest {
    /// Index into `Plan::models` (the `[[model]]`s first, in order, then ladder variants).
    pub model: usize,
    /// Stable, unique identifier, e.g. `SmolLM2-135M/Q4_1/pp512` (criterion's benchmark id).
    pub id: String,
    pub params: TestParams,
    pub kind: TestKind,
    pub detail: Detail,
    /// What was measured, stable across runs and machines (see `build::identity`); empty in
    /// plans made without the models' facts (`expand`).
    pub identity: String,
}

impl PlannedTest {
    /// A llama-bench test (pp, tg or pg) of model `model`.
    pub fn bench(model: usize, id: String, params: TestParams) -> PlannedTest {
        PlannedTest {
            model,
            id,
            kind: TestKind::of_sizes(params.n_prompt, params.n_gen),
            params,
            detail: Detail::Bench,
            identity: String::new(),
        }
    }

    /// The record's `test` name: llama-bench's for its kinds, the serving test's name, or
    /// `quality`.
    pub fn name(&self) -> String {
        match &self.detail {
            // A text test's figures are not llama-bench's random-token ones: its name says
            // so wherever tests are grouped or shown by name (answers, tables, the board).
            Detail::Bench if !self.params.tokens.is_random() => {
                format!("{} ({})", self.params.name(), self.params.tokens.as_str())
            }
            Detail::Bench => self.params.name(),
            Detail::Serving(s) => s.name.clone(),
            Detail::Quality { .. } => "quality".into(),
            Detail::Speculative(s) => speculative::name(s),
        }
    }

    /// Tests with equal keys run on one model load: the model, its model-level
    /// parameters and whether its MTP layers are loaded. Quality tests load their own
    /// evaluation model: `None`.
    pub fn load_key(&self) -> Option<(usize, Vec<KnobValue>, bool)> {
        match &self.detail {
            Detail::Quality { .. } => None,
            // A served test loads nothing here: the server has the model.
            Detail::Serving(s) if s.transport == serving::Transport::Http => None,
            _ => Some((self.model, self.params.model_level(), self.loads_mtp())),
        }
    }

    /// The test drafts with the model's own multi-token-prediction layers (draft-mtp):
    /// llama.cpp skips them unless asked at load time, as llama-server asks only when its
    /// drafter is draft-mtp, so the other tests' loads stay llama-bench's.
    pub fn loads_mtp(&self) -> bool {
        matches!(&self.detail, Detail::Speculative(s) if s.drafter == crate::config::speculative::Drafter::DraftMtp)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    File(PathBuf),
    /// Ladder `ladder`'s variant of type `quant` (by its recipe `recipe`, an index in
    /// `recipes`, when it has one), built into the cache on first use.
    Variant {
        ladder: usize,
        quant: QuantType,
        recipe: Option<usize>,
    },
    /// Ladder `ladder`'s variant given as its file `file` (an index in `files`).
    LadderFile {
        ladder: usize,
        file: usize,
    },
}

impl ModelSource {
    pub fn ladder(&self) -> Option<usize> {
        match *self {
            ModelSource::File(_) => None,
            ModelSource::Variant { ladder, .. } | ModelSource::LadderFile { ladder, .. } => {
                Some(ladder)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanModel {
    pub name: String,
    /// The quantization label in test ids.
    pub label: String,
    pub source: ModelSource,
    /// What test identities hash for this model: the file's SHA-256, or for a variant the
    /// SHA-256 of its base's SHA-256 and its type (known before the variant is built).
    pub key: String,
}

/// Expands every `[[model]]`'s axes into llama-bench tests; `quant[i]` labels model `i` in test
/// ids (e.g. "Q4_1"). Ids only: the whole plan, with identities, is `build::build`.
pub fn expand(config: &Config, quant: &[String]) -> Vec<PlannedTest> {
    let mut out = Vec::new();
    for (mi, m) in config.models.iter().enumerate() {
        // A served-only entry has no file: no llama-bench tests.
        if m.path.is_none() {
            continue;
        }
        let label = quant.get(mi).map(String::as_str).unwrap_or("unknown");
        for params in expand_axes(&m.axes) {
            let id = test_id(&m.name, label, &params, &m.axes);
            out.push(PlannedTest::bench(mi, id, params));
        }
    }
    number_repeats(&mut out);
    out
}

/// What was measured, stable across runs and machines: SHA-256 over the model's key, the
/// parameters' JSON (field order fixed by the struct) and `spec`, the rest of the test.
pub(crate) fn identity(key: &str, params: &TestParams, spec: &str) -> String {
    let params = serde_json::to_string(params).expect("params serialize");
    crate::util::hash::sha256_hex(format!("{key}\n{params}{spec}"))
}

/// Tells apart tests a sweep lists more than once (`n_prompt = [512, 512]`): the k-th copy
/// gets `/copy=k` in its id and identity, so resume, merge and compare keep every copy.
pub(crate) fn number_repeats(tests: &mut [PlannedTest]) {
    let mut seen = std::collections::HashMap::new();
    for t in tests.iter_mut() {
        let k = seen.entry((t.model, t.id.clone())).or_insert(0);
        *k += 1;
        let k = *k;
        if k > 1 {
            t.id = format!("{}/copy={k}", t.id);
            if !t.identity.is_empty() {
                t.identity = crate::util::hash::sha256_hex(format!("{}\ncopy={k}", t.identity));
            }
        }
    }
}

/// The Cartesian product of one model's axes in the module's order (each level's parameters
/// in the table's order, outermost first), then n_depth; then one test per n_prompt and one
/// per n_gen (they define the test and are not crossed), each once per token source.
pub fn expand_axes(a: &Axes) -> Vec<TestParams> {
    let mut v = vec![TestParams::default()];
    for k in of_level(Level::Model).chain(of_level(Level::Context)) {
        v = cross(v, &k.axis(a), |p, x| k.set(p, x));
    }
    v = cross(v, &a.n_depth, |p, &x| p.n_depth = x);
    let prompts = a.n_prompt.iter().map(|&p| (p, 0));
    let sizes: Vec<(u32, u32)> = (prompts.chain(a.n_gen.iter().map(|&g| (0, g))))
        .filter(|&(p, g)| p + g > 0)
        .collect();
    v = cross(v, &sizes, |p, &(n_prompt, n_gen)| {
        (p.n_prompt, p.n_gen) = (n_prompt, n_gen)
    });
    // Each size's random and text tests side by side: they are read together.
    cross(v, &a.tokens, |p, &tokens| p.tokens = tokens)
}

/// The test parameters of the first value of each of `a`'s axes, with these sizes: what
/// serving and speculative tests run at (they are not swept over the axes, and decode their
/// own prompts).
pub(crate) fn first_of_axes(a: &Axes, n_prompt: u32, n_gen: u32) -> TestParams {
    let mut p = TestParams {
        n_prompt,
        n_gen,
        ..Default::default()
    };
    for k in PARAMS.iter().filter(|k| k.level != Level::Test) {
        k.set(&mut p, &k.axis(a)[0]);
    }
    p
}

/// Every element of `outer` combined with every value, `outer` varying slowest.
fn cross<T>(
    outer: Vec<TestParams>,
    values: &[T],
    set: impl Fn(&mut TestParams, &T),
) -> Vec<TestParams> {
    let mut out = Vec::with_capacity(outer.len() * values.len());
    for p in outer {
        for x in values {
            let mut q = p.clone();
            set(&mut q, x);
            out.push(q);
        }
    }
    out
}

/// `model/quant/test`, plus a `/name=value` part for each axis that takes several values in
/// this model's sweep, so ids stay unique and readable.
pub(crate) fn test_id(model: &str, quant: &str, p: &TestParams, a: &Axes) -> String {
    let mut id = format!("{model}/{quant}/{}", p.name().replace(" @ ", "@"));
    // The test's own parameters are in its name.
    for k in PARAMS.iter().filter(|k| k.level != Level::Test) {
        if k.axis(a).len() > 1 {
            id.push_str(&format!("/{}={}", k.flag, k.get(p).show()));
        }
    }
    // Always named, even when every test of the sweep decodes text: a text test's figure
    // is not llama-bench's, and its id says so wherever it is shown.
    if !p.tokens.is_random() {
        id.push_str(&format!("/tokens={}", p.tokens.as_str()));
    }
    id
}

/// Keeps the tests whose id contains any of the filters (all tests when there is none).
pub fn filter(mut tests: Vec<PlannedTest>, filters: &[String]) -> Vec<PlannedTest> {
    tests.retain(|t| wanted(&t.id, filters));
    tests
}

/// Whether `filters` keep the test `id`: it contains one of them, or there is none.
pub fn wanted(id: &str, filters: &[String]) -> bool {
    filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()))
}

#[cfg(test)]
mod tests;
