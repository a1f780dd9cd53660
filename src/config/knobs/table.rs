//! The table itself: every llama-bench test parameter once ([`PARAMS`]), with the value
//! lists two of them take and the accessors `field!` generates for the typed ones. What an
//! entry is and what can be asked of it are in the parent module.

use super::*;
use Level::{Context, Model, Test};

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
        pub fn check(x: &toml::Value) -> Result<KnobValue, crate::config::Invalid> {
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
        pub fn check(x: &toml::Value) -> Result<KnobValue, crate::config::Invalid> {
            crate::config::values::flash_attn(x).map(|f| to(&f))
        }
    }
    pub fn kv_type(x: &toml::Value) -> Result<super::KnobValue, crate::config::Invalid> {
        crate::config::values::kv_type(x).map(super::KnobValue::Text)
    }
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
        let (header, doc, slot) = (flag, "", Slot::Map);
        Knob {
            name,
            flag,
            header,
            level,
            kind,
            default,
            field,
            doc,
            slot,
        }
    }

    const fn int(id: Id, min: i64, max: i64, default: i64) -> Knob {
        Knob::row(id, Kind::Int { min, max }, Lit::Int(default))
    }

    const fn boolean(id: Id, default: bool) -> Knob {
        Knob::row(id, Kind::Bool, Lit::Bool(default))
    }

    const fn text(
        id: Id,
        check: fn(&str) -> Result<String, Invalid>,
        default: &'static str,
    ) -> Knob {
        Knob::row(id, Kind::Text(check), Lit::Str(default))
    }

    const fn choice(id: Id, words: &'static [&'static str], default: &'static str) -> Knob {
        Knob::row(id, Kind::Choice(words), Lit::Str(default))
    }

    const fn checked(
        id: Id,
        check: fn(&toml::Value) -> Result<KnobValue, Invalid>,
        default: Lit,
    ) -> Knob {
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

    const fn doc(mut self, doc: &'static str) -> Knob {
        self.doc = doc;
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
    Knob::int(("n_gpu_layers", "ngl", Model), -1, 10_000, 99)
        .doc("layers offloaded to the GPU; -1 all (llama-bench -ngl)")
        .typed(field!(n_gpu_layers: int)),
    Knob::checked(
        ("split_mode", "sm", Model),
        conv::split_mode::check,
        Lit::Str("layer"),
    )
    .doc("how the model spreads over several GPUs: none, layer, row, tensor (llama-bench -sm)")
    .typed(field!(split_mode: split_mode, split_mode)),
    Knob::int(("main_gpu", "mg", Model), 0, 255, 0)
        .doc("the GPU used with split_mode none (llama-bench -mg)")
        .typed(field!(main_gpu: int)),
    Knob::int(("n_batch", "b", Context), 1, 1 << 20, 2048)
        .header("n_batch")
        .doc("logical batch size (llama-bench -b)")
        .typed(field!(n_batch: int)),
    Knob::int(("n_ubatch", "ub", Context), 1, 1 << 20, 512)
        .header("n_ubatch")
        .doc("physical batch size (llama-bench -ub)")
        .typed(field!(n_ubatch: int)),
    Knob::checked(("type_k", "ctk", Context), conv::kv_type, Lit::Str("f16"))
        .header("type_k")
        .doc("KV cache type of K (llama-bench -ctk)")
        .typed(field!(type_k: text)),
    Knob::checked(("type_v", "ctv", Context), conv::kv_type, Lit::Str("f16"))
        .header("type_v")
        .doc("KV cache type of V (llama-bench -ctv)")
        .typed(field!(type_v: text)),
    Knob::boolean(("no_kv_offload", "nkvo", Context), false)
        .doc("keep the KV cache (and the attention ops) in host memory (llama-bench -nkvo)")
        .typed(field!(no_kv_offload: boolean)),
    Knob::checked(
        ("flash_attn", "fa", Context),
        conv::flash_attn::check,
        Lit::Int(-1),
    )
    .doc("flash attention: auto (-1), off (0), on (1) (llama-bench -fa)")
    .typed(field!(flash_attn: int, flash_attn)),
    // llama-bench's default is the machine's physical core count, known at run time
    // (`Axes::llama_bench_defaults`); 0 stands for it here.
    Knob::int(("n_threads", "t", Context), 1, 4096, 0)
        .header("threads")
        .doc("CPU threads (llama-bench -t); default: the physical cores")
        .typed(field!(n_threads: int)),
    Knob::text(("cpu_mask", "C", Context), cpu_mask, "0x0")
        .doc("CPU affinity mask of the thread pool, hex (llama-bench -C)"),
    Knob::boolean(("cpu_strict", "cpu-strict", Context), false)
        .doc("strict CPU placement of the thread pool (llama-bench --cpu-strict)"),
    Knob::int(("poll", "poll", Context), 0, 100, 50)
        .doc("thread pool polling level, 0-100 (llama-bench --poll)"),
    Knob::int(("n_cpu_moe", "ncmoe", Model), 0, 100_000, 0)
        .doc("keep the expert tensors of the first N layers on the CPU (llama-bench -ncmoe)"),
    Knob::text(("devices", "dev", Model), devices, "auto").doc(
        "devices to offload to, e.g. \"Vulkan0/CPU\", \"none\" or \"auto\" (llama-bench -dev)",
    ),
    Knob::text(("tensor_split", "ts", Model), tensor_split, "0.00")
        .doc("share of the model per GPU, e.g. \"3/1\" (llama-bench -ts)"),
    Knob::text(("tensor_buft_overrides", "ot", Model), overrides, "none")
        .doc("buffer type per tensor-name pattern, \"pattern=buffer;...\" (llama-bench -ot)"),
    Knob::choice(("load_mode", "lm", Model), LOAD_MODES, "auto")
        .doc("how the file is loaded: auto, none, mmap, mlock, mmap+mlock, dio (llama-bench -lm)"),
    Knob::choice(("lazy_mode", "lzm", Model), LAZY_MODES, "auto").doc(
        "on-demand reading of tensors the architecture marks: on, auto, off (llama-bench -lzm)",
    ),
    Knob::boolean(("embeddings", "embd", Context), false)
        .doc("extract embeddings too (llama-bench -embd)"),
    Knob::boolean(("no_op_offload", "nopo", Context), false)
        .json(FieldType::Int)
        .doc("do not offload host tensor operations to the device (llama-bench -nopo)"),
    Knob::boolean(("no_host", "no-host", Model), false)
        .doc("bypass the host buffer, allowing extra buffer types (llama-bench --no-host)"),
    Knob::boolean(("repack", "repack", Model), true)
        .doc("repack weights for the CPU's extra buffer types (llama-bench --repack)"),
    Knob::int(("fit_target", "fitt", Model), 0, 1 << 30, 0).doc(
        "fit the model to device memory, leaving this many MiB free per device; 0 off \
                 (llama-bench -fitt)",
    ),
    // llama-bench's default is 0 (`cmd_params_defaults`), though its --help says 4096:
    // the field it writes, and whether it fits, follow the 0.
    Knob::int(("fit_min_ctx", "fitc", Model), 0, 1 << 24, 0).doc(
        "smallest context fit may choose; set alone, fit runs with a margin of 0 \
                 (llama-bench -fitc)",
    ),
    Knob::int(("n_depth", "d", Test), 0, 1 << 20, 0)
        .header("n_depth")
        .doc("tokens prefilled, untimed, before the test (llama-bench -d)")
        .typed(field!(n_depth: int)),
    Knob::int(("n_prompt", "p", Test), 0, 1 << 20, 512)
        .header("n_prompt")
        .doc("prompt tokens of a prefill test; 0 none (llama-bench -p)")
        .typed(field!(n_prompt: int)),
    Knob::int(("n_gen", "n", Test), 0, 1 << 20, 128)
        .header("n_gen")
        .doc("tokens of a decode test; 0 none (llama-bench -n)")
        .typed(field!(n_gen: int)),
];

/// llama-bench's `-lm` values, in llama.cpp's `enum llama_load_mode` order after auto.
const LOAD_MODES: &[&str] = &["auto", "none", "mmap", "mlock", "mmap+mlock", "dio"];
/// llama-bench's `-lzm` values.
const LAZY_MODES: &[&str] = &["on", "auto", "off"];
