//! Content checks on a parsed GGUF header before llama.cpp sees the file: some bad inputs
//! reach a `GGML_ASSERT` or a segfault in llama.cpp instead of an error (docs/bad-input.md),
//! and are refused here naming the key or tensor. The checks follow llama.cpp's own rules
//! and are never stricter where a real model could differ.

use super::Value;
use super::error::GgufError;
use super::header::{Header, TensorInfo};

mod tokenizer;
use tokenizer::tokenizer;

/// llama.cpp's LLAMA_MAX_LAYERS and LLAMA_MAX_EXPERTS (llama-hparams.h).
const MAX_LAYERS: u64 = 512;
const MAX_EXPERTS: u64 = 1024;
/// llama.cpp's LLAMA_ROPE_SCALING_TYPES: any other string is a GGML_ASSERT.
const ROPE_SCALING_TYPES: &[&str] = &["none", "linear", "yarn", "longrope"];
/// Architectures whose graphs require head sizes to agree (the llama family).
const LLAMA_FAMILY: &[&str] = &["llama", "llama-embed", "deci", "falcon", "mistral3"];

/// ggml type ids that cannot be model weights: Q8_1 and Q8_K are only activation formats
/// (no matrix multiplication takes them as weights: llama.cpp segfaults), and integer or
/// F64 weights abort in every op that uses weights.
const Q8_1: u32 = 9;
const Q8_K: u32 = 15;
const INTEGER_OR_F64: &[u32] = &[24, 25, 26, 27, 28];
const F32: u32 = 0;

fn bad<T>(msg: impl Into<String>) -> Result<T, GgufError> {
    Err(GgufError::Refused(msg.into()))
}

/// Checks what llama.cpp needs of the metadata and tensors; see the module comment.
pub fn validate(h: &Header) -> Result<(), GgufError> {
    let arch = match h.get("general.architecture") {
        None => return bad("metadata `general.architecture` is missing"),
        Some(Value::String(s)) if !s.trim().is_empty() => s.as_str(),
        Some(v) => return must_be("general.architecture", "a non-empty string", v),
    };
    // "clip" is a vision projector: llama.cpp loads no hyperparameters or vocabulary for it.
    if arch != "clip" {
        hyperparameters(h, arch)?;
        tokenizer(h)?;
    }
    tensor_types(&h.tensors)
}

/// "metadata `key` must be `what`, not (the value)".
fn must_be<T>(key: &str, what: &str, v: &Value) -> Result<T, GgufError> {
    let v = describe(v);
    bad(format!("metadata `{key}` must be {what}, not {v}"))
}

/// A short description of a value for messages: its type and, for scalars, the value.
fn describe(v: &Value) -> String {
    match v {
        Value::Array(items) => format!("an {} of {} entries", v.type_name(), items.len()),
        Value::String(s) => format!("the string {s:?}"),
        Value::U8(x) => format!("uint8 {x}"),
        Value::I8(x) => format!("int8 {x}"),
        Value::U16(x) => format!("uint16 {x}"),
        Value::I16(x) => format!("int16 {x}"),
        Value::U32(x) => format!("uint32 {x}"),
        Value::I32(x) => format!("int32 {x}"),
        Value::F32(x) => format!("float32 {x}"),
        Value::Bool(x) => format!("bool {x}"),
        Value::U64(x) => format!("uint64 {x}"),
        Value::I64(x) => format!("int64 {x}"),
        Value::F64(x) => format!("float64 {x}"),
    }
}

/// A key llama.cpp reads as `uint32_t`: its `get_key` accepts exactly GGUF uint32.
fn u32_key(h: &Header, key: &str, required: bool) -> Result<Option<u64>, GgufError> {
    match h.get(key) {
        None if required => bad(format!(
            "metadata `{key}` is missing (llama.cpp requires it)"
        )),
        None => Ok(None),
        Some(Value::U32(x)) => Ok(Some(u64::from(*x))),
        Some(v) => must_be(key, "a uint32", v),
    }
}

