//! What can go wrong reading the sides of a comparison, measuring or storing a noise floor,
//! and saving a named baseline. Each variant carries its data and displays exactly the line
//! users have always read. As in `runner::error`: `main` prints an error's chain (`{e:#}`)
//! and the lines already name their cause, so no variant names a source.

use std::io;
use std::path::PathBuf;

use crate::record::RecordError;

/// Why a comparison's side, a noise floor or a baseline could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A result file of a side could not be read, or contradicts its samples.
    #[error("{0}")]
    Record(RecordError),
    /// A side given as a directory that cannot be listed.
    #[error("{spec}: {cause}")]
    ReadDir { spec: String, cause: io::Error },
    #[error("{spec}: no result files (*.json) in this directory")]
    NoResultFiles { spec: String },
    /// Neither a file, nor a directory, nor a baseline's name.
    #[error(
        "{spec}: no such file or directory, and no baseline named {spec:?} in {}",
        baseline_dir.display()
    )]
    NoSide { spec: String, baseline_dir: PathBuf },
    /// The A/A files of a noise floor come from two machines (their keys).
    #[error(
        "the A/A files come from more than one machine ({first} and {other}): a floor is one \
         machine's"
    )]
    MachinesDiffer { first: String, other: String },
    /// The A/A files give fewer than 2 degrees of freedom between launches.
    #[error(
        "{files} file(s) give {degrees_of_freedom} degree(s) of freedom between launches: run \
         the same configuration as separate launches (at least 3, e.g. `tpsbench run` three \
         times) and give all their files"
    )]
    TooFewLaunches {
        files: usize,
        degrees_of_freedom: usize,
    },
    /// The directory of noise floors or baselines cannot be made.
    #[error("cannot create {}: {cause}", dir.display())]
    CreateDir { dir: PathBuf, cause: io::Error },
    /// A floor that does not serialize: serde's own text.
    #[error("{0}")]
    Json(serde_json::Error),
    /// A floor's file cannot be written.
    #[error("{}: {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    #[error("invalid baseline name {name:?}: use letters, digits, '-' or '_'")]
    BaselineName { name: String },
}

impl From<RecordError> for CompareError {
    fn from(e: RecordError) -> Self {
        CompareError::Record(e)
    }
}
