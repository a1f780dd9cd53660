//! Every llama-bench test parameter (all 28 of its `get_fields()`) as ONE table,
//! [`PARAMS`]: each entry is a sweep key of `[sweep]` / `[model.sweep]` with llama-bench's
//! field name, its value type, llama-bench's default and JSON type, its short flag (test
//! ids, the leaderboard's settings), its table header and its level (model load, context,
//! or the test itself for n_prompt / n_gen / n_depth).
//!
//! Where a value lives is the entry's [`Slot`]: the thirteen original axes are typed fields
//! of [`TestParams`] and [`Axes`] (the engine, the kinds and the ladder read
//! `params.n_batch` as a number), reached through accessors that `field!` generates; every
//! other parameter lives in the [`Knobs`] map (flattened into the test's parameters, holding
//! only values that differ from the default, so the identities of older tests stay valid).
//! Generic code goes through [`Knob::get`], [`Knob::set`], [`Knob::axis`] and
//! [`Knob::set_axis`] and never lists the fields: parsing (`config::apply_axes`), plan
//! expansion (model level outermost), test ids and load keys (`plan`), compare's join
//! ([`TestParams::all_fields`]), the exports (llama-bench JSON/JSONL, CSV, Markdown:
//! [`Knob::bench_json`], [`Knob::header`]) and the leaderboard's settings
//! ([`Knobs::describe`]; the typed ones get a column each). The engine applies every
//! model-level and context-level entry, typed or in the map, through one hook
//! (`engine::llama::knobs`).
//!
//! Adding a parameter: one `Slot::Map` entry here, in the place of the loop order it should
//! take, and one arm in the engine's hook (or a note that this build does not honour it);
//! CONTRIBUTING.md says what else changes with it.
//!
//! Names, spellings and defaults are those of the llama-bench of the pinned llama.cpp
//! (llama-cpp-sys-2 0.1.161): `-C`, `--cpu-strict`, `--poll`, `-ncmoe`, `-dev`, `-ts`, `-ot`,
//! `-lm`, `-lzm`, `-embd`, `-nopo`, `--no-host`, `--repack`, `-fitt`, `-fitc`.

use crate::config::Invalid;

use serde::{Deserialize, Serialize};

/// Whether changing the parameter means reloading the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `llama_model_params` (or what decides them, as fit does): a new model load.
    Model,
    /// `llama_context_params` or the CPU thread pool: a new context only.
    Context,
    /// n_prompt, n_gen and n_depth: they define the test itself (its name, e.g.
    /// `pp512 @ d4096`), so plan expansion and test ids treat them apart.
    Test,
}

/// What a value may be. Every value is checked and written in one canonical spelling, so
/// that equal settings give equal identities.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// true/false, also 0/1 as llama-bench writes it.
    Bool,
    /// One of these words (lower case).
    Choice(&'static [&'static str]),
    /// Text checked and canonicalized by the function.
    Text(fn(&str) -> Result<String, Invalid>),
    /// Any TOML value, checked by the function (flash attention's auto/on/off/-1/0/1, split
    /// modes, KV cache types: the spellings `config::values` accepts).
    Check(fn(&toml::Value) -> Result<KnobValue, Invalid>),
}

/// llama-bench's JSON type of the field (its `get_field_type()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Int,
    Bool,
    Str,
}

/// llama-bench's default, as a literal.
#[derive(Debug, Clone, Copy)]
pub enum Lit {
    Int(i64),
    Bool(bool),
    Str(&'static str),
}

/// One value of a parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KnobValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl KnobValue {
    /// The value as the tables and ids show it (booleans as 0/1, as llama-bench).
    pub fn show(&self) -> String {
        match self {
            KnobValue::Bool(b) => u8::from(*b).to_string(),
            KnobValue::Int(n) => n.to_string(),
            KnobValue::Text(s) => s.clone(),
        }
    }

    pub fn as_i64(&self) -> i64 {
        match self {
            KnobValue::Bool(b) => i64::from(*b),
            KnobValue::Int(n) => *n,
            KnobValue::Text(s) => s.parse().unwrap_or(0),
        }
    }

