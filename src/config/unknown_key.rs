//! Configuration keys serde does not know. Every table is a `deny_unknown_fields` struct;
//! when serde refuses a key, serde_path_to_error has named its path, the table's struct
//! gives the keys it knows, and strsim finds the one meant ("did you mean `n_batch`?").
//! [`deserialize`] reads a whole file this way; the tables' own checks import only
//! `error` and `suggest`, never this file, which imports them all.

use serde::Deserialize;

use super::error::{ConfigError, Ctx};
use super::suggest::did_you_mean;

/// The keys of the table at `path` (table names, array indices left out: `["model",
/// "sweep"]`), from the struct that deserializes it; None for a table with open keys (`slo`)
/// or a path that is no table.
pub(crate) fn known_keys(path: &[&str]) -> Option<&'static [&'static str]> {
    use crate::config::{RawConfig, RawModel, endpoint, ladder, serving, speculative, tune};
    Some(match path {
        [] => fields_of::<RawConfig>(),
        ["sweep"] | ["model" | "ladder", "sweep"] => sweep_keys(),
        ["model"] => fields_of::<RawModel>(),
        ["model", "server"] => fields_of::<endpoint::RawServerTable>(),
        ["ladder"] => fields_of::<ladder::RawLadder>(),
        ["ladder", "eval"] => fields_of::<ladder::RawEval>(),
        ["serving"] => fields_of::<serving::RawServing>(),
        ["speculative"] => fields_of::<speculative::RawSpeculative>(),
        ["tune"] => fields_of::<tune::RawTune>(),
        ["serving", "targets"] => fields_of::<serving::RawTargets>(),
        ["serving", "goodput"] => fields_of::<serving::RawGoodput>(),
        _ => return None,
    })
}

/// The keys of a sweep table: its own fields (which `flatten` hides from serde's field list)
/// and the parameter table's names.
fn sweep_keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let mut k = crate::config::SWEEP_KEYS.to_vec();
        // The table's typed entries are fields of the struct, already in the list.
        k.extend(crate::config::knobs::map_params().map(|k| k.name));
        k
    })
}

/// The field names serde's derive gives a struct: the list it hands the deserializer.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor, value};

    /// A deserializer that only records the fields a struct asks for.
    struct Fields(&'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, value::Error> {
            Err(value::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, value::Error> {
            self.0 = fields;
            Err(value::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut f = Fields(&[]);
    let _ = T::deserialize(&mut f);
    f.0
}

/// Deserializes the whole of `ctx.src` as `T`, once: serde_path_to_error names the key that
/// failed, toml's span gives its line.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(ctx: &Ctx) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Deserializer::new(ctx.src))
        .map_err(|e| toml_error(ctx, e))
}

fn toml_error(ctx: &Ctx, e: serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
    // `Spanned` values add a private segment to the path; the key is the table's.
    let keys: Vec<Segment> = (e.path().iter())
        .filter_map(|s| match s {
            serde_path_to_error::Segment::Map { key } if key.starts_with("$__") => None,
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            _ => None,
        })
        .collect();
    let inner = e.into_inner();
    // A key its table does not know is one `deny_unknown_fields` refused.
    let suggestion = match &keys[..] {
        [table @ .., Segment::Key(last)] => {
            let table: Vec<&str> = (table.iter())
                .filter_map(|s| match s {
                    Segment::Key(k) => Some(k.as_str()),
                    Segment::Index(_) => None,
                })
                .collect();
            let known = known_keys(&table).filter(|k| !k.contains(&last.as_str()));
            known.and_then(|k| did_you_mean(last, k))
        }
        _ => None,
    };
    // toml's message may span several lines (with a source excerpt); keep the first.
    let first = inner.message().lines().next();
    let message = suggestion.unwrap_or_else(|| first.unwrap_or("invalid TOML").to_string());
    let key: String = (keys.iter().enumerate())
        .map(|(at, s)| match s {
            Segment::Key(k) if at == 0 => k.clone(),
            Segment::Key(k) => format!(".{k}"),
            Segment::Index(i) => format!("[{i}]"),
        })
        .collect();
    let line = inner.span().map(|s| ctx.line_of(s.start));
    ctx.at(line, Some(key.as_str()).filter(|k| !k.is_empty()), message)
}

/// One step of a key's path: `model[1].sweep` is Key, Index, Key.
enum Segment {
    Key(String),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_knows_its_keys_from_its_struct() {
        assert!(known_keys(&[]).unwrap().contains(&"serving"));
        assert!(
            known_keys(&["model", "sweep"])
                .unwrap()
                .contains(&"n_threads")
        );
        assert!(known_keys(&["model"]).unwrap().contains(&"endpoint"));
        assert!(
            known_keys(&["model", "server"])
                .unwrap()
                .contains(&"command")
        );
        assert!(known_keys(&["ladder", "eval"]).unwrap().contains(&"chunks"));
        assert!(known_keys(&["serving"]).unwrap().contains(&"slo"));
        assert!(
            known_keys(&["serving", "targets"])
                .unwrap()
                .contains(&"ttft_ms")
        );
        assert!(
            known_keys(&["serving", "goodput"])
                .unwrap()
                .contains(&"max_rate")
        );
        assert_eq!(known_keys(&["serving", "slo"]), None, "open keys");
    }
}
