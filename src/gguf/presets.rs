//! Synthetic models with the tensor shapes of published architectures (from each config.json),
//! random weights and a synthetic vocabulary. Files carry `tpsbench.synthetic = true` and
//! `tpsbench.preset`, so every result on them is flagged synthetic.

use super::Value;
use super::vocab::{self, BpeFlavor, Vocab};
use super::writer::{Document, Tensor, TensorData};
use super::{KEY_PRESET, KEY_SYNTHETIC};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// SentencePiece ("llama"): Llama 2, Mistral.
    Spm,
    /// Byte-level BPE ("gpt2") with the flavor's pre-tokenizer and special tokens.
    Bpe(BpeFlavor),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub preset: &'static str,
    /// `general.architecture`: "llama" or "qwen2".
    pub arch: &'static str,
    pub n_embd: u64,
    pub n_ff: u64,
    pub n_layer: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    /// Dimensions of each head that RoPE rotates (`rope.dimension_count`): the head size,
    /// or part of it (GLM-4.5's partial_rotary_factor 0.5).
    pub n_rot: u64,
    pub n_vocab: u64,
    pub n_ctx_train: u32,
    pub rope_theta: f32,
    pub rms_eps: f32,
    /// Biases on the q, k and v projections (Qwen2).
    pub qkv_bias: bool,
    /// RMS norms on the q and k heads (Qwen3).
    pub qk_norm: bool,
    /// Mixture of experts: every layer's feed-forward is routed experts.
    pub moe: Option<Moe>,
    /// Multi-token-prediction (nextn) layers after the `n_layer` trunk layers
    /// (num_nextn_predict_layers): what llama.cpp's draft-mtp drafts with.
    pub n_layer_nextn: u64,
    pub tokenizer: Tokenizer,
}

/// A mixture-of-experts feed-forward, as llama.cpp stores it: a router (`ffn_gate_inp`)
/// and the experts' matrices stacked in 3-D tensors (`ffn_{gate,up,down}_exps`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moe {
    pub n_expert: u64,
    pub n_expert_used: u64,
    /// Each expert's feed-forward width.
    pub n_ff_exp: u64,
    /// Shared experts, run for every token beside the routed ones (`ffn_*_shexp`, as wide
    /// as `n_shared` experts together).
    pub n_shared: u64,
    /// Leading layers with a dense feed-forward of width `n_ff` (first_k_dense_replace).
    pub n_dense_lead: u64,
    /// Sigmoid routing with a per-expert selection bias (`exp_probs_b`), top-k weights
    /// normalised: DeepSeek-V3's router, which GLM-4.5 uses.
    pub sigmoid_router: bool,
}

impl Moe {
    /// Routed experts only, softmax routing, in every layer.
    const fn routed(n_expert: u64, n_expert_used: u64, n_ff_exp: u64) -> Moe {
        Moe {
            n_expert,
            n_expert_used,
            n_ff_exp,
            n_shared: 0,
            n_dense_lead: 0,
            sigmoid_router: false,
        }
    }
}

/// The presets `tpsbench synth --preset` knows (besides `tiny`).
pub const PRESETS: &[&str] = &[
    "llama-2-7b",
    "llama-3-8b",
    "mistral-7b",
    "qwen2.5-7b",
    "llama-3-70b",
    "qwen3-30b-a3b",
    "mixtral-8x7b",
    "tiny-moe",
    "glm-4.5-air",
    "tiny-mtp",
];

/// The presets sized for tests (load in milliseconds, written as F32 by default), which
/// shrinking does not apply to.
pub fn is_test_size(preset: &str) -> bool {
    matches!(preset, "tiny-moe" | "tiny-mtp" | "tiny-eagle3")
}

/// Whether `tpsbench synth --preset` knows `preset` (besides `tiny`): a model's shapes or a
/// draft made for one ([`eagle3`]).
pub fn known(preset: &str) -> bool {
    shape(preset).is_some() || eagle3::draft(preset).is_some()
}

