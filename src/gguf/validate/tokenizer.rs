//! The vocabulary checks of `validate`: the tokenizer metadata as llama.cpp's vocabulary
//! loader reads it, so a bad vocabulary is one clear line instead of a crash.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{bad, describe};
use crate::gguf::Value;
use crate::gguf::error::GgufError;
use crate::gguf::header::Header;

/// The vocabulary as `llama_vocab::impl::load` reads it.
pub(super) fn tokenizer(h: &Header) -> Result<(), GgufError> {
    let model = match h.get("tokenizer.ggml.model") {
        None => return bad("metadata `tokenizer.ggml.model` is missing"),
        Some(Value::String(s)) => s.as_str(),
        Some(v) => {
            return bad(format!(
                "metadata `tokenizer.ggml.model` must be a string, not {}",
                describe(v)
            ));
        }
    };
    if model == "none" || model == "no_vocab" {
        return Ok(()); // no vocabulary is read
    }
    let tokens = match h.get("tokenizer.ggml.tokens") {
        None => return bad("metadata `tokenizer.ggml.tokens` is missing"),
        // GGUF arrays are homogeneous (the reader guarantees it): the first entry tells.
        Some(Value::Array(items)) if matches!(items.first(), Some(Value::String(_))) => items,
        Some(v) => {
            return bad(format!(
                "metadata `tokenizer.ggml.tokens` must be a non-empty array of string, not {}",
                describe(v)
            ));
        }
    };
    // llama.cpp renames empty tokens to "[EMPTY_<id>]", then asserts every text is unique.
    let mut seen: HashSet<Cow<str>> = HashSet::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        let Value::String(s) = t else {
            return bad("metadata `tokenizer.ggml.tokens` mixes types");
        };
        let text: Cow<str> = if s.is_empty() {
            Cow::Owned(format!("[EMPTY_{i}]"))
        } else {
            Cow::Borrowed(s)
        };
        if !seen.insert(text.clone()) {
            return bad(format!(
                "token {i} {text:?} appears twice in `tokenizer.ggml.tokens` (llama.cpp aborts on duplicate tokens)"
            ));
        }
    }
    let n = tokens.len();
    let parallel = |key: &str, types: &[u32], type_names: &str| -> Result<(), GgufError> {
        match h.get(key) {
            None => Ok(()),
            Some(Value::Array(items))
                if items.first().is_some_and(|x| types.contains(&x.type_id())) =>
            {
                if items.len() < n {
                    bad(format!(
                        "metadata `{key}` has {} entries for {n} tokens",
                        items.len()
                    ))
                } else {
                    Ok(())
                }
            }
            Some(v) => bad(format!(
                "metadata `{key}` must be an array of {type_names}, not {}",
                describe(v)
            )),
        }
    };
    parallel("tokenizer.ggml.scores", &[6, 5], "float32")?;
    parallel("tokenizer.ggml.token_type", &[5], "int32")?;
    if model == "bert" {
        // A WordPiece vocabulary with byte tokens reaches GGML_ABORT in token_to_byte.
        if let Some(Value::Array(types)) = h.get("tokenizer.ggml.token_type") {
            if let Some(i) = types.iter().position(|t| *t == Value::I32(6)) {
                return bad(format!(
                    "token {i} is a byte token, which a \"bert\" (WordPiece) vocabulary cannot have"
                ));
            }
        }
    }
    if let Some(v) = h.get("tokenizer.ggml.merges") {
        let ok =
            matches!(v, Value::Array(items) if items.iter().all(|x| matches!(x, Value::String(_))));
        if !ok {
            return bad(format!(
                "metadata `tokenizer.ggml.merges` must be an array of string, not {}",
                describe(v)
            ));
        }
    }
    Ok(())
}
