//! What can go wrong with a result file and its journal: every variant displays the one line
//! users read (docs/bad-input.md).

use std::io;
use std::path::PathBuf;

use super::SCHEMA_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `create_dir_all` on a file says "File exists (os error 17)": this says what is wrong.
    #[error("results path is a file: {}", dir.display())]
    ResultsPathIsFile { dir: PathBuf },
    #[error("cannot create the results directory {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write to the results directory {}: {source}", dir.display())]
    Claim {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("too many result files for one second in {}", dir.display())]
    NamesTaken { dir: PathBuf },
    #[error("cannot write the result file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the result journal {}: {source}", journal.display())]
    WriteJournal {
        journal: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: not valid JSON: {source}", path.display())]
    NotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: not a tpsbench result (no schema_version)", path.display())]
    NoSchemaVersion { path: PathBuf },
    #[error(
        "{}: schema_version {version} is not supported (this tpsbench reads 1 to {})",
        path.display(),
        SCHEMA_VERSION
    )]
    SchemaVersion { path: PathBuf, version: u64 },
    #[error("{}: invalid result file: {source}", path.display())]
    Schema {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
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
    #[error("after redaction: {source}")]
    Redacted {
        #[source]
        source: serde_json::Error,
    },
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
