//! Why inputs could not be merged: one line for the user each.

use std::path::{Path, PathBuf};

use crate::record::RecordError;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: no input file")]
    NoInput,
    #[error("{0}")]
    Record(RecordError),
    #[error(
        "{file} was measured on other hardware ({other}) than {first} ({hw}): merge joins \
         shards of one sweep on one kind of machine; pass both files to `tpsbench leaderboard` \
         to compare machines"
    )]
    OtherHardware {
        file: String,
        other: String,
        first: String,
        hw: String,
    },
    /// Two inputs whose plan hashes differ (`why`: what differs, with its ": ").
    #[error(
        "{a} and {b} are not shards of one sweep (plan hash {ha} vs {hb}{why}); merge the \
         shards of one sweep at a time, or pass both files to `tpsbench leaderboard` to see \
         them side by side"
    )]
    NotOneSweep {
        a: String,
        b: String,
        ha: String,
        hb: String,
        why: String,
    },
    #[error(
        "{a} is shard {a_shard} but {b} is shard {b_shard}: the shards of one sweep share one count"
    )]
    ShardCounts {
        a: String,
        a_shard: String,
        b: String,
        b_shard: String,
    },
    #[error("shard {shard} appears twice, in {a} and in {b}: merge one file per shard")]
    ShardTwice { shard: String, a: String, b: String },
    #[error(
        "the sweep is incomplete: {problems}{hint}; rerun those shards, or pass --allow-partial \
         to merge what there is"
    )]
    Incomplete {
        problems: String,
        hint: &'static str,
    },
    /// `what`: "create" or "write".
    #[error("cannot {what} {}: {cause}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl MergeError {
    /// For `map_err`: cannot `what` `path`.
    pub(super) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |cause| MergeError::Io { what, path, cause }
    }
}
