//! A parsed GGUF header: the metadata and tensor table the reader produces and the
//! validator checks. Its own file so that both can name it without importing each other.

use super::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
    /// Relative to the start of the data section.
    pub offset: u64,
    pub n_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    /// Absolute file offset of the data section.
    pub data_offset: u64,
    pub file_size: u64,
}

impl Header {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn architecture(&self) -> Option<&str> {
        self.get("general.architecture").and_then(Value::as_str)
    }

    /// The architecture-prefixed key `{arch}.{key}` as an integer.
    pub fn arch_u64(&self, key: &str) -> Option<u64> {
        let arch = self.architecture()?;
        self.get(&format!("{arch}.{key}")).and_then(Value::as_u64)
    }

    /// From `general.file_type`.
    pub fn file_type(&self) -> Option<&'static str> {
        self.get("general.file_type")
            .and_then(Value::as_u64)
            .and_then(super::file_type_name)
    }

    pub fn n_elements(&self) -> u64 {
        (self.tensors.iter())
            .map(|t| t.dims.iter().product::<u64>())
            .sum()
    }
}