/// A per-layer key (`get_key_or_arr`): one uint32 for every layer, or an array with one
/// integer per layer.
fn per_layer_key(h: &Header, key: &str, n_layer: u64) -> Result<Option<Vec<u64>>, GgufError> {
    match h.get(key) {
        None => Ok(None),
        Some(Value::U32(x)) => Ok(Some(vec![u64::from(*x); n_layer as usize])),
        Some(Value::Array(items)) => {
            if items.len() as u64 != n_layer {
                return bad(format!(
                    "metadata `{key}` has {} entries but the model has {n_layer} layers",
                    items.len()
                ));
            }
            (items.iter())
                .map(|x| match *x {
                    // llama.cpp reads int32 entries as uint32.
                    Value::U32(n) => Ok(u64::from(n)),
                    Value::I32(n) => Ok(u64::from(n as u32)),
                    Value::Bool(b) => Ok(u64::from(b)),
                    _ => bad(format!(
                        "metadata `{key}` must hold uint32 or int32 entries, not {}",
                        x.type_name()
                    )),
                })
                .collect::<Result<Vec<u64>, _>>()
                .map(Some)
        }
        Some(v) => must_be(key, "a uint32 or an array with one per layer", v),
    }
}

/// The hyperparameters `llama_model::load_hparams` reads for every architecture, with the
/// limits it asserts.
fn hyperparameters(h: &Header, arch: &str) -> Result<(), GgufError> {
    let k = |s: &str| format!("{arch}.{s}");
    u32_key(h, &k("context_length"), true)?;
    if u32_key(h, &k("embedding_length"), true)? == Some(0) {
        return bad(format!("metadata `{}` is 0", k("embedding_length")));
    }
    let n_layer = u32_key(h, &k("block_count"), true)?.unwrap_or(0);
    if !(1..=MAX_LAYERS).contains(&n_layer) {
        return bad(format!(
            "metadata `{}` is {n_layer}; llama.cpp supports 1 to {MAX_LAYERS} layers",
            k("block_count")
        ));
    }
    let at_most_layers = |name: &str| -> Result<(), GgufError> {
        match u32_key(h, &k(name), false)? {
            Some(n) if n > n_layer => bad(format!(
                "metadata `{}` is {n}, more than the {n_layer} layers of the model",
                k(name)
            )),
            _ => Ok(()),
        }
    };
    at_most_layers("nextn_predict_layers")?;
    if arch == "wavtokenizer-dec" {
        at_most_layers("posnet.block_count")?;
        at_most_layers("convnext.block_count")?;
    }
    let heads = per_layer_key(h, &k("attention.head_count"), n_layer)?;
    let kv_heads = per_layer_key(h, &k("attention.head_count_kv"), n_layer)?;
    per_layer_key(h, &k("feed_forward_length"), n_layer)?;
    experts(h, arch, n_layer)?;
    head_sizes(h, arch, heads.as_deref(), kv_heads.as_deref())?;

    let rope = k("rope.scaling.type");
    if let Some(v) = h.get(&rope)
        && !matches!(v, Value::String(s) if ROPE_SCALING_TYPES.contains(&s.as_str()))
    {
        let known = ROPE_SCALING_TYPES.join(", ");
        return bad(format!(
            "metadata `{rope}` is {}; llama.cpp knows {known}",
            describe(v)
        ));
    }
    // A NaN or negative epsilon passes loading and aborts in the first norm.
    for name in [
        "attention.layer_norm_rms_epsilon",
        "attention.layer_norm_epsilon",
    ] {
        match h.get(&k(name)) {
            None => {}
            Some(Value::F32(e)) if e.is_finite() && *e >= 0.0 => {}
            Some(v) => return must_be(&k(name), "a finite, non-negative float32", v),
        }
    }
    Ok(())
}

/// Head sizes and counts. llama.cpp multiplies them in 32-bit arithmetic (e.g.
/// `n_embd_k_gqa = n_embd_head_k * n_head_kv`): a corrupt count can wrap around to a value
/// that matches the tensor shapes and then trips a GGML_ASSERT in the first graph.
fn head_sizes(
    h: &Header,
    arch: &str,
    heads: Option<&[u64]>,
    kv_heads: Option<&[u64]>,
) -> Result<(), GgufError> {
    let k = |s: &str| format!("{arch}.{s}");
    let n_embd = u32_key(h, &k("embedding_length"), true)?.unwrap_or(0);
    // As load_hparams: the head size defaults to n_embd / n_head of the first layer.
    let default = heads
        .and_then(|hs| hs.first().copied())
        .filter(|&n| n > 0)
        .map(|n| n_embd / n);
    let key_len = u32_key(h, &k("attention.key_length"), false)?.or(default);
    let value_len = u32_key(h, &k("attention.value_length"), false)?.or(default);
    let limit = i32::MAX as u64;
    for (what, counts) in [("head_count", heads), ("head_count_kv", kv_heads.or(heads))] {
        for (size_name, size) in [("key", key_len), ("value", value_len)] {
            let (Some(counts), Some(size)) = (counts, size) else {
                continue;
            };
            if let Some(&n) = counts.iter().find(|&&n| n.saturating_mul(size) > limit) {
                return bad(format!(
                    "metadata `{}` is {n}: {n} heads of {size_name} size {size} overflow llama.cpp's 32-bit sizes",
                    k(&format!("attention.{what}"))
                ));
            }
        }
    }
    if LLAMA_FAMILY.contains(&arch) && key_len != value_len {
        // The llama graph asserts equal key and value head sizes (n_rot is checked on load).
        return bad(format!(
            "the attention key and value head sizes differ ({} and {}); the {arch} graph needs them equal",
            key_len.map_or("unset".into(), |x| x.to_string()),
            value_len.map_or("unset".into(), |x| x.to_string()),
        ));
    }
    Ok(())
}

