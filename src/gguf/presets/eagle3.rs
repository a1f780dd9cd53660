//! Eagle3 draft presets for llama.cpp's draft-eagle3 drafter: a one-layer decoder that drafts
//! from three of a target's hidden states (fused by `fc`) and its own token. It is made for
//! one target, so each preset names the test preset it drafts for and takes widths, layers
//! and vocabulary from it.
//!
//! The pinned llama.cpp (src/models/eagle3.cpp) reads `eagle3.target_layers` (3 ids),
//! `eagle3.target_hidden_size`, its layer's attention keys and the target's tokenizer. The
//! token embedding is borrowed from the target; the head's sub-vocabulary maps back by `d2t`.
//!
//! The weights are random: acceptance means nothing, what drafting and verifying cost is real.

use super::super::Value;
use super::super::writer::{Document, Tensor, TensorData};
use super::Shape;

/// ggml's I64 type: `d2t` holds target token ids.
const GGML_I64: u32 = 27;

/// An Eagle3 draft's shapes, and the target preset they fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Eagle3 {
    pub preset: &'static str,
    /// The target's shapes (its preset's).
    pub target: Shape,
    /// The draft's width. llama.cpp's decoder adds the target's token embedding to it, so
    /// with a borrowed embedding it must equal the target's width.
    pub n_embd: u64,
    pub n_ff: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    /// The target layers whose inputs the draft reads (low, middle, high).
    pub target_layers: [u32; 3],
    /// The head's sub-vocabulary: every `d2t_stride`-th target token.
    pub n_draft_vocab: u64,
    pub d2t_stride: u64,
}

/// The Eagle3 draft presets (for `tpsbench synth --preset`).
pub const PRESETS: &[&str] = &["tiny-eagle3"];

pub fn draft(preset: &str) -> Option<Eagle3> {
    Some(match preset {
        // For tests: a draft for tiny-moe (qwen3moe, whose graph lets llama.cpp extract its
        // layers' inputs; 4 layers of width 64, a 1024-token BPE vocabulary). Layers 1, 2
        // and 3 are its low, middle and high states (EAGLE-3 reads 2, 16 and 29 of Llama's
        // 32); the head speaks every second target token (512), as a trained draft's
        // frequent-token vocabulary is a part of its target's.
        "tiny-eagle3" => {
            let target = super::shape("tiny-moe")?;
            Eagle3 {
                preset: "tiny-eagle3",
                n_embd: target.n_embd,
                n_ff: 256,
                n_head: 4,
                n_head_kv: 2,
                target_layers: [1, 2, 3],
                n_draft_vocab: target.n_vocab / 2,
                d2t_stride: 2,
                target,
            }
        }
        _ => return None,
    })
}

impl Eagle3 {
    fn head_dim(&self) -> u64 {
        self.n_embd / self.n_head
    }

    /// Tensor names and shapes (ggml order: the row length first), as llama.cpp loads them.
    pub fn tensors(&self) -> Vec<(String, Vec<u64>)> {
        let (e, ff) = (self.n_embd, self.n_ff);
        let q = self.n_head * self.head_dim();
        let kv = self.n_head_kv * self.head_dim();
        // The attention reads [normed token embedding, normed fused state].
        let inp = 2 * e;
        let fused = self.target_layers.len() as u64 * self.target.n_embd;
        let n = |s: &str| format!("blk.0.{s}");
        vec![
            ("fc.weight".to_string(), vec![fused, e]),
            ("d2t".into(), vec![self.n_draft_vocab]),
            (n("attn_norm.weight"), vec![e]),
            (n("attn_norm_2.weight"), vec![e]),
            (n("attn_q.weight"), vec![inp, q]),
            (n("attn_k.weight"), vec![inp, kv]),
            (n("attn_v.weight"), vec![inp, kv]),
            (n("attn_output.weight"), vec![q, e]),
            (n("ffn_norm.weight"), vec![e]),
            (n("ffn_gate.weight"), vec![e, ff]),
            (n("ffn_up.weight"), vec![e, ff]),
            (n("ffn_down.weight"), vec![ff, e]),
            ("output_norm.weight".into(), vec![e]),
            ("output.weight".into(), vec![e, self.n_draft_vocab]),
        ]
    }

    /// The shortest row of its matrices: a block type must divide it.
    pub fn min_row(&self) -> u64 {
        self.tensors()
            .iter()
            .filter(|(_, d)| d.len() == 2)
            .map(|(_, d)| d[0])
            .min()
            .unwrap_or(1)
    }

    /// The GGUF document: matrices of `weight_type` (the head of `output_type`), norms F32,
    /// `d2t` I64, `general.file_type` = `ftype`.
    pub fn document(&self, weight_type: u32, output_type: u32, ftype: u32, seed: u64) -> Document {
        let t = &self.target;
        // Its own attention and feed-forward at the target's context and RoPE.
        let own = Shape {
            arch: "eagle3",
            n_embd: self.n_embd,
            n_ff: self.n_ff,
            n_layer: 1,
            n_head: self.n_head,
            n_head_kv: self.n_head_kv,
            head_dim: self.head_dim(),
            n_rot: self.head_dim(),
            moe: None,
            n_layer_nextn: 0,
            ..t.clone()
        };
        let mut metadata = super::synthetic_header("eagle3", self.preset, ftype);
        metadata.extend(own.hparams());
        let layers = self.target_layers.iter().map(|&l| Value::I32(l as i32));
        let layers = Value::Array(layers.collect());
        metadata.push(("eagle3.target_layers".into(), layers));
        let hidden = Value::U32(t.n_embd as u32);
        metadata.push(("eagle3.target_hidden_size".into(), hidden));
        // The target's tokenizer, token for token: llama.cpp's drafter compares them.
        metadata.extend(t.vocab().metadata());
        let tensors = super::seeded(self.tensors(), seed, |name, dims, seed| {
            self.tensor(name, dims, seed, weight_type, output_type)
        });
        Document { metadata, tensors }
    }

    fn tensor(&self, name: String, dims: Vec<u64>, seed: u64, weight: u32, output: u32) -> Tensor {
        if name == "d2t" {
            // Draft token i is target token i × stride: ids within the target's vocabulary.
            let ids = (0..self.n_draft_vocab).map(|i| (i * self.d2t_stride) as i64);
            return Tensor {
                name,
                dims,
                ggml_type: GGML_I64,
                data: TensorData::I64(ids.collect()),
            };
        }
        super::tensor(name, dims, seed, weight, output)
    }
}