    pub fn as_bool(&self) -> bool {
        match self {
            KnobValue::Bool(b) => *b,
            KnobValue::Int(n) => *n != 0,
            KnobValue::Text(s) => matches!(s.as_str(), "1" | "true"),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            KnobValue::Text(s) => s,
            _ => "",
        }
    }
}

/// One llama-bench test parameter.
#[derive(Debug)]
pub struct Knob {
    /// llama-bench's field name: the sweep key, the result field, the export field.
    pub name: &'static str,
    /// llama-bench's short flag without dashes: test ids, the leaderboard's settings.
    pub flag: &'static str,
    /// The Markdown table's column header (llama-bench's, for the original axes).
    pub header: &'static str,
    pub level: Level,
    pub kind: Kind,
    pub default: Lit,
    pub field: FieldType,
    /// One line for docs and errors.
    pub doc: &'static str,
    /// Where a test's value lives.
    pub slot: Slot,
}

/// Where a parameter's value lives in [`TestParams`] and [`Axes`].
#[derive(Debug, Clone, Copy)]
pub enum Slot {
    /// In the [`Knobs`] map (absent: the default) and in `Axes::knobs`: a new parameter needs
    /// nothing more than its entry.
    Map,
    /// A typed field of both, for the original axes that the hot code reads as numbers
    /// (`params.n_batch`); the accessors convert.
    Field(Field),
}

/// The accessors of a typed field (generated by `field!`).
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub get: fn(&TestParams) -> KnobValue,
    pub set: fn(&mut TestParams, &KnobValue),
    pub axis: fn(&Axes) -> Vec<KnobValue>,
    pub set_axis: fn(&mut Axes, Vec<KnobValue>),
    /// The value a sweep table gives, with its place in the file (a field of the parsed
    /// table, not of its flattened rest, where no place survives).
    pub(crate) raw: fn(&super::RawSweep) -> Option<&toml::Spanned<toml::Value>>,
}

/// The entry named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    PARAMS.iter().find(|k| k.name == name)
}

/// The model-level settings of `p` other than `load_mode` that differ from llama-bench's
/// defaults, as llama-bench's flags spell them: "ngl 2, ncmoe 4" (empty when none). What
/// tells one load of a model from another (a tune's load times).
pub fn placement_of(p: &TestParams) -> String {
    let v: Vec<String> = (PARAMS.iter())
        .filter(|k| k.level == Level::Model && k.name != "load_mode")
        .filter_map(|k| {
            let x = k.get(p);
            (x != k.default_value()).then(|| format!("{} {}", k.flag, x.show()))
        })
        .collect();
    v.join(", ")
}

/// The settings that say where a model's weights and KV cache go.
pub const PLACEMENT: &[&str] = &[
    "n_gpu_layers",
    "no_kv_offload",
    "n_cpu_moe",
    "devices",
    "tensor_split",
    "tensor_buft_overrides",
    "fit_target",
    "fit_min_ctx",
];

/// A test's placement as llama-bench's flags spell it: n_gpu_layers always, the other
/// [`PLACEMENT`] settings where they differ from llama-bench's defaults: "ngl 99, ncmoe 12".
pub fn placement(p: &TestParams) -> String {
    let mut v = vec![format!("ngl {}", p.n_gpu_layers)];
    for k in PARAMS.iter().filter(|k| PLACEMENT[1..].contains(&k.name)) {
        let x = k.get(p);
        if x != k.default_value() {
            v.push(format!("{} {}", k.flag, x.show()));
        }
    }
    v.join(", ")
}

/// The entries held in the [`Knobs`] map (llama-bench's parameters beyond the original
/// axes, and any parameter added since), in the table's order.
pub fn map_params() -> impl Iterator<Item = &'static Knob> {
    PARAMS.iter().filter(|k| matches!(k.slot, Slot::Map))
}

/// The entries of `level`, in the table's order.
pub fn of_level(level: Level) -> impl Iterator<Item = &'static Knob> {
    PARAMS.iter().filter(move |k| k.level == level)
}

