//! What a pp/tg/pg test decodes: llama-bench's random token ids (the default), or real text
//! (`tokens = "text"`, from `[sweep] text`), which is what MoE routing and speculation meet
//! in use; a sweep may take both as an axis.

use crate::config::Invalid;

use serde::{Deserialize, Serialize};

use crate::config::{Config, ConfigError, Ctx};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptTokens {
    /// Seeded random ids, as llama-bench's `rand() % n_vocab`.
    #[default]
    Random,
    /// The `text` file's text, tokenized with the model's tokenizer.
    Text,
}

super::names::names!(PromptTokens::as_str {
    Random = "random",
    Text = "text",
});

impl PromptTokens {
    pub fn is_random(&self) -> bool {
        *self == PromptTokens::Random
    }

    pub(crate) fn of_toml(v: &toml::Value) -> Result<PromptTokens, Invalid> {
        match v.as_str().map(str::trim).and_then(PromptTokens::parse) {
            Some(t) => Ok(t),
            None => Err(Invalid(format!(
                "{v} is not a token source: use \"random\" (llama-bench's random ids) or \
                 \"text\" (the [sweep] table's `text` file)"
            ))),
        }
    }
}

/// `tokens = "text"` needs `[sweep] text`, and `text` needs a test that reads it: checked
/// once every sweep (the global one, each model's and ladder's) is known.
pub(crate) fn check_text(ctx: &Ctx, config: &Config) -> Result<(), ConfigError> {
    let wants_text = config
        .models
        .iter()
        .filter(|m| m.path.is_some())
        .map(|m| &m.axes)
        .chain(config.ladders.iter().map(|l| &l.axes))
        .any(|a| a.tokens.contains(&PromptTokens::Text));
    let err = |key: &str, message: &str| ctx.err_at_key(key, &format!("sweep.{key}"), message);
    match (&config.text, wants_text) {
        (None, true) => Err(err(
            "tokens",
            "tokens = \"text\" decodes the [sweep] table's `text` file: set text = \"...\" \
             (a ShareGPT file, scripts/setup --dataset sharegpt, or a prompt file)",
        )),
        (Some(_), false) => Err(err(
            "text",
            "no test reads `text`: add tokens = [\"text\"] (or [\"random\", \"text\"]) to \
             the sweep",
        )),
        _ => Ok(()),
    }
}
