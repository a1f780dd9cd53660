//! What can go wrong at the kinds layer's boundary (`kinds`, `ladder`, `serving`): a prompt
//! file, a ladder's or a synthetic model's files, the engine or a result file below, a
//! served model's endpoint or server, and the measurement's own refusals; so a caller tells
//! them apart by the variant, not by the text. Every variant displays the one line users
//! read (docs/bad-input.md) and result files store. `main` prints the chain (`{e:#}`), so no
//! variant names a source: wrapped errors are plain fields and `From` is written out.

use crate::engine::EngineError;
use crate::engine::endpoint::{ClientError, EndpointError};
use crate::ladder::error::LadderError;
use crate::record::RecordError;
use crate::serving::dataset::DatasetError;
use std::path::PathBuf;

/// Why a measurement, or what it needs first (a prompt file, a ladder's files, a served
/// model's endpoint, a synthetic model), could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// A prompt file that cannot be read or parsed.
    #[error("{0}")]
    Dataset(DatasetError),
    /// A ladder variant, a base or a synthetic model that cannot be made or read.
    #[error("{0}")]
    Ladder(LadderError),
    /// llama.cpp failed (loading, decoding, tokenizing).
    #[error("{0}")]
    Engine(EngineError),
    /// A result file could not be written or read.
    #[error("{0}")]
    Record(RecordError),
    /// A served test for a model with neither `endpoint` nor `server`.
    #[error("model {model:?} names no endpoint or server")]
    NotServed { model: String },
    /// No HTTP client could be made for a served model.
    #[error("{0}")]
    Client(ClientError),
    /// A served model's endpoint does not answer, or does not serve the model.
    #[error("model {model:?}: {cause}")]
    Endpoint { model: String, cause: EndpointError },
    /// `server = "llama-server"` without the pinned build.
    #[error(
        "model {model:?}: server = \"llama-server\" needs the pinned build: run \
         scripts/reference-tools --server (or set TPSBENCH_LLAMA_SERVER)"
    )]
    NoPinnedServer { model: String },
    /// `server = { binary = ... }` naming no file.
    #[error("model {model:?}: no llama-server at {}", path.display())]
    NoServer { model: String, path: PathBuf },
    /// `server = { draft = ... }` naming no file.
    #[error("model {model:?}: no draft GGUF at {}", path.display())]
    NoDraft { model: String, path: PathBuf },
    /// A server tpsbench starts could not be started.
    #[error("{0}")]
    Launch(crate::engine::endpoint::LaunchError),
    /// A serving test could not be measured.
    #[error("{0}")]
    Serving(crate::serving::error::ServingError),
    /// The measurement's own refusal of what it was given: its line.
    #[error("{0}")]
    Refused(String),
}

impl From<DatasetError> for KindError {
    fn from(e: DatasetError) -> Self {
        KindError::Dataset(e)
    }
}

impl From<LadderError> for KindError {
    fn from(e: LadderError) -> Self {
        KindError::Ladder(e)
    }
}

impl From<EngineError> for KindError {
    fn from(e: EngineError) -> Self {
        KindError::Engine(e)
    }
}

impl From<RecordError> for KindError {
    fn from(e: RecordError) -> Self {
        KindError::Record(e)
    }
}

impl From<crate::engine::endpoint::LaunchError> for KindError {
    fn from(e: crate::engine::endpoint::LaunchError) -> Self {
        KindError::Launch(e)
    }
}

impl From<crate::serving::error::ServingError> for KindError {
    fn from(e: crate::serving::error::ServingError) -> Self {
        KindError::Serving(e)
    }
}

impl From<ClientError> for KindError {
    fn from(e: ClientError) -> Self {
        KindError::Client(e)
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    /// `main` prints the chain (`{e:#}`): a wrapped error whose line names its cause must
    /// still read once.
    #[test]
    fn the_line_main_prints_names_the_cause_once() {
        let e = KindError::from(DatasetError::Read {
            path: PathBuf::from("p.txt"),
            cause: io::Error::other("denied"),
        });
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(shown, "cannot read the prompt file p.txt: denied");
        let e = KindError::from(RecordError::Write {
            path: PathBuf::from("r.json"),
            source: io::Error::other("disk full"),
        });
        let shown = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(shown, "cannot write the result file r.json: disk full");
        let e = KindError::from(DatasetError::Parse {
            name: "p.jsonl".into(),
            line: Some(3),
            why: "invalid JSON".into(),
        });
        assert_eq!(e.to_string(), "p.jsonl:3: invalid JSON");
    }
}
