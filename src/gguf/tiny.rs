//! The tiny synthetic model: llama architecture, random F32 weights and a small but valid
//! SentencePiece-style vocabulary (byte fallback tokens plus a few words), so that tests and
//! smoke runs exercise the real llama.cpp engine without downloading anything.
//!
//! Shapes are multiples of 256 so that llama.cpp's quantizer can produce K-quants from it.

use super::Value;
use super::writer::{Document, Tensor, TensorData};

pub(crate) const N_EMBD: u64 = 256;
pub(crate) const N_FF: u64 = 512;
pub(crate) const N_LAYER: u64 = 2;
pub(crate) const N_HEAD: u64 = 4;
pub(crate) const N_HEAD_KV: u64 = 2;
pub(crate) const N_CTX_TRAIN: u32 = 4096;

const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be",
    "at", "by", "this", "had", "not", "are", "but", "from", "or", "have", "an", "they", "which",
    "one", "you", "were", "her", "all", "she", "there", "would", "their", "we", "him", "been",
    "has", "when", "who", "will", "more", "no", "if", "out", "so", "said", "what", "up", "its",
    "about", "into", "than", "them", "can", "only", "other", "new", "some", "could", "time",
];

/// The vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, then words and letters.
pub fn vocabulary() -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let mut tokens = vec!["<unk>".to_string(), "<s>".into(), "</s>".into()];
    let mut types = vec![2, 3, 3]; // UNKNOWN, CONTROL, CONTROL
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6); // BYTE
    }
    for w in WORDS {
        tokens.push(format!("\u{2581}{w}"));
        types.push(1); // NORMAL
    }
    for c in 'a'..='z' {
        tokens.push(c.to_string());
        types.push(1);
        tokens.push(format!("\u{2581}{c}"));
        types.push(1);
    }
    tokens.push("\u{2581}".into());
    types.push(1);
    // Higher scores for earlier (more frequent) pieces, as SentencePiece stores them.
    let scores = (0..tokens.len()).map(|i| -(i as f32)).collect();
    (tokens, scores, types)
}

/// The document for `tpsbench synth tiny`, with weights drawn from `seed`.
pub fn document(seed: u64) -> Document {
    let (tokens, scores, types) = vocabulary();
    let n_vocab = tokens.len() as u64;
    Document {
        metadata: metadata(tokens, scores, types),
        tensors: tensors(seed, n_vocab),
    }
}

/// The model's hyperparameters and its vocabulary, as llama.cpp's loader reads them.
fn metadata(tokens: Vec<String>, scores: Vec<f32>, types: Vec<i32>) -> Vec<(String, Value)> {
    let n_vocab = tokens.len() as u64;
    let head_dim = N_EMBD / N_HEAD;
    let u32v = |x: u64| Value::U32(x as u32);
    vec![
        (
            "general.architecture".to_string(),
            Value::String("llama".into()),
        ),
        ("general.name".into(), Value::String("tpsbench-tiny".into())),
        ("general.file_type".into(), Value::U32(0)),
        ("llama.context_length".into(), Value::U32(N_CTX_TRAIN)),
        ("llama.embedding_length".into(), u32v(N_EMBD)),
        ("llama.block_count".into(), u32v(N_LAYER)),
        ("llama.feed_forward_length".into(), u32v(N_FF)),
        ("llama.attention.head_count".into(), u32v(N_HEAD)),
        ("llama.attention.head_count_kv".into(), u32v(N_HEAD_KV)),
        ("llama.rope.dimension_count".into(), u32v(head_dim)),
        ("llama.rope.freq_base".into(), Value::F32(10000.0)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            Value::F32(1e-5),
        ),
        ("llama.vocab_size".into(), u32v(n_vocab)),
        ("tokenizer.ggml.model".into(), Value::String("llama".into())),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.into_iter().map(Value::String).collect()),
        ),
        (
            "tokenizer.ggml.scores".into(),
            Value::Array(scores.into_iter().map(Value::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.into_iter().map(Value::I32).collect()),
        ),
        ("tokenizer.ggml.unknown_token_id".into(), Value::U32(0)),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(1)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(2)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(true)),
        ("tokenizer.ggml.add_eos_token".into(), Value::Bool(false)),
    ]
}

/// The weights, in llama.cpp's tensor order: random F32 matrices (each its own seed, drawn
/// in order from `seed`) and norms of ones.
fn tensors(seed: u64, n_vocab: u64) -> Vec<Tensor> {
    let head_dim = N_EMBD / N_HEAD;
    let n_embd_kv = head_dim * N_HEAD_KV;
    let mut next_seed = seed;
    let mut random = |name: String, dims: Vec<u64>| {
        next_seed = next_seed.wrapping_add(0x9E37_79B9);
        // Scaled like a trained model's init (≈ 1/sqrt(fan_in)) so activations stay finite.
        let scale = 1.0 / (dims[0] as f32).sqrt();
        Tensor {
            name,
            dims,
            ggml_type: 0,
            data: TensorData::RandomF32 {
                seed: next_seed,
                scale,
            },
        }
    };
    let norm = |name: String| Tensor {
        name,
        dims: vec![N_EMBD],
        ggml_type: 0,
        data: TensorData::ConstF32(1.0),
    };
    let mut tensors = vec![
        random("token_embd.weight".into(), vec![N_EMBD, n_vocab]),
        norm("output_norm.weight".into()),
        random("output.weight".into(), vec![N_EMBD, n_vocab]),
    ];
    for l in 0..N_LAYER {
        let b = |s: &str| format!("blk.{l}.{s}.weight");
        tensors.push(norm(b("attn_norm")));
        tensors.push(random(b("attn_q"), vec![N_EMBD, N_EMBD]));
        tensors.push(random(b("attn_k"), vec![N_EMBD, n_embd_kv]));
        tensors.push(random(b("attn_v"), vec![N_EMBD, n_embd_kv]));
        tensors.push(random(b("attn_output"), vec![N_EMBD, N_EMBD]));
        tensors.push(norm(b("ffn_norm")));
        tensors.push(random(b("ffn_gate"), vec![N_EMBD, N_FF]));
        tensors.push(random(b("ffn_up"), vec![N_EMBD, N_FF]));
        tensors.push(random(b("ffn_down"), vec![N_FF, N_EMBD]));
    }
    tensors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_has_special_byte_and_word_tokens_in_parallel_arrays() {
        let (t, s, ty) = vocabulary();
        assert_eq!(t.len(), s.len());
        assert_eq!(t.len(), ty.len());
        assert_eq!(t[1], "<s>");
        assert_eq!(t[3], "<0x00>");
        assert_eq!(t[258], "<0xFF>");
        let mut dedup = t.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), t.len(), "tokens are unique");
    }

    #[test]
    fn same_seed_gives_same_document_shapes() {
        let a = document(3);
        assert_eq!(a.tensors.len(), 3 + 9 * N_LAYER as usize);
        assert!(a.tensors.iter().all(|t| t.dims[0] % 256 == 0));
    }
}
