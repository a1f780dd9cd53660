//! Why a file is not a usable GGUF: the one-line reason users see after the file's path,
//! which callers add (docs/bad-input.md). Its own file, below both the reader and the
//! validator, so that each can name it without importing the other.

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
