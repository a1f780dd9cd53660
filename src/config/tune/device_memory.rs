//! `[tune] max_device_memory_gib`: one number for every offload device, or a table per
//! device by llama.cpp's names (`{ CUDA0 = 70 }`). A device without a limit is held to what
//! llama.cpp reports for it less `memory_margin`.

use toml::Spanned;

use crate::config::values::scalar_float;
use crate::config::{ConfigError, Ctx};
use crate::util::units::GIB;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum DeviceMemory {
    /// Each device's memory as llama.cpp reports it, less `memory_margin`.
    #[default]
    Reported,
    /// Every offload device: at most these bytes.
    Every(u64),
    /// The devices named: at most these bytes each; the others as `Reported`.
    Each(Vec<(String, u64)>),
}

impl DeviceMemory {
    /// The limit given for `device` in bytes; None: none given (the reported memory applies).
    pub fn given(&self, device: &str) -> Option<u64> {
        match self {
            DeviceMemory::Reported => None,
            DeviceMemory::Every(b) => Some(*b),
            DeviceMemory::Each(v) => v.iter().find(|(n, _)| n == device).map(|(_, b)| *b),
        }
    }

    pub fn named(&self) -> Vec<&str> {
        match self {
            DeviceMemory::Each(v) => v.iter().map(|(n, _)| n.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

const KEY: &str = "tune.max_device_memory_gib";
const MIN: f64 = 1e-6;
const MAX: f64 = 1e6;

/// Parses the key's value: a number of GiB, or a table of device names to GiB.
pub(super) fn parse(ctx: &Ctx, v: &Spanned<toml::Value>) -> Result<DeviceMemory, ConfigError> {
    let bytes =
        |key: &str, v: &Spanned<_>| scalar_float(ctx, key, v, MIN, MAX).map(|g| (g * GIB) as u64);
    let toml::Value::Table(t) = v.get_ref() else {
        return Ok(DeviceMemory::Every(bytes(KEY, v)?));
    };
    if t.is_empty() {
        let msg = "the table names no device: give GiB per device, e.g. { CUDA0 = 70 }, or one number for every device";
        return Err(ctx.err(v.span(), KEY, msg));
    }
    let mut out = Vec::new();
    for (name, x) in t {
        let key = format!("{KEY}.{name}");
        if name == "CPU" {
            let msg = "the CPU's memory is the host's: limit it with max_memory_gib (max_device_memory_gib limits the offload devices)";
            return Err(ctx.err(v.span(), &key, msg));
        }
        // The entry's own span is not kept by the table: the error points at the table.
        let entry = Spanned::new(v.span(), x.clone());
        out.push((name.clone(), bytes(&key, &entry)?));
    }
    Ok(DeviceMemory::Each(out))
}