/// The mixture-of-experts counts, with the assertions of `load_hparams`.
fn experts(h: &Header, arch: &str, n_layer: u64) -> Result<(), GgufError> {
    let k = |s: &str| format!("{arch}.{s}");
    let mut n_expert = u32_key(h, &k("expert_count"), false)?.unwrap_or(0);
    let mut used = per_layer_key(h, &k("expert_used_count"), n_layer)?
        .and_then(|v| v.into_iter().max())
        .unwrap_or(0);
    let groups = u32_key(h, &k("expert_group_count"), false)?.unwrap_or(0);
    let group_used = u32_key(h, &k("expert_group_used_count"), false)?.unwrap_or(0);
    // llama.cpp treats these dense models' single expert as none.
    if (arch == "hunyuan_vl" || arch == "hunyuan-dense") && n_expert <= 1 {
        n_expert = 0;
        used = 0;
    }
    let problem = if n_expert > MAX_EXPERTS {
        Some(format!(
            "{n_expert} experts, more than llama.cpp's {MAX_EXPERTS}"
        ))
    } else if used > n_expert {
        Some(format!(
            "{used} experts used per token but only {n_expert} experts"
        ))
    } else if n_expert > 0 && used == 0 {
        Some(format!(
            "{n_expert} experts but no `{}`",
            k("expert_used_count")
        ))
    } else if n_expert > 0 && groups >= n_expert {
        Some(format!("{groups} expert groups for {n_expert} experts"))
    } else if n_expert > 0 && groups > 1 && n_expert % groups != 0 {
        Some(format!(
            "{n_expert} experts do not divide into {groups} groups"
        ))
    } else if n_expert > 0 && groups > 1 && (group_used == 0 || group_used >= groups) {
        Some(format!("{group_used} expert groups used out of {groups}"))
    } else if n_expert == 0 && groups != 0 {
        Some(format!("{groups} expert groups but no experts"))
    } else {
        None
    };
    match problem {
        Some(p) => bad(format!("inconsistent mixture-of-experts metadata: {p}")),
        None => Ok(()),
    }
}

/// Tensor types llama.cpp's CPU ops cannot take as weights (they abort or segfault in the
/// first decode), found by loading the tiny model with each type substituted.
fn tensor_types(tensors: &[TensorInfo]) -> Result<(), GgufError> {
    for t in tensors {
        let (type_name, _, _) = super::type_layout(t.ggml_type).unwrap_or(("?", 1, 1));
        let is_weight = t.name.ends_with(".weight") || t.name.ends_with(".bias");
        let one_dimensional = t.dims.iter().skip(1).all(|&d| d == 1);
        if t.ggml_type == Q8_1 || t.ggml_type == Q8_K {
            return bad(format!(
                "tensor `{}` has type {type_name}, which ggml uses only for activations, never for stored weights",
                t.name
            ));
        }
        if is_weight && INTEGER_OR_F64.contains(&t.ggml_type) {
            return bad(format!(
                "tensor `{}` has type {type_name}; llama.cpp cannot compute with integer or F64 weights",
                t.name
            ));
        }
        // Norm weights and biases are applied with element-wise ops that take F32 only;
        // converters and llama-quantize always keep 1-D tensors in F32.
        if is_weight && one_dimensional && t.ggml_type != F32 {
            return bad(format!(
                "tensor `{}` is one-dimensional (a norm or bias) but has type {type_name}; it must be F32",
                t.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
