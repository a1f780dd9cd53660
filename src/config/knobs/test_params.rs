//! Every parameter of one test: the typed fields of the original axes (what the engine, the
//! kinds and the ladder read as numbers) and the [`Knobs`] map of the others. Generic code
//! reaches all of them through the table (`Knob::get`, `Knob::set`).

use serde::{Deserialize, Serialize};

use super::{Knobs, Level, PARAMS, of_level};
use crate::config::SplitMode;
use crate::util::is_default;

/// Every parameter of one test, under llama-bench's field names. The serialized form (field
/// order, the fields left out at their defaults) is the test's identity: keep it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// What the test decodes: llama-bench's random ids (absent) or real text ("text"; the
    /// text file's SHA-256 is in the test's identity and its record's `text`). Not one of
    /// llama-bench's parameters, so it is not in the table.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tokens: crate::config::PromptTokens,
    /// The parameters of the table held in the map that differ from llama-bench's
    /// defaults, under llama-bench's field names (absent: the default), so identities of
    /// tests from before each parameter existed stay valid.
    #[serde(flatten, default)]
    pub knobs: Knobs,
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

    /// Every parameter of the table as JSON fields, those the serialized form leaves out at
    /// their defaults included: what comparisons join tests on.
    pub fn all_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for k in PARAMS {
            m.entry(k.name)
                .or_insert_with(|| serde_json::json!(k.get(self)));
        }
        // So that random and text tests join as two values of one property.
        m.entry("tokens")
            .or_insert_with(|| serde_json::json!(self.tokens.as_str()));
        m
    }

    /// The values of the model-level parameters, in the table's order: what a model load
    /// depends on.
    pub fn model_level(&self) -> Vec<super::KnobValue> {
        of_level(Level::Model).map(|k| k.get(self)).collect()
    }
}
