//! A sweep's values of every parameter: typed lists for the original axes (read directly
//! by the serving tests, the ladder and the machine checks), the map for the others. Generic
//! code reaches all of them through the table (`Knob::axis`, `Knob::set_axis`).

use crate::config::{FlashAttn, SplitMode};

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
    pub knobs: std::collections::BTreeMap<String, Vec<super::KnobValue>>,
    /// What the llama-bench tests decode: random ids (llama-bench's) and/or real text.
    pub tokens: Vec<crate::config::PromptTokens>,
}

impl Axes {
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
            tokens: vec![crate::config::PromptTokens::Random],
        }
    }
}
