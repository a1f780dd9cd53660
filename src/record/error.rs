//! What can go wrong with a result file and its journal: every variant displays the one line
//! users read (docs/bad-input.md).

use std::io;
use std::path::{Path, PathBuf};

use super::SCHEMA_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `create_dir_all` on a file says "File exists (os error 17)": this says what is wrong.
    #[error("results path is a file: {}", .0.display())]
    ResultsPathIsFile(PathBuf),
    #[error("too many result files for one second in {}", .0.display())]
    NamesTaken(PathBuf),
    /// `what` is the words before the path, with their space, or none.
    #[error("{what}{}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `what`: "not valid JSON" or "invalid result file".
    #[error("{}: {what}: {source}", path.display())]
    Parse {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: not a tpsbench result (no schema_version)", .0.display())]
    NoSchemaVersion(PathBuf),
    #[error(
        "{}: schema_version {version} is not supported (this tpsbench reads 1 to {})",
        path.display(),
        SCHEMA_VERSION
    )]
    SchemaVersion { path: PathBuf, version: u64 },
    #[error("{}: {source}", path.display())]
    Contradicted {
        path: PathBuf,
        #[source]
        source: Contradiction,
    },
    /// Bytes that are not JSON where a result file's JSON was expected (`redact`), or a
    /// record that does not serialize: serde's own text.
    #[error(transparent)]
    Json(serde_json::Error),
    #[error("after redaction: {0}")]
    Redacted(#[source] serde_json::Error),
}

impl RecordError {
    /// `map_err`'s argument for an I/O failure on `path`.
    pub(crate) fn io<'a>(what: &'static str, path: &'a Path) -> impl Fn(io::Error) -> Self + 'a {
        move |source| RecordError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The first figure of a test that its samples contradict.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("test {test}: {disagreement}")]
pub struct Contradiction {
    pub test: String,
    #[source]
    pub disagreement: Disagreement,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Disagreement {
    #[error("{field} is {stored} but its samples give {recomputed}")]
    Figure {
        field: String,
        stored: String,
        recomputed: String,
    },
    #[error("samples_ns has {ns} values but samples_ts {ts}")]
    SampleCounts { ns: usize, ts: usize },
    #[error(
        "rounds[{round}].samples_ns are not samples_ns[{from}..{to}]: the rounds' samples must be the test's, in order"
    )]
    RoundSamples {
        round: usize,
        from: usize,
        to: usize,
    },
    #[error("the rounds hold {held} samples but samples_ns {total}")]
    RoundsTotal { held: usize, total: usize },
}
