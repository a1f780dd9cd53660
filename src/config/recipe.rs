//! A ladder variant built as publishers build theirs: a file type plus llama-quantize's
//! options (an importance matrix, `--tensor-type` overrides, the output and token-embedding
//! types, `--pure`), or a template GGUF whose tensor types are copied as gguf-clone does.
//! Pure: the table is parsed and its names checked here; files are read when the variant
//! is built (`engine::quantize::overrides_for`, `engine::imatrix`). docs/configuration.md
//! ("Recipes") shows the keys.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::Invalid;
use crate::config::quant_types::QuantType;

#[derive(Debug, Clone, PartialEq)]
pub enum ImatrixSource {
    /// A file llama-imatrix wrote (GGUF or legacy `.dat`).
    File(PathBuf),
    /// Computed from a calibration text, as `llama-imatrix -f text -c ctx --chunks chunks`.
    Text {
        text: PathBuf,
        n_ctx: u32,
        n_chunks: Option<u32>,
    },
}

/// llama-quantize's options for one variant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recipe {
    pub imatrix: Option<ImatrixSource>,
    /// `--tensor-type`: (pattern, ggml type id), the pattern lowercased as llama-quantize
    /// lowercases it; the first that matches a tensor's name wins.
    pub tensor_types: Vec<(String, u32)>,
    pub output: Option<u32>,
    pub token_embd: Option<u32>,
    pub pure: bool,
    /// A GGUF whose tensor types the variant copies.
    pub template: Option<PathBuf>,
}

/// One `{ name = ..., type = ..., ... }` entry of a ladder's `types`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeVariant {
    pub name: String,
    pub quant: QuantType,
    pub recipe: Recipe,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    #[serde(rename = "type")]
    quant: String,
    imatrix: Option<toml::Value>,
    #[serde(default)]
    tensor_types: Vec<String>,
    output: Option<String>,
    token_embd: Option<String>,
    #[serde(default)]
    pure: bool,
    template: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawText {
    text: String,
    ctx: Option<u32>,
    chunks: Option<u32>,
}

/// A ggml tensor type by name, case-insensitively (llama-quantize's `parse_ggml_type`).
pub fn ggml_type(name: &str) -> Result<u32, Invalid> {
    let found = crate::gguf::GGML_TYPES
        .iter()
        .find(|t| t.1.eq_ignore_ascii_case(name.trim()));
    found.map(|t| t.0).ok_or_else(|| {
        Invalid(format!("unknown tensor type {name:?}: use a ggml type such as Q4_K, Q5_K, Q6_K, Q8_0, IQ4_XS, F16"))
    })
}

/// `pattern=type`, as llama-quantize's `--tensor-type` reads it (the last `=` splits).
pub fn tensor_type(s: &str) -> Result<(String, u32), Invalid> {
    let Some((pattern, t)) = s.rsplit_once('=') else {
        let msg = format!("{s:?} is not pattern=type, e.g. \"attn_v=Q6_K\"");
        return Err(Invalid(msg));
    };
    let pattern = pattern.trim().to_ascii_lowercase();
    if pattern.is_empty() {
        return Err(Invalid(format!("{s:?} has no tensor name pattern")));
    }
    super::knobs::check_regex(&pattern)?;
    Ok((pattern, ggml_type(t)?))
}

fn path(dir: &Path, p: &str, what: &str) -> Result<PathBuf, Invalid> {
    match p.trim().is_empty() {
        true => Err(Invalid(format!("the {what} path is empty"))),
        false => Ok(dir.join(p)),
    }
}

fn imatrix_source(v: &toml::Value, dir: &Path) -> Result<ImatrixSource, Invalid> {
    if let Some(p) = v.as_str() {
        return Ok(ImatrixSource::File(path(dir, p, "imatrix")?));
    }
    let raw: RawText = v.clone().try_into().map_err(|e: toml::de::Error| {
        Invalid(format!("imatrix: give a file (\"x.imatrix\") or {{ text = \"calib.txt\", ctx = 512, chunks = 100 }}: {}", e.message()))
    })?;
    let n_ctx = raw.ctx.unwrap_or(512);
    if !(16..=1 << 16).contains(&n_ctx) {
        return Err(Invalid(format!(
            "imatrix.ctx {n_ctx} is out of range: must be between 16 and 65536"
        )));
    }
    if raw.chunks == Some(0) {
        return Err(Invalid("imatrix.chunks must be at least 1".into()));
    }
    Ok(ImatrixSource::Text {
        text: path(dir, &raw.text, "imatrix text")?,
        n_ctx,
        n_chunks: raw.chunks,
    })
}

/// Reads one recipe entry; paths are relative to `dir` (the configuration's folder).
pub fn parse_variant(v: &toml::Value, dir: &Path) -> Result<RecipeVariant, Invalid> {
    let raw: RawVariant = v
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| Invalid(e.message().to_string()))?;
    let name = super::values::folder_name(&raw.name, "variant")?;
    let imatrix = raw.imatrix.as_ref().map(|v| imatrix_source(v, dir));
    let imatrix = imatrix.transpose()?;
    let quant = QuantType::parse_recipe(&raw.quant, imatrix.is_some())?;
    let tensor_types = raw.tensor_types.iter().map(|s| tensor_type(s));
    let recipe = Recipe {
        tensor_types: tensor_types.collect::<Result<_, _>>()?,
        output: raw.output.as_deref().map(ggml_type).transpose()?,
        token_embd: raw.token_embd.as_deref().map(ggml_type).transpose()?,
        pure: raw.pure,
        template: (raw.template.as_deref())
            .map(|t| path(dir, t, "template"))
            .transpose()?,
        imatrix,
    };
    if recipe.imatrix.is_none() {
        let types = recipe.tensor_types.iter().map(|t| t.1).chain(recipe.output);
        if let Some(t) = types.into_iter().find(|&t| needs_imatrix(t)) {
            return Err(Invalid(format!(
                "{} tensors need an importance matrix: add imatrix = ...",
                type_name(t)
            )));
        }
    }
    Ok(RecipeVariant {
        name,
        quant,
        recipe,
    })
}

fn type_name(t: u32) -> &'static str {
    crate::gguf::type_layout(t).map_or("?", |l| l.0)
}

/// ggml types llama.cpp's quantizer refuses to make without an imatrix
/// (`tensor_requires_imatrix`): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS.
pub fn needs_imatrix(ggml_type: u32) -> bool {
    matches!(ggml_type, 16 | 17 | 18 | 19 | 22 | 29)
}

impl Recipe {
    /// The options as llama-quantize's arguments would read, for the record and the cache
    /// key: `attn_v=Q6_K`, `output=Q6_K`, `token_embd=Q4_K`, `pure`, `template=<file name>`.
    pub fn overrides_text(&self) -> Vec<String> {
        let pair = |key: &str, t: u32| format!("{key}={}", type_name(t));
        let mut out: Vec<String> = self.tensor_types.iter().map(|(p, t)| pair(p, *t)).collect();
        out.extend(self.output.map(|t| pair("output", t)));
        out.extend(self.token_embd.map(|t| pair("token_embd", t)));
        out.extend(self.pure.then(|| "pure".to_string()));
        let file = |p: &PathBuf| Some(format!("template={}", p.file_name()?.to_string_lossy()));
        out.extend(self.template.as_ref().and_then(file));
        out
    }
}

#[cfg(test)]
mod tests;
