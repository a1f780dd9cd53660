//! Configuration errors: every one names the file, the line and the key. A leaf: every
//! table's checks import it, and it imports none of them (serde's own refusals are worded
//! in `unknown_key`, which knows the tables).

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

/// A configuration error that names the file, the line and the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{}{}{}: {message}",
    file.display(),
    line.map_or(String::new(), |l| format!(":{l}")),
    key.as_ref().map_or(String::new(), |k| format!(": key `{k}`"))
)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

/// A value refused, saying what was expected; [`Ctx::err`] adds the file, line and key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    /// "expected {what}, got {x's TOML type}".
    pub(crate) fn expected(what: &str, x: &toml::Value) -> Invalid {
        Invalid(format!("expected {what}, got {}", x.type_str()))
    }
}

pub(crate) struct Ctx<'a> {
    pub file: &'a Path,
    pub src: &'a str,
}

impl Ctx<'_> {
    /// The folder relative paths of the file resolve against.
    pub(crate) fn dir(&self) -> &Path {
        self.file.parent().unwrap_or(Path::new("."))
    }

    /// The path `v` names, resolved against [`Ctx::dir`]; an empty one is refused with `empty`.
    pub(crate) fn path(
        &self,
        key: &str,
        v: &Spanned<String>,
        empty: &str,
    ) -> Result<PathBuf, ConfigError> {
        if v.get_ref().trim().is_empty() {
            return Err(self.err(v.span(), key, empty));
        }
        Ok(self.dir().join(v.get_ref()))
    }

    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())].matches('\n').count() + 1
    }

    /// An error at `line` (1-based) of the file, naming `key`.
    pub(crate) fn at(
        &self,
        line: Option<usize>,
        key: Option<&str>,
        message: impl fmt::Display,
    ) -> ConfigError {
        ConfigError {
            file: self.file.to_path_buf(),
            line,
            key: key.map(str::to_string),
            message: message.to_string(),
        }
    }

    pub(crate) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl fmt::Display,
    ) -> ConfigError {
        self.at(Some(self.line_of(span.start)), Some(key), message)
    }

    /// An error at the first line that sets `name` (no span survives serde's `flatten`).
    pub(crate) fn err_at_key(
        &self,
        name: &str,
        key: &str,
        message: impl fmt::Display,
    ) -> ConfigError {
        let sets = |l: &str| l.split_once('=').is_some_and(|(k, _)| k.trim() == name);
        let line = self.src.lines().position(sets);
        self.at(line.map(|i| i + 1), Some(key), message)
    }
}
