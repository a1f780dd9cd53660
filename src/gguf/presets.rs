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
    /// `general.architecture`.
    pub arch: &'static str,
    pub n_embd: u64,
    pub n_ff: u64,
    pub n_layer: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    /// Dimensions of each head that RoPE rotates (`rope.dimension_count`).
    pub n_rot: u64,
    pub n_vocab: u64,
    pub n_ctx_train: u32,
    pub rope_theta: f32,
    pub rms_eps: f32,
    pub qkv_bias: bool,
    pub qk_norm: bool,
    /// Mixture of experts: the feed-forward of every layer (but `n_dense_lead`) is routed.
    pub moe: Option<Moe>,
    /// Multi-token-prediction (nextn) layers after the `n_layer` trunk layers: what
    /// llama.cpp's draft-mtp drafts with.
    pub n_layer_nextn: u64,
    pub tokenizer: Tokenizer,
}

/// A mixture-of-experts feed-forward, as llama.cpp stores it: a router (`ffn_gate_inp`)
/// and the experts' matrices stacked in 3-D tensors (`ffn_{gate,up,down}_exps`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moe {
    pub n_expert: u64,
    pub n_expert_used: u64,
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

/// The models' presets `tpsbench synth --preset` knows (besides `tiny`), in [`SHAPES`]' order.
pub fn presets() -> impl Iterator<Item = &'static str> {
    SHAPES.lines().filter_map(|l| l.split(' ').next())
}

/// Each preset's shape from its config.json (meta-llama/Llama-2-7b-hf, Meta-Llama-3-8B and
/// -70B, mistralai/Mistral-7B-v0.1 and Mixtral-8x7B-v0.1 as llama.cpp converts them to the
/// llama architecture, Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen3-30B-A3B, zai-org/GLM-4.5-Air;
/// tiny-moe and tiny-mtp are the architectures of Qwen3 and GLM-4.5 at a size that loads in
/// milliseconds). Columns: preset, arch, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim,
/// n_vocab, n_ctx_train, rope_theta, rms_eps, then options: the tokenizer (`spm`, `llama3`'s
/// BPE, else Qwen2's BPE, which GLM's resembles), `bias` (on q, k and v), `qk_norm`, `rot=N`
/// (dimensions RoPE rotates, if not the head's), `moe=E/U/W` (E experts of width W, U used per
/// token), `glm=E/U/W` (GLM-4.5's: also one shared expert, the first layer dense, sigmoid
/// routing), `mtp=N` (nextn layers).
const SHAPES: &str = "\
llama-2-7b    llama    4096 11008 32 32 32 128  32000   4096 1e4 1e-5 spm
llama-3-8b    llama    4096 14336 32 32  8 128 128256   8192 5e5 1e-5 llama3
mistral-7b    llama    4096 14336 32 32  8 128  32000  32768 1e4 1e-5 spm
qwen2.5-7b    qwen2    3584 18944 28 28  4 128 152064  32768 1e6 1e-6 bias
llama-3-70b   llama    8192 28672 80 64  8 128 128256   8192 5e5 1e-5 llama3
qwen3-30b-a3b qwen3moe 2048  6144 48 32  4 128 151936  40960 1e6 1e-6 qk_norm moe=128/8/768
mixtral-8x7b  llama    4096 14336 32 32  8 128  32000  32768 1e6 1e-5 spm moe=8/2/14336
tiny-moe      qwen3moe   64   256  4  4  2  32   1024   4096 1e6 1e-6 qk_norm moe=8/2/64
glm-4.5-air   glm4moe  4096 10944 46 96  8 128 151552 131072 1e6 1e-5 bias rot=64 glm=128/8/1408 mtp=1
tiny-mtp      glm4moe    64   256  2  4  2  32   1024   4096 1e6 1e-5 bias rot=16 glm=8/2/64 mtp=1
";

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
    presets()
        .chain(eagle3::PRESETS.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn shape(preset: &str) -> Option<Shape> {
    (SHAPES.lines())
        .find(|l| l.split(' ').next() == Some(preset))
        .map(parse_row)
}

pub(crate) fn parse_row(row: &'static str) -> Shape {
    let f: Vec<&'static str> = row.split_whitespace().collect();
    let num = |s: &str| s.parse::<u64>().expect("a preset's figure");
    let n = |i: usize| num(f[i]);
    let x = |i: usize| f[i].parse::<f32>().expect("a preset's figure");
    let options = &f[12..];
    let option = |key: &str| options.iter().find_map(|o| o.strip_prefix(key));
    let moe = |v: &str, glm: bool| {
        let e: Vec<u64> = v.split('/').map(num).collect();
        Moe {
            n_expert: e[0],
            n_expert_used: e[1],
            n_ff_exp: e[2],
            n_shared: u64::from(glm),
            n_dense_lead: u64::from(glm),
            sigmoid_router: glm,
        }
    };
    Shape {
        preset: f[0],
        arch: f[1],
        n_embd: n(2),
        n_ff: n(3),
        n_layer: n(4),
        n_head: n(5),
        n_head_kv: n(6),
        head_dim: n(7),
        n_rot: option("rot=").map_or(n(7), num),
        n_vocab: n(8),
        n_ctx_train: n(9) as u32,
        rope_theta: x(10),
        rms_eps: x(11),
        qkv_bias: options.contains(&"bias"),
        qk_norm: options.contains(&"qk_norm"),
        moe: (option("moe=").map(|v| moe(v, false))).or(option("glm=").map(|v| moe(v, true))),
        n_layer_nextn: option("mtp=").map_or(0, num),
        tokenizer: match options.first() {
            Some(&"spm") => Tokenizer::Spm,
            Some(&"llama3") => Tokenizer::Bpe(BpeFlavor::Llama3),
            _ => Tokenizer::Bpe(BpeFlavor::Qwen2),
        },
    }
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
        (self.tensors().iter())
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
        let mut metadata = synthetic_header(self.arch, self.preset, ftype);
        metadata.extend(self.hparams());
        metadata.extend(self.vocab().metadata());
        let tensors = seeded(self.tensors(), seed, |name, dims, seed| {
            tensor(name, dims, seed, weight_type, output_type)
        });
        Document { metadata, tensors }
    }

    /// The architecture's keys, as llama.cpp's converter writes them.
    pub(crate) fn hparams(&self) -> Vec<(String, Value)> {
        let u32v = |x: u64| Value::U32(x as u32);
        let mut keys = vec![
            ("context_length", Value::U32(self.n_ctx_train)),
            ("embedding_length", u32v(self.n_embd)),
            // llama.cpp counts the nextn layers in the block count.
            ("block_count", u32v(self.n_layer + self.n_layer_nextn)),
            ("feed_forward_length", u32v(self.n_ff)),
            ("attention.head_count", u32v(self.n_head)),
            ("attention.head_count_kv", u32v(self.n_head_kv)),
            ("rope.dimension_count", u32v(self.n_rot)),
            ("rope.freq_base", Value::F32(self.rope_theta)),
            ("attention.layer_norm_rms_epsilon", Value::F32(self.rms_eps)),
        ];
        if self.arch == "llama" {
            keys.push(("vocab_size", u32v(self.n_vocab)));
        }
        if self.head_dim * self.n_head != self.n_embd {
            keys.push(("attention.key_length", u32v(self.head_dim)));
            keys.push(("attention.value_length", u32v(self.head_dim)));
        }
        if let Some(e) = self.moe {
            keys.push(("expert_count", u32v(e.n_expert)));
            keys.push(("expert_used_count", u32v(e.n_expert_used)));
            if self.arch != "llama" {
                keys.push(("expert_feed_forward_length", u32v(e.n_ff_exp)));
            }
            // GLM-4.5's loader requires the shared experts' count; sigmoid gating with
            // normalised top-k weights, scale 1.
            if self.arch == "glm4moe" {
                let gating = if e.sigmoid_router { 2 } else { 1 };
                keys.extend([
                    ("expert_shared_count", u32v(e.n_shared)),
                    ("leading_dense_block_count", u32v(e.n_dense_lead)),
                    ("expert_gating_func", u32v(gating)),
                    ("expert_weights_norm", Value::Bool(true)),
                    ("expert_weights_scale", Value::F32(1.0)),
                ]);
            }
        }
        if self.n_layer_nextn > 0 {
            keys.push(("nextn_predict_layers", u32v(self.n_layer_nextn)));
        }
        let a = self.arch;
        keys.into_iter()
            .map(|(k, v)| (format!("{a}.{k}"), v))
            .collect()
    }
}

