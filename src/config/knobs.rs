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
    Text(fn(&str) -> Result<String, String>),
    /// Any TOML value, checked by the function (flash attention's auto/on/off/-1/0/1, split
    /// modes, KV cache types: the spellings `config::values` accepts).
    Check(fn(&toml::Value) -> Result<KnobValue, String>),
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

/// `field!(name: conv)` or `field!(name: conv_of_params, conv_of_axes)`: the accessors of
/// the typed field `name` of [`TestParams`], [`Axes`] and the parsed sweep table, converting
/// with the functions of module `conv::<conv>`.
macro_rules! field {
    ($f:ident: $c:ident) => {
        field!($f: $c, $c)
    };
    ($f:ident: $p:ident, $a:ident) => {
        Slot::Field(Field {
            get: |p| conv::$p::to(&p.$f),
            set: |p, v| p.$f = conv::$p::from(v),
            axis: |a| a.$f.iter().map(conv::$a::to).collect(),
            set_axis: |a, vs| a.$f = vs.iter().map(conv::$a::from).collect(),
            raw: |s| s.$f.as_ref(),
        })
    };
}

/// Conversions between the typed fields and [`KnobValue`].
mod conv {
    pub mod int {
        use super::super::KnobValue;
        pub fn to<T: Copy + Into<i64>>(x: &T) -> KnobValue {
            KnobValue::Int((*x).into())
        }
        pub fn from<T: TryFrom<i64> + Default>(v: &KnobValue) -> T {
            T::try_from(v.as_i64()).unwrap_or_default()
        }
    }
    pub mod text {
        use super::super::KnobValue;
        // `&String`: it is mapped over `Vec<String>` items, which `&str` would not take.
        #[allow(clippy::ptr_arg)]
        pub fn to(x: &String) -> KnobValue {
            KnobValue::Text(x.clone())
        }
        pub fn from(v: &KnobValue) -> String {
            v.show()
        }
    }
    pub mod boolean {
        use super::super::KnobValue;
        pub fn to(x: &bool) -> KnobValue {
            KnobValue::Bool(*x)
        }
        pub fn from(v: &KnobValue) -> bool {
            v.as_bool()
        }
    }
    pub mod split_mode {
        use super::super::KnobValue;
        use crate::config::SplitMode;
        pub fn to(x: &SplitMode) -> KnobValue {
            KnobValue::Text(x.as_str().to_string())
        }
        pub fn from(v: &KnobValue) -> SplitMode {
            SplitMode::parse(v.as_str()).unwrap_or_default()
        }
        pub fn check(x: &toml::Value) -> Result<KnobValue, String> {
            crate::config::values::split_mode(x).map(|m| to(&m))
        }
    }
    pub mod flash_attn {
        use super::super::KnobValue;
        use crate::config::FlashAttn;
        pub fn to(x: &FlashAttn) -> KnobValue {
            KnobValue::Int(i64::from(x.as_i32()))
        }
        pub fn from(v: &KnobValue) -> FlashAttn {
            FlashAttn::from_i32(v.as_i64())
        }
        pub fn check(x: &toml::Value) -> Result<KnobValue, String> {
            crate::config::values::flash_attn(x).map(|f| to(&f))
        }
    }
    pub fn kv_type(x: &toml::Value) -> Result<super::KnobValue, String> {
        crate::config::values::kv_type(x).map(super::KnobValue::Text)
    }
}

