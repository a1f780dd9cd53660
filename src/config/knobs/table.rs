//! The table itself: every llama-bench test parameter once ([`PARAMS`]), with the value
//! lists two of them take and the accessors `field!` generates for the typed ones. What an
//! entry is and what can be asked of it are in the parent module.

use super::*;
use crate::config::{FlashAttn, SplitMode};
use Level::{Context, Model, Test};

/// `field!(name)`: the accessors of the typed field `name` of [`TestParams`], [`Axes`] and
/// the parsed sweep table, converting with the fields' [`Conv`].
macro_rules! field {
    ($f:ident) => {
        Slot::Field(Field {
            get: |p| p.$f.to(),
            set: |p, v| p.$f = Conv::of(v),
            axis: |a| a.$f.iter().map(Conv::to).collect(),
            set_axis: |a, vs| a.$f = vs.iter().map(Conv::of).collect(),
            raw: |s| s.$f.as_ref(),
        })
    };
}

/// Conversions between a typed field's values and [`KnobValue`].
trait Conv {
    fn to(&self) -> KnobValue;
    fn of(v: &KnobValue) -> Self;
}

/// `conv!(Type, |x| to, |v| of)`: Type's [`Conv`]; `conv!(int T, U)`: integer types'.
macro_rules! conv {
    (int $($t:ty),*) => {
        $(conv!($t, |x| KnobValue::Int((*x).into()), |v| v.as_i64().try_into().unwrap_or_default());)*
    };
    ($t:ty, |$x:ident| $to:expr, |$v:ident| $of:expr) => {
        impl Conv for $t {
            fn to(&self) -> KnobValue {
                let $x = self;
                $to
            }
            fn of($v: &KnobValue) -> Self {
                $of
            }
        }
    };
}

conv!(int u32, i32);
conv!(String, |x| KnobValue::Text(x.clone()), |v| v.show());
conv!(bool, |x| KnobValue::Bool(*x), |v| v.as_bool());
conv!(SplitMode, |x| KnobValue::Text(x.as_str().into()), |v| {
    SplitMode::parse(v.as_str()).unwrap_or_default()
});
conv!(FlashAttn, |x| KnobValue::Int(x.as_i32().into()), |v| {
    FlashAttn::from_i32(v.as_i64())
});

fn split_mode(x: &toml::Value) -> Result<KnobValue, Invalid> {
    crate::config::values::split_mode(x).map(|m| m.to())
}

fn flash_attn(x: &toml::Value) -> Result<KnobValue, Invalid> {
    crate::config::values::flash_attn(x).map(|f| f.to())
}

fn kv_type(x: &toml::Value) -> Result<KnobValue, Invalid> {
    crate::config::values::kv_type(x).map(KnobValue::Text)
}

/// A row's name (llama-bench's field), flag and level.
type Id = (&'static str, &'static str, Level);

/// The rows' constructors, by kind; a row is held in the map, its column header is its flag
/// and its JSON type its default's unless `header`, `json` or `typed` say otherwise.
impl Knob {
    const fn row((name, flag, level): Id, kind: Kind, default: Lit) -> Knob {
        let field = match default {
            Lit::Int(_) => FieldType::Int,
            Lit::Bool(_) => FieldType::Bool,
            Lit::Str(_) => FieldType::Str,
        };
        Knob {
            name,
            flag,
            header: flag,
            level,
            kind,
            default,
            field,
            slot: Slot::Map,
        }
    }

    const fn int(id: Id, min: i64, max: i64, default: i64) -> Knob {
        Knob::row(id, Kind::Int { min, max }, Lit::Int(default))
    }

    const fn boolean(id: Id, default: bool) -> Knob {
        Knob::row(id, Kind::Bool, Lit::Bool(default))
    }

    const fn text(id: Id, check: TextCheck, default: &'static str) -> Knob {
        Knob::row(id, Kind::Text(check), Lit::Str(default))
    }

