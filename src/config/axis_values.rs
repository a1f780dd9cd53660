//! The value types of the sweep axes, as llama-bench names them.

/// Flash attention policy, as llama-bench's `-fa` (-1 auto, 0 off, 1 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttn {
    Auto = -1,
    Off = 0,
    On = 1,
}

impl FlashAttn {
    pub fn as_i32(self) -> i32 {
        self as i32
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

super::names::names!(SplitMode::as_str {
    None = "none",
    Layer = "layer",
    Row = "row",
    Tensor = "tensor",
});

impl SplitMode {
    /// llama.cpp's `enum llama_split_mode` value: the variants are in its order.
    pub fn as_llama(self) -> u32 {
        self as u32
    }
}

/// KV-cache element types that llama.cpp accepts for `type_k` / `type_v`.
pub const KV_TYPES: &[&str] = &[
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1",
];
