//! The llama-bench test parameters beyond the thirteen original axes, as ONE table: each
//! entry is a sweep key of `[sweep]` / `[model.sweep]` with llama-bench's field name, its
//! value type, llama-bench's default, its short flag (test ids, table headers) and its level
//! (a model-load parameter or a context parameter).
//!
//! Everything else reads this table: parsing ([`parse_values`]), plan expansion and test ids
//! (`plan`), identities and the schema (a [`Knobs`] map flattened into the test's
//! parameters, holding only values that differ from the default, so the identities of older
//! tests stay valid), the exports (llama-bench's JSON type per field, [`Knob::bench_json`]),
//! the tables and the leaderboard's settings ([`Knob::flag`], [`Knobs::describe`]) and
//! `compare`'s join ([`Knobs::all_fields`]). The engine applies each entry through one hook
//! (`engine::llama::knobs`). Adding a parameter is one entry here and one arm in that hook.
//!
//! Names, spellings and defaults are those of the llama-bench of the pinned llama.cpp
//! (llama-cpp-sys-2 0.1.161): `-C`, `--cpu-strict`, `--poll`, `-ncmoe`, `-dev`, `-ts`, `-ot`,
//! `-lm`, `-lzm`, `-embd`, `-nopo`, `--no-host`, `--repack`, `-fitt`, `-fitc`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Whether changing the parameter means reloading the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `llama_model_params` (or what decides them, as fit does): a new model load.
    Model,
    /// `llama_context_params` or the CPU thread pool: a new context only.
    Context,
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
    Text(fn(&str) -> Result<String, String>),
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
    /// llama-bench's short flag without dashes: test ids and table headers.
    pub flag: &'static str,
    pub level: Level,
    pub kind: Kind,
    pub default: Lit,
    pub field: FieldType,
    /// One line for docs and errors.
    pub doc: &'static str,
}

/// The table. Order: llama-bench's `get_fields()`.
pub const KNOBS: &[Knob] = &[
    Knob {
        name: "cpu_mask",
        flag: "C",
        level: Level::Context,
        kind: Kind::Text(cpu_mask),
        default: Lit::Str("0x0"),
        field: FieldType::Str,
        doc: "CPU affinity mask of the thread pool, hex (llama-bench -C)",
    },
    Knob {
        name: "cpu_strict",
        flag: "cpu-strict",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "strict CPU placement of the thread pool (llama-bench --cpu-strict)",
    },
    Knob {
        name: "poll",
        flag: "poll",
        level: Level::Context,
        kind: Kind::Int { min: 0, max: 100 },
        default: Lit::Int(50),
        field: FieldType::Int,
        doc: "thread pool polling level, 0-100 (llama-bench --poll)",
    },
    Knob {
        name: "n_cpu_moe",
        flag: "ncmoe",
        level: Level::Model,
        kind: Kind::Int {
            min: 0,
            max: 100_000,
        },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "keep the expert tensors of the first N layers on the CPU (llama-bench -ncmoe)",
    },
    Knob {
        name: "devices",
        flag: "dev",
        level: Level::Model,
        kind: Kind::Text(devices),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "devices to offload to, e.g. \"Vulkan0/CPU\", \"none\" or \"auto\" (llama-bench -dev)",
    },
    Knob {
        name: "tensor_split",
        flag: "ts",
        level: Level::Model,
        kind: Kind::Text(tensor_split),
        default: Lit::Str("0.00"),
        field: FieldType::Str,
        doc: "share of the model per GPU, e.g. \"3/1\" (llama-bench -ts)",
    },
    Knob {
        name: "tensor_buft_overrides",
        flag: "ot",
        level: Level::Model,
        kind: Kind::Text(overrides),
        default: Lit::Str("none"),
        field: FieldType::Str,
        doc: "buffer type per tensor-name pattern, \"pattern=buffer;...\" (llama-bench -ot)",
    },
    Knob {
        name: "load_mode",
        flag: "lm",
        level: Level::Model,
        kind: Kind::Choice(LOAD_MODES),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "how the file is loaded: auto, none, mmap, mlock, mmap+mlock, dio (llama-bench -lm)",
    },
    Knob {
        name: "lazy_mode",
        flag: "lzm",
        level: Level::Model,
        kind: Kind::Choice(LAZY_MODES),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "on-demand reading of tensors the architecture marks: on, auto, off (llama-bench -lzm)",
    },
    Knob {
        name: "embeddings",
        flag: "embd",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "extract embeddings too (llama-bench -embd)",
    },
    Knob {
        name: "no_op_offload",
        flag: "nopo",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Int,
        doc: "do not offload host tensor operations to the device (llama-bench -nopo)",
    },
    Knob {
        name: "no_host",
        flag: "no-host",
        level: Level::Model,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "bypass the host buffer, allowing extra buffer types (llama-bench --no-host)",
    },
    Knob {
        name: "repack",
        flag: "repack",
        level: Level::Model,
        kind: Kind::Bool,
        default: Lit::Bool(true),
        field: FieldType::Bool,
        doc: "repack weights for the CPU's extra buffer types (llama-bench --repack)",
    },
    Knob {
        name: "fit_target",
        flag: "fitt",
        level: Level::Model,
        kind: Kind::Int {
            min: 0,
            max: 1 << 30,
        },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "fit the model to device memory, leaving this many MiB free per device; 0 off \
              (llama-bench -fitt)",
    },
    Knob {
        name: "fit_min_ctx",
        flag: "fitc",
        level: Level::Model,
        kind: Kind::Int {
            min: 0,
            max: 1 << 24,
        },
        // llama-bench's default is 0 (`cmd_params_defaults`), though its --help says 4096:
        // the field it writes, and whether it fits, follow the 0.
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "smallest context fit may choose; set alone, fit runs with a margin of 0 \
              (llama-bench -fitc)",
    },
];

