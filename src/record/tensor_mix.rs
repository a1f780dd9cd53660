//! What a model file really holds: its tensor types by share of parameters, read from the
//! GGUF header. A file's name (`general.file_type`) says what was asked of the quantizer,
//! not what it wrote: llama.cpp falls back from K-quants to older types on tensors whose
//! rows are not a multiple of 256 wide (SmolLM2's 576), so a "Q4_K_M" SmolLM2 is mostly
//! Q5_0 and its real bits per weight are those of Q5_0. The leaderboard shows the mix as
//! "Q4_K_M (mostly Q5_0)" wherever the two differ.

use serde::{Deserialize, Serialize};

use crate::gguf::reader::Header;
use crate::gguf::type_layout;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeShare {
    #[serde(rename = "type")]
    pub ggml_type: String,
    /// Of the file's parameters (elements), 0..1, 4 decimals.
    pub share: f64,
}

/// The tensor types of `h` by share of parameters, largest first (ties by name).
pub fn of(h: &Header) -> Vec<TypeShare> {
    let mut by_type = std::collections::BTreeMap::<String, u64>::new();
    for t in &h.tensors {
        let name = type_layout(t.ggml_type)
            .map(|l| l.0.to_string())
            .unwrap_or_else(|| format!("type {}", t.ggml_type));
        *by_type.entry(name).or_default() += t.dims.iter().product::<u64>();
    }
    let total: u64 = by_type.values().sum();
    if total == 0 {
        return vec![];
    }
    let mut by_type: Vec<(String, u64)> = by_type.into_iter().collect();
    by_type.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by_type
        .into_iter()
        .map(|(ggml_type, n)| TypeShare {
            ggml_type,
            share: (n as f64 / total as f64 * 1e4).round() / 1e4,
        })
        .collect()
}

/// The tensor type a file type's name promises for most weights: `Q4_K_M` → `Q4_K`,
/// `IQ3_M` → `IQ3_S`; None for a name this table does not know (no claim is then made).
pub fn main_type(file_type: &str) -> Option<&str> {
    // The type the bulk of the weights get in llama_ftype's mixes.
    const MIXES: &[(&str, &str)] = &[
        ("Q2_K_S", "Q2_K"),
        ("Q3_K_S", "Q3_K"),
        ("Q3_K_M", "Q3_K"),
        ("Q3_K_L", "Q3_K"),
        ("Q4_K_S", "Q4_K"),
        ("Q4_K_M", "Q4_K"),
        ("Q5_K_S", "Q5_K"),
        ("Q5_K_M", "Q5_K"),
        ("IQ3_XS", "IQ3_S"),
        ("IQ3_M", "IQ3_S"),
        ("IQ2_M", "IQ2_S"),
        ("MXFP4_MOE", "MXFP4"),
    ];
    let mix = MIXES.iter().find(|m| m.0 == file_type).map(|m| m.1);
    mix.or_else(|| {
        (crate::gguf::GGML_TYPES.iter())
            .find(|t| t.1 == file_type)
            .map(|t| t.1)
    })
}

/// The type most parameters are stored as, when it is not the one the name promises:
/// `Some("Q5_0")` for a SmolLM2 "Q4_K_M". None when they agree, or when either is unknown.
pub fn mostly_other<'a>(file_type: &str, mix: &'a [TypeShare]) -> Option<&'a str> {
    let top = mix.first()?;
    let promised = main_type(file_type)?;
    (top.ggml_type != promised).then_some(top.ggml_type.as_str())
}

/// The quantization as the page names it: `Q4_K_M (mostly Q5_0)` when the file is mostly
/// another type than its name says, else the name alone.
pub fn label(file_type: &str, mix: &[TypeShare]) -> String {
    mostly_other(file_type, mix).map_or(file_type.to_string(), |t| {
        format!("{file_type} (mostly {t})")
    })
}

#[cfg(test)]
mod tests;
