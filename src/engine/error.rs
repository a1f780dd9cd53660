//! What can go wrong at the engine boundary, typed so that a caller can tell a file the GGUF
//! validator refused (`Header`) from llama.cpp failing on a file it accepted (`Load`) or
//! from a decode that ran out of room (`Decode`). Every variant displays exactly the one line
//! users read (docs/bad-input.md).

use std::path::PathBuf;

use crate::gguf::GgufError;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// A refusal whose one line says all a caller needs: a parameter, a backend, a
    /// tokenizer, a chat template, a quantization or an importance matrix.
    #[error("{0}")]
    Other(String),
    #[error("{}: {source}", path.display())]
    Header {
        path: PathBuf,
        #[source]
        source: GgufError,
    },
    #[error("llama.cpp could not load {}{}", path.display(), load_why(why))]
    Load { path: PathBuf, why: Option<String> },
    #[error("mock engine cannot load {}", path.display())]
    NotMock { path: PathBuf },
    #[error(
        "fit_target = {target_mib}: llama.cpp's fit found no placement that leaves {target_mib} \
         MiB free on every device; the weights need {weights_mib} MiB plus the context; free: {free}"
    )]
    NoFit {
        target_mib: u64,
        weights_mib: u64,
        free: String,
    },
    #[error(
        "fit_target = {target_mib}: llama.cpp's fit failed with an error (run with --verbose for its log)"
    )]
    Fit { target_mib: u64 },
    #[error("{message}")]
    Context { n_ctx: u32, message: String },
    #[error("could not create a threadpool of {n_threads} threads")]
    Threadpool { n_threads: u32 },
    #[error("{message}")]
    Decode { code: Option<i32>, message: String },
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