    const fn choice(id: Id, words: &'static [&'static str], default: &'static str) -> Knob {
        Knob::row(id, Kind::Choice(words), Lit::Str(default))
    }

    const fn checked(id: Id, check: ValueCheck, default: Lit) -> Knob {
        Knob::row(id, Kind::Check(check), default)
    }

    const fn header(mut self, header: &'static str) -> Knob {
        self.header = header;
        self
    }

    const fn json(mut self, field: FieldType) -> Knob {
        self.field = field;
        self
    }

    /// Typed, with its name for header.
    const fn named(mut self, slot: Slot) -> Knob {
        self.header = self.name;
        self.slot = slot;
        self
    }

    const fn typed(mut self, slot: Slot) -> Knob {
        self.slot = slot;
        self
    }
}

/// The table: every test parameter once, in tpsbench's loop order, which is also the order
/// of the `/flag=value` parts of test ids. Plan expansion crosses the model-level entries
/// first, then the context-level ones, so a model is loaded once per model-level setting.
pub const PARAMS: &[Knob] = &[
    Knob::int(("n_gpu_layers", "ngl", Model), -1, 10_000, 99).typed(field!(n_gpu_layers)),
    Knob::checked(("split_mode", "sm", Model), split_mode, Lit::Str("layer"))
        .typed(field!(split_mode)),
    Knob::int(("main_gpu", "mg", Model), 0, 255, 0).typed(field!(main_gpu)),
    Knob::int(("n_batch", "b", Context), 1, 1 << 20, 2048).named(field!(n_batch)),
    Knob::int(("n_ubatch", "ub", Context), 1, 1 << 20, 512).named(field!(n_ubatch)),
    Knob::checked(("type_k", "ctk", Context), kv_type, Lit::Str("f16")).named(field!(type_k)),
    Knob::checked(("type_v", "ctv", Context), kv_type, Lit::Str("f16")).named(field!(type_v)),
    Knob::boolean(("no_kv_offload", "nkvo", Context), false).typed(field!(no_kv_offload)),
    Knob::checked(("flash_attn", "fa", Context), flash_attn, Lit::Int(-1))
        .typed(field!(flash_attn)),
    // llama-bench's default is the machine's physical core count, known at run time
    // (`Axes::llama_bench_defaults`); 0 stands for it here.
    Knob::int(("n_threads", "t", Context), 1, 4096, 0)
        .header("threads")
        .typed(field!(n_threads)),
    Knob::text(("cpu_mask", "C", Context), cpu_mask, "0x0"),
    Knob::boolean(("cpu_strict", "cpu-strict", Context), false),
    Knob::int(("poll", "poll", Context), 0, 100, 50),
    Knob::int(("n_cpu_moe", "ncmoe", Model), 0, 100_000, 0),
    Knob::text(("devices", "dev", Model), devices, "auto"),
    Knob::text(("tensor_split", "ts", Model), tensor_split, "0.00"),
    Knob::text(("tensor_buft_overrides", "ot", Model), overrides, "none"),
    Knob::choice(("load_mode", "lm", Model), LOAD_MODES, "auto"),
    Knob::choice(("lazy_mode", "lzm", Model), LAZY_MODES, "auto"),
    Knob::boolean(("embeddings", "embd", Context), false),
    Knob::boolean(("no_op_offload", "nopo", Context), false).json(FieldType::Int),
    Knob::boolean(("no_host", "no-host", Model), false),
    Knob::boolean(("repack", "repack", Model), true),
    Knob::int(("fit_target", "fitt", Model), 0, 1 << 30, 0),
    // llama-bench's default is 0 (`cmd_params_defaults`), though its --help says 4096:
    // the field it writes, and whether it fits, follow the 0.
    Knob::int(("fit_min_ctx", "fitc", Model), 0, 1 << 24, 0),
    Knob::int(("n_depth", "d", Test), 0, 1 << 20, 0).named(field!(n_depth)),
    Knob::int(("n_prompt", "p", Test), 0, 1 << 20, 512).named(field!(n_prompt)),
    Knob::int(("n_gen", "n", Test), 0, 1 << 20, 128).named(field!(n_gen)),
];

/// llama-bench's `-lm` values, in llama.cpp's `enum llama_load_mode` order after auto.
const LOAD_MODES: &[&str] = &["auto", "none", "mmap", "mlock", "mmap+mlock", "dio"];
/// llama-bench's `-lzm` values.
const LAZY_MODES: &[&str] = &["on", "auto", "off"];
