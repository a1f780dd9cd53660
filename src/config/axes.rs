//! The sweep axes and their value types, as llama-bench names them.

/// Flash attention policy, as llama-bench's `-fa` (-1 auto, 0 off, 1 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttn {
    Auto,
    Off,
    On,
}

impl FlashAttn {
    /// llama-bench's integer encoding.
    pub fn as_i32(self) -> i32 {
        match self {
            FlashAttn::Auto => -1,
            FlashAttn::Off => 0,
            FlashAttn::On => 1,
        }
    }
}

/// How llama.cpp spreads a model over several GPUs, as llama-bench's `-sm`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    /// One GPU (`main_gpu`) holds the whole model.
    None,
    /// Layers and KV cache split across GPUs (llama.cpp's default).
    #[default]
    Layer,
    /// Rows of the weight matrices split across GPUs.
    Row,
    /// Tensor parallelism, where the backend supports it.
    Tensor,
}

impl SplitMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SplitMode::None => "none",
            SplitMode::Layer => "layer",
            SplitMode::Row => "row",
            SplitMode::Tensor => "tensor",
        }
    }

    /// llama.cpp's `enum llama_split_mode` value.
    pub fn as_llama(self) -> u32 {
        match self {
            SplitMode::None => 0,
            SplitMode::Layer => 1,
            SplitMode::Row => 2,
            SplitMode::Tensor => 3,
        }
    }
}

/// KV-cache element types that llama.cpp accepts for `type_k` / `type_v`.
pub const KV_TYPES: &[&str] = &[
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1",
];

/// Every sweep axis, fully resolved: each list is non-empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    pub n_prompt: Vec<u32>,
    pub n_gen: Vec<u32>,
    pub n_depth: Vec<u32>,
    pub n_batch: Vec<u32>,
    pub n_ubatch: Vec<u32>,
    pub n_gpu_layers: Vec<i32>,
    pub split_mode: Vec<SplitMode>,
    pub main_gpu: Vec<i32>,
    pub n_threads: Vec<u32>,
    pub flash_attn: Vec<FlashAttn>,
    pub type_k: Vec<String>,
    pub type_v: Vec<String>,
    /// Keep the KV cache (and the attention ops) in host memory (llama-bench's `-nkvo`).
    pub no_kv_offload: Vec<bool>,
    /// The parameters of the table in `config::knobs` that the sweep sets, by name (each
    /// list non-empty); the others hold llama-bench's default.
    pub knobs: std::collections::BTreeMap<String, Vec<super::knobs::KnobValue>>,
}

impl Axes {
    /// The first value of each knob the sweep sets (what tests that take one value of each
    /// axis use: serving tests, a ladder's quality passes).
    pub fn first_knobs(&self) -> super::knobs::Knobs {
        let mut k = super::knobs::Knobs::default();
        for (name, values) in &self.knobs {
            if let Some(v) = values.first() {
                k.set(name, v.clone());
            }
        }
        k
    }

    /// The values of knob `name` this sweep takes: those set, else the default alone.
    pub fn knob_values(&self, k: &super::knobs::Knob) -> Vec<super::knobs::KnobValue> {
        self.knobs
            .get(k.name)
            .cloned()
            .unwrap_or_else(|| vec![k.default_value()])
    }

    /// llama-bench's defaults; `n_threads` defaults to the physical core count.
    pub fn llama_bench_defaults(physical_cores: u32) -> Self {
        Axes {
            n_prompt: vec![512],
            n_gen: vec![128],
            n_depth: vec![0],
            n_batch: vec![2048],
            n_ubatch: vec![512],
            n_gpu_layers: vec![99],
            split_mode: vec![SplitMode::Layer],
            main_gpu: vec![0],
            n_threads: vec![physical_cores.max(1)],
            flash_attn: vec![FlashAttn::Auto],
            type_k: vec!["f16".into()],
            type_v: vec!["f16".into()],
            no_kv_offload: vec![false],
            knobs: Default::default(),
        }
    }
}
