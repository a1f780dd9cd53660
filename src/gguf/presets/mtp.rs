//! Presets with multi-token-prediction (nextn) layers for llama.cpp's draft-mtp drafter: the
//! glm4moe architecture, the simplest MTP graph of the pinned llama.cpp. The weights are
//! random: acceptance means nothing, what drafting and verifying cost is real.

use super::super::vocab::BpeFlavor;
use super::{Moe, Shape, Tokenizer};

pub(super) fn shape(preset: &str) -> Option<Shape> {
    Some(match preset {
        // zai-org/GLM-4.5-Air's config.json: hidden 4096, 46 layers (layer 0 dense,
        // intermediate 10944; 45 of 128 routed experts, 8 used, width 1408, and 1 shared
        // expert), 96 heads of 128 (partial_rotary_factor 0.5: 64 rotated), 8 KV heads,
        // q/k/v biases, no q/k norms, vocab 151552, rope_theta 1e6, rms eps 1e-5, untied
        // embeddings, and 1 nextn layer (num_nextn_predict_layers) with its own embedding
        // and head, as llama.cpp's converter keeps them. The tokenizer is a byte-level BPE
        // like GLM's, with Qwen2's specials (its pre-tokenizer splits as GLM-4's does).
        "glm-4.5-air" => Shape {
            preset: "glm-4.5-air",
            arch: "glm4moe",
            n_embd: 4096,
            n_ff: 10944,
            n_layer: 46,
            n_head: 96,
            n_head_kv: 8,
            head_dim: 128,
            n_rot: 64,
            n_vocab: 151_552,
            n_ctx_train: 131_072,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-5,
            qkv_bias: true,
            qk_norm: false,
            moe: Some(glm_moe(128, 8, 1408)),
            n_layer_nextn: 1,
            tokenizer: Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
        // For tests: GLM-4.5-Air's architecture, MTP layer included, at a size that loads
        // in milliseconds: 2 trunk layers (the dense one and one of experts) and the nextn
        // layer.
        "tiny-mtp" => Shape {
            preset: "tiny-mtp",
            arch: "glm4moe",
            n_embd: 64,
            n_ff: 256,
            n_layer: 2,
            n_head: 4,
            n_head_kv: 2,
            head_dim: 32,
            n_rot: 16,
            n_vocab: 1024,
            n_ctx_train: 4096,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-5,
            qkv_bias: true,
            qk_norm: false,
            moe: Some(glm_moe(8, 2, 64)),
            n_layer_nextn: 1,
            tokenizer: Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
        _ => return None,
    })
}

/// GLM-4.5's mixture of experts: one shared expert, the first layer dense, sigmoid routing
/// with a selection bias.
const fn glm_moe(n_expert: u64, n_expert_used: u64, n_ff_exp: u64) -> Moe {
    Moe {
        n_shared: 1,
        n_dense_lead: 1,
        sigmoid_router: true,
        ..Moe::routed(n_expert, n_expert_used, n_ff_exp)
    }
}
