//! What can go wrong at the kinds layer's boundary. Every variant displays the one line
//! users read and result files store; `main` prints the chain (`{e:#}`), so no variant
//! names a source: wrapped errors are plain fields ([`from_plain`]).

use crate::engine::EngineError;
use crate::engine::endpoint::{ClientError, EndpointError};
use crate::ladder::error::LadderError;
use crate::serving::dataset::DatasetError;
use std::path::PathBuf;

/// Why a measurement, or what it needs first (a prompt file, a ladder's files, a served
/// model's endpoint, a synthetic model), could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    #[error("{0}")]
    Dataset(DatasetError),
    #[error("{0}")]
    Ladder(LadderError),
    #[error("{0}")]
    Engine(EngineError),
    #[error("model {model:?} names no endpoint or server")]
    NotServed { model: String },
    #[error("{0}")]
    Client(ClientError),
    #[error("model {model:?}: {cause}")]
    Endpoint { model: String, cause: EndpointError },
    #[error(
        "model {model:?}: server = \"llama-server\" needs the pinned build: run \
         scripts/reference-tools --server (or set TPSBENCH_LLAMA_SERVER)"
    )]
    NoPinnedServer { model: String },
    #[error("model {model:?}: no llama-server at {}", path.display())]
    NoServer { model: String, path: PathBuf },
    #[error("model {model:?}: no draft GGUF at {}", path.display())]
    NoDraft { model: String, path: PathBuf },
    #[error("{0}")]
    Launch(crate::engine::endpoint::LaunchError),
    #[error("{0}")]
    Serving(crate::serving::error::ServingError),
    #[error("{0}")]
    Refused(String),
}

/// Why the tests of a model load have no model: the line each fails with.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoModel {
    #[error("{0}")]
    Recorded(String),
    #[error("{0}")]
    Load(EngineError),
    #[error("this kind of test loads no model")]
    NotLoaded,
}

/// `From` for errors held as a plain field (converted with `into` where the field is of
/// another type): a `#[from]` would make the wrapped error the source too, and `main`'s
/// chain would print its line twice.
macro_rules! from_plain {
    ($to:ident { $($from:ty => $variant:ident),+ $(,)? }) => {
        $(impl From<$from> for $to {
            fn from(e: $from) -> Self {
                $to::$variant(e.into())
            }
        })+
    };
}
pub(crate) use from_plain;

from_plain!(KindError {
    DatasetError => Dataset,
    LadderError => Ladder,
    EngineError => Engine,
    crate::engine::endpoint::LaunchError => Launch,
    crate::serving::error::ServingError => Serving,
    ClientError => Client,
});

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
        let e = KindError::from(DatasetError::Parse {
            name: "p.jsonl".into(),
            line: Some(3),
            why: "invalid JSON".into(),
        });
        assert_eq!(e.to_string(), "p.jsonl:3: invalid JSON");
    }
}
