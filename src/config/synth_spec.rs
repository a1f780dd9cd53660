//! `synth = "preset:TYPE"` on a `[[model]]`: which synthetic model to write when the file is
//! missing. Parsed with the configuration; written by `synth`.

use crate::config::Invalid;

use super::quant_types::QuantType;
use crate::gguf::presets;

/// A `[[model]]`'s `synth = "llama-3-8b:Q4_K_M"`: a synthetic model written when the file
/// is missing, so that a configuration with 8B-class shapes runs without a download.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    /// `tiny` or one of [`presets::presets`] or [`presets::eagle3::PRESETS`].
    pub preset: String,
    /// The ladder type name (canonical spelling).
    pub quant: String,
}

impl SynthSpec {
    /// `preset[:TYPE]`; the type defaults as in `tpsbench synth` (F32 for tiny, else Q8_0).
    pub fn parse(text: &str) -> Result<SynthSpec, Invalid> {
        let (preset, quant) = match text.split_once(':') {
            Some((p, q)) => (p.trim(), Some(q.trim())),
            None => (text.trim(), None),
        };
        if preset != "tiny" && !presets::known(preset) {
            return Err(Invalid(format!(
                "unknown synth preset {preset:?}: use tiny, {} (optionally with :TYPE, e.g. \
                 \"llama-3-8b:Q4_K_M\")",
                presets::all_names()
            )));
        }
        let default = if preset == "tiny" { "F32" } else { "Q8_0" };
        let t = QuantType::parse(quant.unwrap_or(default))?;
        Ok(SynthSpec {
            preset: preset.to_string(),
            quant: t.name.to_string(),
        })
    }
}
