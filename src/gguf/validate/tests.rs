//! Each refusal here is a file that crashed llama.cpp (SIGABRT or SIGSEGV) when loaded and
//! run, found with corrupted copies of the tiny model; each acceptance is a file llama.cpp
//! handles (it loads, or refuses with an error), which the validator must not refuse.

use super::*;
use crate::gguf::reader::parse_header;
use crate::gguf::tiny;
use crate::gguf::writer::{Document, TensorData, write_gguf};

fn check(doc: &Document) -> Result<(), GgufError> {
    let mut b = Vec::new();
    write_gguf(&mut b, doc).unwrap();
    let h = parse_header(std::io::Cursor::new(&b), b.len() as u64)?;
    validate(&h)
}

fn with(key: &str, v: Option<Value>) -> Document {
    let mut d = tiny::document(1);
    d.metadata.retain(|(k, _)| k != key);
    if let Some(v) = v {
        d.metadata.push((key.to_string(), v));
    }
    d
}

fn refused(doc: &Document, needle: &str) {
    let e = check(doc).expect_err("must be refused").to_string();
    assert!(e.contains(needle), "{e:?} does not mention {needle:?}");
}

fn tokens_edit(f: impl Fn(&mut Vec<Value>)) -> Document {
    let mut d = tiny::document(1);
    let (_, v) = d
        .metadata
        .iter_mut()
        .find(|(k, _)| k == "tokenizer.ggml.tokens")
        .unwrap();
    if let Value::Array(a) = v {
        f(a)
    }
    d
}

fn tensor_type(name: &str, ty: u32) -> Document {
    let mut d = tiny::document(1);
    let t = d.tensors.iter_mut().find(|t| t.name == name).unwrap();
    t.ggml_type = ty;
    t.data = TensorData::Zeros;
    d
}

#[test]
fn the_tiny_model_passes() {
    check(&tiny::document(1)).unwrap();
}

#[test]
fn architecture_must_be_a_non_empty_string() {
    refused(&with("general.architecture", None), "missing");
    refused(
        &with("general.architecture", Some(Value::U32(1))),
        "must be a non-empty string, not uint32 1",
    );
    refused(
        &with("general.architecture", Some(Value::String(" ".into()))),
        "non-empty",
    );
}

#[test]
fn block_count_out_of_llama_cpp_range_is_refused() {
    // GGML_ASSERT(hparams.n_layer_all > 0 && hparams.n_layer_all <= LLAMA_MAX_LAYERS)
    for n in [0, 513, u32::MAX] {
        refused(
            &with("llama.block_count", Some(Value::U32(n))),
            "supports 1 to 512 layers",
        );
    }
    refused(&with("llama.block_count", None), "is missing");
    refused(
        &with("llama.block_count", Some(Value::U64(2))),
        "must be a uint32, not uint64 2",
    );
}

#[test]
fn required_hyperparameters_must_be_uint32() {
    for key in ["llama.context_length", "llama.embedding_length"] {
        refused(&with(key, None), "is missing");
        refused(
            &with(key, Some(Value::String("x".into()))),
            "must be a uint32",
        );
        refused(&with(key, Some(Value::F32(1.5))), "not float32 1.5");
    }
    refused(&with("llama.embedding_length", Some(Value::U32(0))), "is 0");
}

#[test]
fn per_layer_keys_take_one_value_or_one_per_layer() {
    let two = |a, b| Some(Value::Array(vec![Value::U32(a), Value::U32(b)]));
    check(&with("llama.attention.head_count", two(4, 4))).unwrap();
    check(&with("llama.feed_forward_length", two(512, 512))).unwrap();
    refused(
        &with(
            "llama.attention.head_count",
            Some(Value::Array(vec![Value::U32(4); 3])),
        ),
        "3 entries but the model has 2 layers",
    );
    refused(
        &with(
            "llama.attention.head_count_kv",
            Some(Value::String("2".into())),
        ),
        "array with one per layer",
    );
}

#[test]
fn head_counts_that_overflow_32_bit_sizes_are_refused() {
    // Found by flipping bit 31 of head_count_kv: 64 * 0x80000002 wraps to 128, which
    // matches the K/V tensor shapes; ggml.c then asserts in ggml_reshape.
    refused(
        &with(
            "llama.attention.head_count_kv",
            Some(Value::U32(0x8000_0002)),
        ),
        "`llama.attention.head_count_kv` is 2147483650",
    );
    refused(
        &with("llama.attention.key_length", Some(Value::U32(u32::MAX))),
        "overflow llama.cpp's 32-bit sizes",
    );
}

#[test]
fn nextn_layers_beyond_the_block_count_are_refused() {
    // GGML_ASSERT(hparams.n_layer_nextn <= hparams.n_layer_all)
    refused(
        &with("llama.nextn_predict_layers", Some(Value::U32(5))),
        "more than the 2 layers",
    );
    check(&with("llama.nextn_predict_layers", Some(Value::U32(1)))).unwrap();
}

#[test]
fn inconsistent_expert_counts_are_refused() {
    // GGML_ASSERT(n_expert_used_max > 0) and GGML_ASSERT(n_expert_used_max <= n_expert)
    refused(
        &with("llama.expert_count", Some(Value::U32(4))),
        "4 experts but no `llama.expert_used_count`",
    );
    refused(
        &with("llama.expert_used_count", Some(Value::U32(2))),
        "2 experts used per token but only 0 experts",
    );
    let mut d = with("llama.expert_count", Some(Value::U32(2000)));
    d.metadata
        .push(("llama.expert_used_count".into(), Value::U32(2)));
    refused(&d, "more than llama.cpp's 1024");
    let mut d = with("llama.expert_count", Some(Value::U32(8)));
    d.metadata
        .push(("llama.expert_used_count".into(), Value::U32(2)));
    // Consistent counts pass the validator (llama.cpp then refuses the missing tensors).
    check(&d).unwrap();
    d.metadata
        .push(("llama.expert_group_count".into(), Value::U32(3)));
    refused(&d, "do not divide into 3 groups");
}

