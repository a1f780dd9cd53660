//! Why a comparison's side, a noise floor or a baseline could not be read or written, one line
//! each. As in `runner::error`, no variant names a source: `main` prints the chain (`{e:#}`).

use std::io;
use std::path::PathBuf;

use crate::record::RecordError;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{0}")]
    Record(RecordError),
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
    #[error(
        "the A/A files come from more than one machine ({first} and {other}): a floor is one \
         machine's"
    )]
    MachinesDiffer { first: String, other: String },
    #[error(
        "{files} file(s) give {degrees_of_freedom} degree(s) of freedom between launches: run \
         the same configuration as separate launches (at least 3, e.g. `tpsbench run` three \
         times) and give all their files"
    )]
    TooFewLaunches {
        files: usize,
        degrees_of_freedom: usize,
    },
    #[error("cannot create {}: {cause}", dir.display())]
    CreateDir { dir: PathBuf, cause: io::Error },
    #[error("{}: {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    #[error("invalid baseline name {name:?}: use letters, digits, '-' or '_'")]
    BaselineName { name: String },
}

crate::kinds::error::from_plain!(CompareError { RecordError => Record });
