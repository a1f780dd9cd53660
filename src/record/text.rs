//! The text a `tokens = "text"` test decoded (docs/schema.md, `tests[].text`): which file,
//! and how much of it, so that a reader knows the figure is not llama-bench's random-token
//! one and can tell two texts apart.

use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextSource {
    /// The file's name (never its path).
    pub name: String,
    pub sha256: String,
    /// "sharegpt", or absent: a prompt file.
    pub format: Option<String>,
    /// With this model's tokenizer; a test that needs more wraps around to its start.
    pub stream_tokens: u64,
    /// The run's seed, modulo `stream_tokens`.
    pub start: u64,
    /// A ShareGPT file cut short.
    pub note: Option<String>,
}
