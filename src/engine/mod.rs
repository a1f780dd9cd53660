//! The engine boundary: `llama` (with `quantize`) is the only code that touches llama.cpp,
//! `endpoint` the only HTTP client. `tests::mock`, a fake engine with a fake clock, runs the
//! whole pipeline in the unit tests deterministically.

pub(crate) mod batching;
pub mod endpoint;
pub(crate) mod error;
pub mod imatrix;
pub(crate) mod linkage;
pub mod llama;
pub mod measure;
pub(crate) mod placement;
pub mod quantize;
pub mod speculative;
#[cfg(test)]
pub(crate) mod tests;

use std::path::Path;

use crate::plan::TestParams;

pub use batching::{BatchParams, BatchSession, BatchToken, ServingModel};
pub use error::EngineError;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub description: String,
    pub backend: String,
    pub kind: DeviceKind,
    pub memory_total: u64,
    pub memory_free: u64,
}

/// llama.cpp's device types, recorded as "cpu", "gpu", "igpu", "accel" or "unknown".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Cpu,
    Gpu,
    Igpu,
    Accel,
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `llama_model_desc`, llama-bench's `model_type`, e.g. "llama ?B Q4_1".
    pub description: String,
    /// `llama_model_size`: bytes of all weight tensors.
    pub size: u64,
    pub n_params: u64,
    pub n_vocab: i32,
    /// The BOS token, when the vocabulary adds one (llama-bench starts prompts with it).
    pub bos: Option<i32>,
    pub n_ctx_train: u32,
}

/// One llama.cpp context: what a test runs on.
pub trait Session {
    /// Clears the KV memory (`llama_memory_clear`), as llama-bench does before each repetition.
    fn clear(&mut self);
    /// Decodes `tokens` in chunks of at most `n_batch`, one `llama_decode` per chunk, without
    /// synchronizing.
    fn decode_chunks(&mut self, tokens: &[i32], n_batch: usize) -> Result<(), EngineError>;
    fn decode_one(&mut self, token: i32) -> Result<(), EngineError>;
    fn synchronize(&mut self);
    /// Saves sequence 0's state (to reuse a prefilled depth).
    fn save_state(&mut self) -> Vec<u8>;
    /// Restores a state from `save_state`; false when it does not fit this context.
    fn restore_state(&mut self, state: &[u8]) -> bool;
}

pub trait Model {
    fn info(&self) -> &ModelInfo;
    /// A fresh context for one test, sized and configured as llama-bench does.
    fn session(&self, params: &TestParams) -> Result<Box<dyn Session + '_>, EngineError>;
    /// Multi-sequence contexts, tokenization and chat template for serving tests.
    fn serving(&self) -> Option<&dyn ServingModel> {
        None
    }
    /// Where the last session made for `params` was put, when the engine says.
    fn placement(&self, _params: &TestParams) -> Option<crate::engine::placement::Placement> {
        None
    }
    /// What the engine did not honour of `params` (a `config::knobs` parameter this build
    /// cannot apply), one line each: recorded in the result and printed as a warning.
    fn knob_notes(&self, _params: &TestParams) -> Vec<String> {
        Vec::new()
    }
    /// A target context made for `params` with room for `n_ctx` tokens, and the drafter of
    /// `spec` on it, drafting with `draft` (speculative tests); the engine's refusal when it
    /// has none.
    fn speculative(
        &self,
        _params: &TestParams,
        _spec: &crate::plan::speculative::SpecTest,
        _draft: Option<&std::path::Path>,
        _n_ctx: u32,
    ) -> Result<Box<dyn speculative::SpecSession + '_>, EngineError> {
        Err(EngineError::Other(
            "this engine has no speculative decoding".into(),
        ))
    }
}

/// Model-level parameters: changing one means reloading the model. The default keeps every
/// layer on the CPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadParams {
    /// The values of the model-level parameters of `config::knobs`' table (those of the
    /// other levels hold `TestParams`' own default, unused).
    pub params: TestParams,
    /// With `fit_target` or `fit_min_ctx`: the test whose context llama.cpp's fit sizes
    /// the placement for (the first test of the load). None otherwise.
    pub fit_context: Option<Box<TestParams>>,
    /// Load the model's multi-token-prediction (nextn) layers, which llama.cpp skips by
    /// default: for draft-mtp (`LoadParams::of_test`).
    pub load_mtp: bool,
}

impl LoadParams {
    pub fn of(p: &TestParams) -> Self {
        LoadParams {
            fit_context: p.knobs.asks_fit().then(|| Box::new(p.clone())),
            ..LoadParams::with(|k| Some(k.get(p)))
        }
    }

    /// The load a planned test runs on: its model-level parameters, and the MTP layers
    /// when it drafts with them.
    pub fn of_test(t: &crate::plan::PlannedTest) -> Self {
        LoadParams {
            load_mtp: t.loads_mtp(),
            ..LoadParams::of(&t.params)
        }
    }

    /// Each model-level entry of the table set to `value` of it (where it gives one).
    pub fn with(
        value: impl Fn(&crate::config::knobs::Knob) -> Option<crate::config::knobs::KnobValue>,
    ) -> Self {
        use crate::config::knobs::{Level, of_level};
        let mut params = TestParams::default();
        for k in of_level(Level::Model) {
            if let Some(v) = value(k) {
                k.set(&mut params, &v);
            }
        }
        LoadParams {
            params,
            ..Default::default()
        }
    }
}

pub trait Engine {
    fn load(&self, path: &Path, params: &LoadParams) -> Result<Box<dyn Model + '_>, EngineError>;
    /// Monotonic nanoseconds; the mock engine's clock advances only when it "computes".
    fn now_ns(&self) -> u64;
    /// Waits until `now_ns() >= t_ns` (arrival-mode serving tests wait for the next request).
    fn sleep_until(&self, t_ns: u64) {
        let now = self.now_ns();
        if t_ns > now {
            std::thread::sleep(std::time::Duration::from_nanos(t_ns - now));
        }
    }
}
