//! The vocabulary checks of `validate`: the tokenizer metadata as llama.cpp's vocabulary
//! loader reads it, so a bad vocabulary is one clear line instead of a crash.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{bad, must_be};
use crate::gguf::Value;
use crate::gguf::error::GgufError;
use crate::gguf::header::Header;

/// The vocabulary as `llama_vocab::impl::load` reads it.
pub(super) fn tokenizer(h: &Header) -> Result<(), GgufError> {
    let model = model(h)?;
    if model == "none" || model == "no_vocab" {
        return Ok(()); // no vocabulary is read
    }
    let tokens = tokens(h)?;
    unique_texts(tokens)?;
    let n = tokens.len();
    parallel(h, "tokenizer.ggml.scores", &[6, 5], "float32", n)?;
    parallel(h, "tokenizer.ggml.token_type", &[5], "int32", n)?;
    if model == "bert" {
        no_byte_tokens(h)?;
    }
    merges(h)
}

/// `tokenizer.ggml.model`: present and a string.
fn model(h: &Header) -> Result<&str, GgufError> {
    match h.get("tokenizer.ggml.model") {
        None => bad("metadata `tokenizer.ggml.model` is missing"),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(v) => must_be("tokenizer.ggml.model", "a string", v),
    }
}

/// `tokenizer.ggml.tokens`: present and a non-empty array of strings.
fn tokens(h: &Header) -> Result<&[Value], GgufError> {
    match h.get("tokenizer.ggml.tokens") {
        None => bad("metadata `tokenizer.ggml.tokens` is missing"),
        // GGUF arrays are homogeneous (the reader guarantees it): the first entry tells.
        Some(Value::Array(items)) if matches!(items.first(), Some(Value::String(_))) => {
            Ok(items.as_slice())
        }
        Some(v) => must_be("tokenizer.ggml.tokens", "a non-empty array of string", v),
    }
}

/// llama.cpp renames empty tokens to "[EMPTY_<id>]", then asserts every text is unique.
fn unique_texts(tokens: &[Value]) -> Result<(), GgufError> {
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
    Ok(())
}

/// An array read in parallel with the `n` tokens, when present: of one of `types` (GGUF type
/// ids, named `type_names`) and at least as long.
fn parallel(
    h: &Header,
    key: &str,
    types: &[u32],
    type_names: &str,
    n: usize,
) -> Result<(), GgufError> {
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
        Some(v) => must_be(key, &format!("an array of {type_names}"), v),
    }
}

/// A WordPiece ("bert") vocabulary with byte tokens reaches GGML_ABORT in token_to_byte.
fn no_byte_tokens(h: &Header) -> Result<(), GgufError> {
    if let Some(Value::Array(types)) = h.get("tokenizer.ggml.token_type")
        && let Some(i) = types.iter().position(|t| *t == Value::I32(6))
    {
        return bad(format!(
            "token {i} is a byte token, which a \"bert\" (WordPiece) vocabulary cannot have"
        ));
    }
    Ok(())
}

/// `tokenizer.ggml.merges`, when present: an array of strings.
fn merges(h: &Header) -> Result<(), GgufError> {
    let strings = |items: &[Value]| items.iter().all(|x| matches!(x, Value::String(_)));
    match h.get("tokenizer.ggml.merges") {
        None => Ok(()),
        Some(Value::Array(items)) if strings(items) => Ok(()),
        Some(v) => must_be("tokenizer.ggml.merges", "an array of string", v),
    }
}