/// The table: every test parameter once. Order: tpsbench's loop order, which is also the
/// order of the `/flag=value` parts of test ids (kept from before the table, so ids stay as
/// they were): the original model-level and context-level axes, then llama-bench's newer
/// parameters in its `get_fields()` order, then the three that define the test itself.
/// Plan expansion crosses the model-level entries first, in this order, then the
/// context-level ones, so a model is loaded once per model-level setting.
pub const PARAMS: &[Knob] = &[
    Knob {
        name: "n_gpu_layers",
        flag: "ngl",
        header: "ngl",
        level: Level::Model,
        kind: Kind::Int {
            min: -1,
            max: 10_000,
        },
        default: Lit::Int(99),
        field: FieldType::Int,
        doc: "layers offloaded to the GPU; -1 all (llama-bench -ngl)",
        slot: field!(n_gpu_layers: int),
    },
    Knob {
        name: "split_mode",
        flag: "sm",
        header: "sm",
        level: Level::Model,
        kind: Kind::Check(conv::split_mode::check),
        default: Lit::Str("layer"),
        field: FieldType::Str,
        doc: "how the model spreads over several GPUs: none, layer, row, tensor (llama-bench -sm)",
        slot: field!(split_mode: split_mode, split_mode),
    },
    Knob {
        name: "main_gpu",
        flag: "mg",
        header: "mg",
        level: Level::Model,
        kind: Kind::Int { min: 0, max: 255 },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "the GPU used with split_mode none (llama-bench -mg)",
        slot: field!(main_gpu: int),
    },
    Knob {
        name: "n_batch",
        flag: "b",
        header: "n_batch",
        level: Level::Context,
        kind: Kind::Int {
            min: 1,
            max: 1 << 20,
        },
        default: Lit::Int(2048),
        field: FieldType::Int,
        doc: "logical batch size (llama-bench -b)",
        slot: field!(n_batch: int),
    },
    Knob {
        name: "n_ubatch",
        flag: "ub",
        header: "n_ubatch",
        level: Level::Context,
        kind: Kind::Int {
            min: 1,
            max: 1 << 20,
        },
        default: Lit::Int(512),
        field: FieldType::Int,
        doc: "physical batch size (llama-bench -ub)",
        slot: field!(n_ubatch: int),
    },
    Knob {
        name: "type_k",
        flag: "ctk",
        header: "type_k",
        level: Level::Context,
        kind: Kind::Check(conv::kv_type),
        default: Lit::Str("f16"),
        field: FieldType::Str,
        doc: "KV cache type of K (llama-bench -ctk)",
        slot: field!(type_k: text),
    },
    Knob {
        name: "type_v",
        flag: "ctv",
        header: "type_v",
        level: Level::Context,
        kind: Kind::Check(conv::kv_type),
        default: Lit::Str("f16"),
        field: FieldType::Str,
        doc: "KV cache type of V (llama-bench -ctv)",
        slot: field!(type_v: text),
    },
    Knob {
        name: "no_kv_offload",
        flag: "nkvo",
        header: "nkvo",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "keep the KV cache (and the attention ops) in host memory (llama-bench -nkvo)",
        slot: field!(no_kv_offload: boolean),
    },
    Knob {
        name: "flash_attn",
        flag: "fa",
        header: "fa",
        level: Level::Context,
        kind: Kind::Check(conv::flash_attn::check),
        default: Lit::Int(-1),
        field: FieldType::Int,
        doc: "flash attention: auto (-1), off (0), on (1) (llama-bench -fa)",
        slot: field!(flash_attn: int, flash_attn),
    },
    Knob {
        name: "n_threads",
        flag: "t",
        header: "threads",
        level: Level::Context,
        kind: Kind::Int { min: 1, max: 4096 },
        // llama-bench's default is the machine's physical core count, known at run time
        // (`Axes::llama_bench_defaults`); 0 stands for it here.
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "CPU threads (llama-bench -t); default: the physical cores",
        slot: field!(n_threads: int),
    },
    Knob {
        name: "cpu_mask",
        flag: "C",
        header: "C",
        level: Level::Context,
        kind: Kind::Text(cpu_mask),
        default: Lit::Str("0x0"),
        field: FieldType::Str,
        doc: "CPU affinity mask of the thread pool, hex (llama-bench -C)",
        slot: Slot::Map,
    },
    Knob {
        name: "cpu_strict",
        flag: "cpu-strict",
        header: "cpu-strict",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "strict CPU placement of the thread pool (llama-bench --cpu-strict)",
        slot: Slot::Map,
    },
    Knob {
        name: "poll",
        flag: "poll",
        header: "poll",
        level: Level::Context,
        kind: Kind::Int { min: 0, max: 100 },
        default: Lit::Int(50),
        field: FieldType::Int,
        doc: "thread pool polling level, 0-100 (llama-bench --poll)",
        slot: Slot::Map,
    },
    Knob {
        name: "n_cpu_moe",
        flag: "ncmoe",
        header: "ncmoe",
        level: Level::Model,
        kind: Kind::Int {
            min: 0,
            max: 100_000,
        },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "keep the expert tensors of the first N layers on the CPU (llama-bench -ncmoe)",
        slot: Slot::Map,
    },
    Knob {
        name: "devices",
        flag: "dev",
        header: "dev",
        level: Level::Model,
        kind: Kind::Text(devices),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "devices to offload to, e.g. \"Vulkan0/CPU\", \"none\" or \"auto\" (llama-bench -dev)",
        slot: Slot::Map,
    },
    Knob {
        name: "tensor_split",
        flag: "ts",
        header: "ts",
        level: Level::Model,
        kind: Kind::Text(tensor_split),
        default: Lit::Str("0.00"),
        field: FieldType::Str,
        doc: "share of the model per GPU, e.g. \"3/1\" (llama-bench -ts)",
        slot: Slot::Map,
    },
    Knob {
        name: "tensor_buft_overrides",
        flag: "ot",
        header: "ot",
        level: Level::Model,
        kind: Kind::Text(overrides),
        default: Lit::Str("none"),
        field: FieldType::Str,
        doc: "buffer type per tensor-name pattern, \"pattern=buffer;...\" (llama-bench -ot)",
        slot: Slot::Map,
    },
    Knob {
        name: "load_mode",
        flag: "lm",
        header: "lm",
        level: Level::Model,
        kind: Kind::Choice(LOAD_MODES),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "how the file is loaded: auto, none, mmap, mlock, mmap+mlock, dio (llama-bench -lm)",
        slot: Slot::Map,
    },
    Knob {
        name: "lazy_mode",
        flag: "lzm",
        header: "lzm",
        level: Level::Model,
        kind: Kind::Choice(LAZY_MODES),
        default: Lit::Str("auto"),
        field: FieldType::Str,
        doc: "on-demand reading of tensors the architecture marks: on, auto, off (llama-bench -lzm)",
        slot: Slot::Map,
    },
    Knob {
        name: "embeddings",
        flag: "embd",
        header: "embd",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "extract embeddings too (llama-bench -embd)",
        slot: Slot::Map,
    },
    Knob {
        name: "no_op_offload",
        flag: "nopo",
        header: "nopo",
        level: Level::Context,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Int,
        doc: "do not offload host tensor operations to the device (llama-bench -nopo)",
        slot: Slot::Map,
    },
    Knob {
        name: "no_host",
        flag: "no-host",
        header: "no-host",
        level: Level::Model,
        kind: Kind::Bool,
        default: Lit::Bool(false),
        field: FieldType::Bool,
        doc: "bypass the host buffer, allowing extra buffer types (llama-bench --no-host)",
        slot: Slot::Map,
    },
    Knob {
        name: "repack",
        flag: "repack",
        header: "repack",
        level: Level::Model,
        kind: Kind::Bool,
        default: Lit::Bool(true),
        field: FieldType::Bool,
        doc: "repack weights for the CPU's extra buffer types (llama-bench --repack)",
        slot: Slot::Map,
    },
    Knob {
        name: "fit_target",
        flag: "fitt",
        header: "fitt",
        level: Level::Model,
        kind: Kind::Int {
            min: 0,
            max: 1 << 30,
        },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "fit the model to device memory, leaving this many MiB free per device; 0 off \
              (llama-bench -fitt)",
        slot: Slot::Map,
    },
    Knob {
        name: "fit_min_ctx",
        flag: "fitc",
        header: "fitc",
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
        slot: Slot::Map,
    },
    Knob {
        name: "n_depth",
        flag: "d",
        header: "n_depth",
        level: Level::Test,
        kind: Kind::Int {
            min: 0,
            max: 1 << 20,
        },
        default: Lit::Int(0),
        field: FieldType::Int,
        doc: "tokens prefilled, untimed, before the test (llama-bench -d)",
        slot: field!(n_depth: int),
    },
    Knob {
        name: "n_prompt",
        flag: "p",
        header: "n_prompt",
        level: Level::Test,
        kind: Kind::Int {
            min: 0,
            max: 1 << 20,
        },
        default: Lit::Int(512),
        field: FieldType::Int,
        doc: "prompt tokens of a prefill test; 0 none (llama-bench -p)",
        slot: field!(n_prompt: int),
    },
    Knob {
        name: "n_gen",
        flag: "n",
        header: "n_gen",
        level: Level::Test,
        kind: Kind::Int {
            min: 0,
            max: 1 << 20,
        },
        default: Lit::Int(128),
        field: FieldType::Int,
        doc: "tokens of a decode test; 0 none (llama-bench -n)",
        slot: field!(n_gen: int),
    },
];

/// llama-bench's `-lm` values, in llama.cpp's `enum llama_load_mode` order after auto.
pub const LOAD_MODES: &[&str] = &["auto", "none", "mmap", "mlock", "mmap+mlock", "dio"];
/// llama-bench's `-lzm` values.
pub const LAZY_MODES: &[&str] = &["on", "auto", "off"];

/// The entry named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    PARAMS.iter().find(|k| k.name == name)
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

mod axes;
mod checks;
mod map;
mod test_params;

pub use axes::Axes;
use checks::{cpu_mask, devices, overrides, tensor_split};
pub use checks::{cpu_moe_patterns, override_pairs, pattern_matches};
pub use map::Knobs;
pub use test_params::TestParams;

#[cfg(test)]
mod tests;