#[test]
fn an_unknown_rope_scaling_type_is_refused() {
    // GGML_ASSERT(hparams.rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED)
    refused(
        &with(
            "llama.rope.scaling.type",
            Some(Value::String("bogus".into())),
        ),
        "llama.cpp knows none, linear, yarn, longrope",
    );
    check(&with(
        "llama.rope.scaling.type",
        Some(Value::String("yarn".into())),
    ))
    .unwrap();
}

#[test]
fn a_nan_or_negative_norm_epsilon_is_refused() {
    // ggml-cpu ops.cpp: GGML_ASSERT(eps >= 0.0f) in the first rms_norm
    let key = "llama.attention.layer_norm_rms_epsilon";
    refused(
        &with(key, Some(Value::F32(f32::NAN))),
        "finite, non-negative",
    );
    refused(&with(key, Some(Value::F32(-1e-5))), "finite, non-negative");
    refused(&with(key, Some(Value::U32(1))), "float32");
    check(&with(key, Some(Value::F32(0.0)))).unwrap();
}

#[test]
fn differing_key_and_value_head_sizes_are_refused_for_llama() {
    refused(
        &with("llama.attention.key_length", Some(Value::U32(32))),
        "key and value head sizes differ (32 and 64)",
    );
    let mut d = with("llama.attention.key_length", Some(Value::U32(64)));
    d.metadata
        .push(("llama.attention.value_length".into(), Value::U32(64)));
    check(&d).unwrap();
}

#[test]
fn duplicate_tokens_are_refused() {
    // llama-vocab.cpp: GGML_ASSERT(id_to_token.size() == token_to_id.size())
    refused(
        &tokens_edit(|a| a[300] = a[299].clone()),
        "token 300 \"▁when\" appears twice",
    );
    // An empty token becomes "[EMPTY_<id>]", which can collide with a real token.
    refused(
        &tokens_edit(|a| {
            a[300] = Value::String(String::new());
            a[301] = Value::String("[EMPTY_300]".into());
        }),
        "appears twice",
    );
    check(&tokens_edit(|a| a[300] = Value::String(String::new()))).unwrap();
}

#[test]
fn token_arrays_must_have_the_right_types_and_lengths() {
    refused(&with("tokenizer.ggml.tokens", None), "missing");
    refused(
        &with("tokenizer.ggml.tokens", Some(Value::Array(vec![]))),
        "non-empty array of string",
    );
    refused(
        &with(
            "tokenizer.ggml.tokens",
            Some(Value::Array(vec![Value::U32(1); 10])),
        ),
        "not an array of uint32 of 10 entries",
    );
    refused(
        &with(
            "tokenizer.ggml.scores",
            Some(Value::Array(vec![Value::F32(0.0); 5])),
        ),
        "has 5 entries for 375 tokens",
    );
    refused(
        &with(
            "tokenizer.ggml.token_type",
            Some(Value::Array(vec![Value::U32(1); 375])),
        ),
        "must be an array of int32",
    );
    refused(&with("tokenizer.ggml.model", None), "missing");
    refused(
        &with("tokenizer.ggml.model", Some(Value::U32(1))),
        "must be a string",
    );
    check(&with("tokenizer.ggml.scores", None)).unwrap();
    check(&with(
        "tokenizer.ggml.model",
        Some(Value::String("none".into())),
    ))
    .unwrap();
}

#[test]
fn a_wordpiece_vocabulary_with_byte_tokens_is_refused() {
    // llama-vocab.cpp token_to_byte: GGML_ABORT for LLAMA_VOCAB_TYPE_WPM
    refused(
        &with("tokenizer.ggml.model", Some(Value::String("bert".into()))),
        "token 3 is a byte token",
    );
}

#[test]
fn weights_of_activation_or_integer_types_are_refused() {
    // Q8_1 / Q8_K weights: SIGSEGV in the first matrix multiplication.
    for ty in [9, 15] {
        refused(
            &tensor_type("blk.0.attn_q.weight", ty),
            "only for activations",
        );
    }
    // I8..I64, F64: SIGSEGV in mul_mat, "fatal error" in get_rows.
    for ty in [24, 25, 26, 27, 28] {
        refused(
            &tensor_type("token_embd.weight", ty),
            "integer or F64 weights",
        );
    }
    for ty in [1, 2, 8, 12, 30] {
        check(&tensor_type("blk.0.attn_q.weight", ty)).unwrap();
        check(&tensor_type("token_embd.weight", ty)).unwrap();
    }
}

#[test]
fn one_dimensional_weights_must_be_f32() {
    // binary ops on a non-F32 norm weight: SIGABRT in the first decode.
    for ty in [1, 2, 30, 39] {
        refused(&tensor_type("output_norm.weight", ty), "must be F32");
    }
}

#[test]
fn a_clip_projector_needs_no_hyperparameters() {
    let mut d = Document::default();
    d.metadata
        .push(("general.architecture".into(), Value::String("clip".into())));
    check(&d).unwrap();
}
