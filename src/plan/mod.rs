//! Expands a configuration into the ordered list of tests. Pure: no files, no engine.
//!
//! The order is llama-bench's: the model outermost, then the model-level parameters (ngl,
//! split_mode, main_gpu), then the context-level ones, so that a model is loaded once per
//! distinct model setting.

use serde::{Deserialize, Serialize};

use crate::config::knobs::{KNOBS, Knobs, Level};
use crate::config::{Axes, Config, FlashAttn, SplitMode};

pub mod build;
pub mod kind;
pub mod serving;
pub mod shard;
pub use build::{Detail, Facts, ModelSource, Plan, PlanModel};
pub use kind::TestKind;
pub use shard::{Shard, shard};

/// Every parameter of one test, under llama-bench's field names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TestParams {
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_gpu_layers: i32,
    pub n_threads: u32,
    /// -1 auto, 0 off, 1 on (llama-bench's encoding).
    pub flash_attn: i32,
    pub type_k: String,
    pub type_v: String,
    // The GPU placement axes are left out of the JSON (and so of the test identity) when they
    // hold llama.cpp's defaults, so identities of tests from before they existed stay valid.
    /// How layers spread over several GPUs (llama-bench's `split_mode`); absent: "layer".
    #[serde(default, skip_serializing_if = "is_default")]
    pub split_mode: SplitMode,
    /// The GPU used with split_mode "none" (llama-bench's `main_gpu`); absent: 0.
    #[serde(default, skip_serializing_if = "is_default")]
    pub main_gpu: i32,
    /// KV cache kept in host memory (llama-bench's `no_kv_offload`); absent: false.
    #[serde(default, skip_serializing_if = "is_default")]
    pub no_kv_offload: bool,
    /// The parameters of `config::knobs`' table that differ from llama-bench's defaults,
    /// under llama-bench's field names (absent: the default), so identities of tests from
    /// before the table stay valid.
    #[serde(flatten, default)]
    pub knobs: Knobs,
}

fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

impl TestParams {
    /// llama-bench's test name: `pp512`, `tg128`, `pp512+tg128`, with ` @ d4096` for depth.
    pub fn name(&self) -> String {
        let mut s = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        if self.n_depth > 0 {
            s.push_str(&format!(" @ d{}", self.n_depth));
        }
        s
    }

    /// Tokens counted per repetition (depth is prefilled untimed and not counted).
    pub fn n_tokens(&self) -> u64 {
        u64::from(self.n_prompt) + u64::from(self.n_gen)
    }

    /// The context size llama-bench allocates: exactly what the test needs.
    pub fn n_ctx(&self) -> u32 {
        self.n_prompt + self.n_gen + self.n_depth
    }

    /// Every parameter as JSON fields, the GPU placement ones included at their defaults
    /// (which the serialized form leaves out): what comparisons join tests on.
    pub fn all_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let defaults = [
            ("split_mode", serde_json::json!(self.split_mode)),
            ("main_gpu", serde_json::json!(self.main_gpu)),
            ("no_kv_offload", serde_json::json!(self.no_kv_offload)),
        ];
        for (k, v) in defaults {
            m.entry(k).or_insert(v);
        }
        for (k, v) in self.knobs.all_fields() {
            m.entry(k).or_insert(serde_json::json!(v));
        }
        m
    }

    /// True when the model must be reloaded to go from `self` to `other`.
    pub fn same_model_params(&self, other: &TestParams) -> bool {
        self.n_gpu_layers == other.n_gpu_layers
            && self.split_mode == other.split_mode
            && self.main_gpu == other.main_gpu
            && self.knobs.model_level() == other.knobs.model_level()
    }
}

/// One planned test.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTest {
    /// Index into `Plan::models` (the `[[model]]`s first, in order, then ladder variants).
    pub model: usize,
    /// Stable, unique identifier, e.g. `SmolLM2-135M/Q4_1/pp512` (criterion's benchmark id).
    pub id: String,
    pub params: TestParams,
    pub kind: TestKind,
    /// What the kind needs beyond the parameters.
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
            Detail::Bench => self.params.name(),
            Detail::Serving(s) => s.name.clone(),
            Detail::Quality { .. } => "quality".into(),
        }
    }

    /// Tests with equal keys run on one model load: the model and its model-level
    /// parameters. Quality tests load their own evaluation model: `None`.
    pub fn load_key(&self) -> Option<(usize, i32, SplitMode, i32, Knobs)> {
        match &self.detail {
            Detail::Quality { .. } => None,
            // A served test loads nothing here: the server has the model.
            Detail::Serving(s) if s.transport == serving::Transport::Http => None,
            _ => Some((
                self.model,
                self.params.n_gpu_layers,
                self.params.split_mode,
                self.params.main_gpu,
                self.params.knobs.model_level(),
            )),
        }
    }
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

