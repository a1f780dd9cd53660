use super::*;
use crate::gguf::Value;
use crate::gguf::reader::read_header;
use crate::gguf::tiny;
use crate::gguf::writer::{TensorData, write_gguf};

const Q5_0: u32 = 6;
const Q8_0: u32 = 8;
const Q4_K: u32 = 12;
const Q6_K: u32 = 14;

/// The tiny model written as a "Q4_K_M" (`general.file_type` 15) whose weights have the
/// types `ty` gives each 2-D tensor by name (norms stay F32), read back from disk.
fn written(ty: impl Fn(&str) -> u32) -> Header {
    let mut doc = tiny::document(1);
    for (k, v) in &mut doc.metadata {
        if k == "general.file_type" {
            *v = Value::U32(15);
        }
    }
    for t in &mut doc.tensors {
        if t.dims.len() == 2 {
            t.ggml_type = ty(&t.name);
            t.data = TensorData::Zeros;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fallback.gguf");
    write_gguf(&mut std::fs::File::create(&path).unwrap(), &doc).unwrap();
    read_header(&path).unwrap()
}

#[test]
fn a_k_quant_that_fell_back_shows_its_real_mix() {
    // What llama.cpp's quantizer writes for Q4_K_M when rows are not a multiple of 256
    // wide: Q4_K becomes Q5_0, Q6_K becomes Q8_0 (attn_v, ffn_down and the embeddings).
    let h = written(|name| {
        if name.contains("attn_v") || name.contains("ffn_down") || !name.starts_with("blk") {
            Q8_0
        } else {
            Q5_0
        }
    });
    assert_eq!(h.file_type(), Some("Q4_K_M"));
    let mix = of(&h);
    let names: Vec<&str> = mix.iter().map(|t| t.ggml_type.as_str()).collect();
    assert_eq!(names, ["Q5_0", "Q8_0", "F32"], "{mix:?}");
    let total: f64 = mix.iter().map(|t| t.share).sum();
    assert!((total - 1.0).abs() < 1e-3, "{mix:?}");
    assert!(mix[0].share > 0.5, "{mix:?}");
    assert_eq!(label("Q4_K_M", &mix), "Q4_K_M (mostly Q5_0)");
    assert_eq!(mostly_other("Q4_K_M", &mix), Some("Q5_0"));
}

#[test]
fn a_k_quant_as_named_keeps_its_name() {
    let h = written(|name| {
        if name.contains("attn_v") || name.contains("ffn_down") {
            Q6_K
        } else {
            Q4_K
        }
    });
    let mix = of(&h);
    assert_eq!(mix[0].ggml_type, "Q4_K", "{mix:?}");
    assert_eq!(label("Q4_K_M", &mix), "Q4_K_M");
    assert_eq!(mostly_other("Q4_K_M", &mix), None);
}

#[test]
fn names_map_to_the_type_they_promise() {
    assert_eq!(main_type("Q4_K_M"), Some("Q4_K"));
    assert_eq!(main_type("Q2_K"), Some("Q2_K"));
    assert_eq!(main_type("IQ4_NL"), Some("IQ4_NL"));
    assert_eq!(main_type("F16"), Some("F16"));
    assert_eq!(main_type("IQ3_M"), Some("IQ3_S"));
    assert_eq!(main_type("unknown"), None);
    // No claim without a mix or for a name the table does not know.
    assert_eq!(label("Q4_K_M", &[]), "Q4_K_M");
    let mix = [TypeShare {
        ggml_type: "Q5_0".into(),
        share: 1.0,
    }];
    assert_eq!(label("mystery", &mix), "mystery");
}