/// Every preset name but `tiny`, for messages: the models', then the drafts'.
pub fn all_names() -> String {
    PRESETS
        .iter()
        .chain(eagle3::PRESETS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn shape(preset: &str) -> Option<Shape> {
    dense(preset)
        .or_else(|| moe(preset))
        .or_else(|| mtp::shape(preset))
}

/// A llama-architecture shape from its config.json figures (`dims`: n_embd, n_ff, n_layer,
/// n_head, n_head_kv, n_vocab, in config.json's order): head size n_embd / n_head, rms eps
/// 1e-5, no biases or q/k norms, dense feed-forward.
fn llama(preset: &'static str, dims: [u64; 6], ctx: u32, theta: f32, tok: Tokenizer) -> Shape {
    let [n_embd, n_ff, n_layer, n_head, n_head_kv, n_vocab] = dims;
    Shape {
        preset,
        arch: "llama",
        n_embd,
        n_ff,
        n_layer,
        n_head,
        n_head_kv,
        head_dim: n_embd / n_head,
        n_rot: n_embd / n_head,
        n_vocab,
        n_ctx_train: ctx,
        rope_theta: theta,
        rms_eps: 1e-5,
        qkv_bias: false,
        qk_norm: false,
        moe: None,
        n_layer_nextn: 0,
        tokenizer: tok,
    }
}

fn dense(preset: &str) -> Option<Shape> {
    let l3 = Tokenizer::Bpe(BpeFlavor::Llama3);
    Some(match preset {
        // meta-llama/Llama-2-7b-hf
        "llama-2-7b" => llama(
            "llama-2-7b",
            [4096, 11008, 32, 32, 32, 32000],
            4096,
            10_000.0,
            Tokenizer::Spm,
        ),
        // meta-llama/Meta-Llama-3-8B
        "llama-3-8b" => llama(
            "llama-3-8b",
            [4096, 14336, 32, 32, 8, 128_256],
            8192,
            500_000.0,
            l3,
        ),
        // mistralai/Mistral-7B-v0.1 (converted to the llama architecture by llama.cpp)
        "mistral-7b" => llama(
            "mistral-7b",
            [4096, 14336, 32, 32, 8, 32000],
            32768,
            10_000.0,
            Tokenizer::Spm,
        ),
        // Qwen/Qwen2.5-7B-Instruct: untied embeddings, q/k/v biases, rms eps 1e-6
        "qwen2.5-7b" => Shape {
            preset: "qwen2.5-7b",
            arch: "qwen2",
            n_embd: 3584,
            n_ff: 18944,
            n_layer: 28,
            n_head: 28,
            n_head_kv: 4,
            head_dim: 128,
            n_rot: 128,
            n_vocab: 152_064,
            n_ctx_train: 32768,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            qkv_bias: true,
            qk_norm: false,
            moe: None,
            n_layer_nextn: 0,
            tokenizer: Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
        // meta-llama/Meta-Llama-3-70B
        "llama-3-70b" => llama(
            "llama-3-70b",
            [8192, 28672, 80, 64, 8, 128_256],
            8192,
            500_000.0,
            l3,
        ),
        _ => return None,
    })
}

fn moe(preset: &str) -> Option<Shape> {
    Some(match preset {
        // Qwen/Qwen3-30B-A3B: 128 experts of width 768, 8 used per token; head size 128
        // (not n_embd / n_head), q/k norms, untied embeddings.
        "qwen3-30b-a3b" => Shape {
            preset: "qwen3-30b-a3b",
            arch: "qwen3moe",
            n_embd: 2048,
            n_ff: 6144,
            n_layer: 48,
            n_head: 32,
            n_head_kv: 4,
            head_dim: 128,
            n_rot: 128,
            n_vocab: 151_936,
            n_ctx_train: 40960,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            qkv_bias: false,
            qk_norm: true,
            moe: Some(Moe::routed(128, 8, 768)),
            n_layer_nextn: 0,
            tokenizer: Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
        // mistralai/Mixtral-8x7B-v0.1 (the llama architecture with 8 experts, 2 used)
        "mixtral-8x7b" => Shape {
            moe: Some(Moe::routed(8, 2, 14336)),
            ..llama(
                "mixtral-8x7b",
                [4096, 14336, 32, 32, 8, 32000],
                32768,
                1_000_000.0,
                Tokenizer::Spm,
            )
        },
        // For tests: Qwen3-30B-A3B's architecture at a size that loads in milliseconds.
        "tiny-moe" => Shape {
            preset: "tiny-moe",
            arch: "qwen3moe",
            n_embd: 64,
            n_ff: 256,
            n_layer: 4,
            n_head: 4,
            n_head_kv: 2,
            head_dim: 32,
            n_rot: 32,
            n_vocab: 1024,
            n_ctx_train: 4096,
            rope_theta: 1_000_000.0,
            rms_eps: 1e-6,
            qkv_bias: false,
            qk_norm: true,
            moe: Some(Moe::routed(8, 2, 64)),
            n_layer_nextn: 0,
            tokenizer: Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
        _ => return None,
    })
}

impl Shape {
    /// A smaller model of the same architecture for tests: heads and vocabulary divided by
    /// `factor` (heads kept even, so the width stays a multiple of 256 for K-quants), the
    /// head size kept, the feed-forward width rounded up to 256, and `n_layer` layers.
    pub fn shrunk(&self, factor: u64, n_layer: Option<u64>) -> Shape {
        let f = factor.max(1);
        let mut s = self.clone();
        if let Some(l) = n_layer {
            s.n_layer = l.max(1);
        }
        if f == 1 {
            return s;
        }
        let heads = ((self.n_head as f64 / f as f64 / 2.0).round() as u64 * 2).max(2);
        let mut kv = (self.n_head_kv / f).max(1);
        while heads % kv != 0 {
            kv -= 1;
        }
        s.n_head = heads;
        s.n_head_kv = kv;
        s.n_embd = heads * self.head_dim;
        s.n_ff = (self.n_ff / f).div_ceil(256) * 256;
        s.n_vocab = (self.n_vocab / f).max(1024);
        if let Some(m) = &mut s.moe {
            // Expert count and routing kept (the work per token); Mixtral-style experts stay as
            // wide as the dense feed-forward, since llama.cpp sizes them by it.
            m.n_ff_exp = if m.n_ff_exp == self.n_ff {
                s.n_ff
            } else {
                (m.n_ff_exp / f).div_ceil(32).max(1) * 32
            };
        }
        s
    }

    pub fn n_embd_kv(&self) -> u64 {
        self.n_head_kv * self.head_dim
    }

    /// Tensor names and shapes (ggml order: the row length first), as llama.cpp names them:
    /// the trunk's layers, then the nextn layers (numbered after them, as llama.cpp's
    /// converter writes them).
    pub fn tensors(&self) -> Vec<(String, Vec<u64>)> {
        let (e, v) = (self.n_embd, self.n_vocab);
        let mut t = vec![
            ("token_embd.weight".to_string(), vec![e, v]),
            ("output_norm.weight".into(), vec![e]),
            ("output.weight".into(), vec![e, v]),
        ];
        for l in 0..self.n_layer + self.n_layer_nextn {
            self.attention(l, &mut t);
            self.feed_forward(l, &mut t);
            if l >= self.n_layer {
                // The MTP block: its token embedding and the trunk's hidden state, each
                // normed, concatenated and projected back to n_embd (eh_proj), then a
                // layer as above and its own head (norm and vocabulary projection).
                let n = |s: &str| format!("blk.{l}.nextn.{s}");
                t.push((n("eh_proj.weight"), vec![2 * e, e]));
                t.push((n("enorm.weight"), vec![e]));
                t.push((n("hnorm.weight"), vec![e]));
                t.push((n("embed_tokens.weight"), vec![e, v]));
                t.push((n("shared_head_norm.weight"), vec![e]));
                t.push((n("shared_head_head.weight"), vec![e, v]));
            }
        }
        t
    }

    fn attention(&self, l: u64, t: &mut Vec<(String, Vec<u64>)>) {
        let (e, kv) = (self.n_embd, self.n_embd_kv());
        let q = self.n_head * self.head_dim;
        let n = |s: &str| format!("blk.{l}.{s}");
        t.push((n("attn_norm.weight"), vec![e]));
        t.push((n("attn_q.weight"), vec![e, q]));
        t.push((n("attn_k.weight"), vec![e, kv]));
        t.push((n("attn_v.weight"), vec![e, kv]));
        if self.qkv_bias {
            t.push((n("attn_q.bias"), vec![q]));
            t.push((n("attn_k.bias"), vec![kv]));
            t.push((n("attn_v.bias"), vec![kv]));
        }
        t.push((n("attn_output.weight"), vec![q, e]));
        if self.qk_norm {
            t.push((n("attn_q_norm.weight"), vec![self.head_dim]));
            t.push((n("attn_k_norm.weight"), vec![self.head_dim]));
        }
    }

    /// Layer `l`'s feed-forward and its norm (GLM names it post_attention_norm).
    fn feed_forward(&self, l: u64, t: &mut Vec<(String, Vec<u64>)>) {
        let (e, ff) = (self.n_embd, self.n_ff);
        let n = |s: &str| format!("blk.{l}.{s}");
        let norm = if self.arch == "glm4moe" {
            "post_attention_norm.weight"
        } else {
            "ffn_norm.weight"
        };
        t.push((n(norm), vec![e]));
        match self.moe {
            Some(m) if l >= m.n_dense_lead => {
                let (x, fe) = (m.n_expert, m.n_ff_exp);
                t.push((n("ffn_gate_inp.weight"), vec![e, x]));
                if m.sigmoid_router {
                    t.push((n("exp_probs_b.bias"), vec![x]));
                }
                t.push((n("ffn_gate_exps.weight"), vec![e, fe, x]));
                t.push((n("ffn_up_exps.weight"), vec![e, fe, x]));
                t.push((n("ffn_down_exps.weight"), vec![fe, e, x]));
                if m.n_shared > 0 {
                    let fs = fe * m.n_shared;
                    t.push((n("ffn_gate_shexp.weight"), vec![e, fs]));
                    t.push((n("ffn_up_shexp.weight"), vec![e, fs]));
                    t.push((n("ffn_down_shexp.weight"), vec![fs, e]));
                }
            }
            _ => {
                t.push((n("ffn_gate.weight"), vec![e, ff]));
                t.push((n("ffn_up.weight"), vec![e, ff]));
                t.push((n("ffn_down.weight"), vec![ff, e]));
            }
        }
    }

    pub fn n_params(&self) -> u64 {
        self.tensors()
            .iter()
            .map(|(_, d)| d.iter().product::<u64>())
            .sum()
    }

    pub fn vocab(&self) -> Vocab {
        match self.tokenizer {
            Tokenizer::Spm => vocab::spm(self.n_vocab as usize),
            Tokenizer::Bpe(f) => vocab::bpe(self.n_vocab as usize, f),
        }
    }

    /// The GGUF document: 2-D weights of `weight_type` (the output matrix of
    /// `output_type`), norms and biases F32, `general.file_type` = `ftype`.
    pub fn document(&self, weight_type: u32, output_type: u32, ftype: u32, seed: u64) -> Document {
        let a = self.arch;
        let u32v = |x: u64| Value::U32(x as u32);
        let mut metadata = synthetic_header(a, self.preset, ftype);
        metadata.extend([
            (format!("{a}.context_length"), Value::U32(self.n_ctx_train)),
            (format!("{a}.embedding_length"), u32v(self.n_embd)),
            // llama.cpp counts the nextn layers in the block count.
            (
                format!("{a}.block_count"),
                u32v(self.n_layer + self.n_layer_nextn),
            ),
            (format!("{a}.feed_forward_length"), u32v(self.n_ff)),
            (format!("{a}.attention.head_count"), u32v(self.n_head)),
            (format!("{a}.attention.head_count_kv"), u32v(self.n_head_kv)),
            (format!("{a}.rope.dimension_count"), u32v(self.n_rot)),
            (format!("{a}.rope.freq_base"), Value::F32(self.rope_theta)),
            (
                format!("{a}.attention.layer_norm_rms_epsilon"),
                Value::F32(self.rms_eps),
            ),
        ]);
        if a == "llama" {
            metadata.push(("llama.vocab_size".into(), u32v(self.n_vocab)));
        }
        if self.head_dim * self.n_head != self.n_embd {
            metadata.push((format!("{a}.attention.key_length"), u32v(self.head_dim)));
            metadata.push((format!("{a}.attention.value_length"), u32v(self.head_dim)));
        }
        if let Some(m) = self.moe {
            metadata.push((format!("{a}.expert_count"), u32v(m.n_expert)));
            metadata.push((format!("{a}.expert_used_count"), u32v(m.n_expert_used)));
            if a != "llama" {
                metadata.push((format!("{a}.expert_feed_forward_length"), u32v(m.n_ff_exp)));
            }
            metadata.extend(glm_router(a, m));
        }
        if self.n_layer_nextn > 0 {
            metadata.push((
                format!("{a}.nextn_predict_layers"),
                u32v(self.n_layer_nextn),
            ));
        }
        metadata.extend(self.vocab().metadata());
        let mut next = seed;
        let tensors = self
            .tensors()
            .into_iter()
            .map(|(name, dims)| {
                next = next.wrapping_add(0x9E37_79B9);
                tensor(name, dims, next, weight_type, output_type)
            })
            .collect();
        Document { metadata, tensors }
    }
}

/// One tensor of the document: norms of ones, other 1-D tensors and the router small
/// random F32, matrices random of `weight_type` (the output matrices of `output_type`).
fn tensor(name: String, dims: Vec<u64>, seed: u64, weight_type: u32, output_type: u32) -> Tensor {
    let is_norm = name.ends_with("norm.weight");
    // The router stays F32, as llama.cpp's converter and quantizer keep it.
    let router = name.ends_with("ffn_gate_inp.weight");
    let (ggml_type, data) = if is_norm {
        (0, TensorData::ConstF32(1.0))
    } else if dims.len() == 1 || router {
        (0, TensorData::RandomF32 { seed, scale: 0.02 })
    } else {
        // The MTP block's own vocabulary projection is an output matrix too.
        let output = name == "output.weight" || name.ends_with("shared_head_head.weight");
        let ty = if output { output_type } else { weight_type };
        let scale = 1.0 / (dims[0] as f32).sqrt();
        (ty, TensorData::RandomF32 { seed, scale })
    };
    Tensor {
        name,
        dims,
        ggml_type,
        data,
    }
}

/// GLM-4.5's routing keys, as llama.cpp's converter writes them (the shared experts' count
/// is required by its loader; sigmoid gating with normalised top-k weights, scale 1).
fn glm_router(arch: &str, m: Moe) -> Vec<(String, Value)> {
    if arch != "glm4moe" {
        return Vec::new();
    }
    vec![
        (
            format!("{arch}.expert_shared_count"),
            Value::U32(m.n_shared as u32),
        ),
        (
            format!("{arch}.leading_dense_block_count"),
            Value::U32(m.n_dense_lead as u32),
        ),
        (
            format!("{arch}.expert_gating_func"),
            Value::U32(if m.sigmoid_router { 2 } else { 1 }),
        ),
        (format!("{arch}.expert_weights_norm"), Value::Bool(true)),
        (format!("{arch}.expert_weights_scale"), Value::F32(1.0)),
    ]
}

pub mod eagle3;
mod mtp;

/// The metadata every synthetic model starts with: architecture, name, file type, and the
/// keys that mark it synthetic (random weights) and name its preset.
fn synthetic_header(arch: &str, preset: &str, ftype: u32) -> Vec<(String, Value)> {
    vec![
        (
            "general.architecture".to_string(),
            Value::String(arch.into()),
        ),
        (
            "general.name".into(),
            Value::String(format!("tpsbench-synthetic-{preset}")),
        ),
        ("general.file_type".into(), Value::U32(ftype)),
        (KEY_SYNTHETIC.into(), Value::Bool(true)),
        (KEY_PRESET.into(), Value::String(preset.into())),
    ]
}

#[cfg(test)]
mod tests;