/// llama-bench's `-lm` values, in llama.cpp's `enum llama_load_mode` order after auto.
pub const LOAD_MODES: &[&str] = &["auto", "none", "mmap", "mlock", "mmap+mlock", "dio"];
/// llama-bench's `-lzm` values.
pub const LAZY_MODES: &[&str] = &["on", "auto", "off"];

/// The entry named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

impl Knob {
    pub fn default_value(&self) -> KnobValue {
        match self.default {
            Lit::Int(n) => KnobValue::Int(n),
            Lit::Bool(b) => KnobValue::Bool(b),
            Lit::Str(s) => KnobValue::Text(s.to_string()),
        }
    }

    /// Checks one TOML value and returns it canonical.
    pub fn value(&self, x: &toml::Value) -> Result<KnobValue, String> {
        match self.kind {
            Kind::Int { min, max } => super::values::int_value(x, min, max).map(KnobValue::Int),
            Kind::Bool => super::values::boolean(x).map(KnobValue::Bool),
            Kind::Choice(words) => {
                let s = x.as_str().map(str::to_ascii_lowercase);
                match s {
                    Some(s) if words.contains(&s.as_str()) => Ok(KnobValue::Text(s)),
                    _ => Err(format!(
                        "expected one of {}, got {}",
                        words.join(", "),
                        show_toml(x)
                    )),
                }
            }
            Kind::Text(check) => {
                let s = match x {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::Float(f) => f.to_string(),
                    other => return Err(format!("expected a string, got {}", other.type_str())),
                };
                check(&s).map(KnobValue::Text)
            }
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
            let value = match (k.kind, &v) {
                (Kind::Int { min, max }, serde_json::Value::Number(n)) => n
                    .as_i64()
                    .filter(|n| (min..=max).contains(n))
                    .map(KnobValue::Int),
                (Kind::Bool, serde_json::Value::Bool(b)) => Some(KnobValue::Bool(*b)),
                (Kind::Choice(_) | Kind::Text(_), serde_json::Value::String(s)) => {
                    k.value(&toml::Value::String(s.clone())).ok()
                }
                _ => None,
            };
            if let Some(value) = value {
                out.set(&name, value);
            }
        }
        Ok(out)
    }
}

impl Knobs {
    /// The value of `name`: the one set, else llama-bench's default (None: not in the table).
    pub fn get(&self, name: &str) -> Option<KnobValue> {
        let k = knob(name)?;
        Some(
            self.0
                .get(name)
                .cloned()
                .unwrap_or_else(|| k.default_value()),
        )
    }

    /// Sets `name`, keeping only values that differ from the default.
    pub fn set(&mut self, name: &str, v: KnobValue) {
        match knob(name) {
            Some(k) if k.default_value() == v => {
                self.0.remove(name);
            }
            Some(_) => {
                self.0.insert(name.to_string(), v);
            }
            None => {}
        }
    }

    /// Whether llama.cpp's fit runs: as llama-bench, when `fit_target` or `fit_min_ctx`
    /// differs from its default.
    pub fn asks_fit(&self) -> bool {
        self.0.contains_key("fit_target") || self.0.contains_key("fit_min_ctx")
    }

