use super::*;

fn dims<'a>(t: &'a [(String, Vec<u64>)], name: &str) -> &'a [u64] {
    &t.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn llama_3_8b_has_the_published_shapes() {
    let s = shape("llama-3-8b").unwrap();
    assert_eq!((s.n_embd, s.n_ff, s.n_layer), (4096, 14336, 32));
    assert_eq!((s.n_head, s.n_head_kv, s.n_vocab), (32, 8, 128_256));
    let t = s.tensors();
    assert_eq!(dims(&t, "token_embd.weight"), [4096, 128_256]);
    assert_eq!(dims(&t, "blk.31.attn_k.weight"), [4096, 1024]);
    assert_eq!(dims(&t, "blk.0.ffn_down.weight"), [14336, 4096]);
    assert_eq!(t.len(), 3 + 9 * 32);
    // 8.03 B parameters (Meta's model card)
    assert!(
        (s.n_params() as f64 / 8.03e9 - 1.0).abs() < 0.002,
        "{}",
        s.n_params()
    );
}

#[test]
fn every_preset_matches_its_published_parameter_count() {
    for (p, published) in [
        ("llama-2-7b", 6.738e9),
        ("llama-3-8b", 8.030e9),
        ("mistral-7b", 7.242e9),
        ("qwen2.5-7b", 7.616e9),
        ("llama-3-70b", 70.554e9),
        // The safetensors' exact counts.
        ("qwen3-30b-a3b", 30_532_122_624.0),
        ("mixtral-8x7b", 46_702_792_704.0),
    ] {
        let s = shape(p).unwrap();
        let n = s.n_params() as f64;
        assert!((n / published - 1.0).abs() < 0.002, "{p}: {n}");
        // K-quants need rows that are multiples of 256 (1-D tensors stay F32)
        assert!(
            s.tensors()
                .iter()
                .all(|(_, d)| d.len() == 1 || d[0] % 256 == 0),
            "{p}"
        );
    }
    assert!(shape("gpt-5").is_none());
    assert_eq!(presets().count(), 10);
    assert!(presets().all(|p| shape(p).is_some()));
}

#[test]
fn qwen_has_biases_and_its_own_widths() {
    let s = shape("qwen2.5-7b").unwrap();
    let t = s.tensors();
    assert_eq!(dims(&t, "blk.0.attn_q.bias"), [3584]);
    assert_eq!(dims(&t, "blk.27.attn_v.bias"), [512]);
    assert_eq!(dims(&t, "blk.0.ffn_up.weight"), [3584, 18944]);
    assert_eq!(dims(&t, "output.weight"), [3584, 152_064]);
    assert!(
        !shape("llama-2-7b")
            .unwrap()
            .tensors()
            .iter()
            .any(|(n, _)| n.contains("bias"))
    );
    assert_eq!(shape("llama-3-70b").unwrap().n_layer, 80);
    assert_eq!(shape("llama-2-7b").unwrap().n_head_kv, 32);
}

#[test]
fn shrinking_keeps_the_head_size_and_quantizable_widths() {
    for p in presets().filter(|p| !is_test_size(p)) {
        let full = shape(p).unwrap();
        let s = full.shrunk(16, Some(1));
        assert_eq!(s.head_dim, full.head_dim);
        assert_eq!(s.n_layer, 1);
        assert_eq!(s.n_head % s.n_head_kv, 0, "{p}");
        assert_eq!(s.n_embd % 256, 0, "{p}");
        assert_eq!(s.n_ff % 256, 0, "{p}");
        assert!(s.n_params() < full.n_params() / 100);
        assert_eq!(s.qkv_bias, full.qkv_bias);
    }
}

