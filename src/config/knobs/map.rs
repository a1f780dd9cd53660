//! One test's values of the table's map-held parameters: only those that differ from
//! llama-bench's defaults, flattened into the test's parameters (and so into its identity
//! and result record). Apart from the table (`table.rs`) and `knobs.rs`, which say what a parameter is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Kind, Knob, KnobValue, knob, map_params};

/// The values of the table's parameters that differ from llama-bench's defaults, by name:
/// flattened into a test's parameters (and so into its identity and its result record).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Knobs(pub BTreeMap<String, KnobValue>);

/// Flattened into a record, the map sees every key its record does not know: it keeps the
/// table's names with a value of the right type and leaves everything else alone, so a
/// result file with other keys (or odd values) still loads.
impl<'de> Deserialize<'de> for Knobs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        let mut out = Knobs::default();
        for (name, v) in raw {
            let Some(k) = knob(&name) else { continue };
            let x = match (k.kind, v) {
                (Kind::Int { .. } | Kind::Check(_), serde_json::Value::Number(n)) => {
                    n.as_i64().map(toml::Value::Integer)
                }
                (Kind::Bool, serde_json::Value::Bool(b)) => Some(toml::Value::Boolean(b)),
                (
                    Kind::Choice(_) | Kind::Text(_) | Kind::Check(_),
                    serde_json::Value::String(s),
                ) => Some(toml::Value::String(s)),
                _ => None,
            };
            if let Some(value) = x.and_then(|x| k.value(&x).ok()) {
                out.set(&name, value);
            }
        }
        Ok(out)
    }
}

impl Knobs {
    /// The value of `name`: the one set, else llama-bench's default (None: not in the map's
    /// part of the table).
    pub fn get(&self, name: &str) -> Option<KnobValue> {
        let k = map_params().find(|k| k.name == name)?;
        let v = self.0.get(name).cloned();
        Some(v.unwrap_or_else(|| k.default_value()))
    }

    /// Sets `name`, keeping only values that differ from the default.
    pub fn set(&mut self, name: &str, v: KnobValue) {
        let Some(k) = map_params().find(|k| k.name == name) else {
            return;
        };
        if k.default_value() == v {
            self.0.remove(name);
        } else {
            self.0.insert(name.to_string(), v);
        }
    }

    /// Whether llama.cpp's fit runs: as llama-bench, when `fit_target` or `fit_min_ctx`
    /// differs from its default.
    pub fn asks_fit(&self) -> bool {
        self.0.contains_key("fit_target") || self.0.contains_key("fit_min_ctx")
    }

    /// Short text of the values that differ from the defaults, e.g. "ncmoe 4, ot
    /// .ffn_.*_exps.=CPU"; empty when all are llama-bench's.
    pub fn describe(&self) -> String {
        let shown = |k: &Knob| Some(format!("{} {}", k.flag, self.0.get(k.name)?.show()));
        map_params()
            .filter_map(shown)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