/// `tensor` of each tensor, with the seeds drawn in turn from `seed`.
fn seeded(
    tensors: Vec<(String, Vec<u64>)>,
    seed: u64,
    mut tensor: impl FnMut(String, Vec<u64>, u64) -> Tensor,
) -> Vec<Tensor> {
    let mut next = seed;
    (tensors.into_iter())
        .map(|(name, dims)| {
            next = next.wrapping_add(0x9E37_79B9);
            tensor(name, dims, next)
        })
        .collect()
}

/// One tensor of the document: norms of ones, other 1-D tensors and the router small
/// random F32 (the router stays F32, as llama.cpp's converter and quantizer keep it),
/// matrices random of `weight_type` (the output matrices, the MTP block's own vocabulary
/// projection too, of `output_type`).
fn tensor(name: String, dims: Vec<u64>, seed: u64, weight_type: u32, output_type: u32) -> Tensor {
    if name.ends_with("norm.weight") || name.ends_with("norm_2.weight") {
        return Tensor::ones(name, dims);
    }
    if dims.len() == 1 || name.ends_with("ffn_gate_inp.weight") {
        let data = TensorData::RandomF32 { seed, scale: 0.02 };
        return Tensor {
            data,
            ..Tensor::ones(name, dims)
        };
    }
    let output = name == "output.weight" || name.ends_with("shared_head_head.weight");
    let ty = if output { output_type } else { weight_type };
    Tensor::random(name, dims, ty, seed)
}

pub mod eagle3;

/// The metadata every model written here starts with: architecture, name and file type.
pub(crate) fn general(arch: &str, name: String, ftype: u32) -> Vec<(String, Value)> {
    vec![
        ("general.architecture".into(), Value::String(arch.into())),
        ("general.name".into(), Value::String(name)),
        ("general.file_type".into(), Value::U32(ftype)),
    ]
}

/// [`general`] and the keys that mark a synthetic model (random weights) and its preset.
fn synthetic_header(arch: &str, preset: &str, ftype: u32) -> Vec<(String, Value)> {
    let mut m = general(arch, format!("tpsbench-synthetic-{preset}"), ftype);
    m.push((KEY_SYNTHETIC.into(), Value::Bool(true)));
    m.push((KEY_PRESET.into(), Value::String(preset.into())));
    m
}

#[cfg(test)]
mod tests;
