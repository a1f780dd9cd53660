//! The text a `tokens = "text"` test decoded (docs/schema.md, `tests[].text`): which file,
//! and how much of it, so that a reader knows the figure is not llama-bench's random-token
//! one and can tell two texts apart.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextSource {
    /// The file's name (never its path).
    pub name: String,
    pub sha256: String,
    /// "sharegpt": conversations in the seeded order of vLLM's sampling, each prompt then
    /// reply; absent: a prompt file, its prompts in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Tokens in the stream the test read (with this model's tokenizer); a test that needs
    /// more wraps around to its start.
    pub stream_tokens: u64,
    /// Where in the stream the test began (the run's seed, modulo `stream_tokens`).
    pub start: u64,
    /// What a reader must know of the file (a ShareGPT file cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
