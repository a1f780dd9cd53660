//! GGUF in pure Rust: a bounds-checked header reader (model metadata without llama.cpp) and a
//! writer (the synthetic tiny model that tests and smoke runs use instead of a download).

/// GGUF keys `tpsbench synth` writes into a synthetic model (llama.cpp's quantizer copies
/// them into every variant).
pub const KEY_SYNTHETIC: &str = "tpsbench.synthetic";
pub const KEY_PRESET: &str = "tpsbench.preset";

pub(crate) mod blocks;
pub(crate) mod error;
pub(crate) mod header;
pub mod presets;
pub mod reader;
pub mod tiny;
pub mod validate;
pub(crate) mod vocab;
pub mod writer;

pub use error::GgufError;

/// GGUF metadata value types (the numbering is the file format's).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    /// The GGUF name of the value's type, for error messages ("uint32", "array of string").
    pub fn type_name(&self) -> String {
        const NAMES: [&str; 13] = [
            "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
            "array", "uint64", "int64", "float64",
        ];
        match self {
            Value::Array(items) => items.first().map_or("empty array".into(), |x| {
                format!("array of {}", x.type_name())
            }),
            v => NAMES[v.type_id() as usize].into(),
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(x) => Some(x.into()),
            Value::U16(x) => Some(x.into()),
            Value::U32(x) => Some(x.into()),
            Value::U64(x) => Some(x),
            Value::I8(x) => u64::try_from(x).ok(),
            Value::I16(x) => u64::try_from(x).ok(),
            Value::I32(x) => u64::try_from(x).ok(),
            Value::I64(x) => u64::try_from(x).ok(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

pub(crate) const MAGIC: &[u8; 4] = b"GGUF";
pub(crate) const DEFAULT_ALIGNMENT: u64 = 32;

/// ggml tensor types this crate knows: (id, name, block size in elements, bytes per block).
pub const GGML_TYPES: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 36),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
    (40, "NVFP4", 64, 36),
    (41, "Q1_0", 128, 18),
    (42, "Q2_0", 64, 18),
];

/// Block size and bytes per block of a ggml type id, if known.
pub(crate) fn type_layout(id: u32) -> Option<(&'static str, u64, u64)> {
    let &(_, name, block, bytes) = GGML_TYPES.iter().find(|t| t.0 == id)?;
    Some((name, block, bytes))
}

/// llama.cpp's `general.file_type` (enum llama_ftype) as the usual quantization label: the
/// labels in the enum's order, `-` for the values it no longer uses.
const FILE_TYPES: &str = "F32 F16 Q4_0 Q4_1 - - - Q8_0 Q5_0 Q5_1 Q2_K Q3_K_S Q3_K_M Q3_K_L \
    Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ2_XXS IQ2_XS Q2_K_S IQ3_XS IQ3_XXS IQ1_S IQ4_NL IQ3_S \
    IQ3_M IQ2_S IQ2_M IQ4_XS IQ1_M BF16 - - - TQ1_0 TQ2_0 MXFP4_MOE NVFP4 Q1_0 Q2_0";

pub(crate) fn file_type_name(ftype: u64) -> Option<&'static str> {
    let index = usize::try_from(ftype).ok()?;
    let name = FILE_TYPES.split_whitespace().nth(index)?;
    (name != "-").then_some(name)
}
