//! Configuration keys serde does not know. Every table is a `deny_unknown_fields` struct;
//! when serde refuses a key, serde_path_to_error has named its path, the table's struct
//! gives the keys it knows, and strsim finds the one meant ("did you mean `n_batch`?").

use serde::Deserialize;

/// The known key closest to `unknown`, when close enough to be the one meant: at most a
/// third of its length away (at least 1; a swap of neighbours is one edit), or one contains
/// the other (`batch` → `n_batch`).
pub fn suggest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (unknown.chars().count() / 3).max(1);
    known
        .iter()
        .map(|&k| (strsim::damerau_levenshtein(unknown, k), k))
        .filter(|&(d, k)| {
            d <= limit || (unknown.len() >= 4 && (k.contains(unknown) || unknown.contains(k)))
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// The keys of the table at `path` (table names, array indices left out: `["model",
/// "sweep"]`), from the struct that deserializes it; None for a table with open keys (`slo`)
/// or a path that is no table.
pub(crate) fn known_keys(path: &[&str]) -> Option<&'static [&'static str]> {
    use crate::config::{RawConfig, RawModel, ladder, served, serving};
    Some(match path {
        [] => fields_of::<RawConfig>(),
        ["sweep"] | ["model" | "ladder", "sweep"] => sweep_keys(),
        ["model"] => fields_of::<RawModel>(),
        ["model", "server"] => fields_of::<served::RawServerTable>(),
        ["ladder"] => fields_of::<ladder::RawLadder>(),
        ["ladder", "eval"] => fields_of::<ladder::RawEval>(),
        ["serving"] => fields_of::<serving::RawServing>(),
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
        k.extend(crate::config::knobs::KNOBS.iter().map(|k| k.name));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_keys_are_suggested_and_far_ones_are_not() {
        let known = ["n_prompt", "n_gen", "n_batch", "n_ubatch", "repetitions"];
        assert_eq!(suggest("n_batches", &known), Some("n_batch"));
        assert_eq!(suggest("repetition", &known), Some("repetitions"));
        assert_eq!(suggest("n_ganerate", &known), None);
        assert_eq!(suggest("npromt", &known), Some("n_prompt"));
        assert_eq!(suggest("n_ubacth", &known), Some("n_ubatch"), "a swap");
        assert_eq!(suggest("bogus", &known), None);
        assert_eq!(suggest("x", &[]), None);
    }

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
