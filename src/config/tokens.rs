//! What a pp/tg/pg test decodes: llama-bench's random token ids (the default), or real text
//! (`tokens = "text"`, from the `[sweep]` table's `text` file: ShareGPT or a prompt file).
//! Random ids are what llama-bench measures and what its figures compare with; text is
//! what MoE routing and speculation meet in use (issue 45), so a sweep may take both, as an
//! axis, and compare them paired by round.
//!
//! ```toml
//! [sweep]
//! tokens = ["random", "text"]
//! text = "datasets/ShareGPT_V3_unfiltered_cleaned_split.json"
//! ```

use serde::{Deserialize, Serialize};

/// The token source of a llama-bench test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptTokens {
    /// Seeded random ids, as llama-bench's `rand() % n_vocab`.
    #[default]
    Random,
    /// The `text` file's text, tokenized with the model's tokenizer.
    Text,
}

impl PromptTokens {
    pub fn as_str(self) -> &'static str {
        match self {
            PromptTokens::Random => "random",
            PromptTokens::Text => "text",
        }
    }

    pub fn is_random(&self) -> bool {
        *self == PromptTokens::Random
    }

    /// One value of the `tokens` axis.
    pub(crate) fn parse(v: &toml::Value) -> Result<PromptTokens, String> {
        match v.as_str().map(str::trim) {
            Some("random") => Ok(PromptTokens::Random),
            Some("text") => Ok(PromptTokens::Text),
            _ => Err(format!(
                "{v} is not a token source: use \"random\" (llama-bench's random ids) or \
                 \"text\" (the [sweep] table's `text` file)"
            )),
        }
    }
}
