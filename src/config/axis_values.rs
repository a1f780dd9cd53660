//! The value types of the sweep axes, as llama-bench names them.

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

    /// From llama-bench's integer encoding (anything else: auto).
    pub fn from_i32(n: i64) -> FlashAttn {
        match n {
            0 => FlashAttn::Off,
            1 => FlashAttn::On,
            _ => FlashAttn::Auto,
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

    /// The mode named `s` (as `as_str` writes it).
    pub fn parse(s: &str) -> Option<SplitMode> {
        [
            SplitMode::None,
            SplitMode::Layer,
            SplitMode::Row,
            SplitMode::Tensor,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
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
