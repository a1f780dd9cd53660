//! Configuration errors: every one names the file, the line and the key.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A configuration error that names the file, the line and the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

pub(crate) struct Ctx<'a> {
    pub file: &'a Path,
    pub src: &'a str,
}

impl Ctx<'_> {
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.src[..offset.min(self.src.len())].matches('\n').count() + 1
    }

    pub(crate) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            file: self.file.to_path_buf(),
            line: Some(self.line_of(span.start)),
            key: Some(key.to_string()),
            message: message.into(),
        }
    }
}

/// Deserializes the whole of `ctx.src` as `T`, once: serde_path_to_error names the key that
/// failed, toml's span gives its line.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(ctx: &Ctx) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(ctx.src))
        .map_err(|e| toml_error(ctx, e))
}

fn toml_error(ctx: &Ctx, e: serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
    // `Spanned` values add a private segment to the path; the key is the table's.
    let keys: Vec<Segment> = e
        .path()
        .iter()
        .filter_map(|s| match s {
            serde_path_to_error::Segment::Map { key } if key.starts_with("$__") => None,
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            _ => None,
        })
        .collect();
    let inner = e.into_inner();
    // toml's message may span several lines (with a source excerpt); keep the first.
    let mut message = inner
        .message()
        .lines()
        .next()
        .unwrap_or("invalid TOML")
        .to_string();
    if let Some(Segment::Key(last)) = keys.last() {
        let table: Vec<&str> = keys[..keys.len() - 1]
            .iter()
            .filter_map(|s| match s {
                Segment::Key(k) => Some(k.as_str()),
                Segment::Index(_) => None,
            })
            .collect();
        // A key its table does not know is one `deny_unknown_fields` refused.
        let known = crate::config::unknown_key::known_keys(&table);
        if let Some(s) = known
            .filter(|k| !k.contains(&last.as_str()))
            .and_then(|k| crate::config::unknown_key::suggest(last, k))
        {
            message = format!("unknown field `{last}`, did you mean `{s}`?");
        }
    }
    let mut key = String::new();
    for s in &keys {
        match s {
            Segment::Key(k) if key.is_empty() => key.push_str(k),
            Segment::Key(k) => {
                key.push('.');
                key.push_str(k);
            }
            Segment::Index(i) => key.push_str(&format!("[{i}]")),
        }
    }
    ConfigError {
        file: ctx.file.to_path_buf(),
        line: inner.span().map(|s| ctx.line_of(s.start)),
        key: (!key.is_empty()).then_some(key),
        message,
    }
}

/// One step of a key's path: `model[1].sweep` is Key, Index, Key.
enum Segment {
    Key(String),
    Index(usize),
}