/// Tells apart the tests a sweep lists more than once (`n_prompt = [512, 512]`, as
/// llama-bench's `-p 512,512`: each a fresh context of the one loaded model). The k-th copy
/// (k >= 2) of a model's test gets `/copy=k` in its id and in its identity, so resuming,
/// merging shards and comparing runs keep every copy instead of taking one for another.
pub(crate) fn number_repeats(tests: &mut [PlannedTest]) {
    let mut seen: Vec<(usize, String, usize)> = Vec::new();
    for t in tests.iter_mut() {
        let k = match seen
            .iter_mut()
            .find(|(m, id, _)| *m == t.model && *id == t.id)
        {
            Some((_, _, n)) => {
                *n += 1;
                *n
            }
            None => {
                seen.push((t.model, t.id.clone(), 1));
                1
            }
        };
        if k > 1 {
            t.id = format!("{}/copy={k}", t.id);
            if !t.identity.is_empty() {
                use sha2::{Digest, Sha256};
                let h = Sha256::digest(format!("{}\ncopy={k}", t.identity).as_bytes());
                t.identity = format!("{h:x}");
            }
        }
    }
}

/// The Cartesian product of one model's axes, in llama-bench's loop order: n_gpu_layers,
/// split_mode, main_gpu, the model-level parameters of the knob table, n_batch, n_ubatch,
/// type_k, type_v, no_kv_offload, flash_attn, n_threads, the context-level parameters of
/// the table, n_depth (outermost first); then one test per n_prompt and one per n_gen.
pub fn expand_axes(a: &Axes) -> Vec<TestParams> {
    let base = TestParams {
        n_prompt: 0,
        n_gen: 0,
        n_depth: 0,
        n_batch: 0,
        n_ubatch: 0,
        n_gpu_layers: 0,
        n_threads: 0,
        flash_attn: 0,
        type_k: String::new(),
        type_v: String::new(),
        split_mode: SplitMode::default(),
        main_gpu: 0,
        no_kv_offload: false,
        knobs: Knobs::default(),
    };
    let mut v = vec![base];
    v = cross(v, &a.n_gpu_layers, |p, &x| p.n_gpu_layers = x);
    v = cross(v, &a.split_mode, |p, &x| p.split_mode = x);
    v = cross(v, &a.main_gpu, |p, &x| p.main_gpu = x);
    v = cross_knobs(v, a, Level::Model);
    v = cross(v, &a.n_batch, |p, &x| p.n_batch = x);
    v = cross(v, &a.n_ubatch, |p, &x| p.n_ubatch = x);
    v = cross(v, &a.type_k, |p, x| p.type_k.clone_from(x));
    v = cross(v, &a.type_v, |p, x| p.type_v.clone_from(x));
    v = cross(v, &a.no_kv_offload, |p, &x| p.no_kv_offload = x);
    v = cross(v, &a.flash_attn, |p, &x| {
        p.flash_attn = FlashAttn::as_i32(x)
    });
    v = cross(v, &a.n_threads, |p, &x| p.n_threads = x);
    v = cross_knobs(v, a, Level::Context);
    v = cross(v, &a.n_depth, |p, &x| p.n_depth = x);
    let mut out = Vec::new();
    for b in v {
        for &p in a.n_prompt.iter().filter(|&&p| p > 0) {
            out.push(TestParams {
                n_prompt: p,
                ..b.clone()
            });
        }
        for &g in a.n_gen.iter().filter(|&&g| g > 0) {
            out.push(TestParams {
                n_gen: g,
                ..b.clone()
            });
        }
    }
    out
}

/// `outer` crossed with every knob of `level` the sweep sets, in the table's order.
fn cross_knobs(mut v: Vec<TestParams>, a: &Axes, level: Level) -> Vec<TestParams> {
    for k in KNOBS.iter().filter(|k| k.level == level) {
        if let Some(values) = a.knobs.get(k.name) {
            v = cross(v, values, |p, x| p.knobs.set(k.name, x.clone()));
        }
    }
    v
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
    let mut part = |varies: bool, name: &str, value: String| {
        if varies {
            id.push_str(&format!("/{name}={value}"));
        }
    };
    part(a.n_gpu_layers.len() > 1, "ngl", p.n_gpu_layers.to_string());
    part(
        a.split_mode.len() > 1,
        "sm",
        p.split_mode.as_str().to_string(),
    );
    part(a.main_gpu.len() > 1, "mg", p.main_gpu.to_string());
    part(a.n_batch.len() > 1, "b", p.n_batch.to_string());
    part(a.n_ubatch.len() > 1, "ub", p.n_ubatch.to_string());
    part(a.type_k.len() > 1, "ctk", p.type_k.clone());
    part(a.type_v.len() > 1, "ctv", p.type_v.clone());
    part(
        a.no_kv_offload.len() > 1,
        "nkvo",
        u8::from(p.no_kv_offload).to_string(),
    );
    part(a.flash_attn.len() > 1, "fa", p.flash_attn.to_string());
    part(a.n_threads.len() > 1, "t", p.n_threads.to_string());
    for k in KNOBS {
        let varies = a.knobs.get(k.name).is_some_and(|v| v.len() > 1);
        let value = p.knobs.get(k.name).map(|v| v.show()).unwrap_or_default();
        part(varies, k.flag, value);
    }
    id
}

/// Keeps the tests whose id contains any of the filters (all tests when there is none).
pub fn filter(tests: Vec<PlannedTest>, filters: &[String]) -> Vec<PlannedTest> {
    if filters.is_empty() {
        return tests;
    }
    tests
        .into_iter()
        .filter(|t| filters.iter().any(|f| t.id.contains(f.as_str())))
        .collect()
}

#[cfg(test)]
mod tests;
