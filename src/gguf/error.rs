//! Why a file is not a usable GGUF. Its own file, below both the reader and the validator,
//! so that each can name it without importing the other (the reader runs the validator).
//!
//! The text of every variant is the one-line reason users see after the file's path
//! (`model.gguf: tensor `x` appears twice`); callers add the path, as they always have, so
//! the messages of docs/bad-input.md stay word for word.

use std::io;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufError {
    /// The file could not be opened or read; `reason` is "no such file", "permission
    /// denied" or the system's text for `kind`.
    #[error("{reason}")]
    Io { kind: io::ErrorKind, reason: String },
    #[error("is a directory, not a GGUF file")]
    Directory,
    #[error("is not a regular file")]
    NotAFile,
    /// The bytes break the GGUF layout (what gguf.cpp would refuse or misread).
    #[error("{0}")]
    Malformed(String),
    /// The layout is sound but the content would crash llama.cpp or is one it refuses
    /// (see `validate`).
    #[error("{0}")]
    Refused(String),
}

impl GgufError {
    /// An I/O failure, worded as users read it.
    pub fn io(e: &io::Error) -> Self {
        let reason = match e.kind() {
            io::ErrorKind::NotFound => "no such file".into(),
            io::ErrorKind::PermissionDenied => "permission denied".into(),
            _ => e.to_string(),
        };
        GgufError::Io {
            kind: e.kind(),
            reason,
        }
    }
}