impl Knob {
    /// The test's value (the default where the map leaves it out).
    pub fn get(&self, p: &TestParams) -> KnobValue {
        match self.slot {
            Slot::Map => p
                .knobs
                .0
                .get(self.name)
                .cloned()
                .unwrap_or_else(|| self.default_value()),
            Slot::Field(f) => (f.get)(p),
        }
    }

    pub fn set(&self, p: &mut TestParams, v: &KnobValue) {
        match self.slot {
            Slot::Map => p.knobs.set(self.name, v.clone()),
            Slot::Field(f) => (f.set)(p, v),
        }
    }

    /// The values a sweep takes (the default alone where it sets none).
    pub fn axis(&self, a: &Axes) -> Vec<KnobValue> {
        match self.slot {
            Slot::Map => a.knob_values(self),
            Slot::Field(f) => (f.axis)(a),
        }
    }

    pub fn set_axis(&self, a: &mut Axes, values: Vec<KnobValue>) {
        match self.slot {
            Slot::Map => {
                a.knobs.insert(self.name.to_string(), values);
            }
            Slot::Field(f) => (f.set_axis)(a, values),
        }
    }

    /// The value as text in llama-bench's CSV and SQL: its JSON value, strings unquoted.
    pub fn bench_text(&self, v: &KnobValue) -> String {
        match self.bench_json(v) {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }
    }

    pub fn default_value(&self) -> KnobValue {
        match self.default {
            Lit::Int(n) => KnobValue::Int(n),
            Lit::Bool(b) => KnobValue::Bool(b),
            Lit::Str(s) => KnobValue::Text(s.to_string()),
        }
    }

    /// Checks one TOML value and returns it canonical.
    pub fn value(&self, x: &toml::Value) -> Result<KnobValue, Invalid> {
        match self.kind {
            Kind::Int { min, max } => super::values::int_value(x, min, max).map(KnobValue::Int),
            Kind::Bool => super::values::boolean(x).map(KnobValue::Bool),
            Kind::Choice(words) => {
                let s = x.as_str().map(str::to_ascii_lowercase);
                match s {
                    Some(s) if words.contains(&s.as_str()) => Ok(KnobValue::Text(s)),
                    _ => Err(Invalid(format!(
                        "expected one of {}, got {}",
                        words.join(", "),
                        show_toml(x)
                    ))),
                }
            }
            Kind::Text(check) => {
                let s = match x {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    other => {
                        return Err(Invalid(format!(
                            "expected a string, got {}",
                            other.type_str()
                        )));
                    }
                };
                check(&s).map(KnobValue::Text)
            }
            Kind::Check(check) => check(x),
        }
    }

    /// The value as llama-bench's JSON writes the field.
    pub fn bench_json(&self, v: &KnobValue) -> serde_json::Value {
        match self.field {
            FieldType::Int => serde_json::json!(v.as_i64()),
            FieldType::Bool => serde_json::json!(v.as_bool()),
            FieldType::Str => serde_json::json!(v.show()),
        }
    }
}

fn show_toml(x: &toml::Value) -> String {
    match x {
        toml::Value::String(s) => format!("{s:?}"),
        other => other.type_str().to_string(),
    }
}

/// Parses a sweep key of the table: a scalar or a list, each value checked.
pub fn parse_values(k: &Knob, v: &toml::Value) -> Result<Vec<KnobValue>, Invalid> {
    let items: Vec<&toml::Value> = match v {
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    if items.is_empty() {
        return Err(Invalid("the list is empty: give at least one value".into()));
    }
    items.into_iter().map(|x| k.value(x)).collect()
}

mod axes;
mod checks;
mod map;
mod table;
mod test_params;

pub use axes::Axes;
use checks::{cpu_mask, devices, overrides, tensor_split};
pub use checks::{cpu_moe_patterns, override_pairs, pattern_matches};
pub use map::Knobs;
pub use table::PARAMS;
pub use test_params::TestParams;

#[cfg(test)]
mod tests;
