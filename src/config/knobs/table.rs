//! The table itself: every llama-bench test parameter once ([`PARAMS`]), with the value
//! lists two of them take and the accessors `field!` generates for the typed ones. What an
//! entry is and what can be asked of it are in the parent module.

use super::*;

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
        kind: Kind::int(-1, 10_000),
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
        kind: Kind::int(0, 255),
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
        kind: Kind::int(1, 1 << 20),
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
        kind: Kind::int(1, 1 << 20),
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
        kind: Kind::int(1, 4096),
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
        kind: Kind::int(0, 100),
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
        kind: Kind::int(0, 100_000),
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
        kind: Kind::int(0, 1 << 30),
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
        kind: Kind::int(0, 1 << 24),
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
        kind: Kind::int(0, 1 << 20),
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
        kind: Kind::int(0, 1 << 20),
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
        kind: Kind::int(0, 1 << 20),
        default: Lit::Int(128),
        field: FieldType::Int,
        doc: "tokens of a decode test; 0 none (llama-bench -n)",
        slot: field!(n_gen: int),
    },
];

/// llama-bench's `-lm` values, in llama.cpp's `enum llama_load_mode` order after auto.
const LOAD_MODES: &[&str] = &["auto", "none", "mmap", "mlock", "mmap+mlock", "dio"];
/// llama-bench's `-lzm` values.
const LAZY_MODES: &[&str] = &["on", "auto", "off"];
