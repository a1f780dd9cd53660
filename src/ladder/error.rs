//! What can go wrong making a ladder's files or a synthetic model. Every variant displays
//! the one line docs/bad-input.md shows. `main` prints an error with its chain of sources
//! (`{e:#}`) and the errors below already write their cause into their line: so no variant
//! here names a source (causes are plain fields), and the line is printed once.

use std::io;
use std::path::{Path, PathBuf};

use crate::engine::EngineError;
use crate::util::units::GIB;

/// Why a ladder variant, a base's facts or a synthetic model could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LadderError {
    /// llama.cpp failed (a synthetic model's quantization).
    #[error("{0}")]
    Engine(EngineError),
    /// A ladder input (a base model) that cannot be read or hashed.
    #[error("{}: {why}", path.display())]
    Input { path: PathBuf, why: String },
    #[error("{} → {quant}: {cause}", base.display())]
    Quantize {
        base: PathBuf,
        quant: String,
        cause: EngineError,
    },
    /// `what`: "create" (a directory) or "write" (a file).
    #[error("cannot {what} {}: {cause}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        cause: io::Error,
    },
    #[error(
        "not enough disk space for {}: needs about {:.1} GiB, {:.1} GiB free",
        path.display(),
        *need as f64 / GIB,
        *free as f64 / GIB
    )]
    NoSpace { path: PathBuf, need: u64, free: u64 },
    /// `synth --preset` (or a `synth` spec) naming no preset.
    #[error(
        "unknown preset {preset:?}: available presets: tiny, {}",
        crate::gguf::presets::all_names()
    )]
    UnknownPreset { preset: String },
    #[error(
        "evaluation text {}: {cause} (scripts/setup --dataset sharegpt fetches the default, ShareGPT)",
        path.display()
    )]
    EvalText { path: PathBuf, cause: io::Error },
    #[error(
        "ladder {ladder}: the evaluation text has {tokens} tokens, fewer than one chunk of {n_ctx}"
    )]
    TextTooShort {
        ladder: String,
        tokens: usize,
        n_ctx: usize,
    },
    /// A variant, or a draft preset (made for one target) asked for what its target fixes.
    #[error("{name}: {why}")]
    Variant { name: String, why: String },
    /// A quantization type that is not one: the config layer's line.
    #[error("{0}")]
    QuantType(String),
    /// Something about model `model` (a directory for its file).
    #[error("model {model:?}: {cause}")]
    Model {
        model: String,
        cause: Box<LadderError>,
    },
    #[error("model {model:?}: synthesis failed: {cause}")]
    Synthesis {
        model: String,
        cause: Box<LadderError>,
    },
}

/// A ladder input at `path` that cannot be used, and why.
pub(crate) fn input(path: &Path, why: impl ToString) -> LadderError {
    LadderError::Input {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// What `io(what, path)` failed with, as [`LadderError::Io`].
pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> LadderError + use<> {
    let path = path.to_path_buf();
    move |cause| LadderError::Io { what, path, cause }
}

impl LadderError {
    /// This error about model `model` ("model "m": ...").
    pub fn for_model(self, model: &str) -> LadderError {
        LadderError::Model {
            model: model.to_string(),
            cause: Box::new(self),
        }
    }
}

impl From<EngineError> for LadderError {
    fn from(e: EngineError) -> Self {
        LadderError::Engine(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `main` prints the chain (`{e:#}`): a wrapped error whose line names its cause must
    /// still read once.
    #[test]
    fn the_line_main_prints_names_the_cause_once() {
        let e = io("create", Path::new("d"))(io::Error::other("denied")).for_model("m");
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(shown, "model \"m\": cannot create d: denied");
        let e = LadderError::NoSpace {
            path: PathBuf::from("v.gguf"),
            need: 3 << 30,
            free: 1 << 29,
        };
        assert_eq!(
            e.to_string(),
            "not enough disk space for v.gguf: needs about 3.0 GiB, 0.5 GiB free"
        );
    }
}
