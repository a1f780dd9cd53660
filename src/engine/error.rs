//! What can go wrong at the engine boundary: starting llama.cpp, loading a model, making a
//! context, decoding, tokenizing, quantizing. The [`Engine`](super::Engine),
//! [`Model`](super::Model) and [`Session`](super::Session) traits (and the serving ones)
//! return it, so a caller can tell a file the GGUF validator refused (`Header`, with the
//! validator's own error) from llama.cpp failing on a file it accepted (`Load`) or from a
//! decode that ran out of room (`Decode`).
//!
//! Every variant displays exactly the one line users read (docs/bad-input.md).

use std::path::PathBuf;

use crate::gguf::GgufError;

/// Why the engine could not do what was asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// llama.cpp could not start, or the library the process runs is not the one tpsbench
    /// was built for (`linkage::check`).
    #[error("{0}")]
    Backend(String),
    /// The GGUF validator refused the file: llama.cpp never saw it.
    #[error("{}: {source}", path.display())]
    Header {
        path: PathBuf,
        #[source]
        source: GgufError,
    },
    /// llama.cpp returned no model; `why` is the first error it logged, when it logged one.
    #[error("llama.cpp could not load {}{}", path.display(), load_why(why))]
    Load { path: PathBuf, why: Option<String> },
    /// The mock engine loads only files named `mock*`.
    #[error("mock engine cannot load {}", path.display())]
    NotMock { path: PathBuf },
    /// A parameter llama.cpp cannot be handed: a NUL byte in a path or text, an unknown KV
    /// cache type, a knob value it cannot take.
    #[error("{0}")]
    Param(String),
    /// A speculative test's drafter could not be made or run (llama.cpp's reason, or why
    /// tpsbench refuses the setting).
    #[error("{0}")]
    Speculative(String),
    /// llama.cpp's fit (`fit_target`, `fit_min_ctx`) found no placement that leaves
    /// `target_mib` free on every device; `free` lists each device's free and total MiB.
    #[error(
        "fit_target = {target_mib}: llama.cpp's fit found no placement that leaves {target_mib} \
         MiB free on every device; the weights need {weights_mib} MiB plus the context; free: {free}"
    )]
    NoFit {
        target_mib: u64,
        weights_mib: u64,
        free: String,
    },
    /// llama.cpp's fit stopped on an error of its own (it logs why).
    #[error(
        "fit_target = {target_mib}: llama.cpp's fit failed with an error (run with --verbose for its log)"
    )]
    Fit { target_mib: u64 },
    /// No context of `n_ctx` tokens could be made; `message` names its sizes and the cause.
    #[error("{message}")]
    Context { n_ctx: u32, message: String },
    /// ggml could not make the thread pool of a timed session.
    #[error("could not create a threadpool of {n_threads} threads")]
    Threadpool { n_threads: u32 },
    /// A decode failed: `code` is `llama_decode`'s return value where it gave one.
    #[error("{message}")]
    Decode { code: Option<i32>, message: String },
    /// A decoded entry has no logits (not asked for, or llama.cpp returned none).
    #[error("{0}")]
    Logits(String),
    /// Text to tokens or back failed.
    #[error("{0}")]
    Tokenize(String),
    /// The model's chat template is missing or llama.cpp cannot apply it.
    #[error("{0}")]
    ChatTemplate(String),
    /// llama.cpp's quantizer failed.
    #[error("{0}")]
    Quantize(String),
    /// An importance matrix could not be read, is not the model's, or could not be computed.
    #[error("{0}")]
    Imatrix(String),
    /// The caller's own error, handed back through an engine callback (a logit row sink).
    #[error("{0}")]
    Caller(String),
}

fn load_why(why: &Option<String>) -> String {
    match why {
        Some(w) => format!(": {w}"),
        None => " (run with --verbose for its log)".into(),
    }
}

impl EngineError {
    /// `llama_decode`'s return code as its documented meaning.
    pub fn decode_code(code: i32) -> Self {
        let message = match code {
            1 => "llama_decode: no KV cache slot for the batch (context full)".into(),
            2 => "llama_decode: aborted".into(),
            -1 => "llama_decode: invalid batch".into(),
            r => format!("llama_decode failed with code {r}"),
        };
        EngineError::Decode {
            code: Some(code),
            message,
        }
    }

    /// A decode refused before llama.cpp was called (an empty batch, a full mock context).
    pub fn decode(message: impl Into<String>) -> Self {
        EngineError::Decode {
            code: None,
            message: message.into(),
        }
    }
}