#[test]
fn the_document_marks_the_file_synthetic() {
    let s = shape("qwen2.5-7b").unwrap().shrunk(16, Some(1));
    let d = s.document(8, 14, 7, 1);
    let get = |k: &str| {
        d.metadata
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get(KEY_SYNTHETIC), Some(Value::Bool(true)));
    assert_eq!(
        get("general.architecture"),
        Some(Value::String("qwen2".into()))
    );
    assert_eq!(
        get("tokenizer.ggml.pre"),
        Some(Value::String("qwen2".into()))
    );
    let out = d
        .tensors
        .iter()
        .find(|t| t.name == "output.weight")
        .unwrap();
    assert_eq!(out.ggml_type, 14);
    let bias = d
        .tensors
        .iter()
        .find(|t| t.name == "blk.0.attn_q.bias")
        .unwrap();
    assert_eq!(bias.ggml_type, 0);
}

#[test]
fn moe_presets_have_llama_cpp_s_expert_tensors_and_keys() {
    let s = shape("qwen3-30b-a3b").unwrap();
    let t = s.tensors();
    assert_eq!(dims(&t, "blk.0.ffn_gate_inp.weight"), [2048, 128]);
    assert_eq!(dims(&t, "blk.47.ffn_gate_exps.weight"), [2048, 768, 128]);
    assert_eq!(dims(&t, "blk.0.ffn_down_exps.weight"), [768, 2048, 128]);
    assert_eq!(dims(&t, "blk.0.attn_q.weight"), [2048, 4096]);
    assert_eq!(dims(&t, "blk.0.attn_k_norm.weight"), [128]);
    assert!(!t.iter().any(|(n, _)| n == "blk.0.ffn_up.weight"));
    let m = shape("mixtral-8x7b").unwrap();
    assert_eq!(m.arch, "llama");
    assert_eq!(
        dims(&m.tensors(), "blk.31.ffn_up_exps.weight"),
        [4096, 14336, 8]
    );
    let tiny = shape("tiny-moe").unwrap();
    let doc = tiny.document(0, 0, 0, 1);
    let key = |k: &str| {
        doc.metadata
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(key("qwen3moe.expert_count"), Some(Value::U32(8)));
    assert_eq!(key("qwen3moe.expert_used_count"), Some(Value::U32(2)));
    assert_eq!(
        key("qwen3moe.expert_feed_forward_length"),
        Some(Value::U32(64))
    );
    // head size 32 with 4 heads is not n_embd / n_head = 16: said explicitly.
    assert_eq!(key("qwen3moe.attention.key_length"), Some(Value::U32(32)));
    // The router is F32 whatever the weight type.
    let doc = tiny.document(8, 8, 7, 1);
    let router = doc
        .tensors
        .iter()
        .find(|t| t.name == "blk.0.ffn_gate_inp.weight")
        .unwrap();
    assert_eq!(router.ggml_type, 0);
    // Shrinking keeps the experts and their routing.
    let s = shape("qwen3-30b-a3b").unwrap().shrunk(8, Some(2));
    assert_eq!(s.moe.unwrap().n_expert, 128);
    assert_eq!(s.moe.unwrap().n_ff_exp, 96);
}

#[test]
fn glm_4_5_air_has_the_published_shapes_and_one_nextn_layer() {
    let s = shape("glm-4.5-air").unwrap();
    assert_eq!((s.arch, s.n_layer, s.n_layer_nextn), ("glm4moe", 46, 1));
    let t = s.tensors();
    // Layer 0 dense, the others experts with a shared one and a router bias.
    assert_eq!(dims(&t, "blk.0.ffn_up.weight"), [4096, 10944]);
    assert!(!t.iter().any(|(n, _)| n == "blk.0.exp_probs_b.bias"));
    assert_eq!(dims(&t, "blk.1.ffn_gate_exps.weight"), [4096, 1408, 128]);
    assert_eq!(dims(&t, "blk.45.ffn_down_shexp.weight"), [1408, 4096]);
    assert_eq!(dims(&t, "blk.45.exp_probs_b.bias"), [128]);
    assert_eq!(dims(&t, "blk.1.attn_q.weight"), [4096, 12288]);
    assert_eq!(dims(&t, "blk.1.attn_k.bias"), [1024]);
    assert_eq!(dims(&t, "blk.1.post_attention_norm.weight"), [4096]);
    // The nextn layer is numbered after the trunk: a full layer and the MTP block.
    assert_eq!(dims(&t, "blk.46.nextn.eh_proj.weight"), [8192, 4096]);
    assert_eq!(dims(&t, "blk.46.ffn_up_exps.weight"), [4096, 1408, 128]);
    assert_eq!(
        dims(&t, "blk.46.nextn.shared_head_head.weight"),
        [4096, 151_552]
    );
    assert!(!t.iter().any(|(n, _)| n.starts_with("blk.47.")));
    // 106.85 B in the trunk (the published 106B) and 110.47 B with the MTP layer (the
    // safetensors' 110B).
    let trunk: u64 = t
        .iter()
        .filter(|(n, _)| !n.starts_with("blk.46."))
        .map(|(_, d)| d.iter().product::<u64>())
        .sum();
    assert_eq!(trunk, 106_852_251_264);
    assert_eq!(s.n_params(), 110_468_824_832);
    // Shrunk for tests it keeps its MTP layer.
    let small = s.shrunk(16, Some(2));
    assert_eq!((small.n_layer, small.n_layer_nextn), (2, 1));
    assert!(
        small
            .tensors()
            .iter()
            .any(|(n, _)| n == "blk.2.nextn.eh_proj.weight")
    );
}

#[test]
fn the_mtp_test_preset_writes_glm_4_5_s_keys_with_the_nextn_layer_counted() {
    let s = shape("tiny-mtp").unwrap();
    assert!(is_test_size("tiny-mtp") && !is_test_size("glm-4.5-air"));
    let doc = s.document(0, 0, 0, 1);
    let key = |k: &str| {
        doc.metadata
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        key("general.architecture"),
        Some(Value::String("glm4moe".into()))
    );
    // block_count counts the nextn layer, as llama.cpp's converter writes it.
    assert_eq!(key("glm4moe.block_count"), Some(Value::U32(3)));
    assert_eq!(key("glm4moe.nextn_predict_layers"), Some(Value::U32(1)));
    assert_eq!(key("glm4moe.rope.dimension_count"), Some(Value::U32(16)));
    assert_eq!(key("glm4moe.expert_shared_count"), Some(Value::U32(1)));
    assert_eq!(
        key("glm4moe.leading_dense_block_count"),
        Some(Value::U32(1))
    );
    assert_eq!(key("glm4moe.expert_gating_func"), Some(Value::U32(2)));
    assert_eq!(key(KEY_SYNTHETIC), Some(Value::Bool(true)));
    // The MTP head's vocabulary projection takes the output matrix's type.
    let doc = s.document(8, 14, 7, 1);
    let ty = |n: &str| doc.tensors.iter().find(|t| t.name == n).unwrap().ggml_type;
    assert_eq!(ty("blk.2.nextn.shared_head_head.weight"), 14);
    assert_eq!(ty("blk.2.nextn.embed_tokens.weight"), 8);
    assert_eq!(ty("blk.2.nextn.enorm.weight"), 0);
    assert_eq!(ty("blk.2.exp_probs_b.bias"), 0);
    // Other architectures write none of it.
    let q = shape("tiny-moe").unwrap().document(0, 0, 0, 1);
    assert!(
        !q.metadata
            .iter()
            .any(|(n, _)| n.contains("nextn") || n.contains("shared_count"))
    );
}

/// `doc` written and read back: what llama.cpp's loader and tpsbench's refusals see.
fn written(doc: &Document) -> crate::gguf::header::Header {
    let mut bytes = Vec::new();
    crate::gguf::writer::write_gguf(&mut bytes, doc).unwrap();
    let n = bytes.len() as u64;
    crate::gguf::reader::parse_header(std::io::Cursor::new(bytes), n).unwrap()
}

#[test]
fn the_eagle3_draft_fits_its_target_s_widths_layers_and_vocabulary() {
    let d = eagle3::draft("tiny-eagle3").unwrap();
    assert!(eagle3::draft("tiny-moe").is_none() && shape("tiny-eagle3").is_none());
    assert!(known("tiny-eagle3") && known("tiny-moe") && !known("eagle3"));
    assert!(is_test_size("tiny-eagle3"));
    assert!(all_names().ends_with("tiny-mtp, tiny-eagle3"));
    let target = shape("tiny-moe").unwrap();
    assert_eq!(d.target, target);
    // Three distinct trunk layers of the target, whose inputs llama.cpp extracts.
    assert!(
        d.target_layers
            .iter()
            .all(|&l| u64::from(l) < target.n_layer)
    );
    let h = written(&d.document(0, 0, 0, 7));
    let key = |k: &str| h.get(k).cloned();
    assert_eq!(
        key("general.architecture"),
        Some(Value::String("eagle3".into()))
    );
    assert_eq!(key("eagle3.block_count"), Some(Value::U32(1)));
    assert_eq!(key("eagle3.target_hidden_size"), Some(Value::U32(64)));
    assert_eq!(
        key("eagle3.target_layers"),
        Some(Value::Array(vec![
            Value::I32(1),
            Value::I32(2),
            Value::I32(3)
        ]))
    );
    assert_eq!(key(KEY_SYNTHETIC), Some(Value::Bool(true)));
    // The target's tokenizer, token for token (common_speculative_are_compatible).
    let vocab = target.vocab().metadata();
    for (k, v) in &vocab {
        assert_eq!(key(k).as_ref(), Some(v), "{k}");
    }
    // The shapes llama.cpp's eagle3 loader asks for (src/models/eagle3.cpp).
    let dims = |n: &str| h.tensors.iter().find(|t| t.name == n).unwrap().dims.clone();
    assert_eq!(dims("fc.weight"), [3 * 64, 64]);
    assert_eq!(dims("blk.0.attn_q.weight"), [128, 64]);
    assert_eq!(dims("blk.0.attn_k.weight"), [128, 32]);
    assert_eq!(dims("blk.0.attn_norm_2.weight"), [64]);
    assert_eq!(dims("output.weight"), [64, 512]);
    // No token embedding: the target's is borrowed, as EAGLE-3's Llama-3.1-8B draft does.
    assert!(!h.tensors.iter().any(|t| t.name == "token_embd.weight"));
    // d2t: 512 I64 target ids.
    let d2t = h.tensors.iter().find(|t| t.name == "d2t").unwrap();
    assert_eq!((d2t.ggml_type, d2t.n_bytes), (27, 512 * 8));
    assert_eq!(d.min_row(), 64);
}

#[test]
fn the_eagle3_draft_s_token_map_holds_target_ids_and_its_head_takes_the_output_type() {
    let d = eagle3::draft("tiny-eagle3").unwrap();
    // Q4_0 weights, a Q8_0 head (llama.cpp's choice when rows are not multiples of 256).
    let doc = d.document(2, 8, 2, 1);
    let t = |n: &str| doc.tensors.iter().find(|t| t.name == n).unwrap();
    let crate::gguf::writer::TensorData::I64(ids) = &t("d2t").data else {
        panic!("d2t is I64 values")
    };
    assert_eq!(ids.len(), 512);
    assert_eq!(&ids[..3], [0, 2, 4]);
    assert!(ids.iter().all(|&i| (0..1024).contains(&i)));
    assert_eq!(t("output.weight").ggml_type, 8);
    assert_eq!(t("fc.weight").ggml_type, 2);
    assert_eq!(t("blk.0.attn_norm_2.weight").ggml_type, 0);
    // The bytes written are those values, little-endian.
    let mut bytes = Vec::new();
    crate::gguf::writer::write_gguf(&mut bytes, &doc).unwrap();
    let h = written(&doc);
    let info = h.tensors.iter().find(|t| t.name == "d2t").unwrap();
    let at = (h.data_offset + info.offset) as usize;
    assert_eq!(
        i64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()),
        2
    );
}
