//! The real engine: llama.cpp through `llama-cpp-2` / `llama-cpp-sys-2`. This is the only
//! module that touches llama.cpp (with `quantize`, which calls its quantizer).
//!
//! One model type, [`LlamaModel`], with one load path and one context constructor; its
//! contexts (`session`, `batch`, `logits`, `spec`) differ only in the parameters, each
//! matching the llama.cpp tool its figures are compared with.
//!
//! The hot paths call `llama-cpp-sys-2` directly: llama-bench attaches its own ggml
//! threadpool (poll = 50) to each context and clears memory with `llama_memory_clear`, and
//! the safe crate exposes neither, so matching llama-bench's figures needs the raw calls.
//! `llama-cpp-2` is used for what it wraps safely (backend start-up, the device list).

mod backend;
mod batch;
mod context;
mod fit;
pub(crate) mod knobs;
mod logits;
mod model;
mod model_trait;
pub(crate) mod progress;
mod session;
mod spec;

use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::time::Instant;

use super::{Engine, EngineError, LoadParams, Model};

pub use backend::{cpu_features, devices, ensure_init, init, system_info};
pub use logits::EvalContext;
pub use model::LlamaModel;

/// `s` for C; a NUL byte in it is a parameter error naming `what`.
pub(crate) fn c_string(s: &str, what: &str) -> Result<CString, EngineError> {
    CString::new(s).map_err(|_| EngineError::Other(format!("{what} contains a NUL byte")))
}

/// The text of a C string llama.cpp handed out (`p` live and NUL-terminated).
pub(crate) unsafe fn c_text(p: *const c_char) -> String {
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The real engine; create it after [`init`].
pub struct LlamaEngine {
    epoch: Instant,
}

impl LlamaEngine {
    pub fn new(verbose: bool) -> Result<Self, EngineError> {
        init(verbose)?;
        Ok(LlamaEngine {
            epoch: Instant::now(),
        })
    }
}

impl Engine for LlamaEngine {
    fn load(&self, path: &Path, params: &LoadParams) -> Result<Box<dyn Model + '_>, EngineError> {
        Ok(Box::new(LlamaModel::load(path, params)?))
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests;