    /// The model-level part: what a model load depends on.
    pub fn model_level(&self) -> Knobs {
        Knobs(
            self.0
                .iter()
                .filter(|(k, _)| knob(k).is_some_and(|k| k.level == Level::Model))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    /// Every parameter of the table, the defaults included (what comparisons join on).
    pub fn all_fields(&self) -> Vec<(&'static str, KnobValue)> {
        KNOBS
            .iter()
            .map(|k| {
                (
                    k.name,
                    self.get(k.name).unwrap_or_else(|| k.default_value()),
                )
            })
            .collect()
    }

    /// Short text of the values that differ from the defaults, e.g. "ncmoe 4, ot
    /// .ffn_.*_exps.=CPU"; empty when all are llama-bench's.
    pub fn describe(&self) -> String {
        KNOBS
            .iter()
            .filter_map(|k| {
                self.0
                    .get(k.name)
                    .map(|v| format!("{} {}", k.flag, v.show()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses a sweep key of the table: a scalar or a list, each value checked.
pub fn parse_values(k: &Knob, v: &toml::Value) -> Result<Vec<KnobValue>, String> {
    let items: Vec<&toml::Value> = match v {
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    if items.is_empty() {
        return Err("the list is empty: give at least one value".into());
    }
    items.into_iter().map(|x| k.value(x)).collect()
}

// The value checks of the text parameters.

fn cpu_mask(s: &str) -> Result<String, String> {
    let t = s.trim().to_ascii_lowercase();
    let hex = t.strip_prefix("0x").unwrap_or(&t);
    if hex.is_empty() || hex.len() > 128 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "{s:?} is not a CPU mask: write it in hex, e.g. \"0xff\""
        ));
    }
    Ok(format!("0x{hex}"))
}

/// "auto", "none", or device names joined by '/', as llama-bench's `-dev`. Whether each
/// device exists is checked against the engine's list before any test.
fn devices(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t == "auto" || t == "none" {
        return Ok(t.to_string());
    }
    let names: Vec<&str> = t.split('/').map(str::trim).collect();
    if names.iter().any(|n| {
        n.is_empty()
            || n.len() > 64
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
    }) {
        return Err(format!(
            "{s:?} is not a device list: name devices joined by '/', e.g. \"Vulkan0/CPU\", \
             or \"auto\" or \"none\""
        ));
    }
    Ok(names.join("/"))
}

/// Proportions joined by '/', non-negative, as llama-bench's `-ts`; written with two
/// decimals as llama-bench prints them. Its length is checked against the devices before
/// any test.
fn tensor_split(s: &str) -> Result<String, String> {
    let parts: Vec<&str> = s.split(['/', ',']).map(str::trim).collect();
    if parts.len() > 128 {
        return Err(format!("{s:?}: at most 128 proportions"));
    }
    let mut out = Vec::new();
    for p in &parts {
        let x: f64 = p.parse().map_err(|_| {
            format!("{s:?} is not a tensor split: write proportions joined by '/', e.g. \"3/1\"")
        })?;
        if !x.is_finite() || x < 0.0 {
            return Err(format!(
                "{s:?}: a tensor split's proportions must be 0 or more, got {p}"
            ));
        }
        out.push(format!("{x:.2}"));
    }
    Ok(out.join("/"))
}

/// `pattern=buffer;...` as llama-bench's `-ot`, or "none". Each pattern must be a regular
/// expression (llama.cpp matches it with std::regex_search); each buffer type is checked
/// against the engine's list before any test.
fn overrides(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t == "none" {
        return Ok(t.to_string());
    }
    let mut out = Vec::new();
    for part in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((pattern, buft)) = part.rsplit_once('=') else {
            return Err(format!(
                "{part:?} is not an override: write pattern=buffer, e.g. \
                 \".ffn_.*_exps.=CPU\""
            ));
        };
        let (pattern, buft) = (pattern.trim(), buft.trim());
        if pattern.is_empty() || buft.is_empty() {
            return Err(format!(
                "{part:?}: an override needs both a pattern and a buffer type"
            ));
        }
        if let Err(e) = fancy_regex::Regex::new(pattern) {
            let why = e.to_string();
            let why = why.lines().next().unwrap_or("invalid");
            return Err(format!(
                "{pattern:?} is not a valid regular expression: {why}"
            ));
        }
        out.push(format!("{pattern}={buft}"));
    }
    if out.is_empty() {
        return Err("no override given: write pattern=buffer;... or \"none\"".into());
    }
    Ok(out.join(";"))
}

/// The (pattern, buffer type) pairs of a canonical `tensor_buft_overrides` value.
pub fn override_pairs(v: &str) -> Vec<(String, String)> {
    if v == "none" {
        return Vec::new();
    }
    v.split(';')
        .filter_map(|p| p.rsplit_once('='))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Whether `pattern` matches `name` as llama.cpp's std::regex_search does (anywhere).
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    fancy_regex::Regex::new(pattern)
        .ok()
        .and_then(|r| r.is_match(name).ok())
        .unwrap_or(false)
}

/// The patterns llama-bench builds for `n_cpu_moe = n`: the expert tensors of layers 0 to
/// n-1 kept in the CPU buffer type.
pub fn cpu_moe_patterns(n: i64) -> Vec<String> {
    (0..n.max(0))
        .map(|i| format!("blk\\.{i}\\.ffn_(up|down|gate|gate_up)_(ch|)exps"))
        .collect()
}

#[cfg(test)]
mod tests;
