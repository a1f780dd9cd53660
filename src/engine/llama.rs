//! The real engine: llama.cpp through `llama-cpp-2` / `llama-cpp-sys-2`. This is the only
//! module that touches llama.cpp.
//!
//! The hot path calls `llama-cpp-sys-2` directly: llama-bench attaches its own ggml
//! threadpool (poll = 50) to each context and clears memory with `llama_memory_clear`, and
//! the safe crate exposes neither, so matching llama-bench's figures needs the raw calls.
//! `llama-cpp-2` is used for what it wraps safely (backend start-up, the device list).

use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Mutex;
use std::time::Instant;

use llama_cpp_sys_2 as sys;

use super::{Engine, LoadParams, Model, ModelInfo, Session};
use crate::plan::TestParams;

use super::llama_backend::{capture, take_first_error};
pub use super::llama_backend::{
    cpu_features, cpu_features_on, devices, ensure_init, init, system_info,
};

/// The real engine; create it after [`init`].
pub struct LlamaEngine {
    epoch: Instant,
}

impl LlamaEngine {
    pub fn new(verbose: bool) -> Result<Self, String> {
        init(verbose)?;
        Ok(LlamaEngine {
            epoch: Instant::now(),
        })
    }
}

pub(super) struct LlamaModel {
    pub(super) ptr: NonNull<sys::llama_model>,
    pub(super) info: ModelInfo,
    /// What llama.cpp logged while loading: where it put the layers and weights.
    load_log: String,
    /// The placement of the last session and its parameters: load log plus context log.
    placement: Mutex<Option<(TestParams, Option<crate::engine::placement::Placement>)>>,
}

impl LlamaModel {
    /// A context for `cp`, or why llama.cpp refused it; with where llama.cpp put the model
    /// and this context (its load log plus the context's log), when it said.
    pub(super) fn new_context(
        &self,
        cp: sys::llama_context_params,
    ) -> (
        Result<NonNull<sys::llama_context>, String>,
        Option<crate::engine::placement::Placement>,
    ) {
        take_first_error();
        let (raw, ctx_log) =
            capture(|| unsafe { sys::llama_init_from_model(self.ptr.as_ptr(), cp) });
        let placement = crate::engine::placement::parse(&format!("{}\n{ctx_log}", self.load_log));
        let ctx = NonNull::new(raw).ok_or_else(|| {
            take_first_error()
                .unwrap_or_else(|| "too large for memory or invalid parameters".into())
        });
        (ctx, placement)
    }
}

impl Drop for LlamaModel {
    fn drop(&mut self) {
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) };
    }
}

struct LlamaSession<'m> {
    ctx: NonNull<sys::llama_context>,
    threadpool: NonNull<sys::ggml_threadpool>,
    _model: &'m LlamaModel,
}

impl Drop for LlamaSession<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::llama_free(self.ctx.as_ptr());
            sys::ggml_threadpool_free(self.threadpool.as_ptr());
        }
    }
}

impl Engine for LlamaEngine {
    fn load(&self, path: &Path, params: &LoadParams) -> Result<Box<dyn Model + '_>, String> {
        // Some malformed files make llama.cpp abort the process rather than fail: every
        // path to llama.cpp goes through the validator first (see gguf::validate).
        crate::gguf::reader::read_header(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| "the model path contains a NUL byte".to_string())?;
        let mut mp = unsafe { sys::llama_model_default_params() };
        mp.n_gpu_layers = params.n_gpu_layers;
        mp.split_mode = params.split_mode.as_llama() as sys::llama_split_mode;
        mp.main_gpu = params.main_gpu;
        take_first_error();
        let (raw, load_log) =
            capture(|| unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), mp) });
        let ptr = NonNull::new(raw).ok_or_else(|| match take_first_error() {
            Some(why) => format!("llama.cpp could not load {}: {why}", path.display()),
            None => format!(
                "llama.cpp could not load {} (run with --verbose for its log)",
                path.display()
            ),
        })?;
        let info = unsafe { model_info(ptr.as_ptr()) };
        Ok(Box::new(LlamaModel {
            ptr,
            info,
            load_log: crate::engine::placement::relevant_lines(&load_log),
            placement: Mutex::new(None),
        }))
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

unsafe fn model_info(m: *const sys::llama_model) -> ModelInfo {
    unsafe {
        let mut buf = [0 as c_char; 256];
        sys::llama_model_desc(m, buf.as_mut_ptr(), buf.len());
        let description = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
        let vocab = sys::llama_model_get_vocab(m);
        let bos = sys::llama_vocab_get_add_bos(vocab).then(|| sys::llama_vocab_bos(vocab));
        ModelInfo {
            description,
            size: sys::llama_model_size(m),
            n_params: sys::llama_model_n_params(m),
            n_vocab: sys::llama_vocab_n_tokens(vocab),
            bos,
            n_ctx_train: sys::llama_model_n_ctx_train(m).max(0) as u32,
        }
    }
}

/// KV-cache type names to ggml types.
pub(super) fn ggml_type(name: &str) -> Result<sys::ggml_type, String> {
    Ok(match name {
        "f32" => sys::GGML_TYPE_F32,
        "f16" => sys::GGML_TYPE_F16,
        "bf16" => sys::GGML_TYPE_BF16,
        "q8_0" => sys::GGML_TYPE_Q8_0,
        "q4_0" => sys::GGML_TYPE_Q4_0,
        "q4_1" => sys::GGML_TYPE_Q4_1,
        "iq4_nl" => sys::GGML_TYPE_IQ4_NL,
        "q5_0" => sys::GGML_TYPE_Q5_0,
        "q5_1" => sys::GGML_TYPE_Q5_1,
        other => return Err(format!("unknown KV cache type {other:?}")),
    })
}

impl Model for LlamaModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn serving(&self) -> Option<&dyn super::ServingModel> {
        Some(self)
    }

    fn placement(&self, params: &TestParams) -> Option<crate::engine::placement::Placement> {
        match &*self.placement.lock().ok()? {
            Some((p, placement)) if p == params => placement.clone(),
            _ => None,
        }
    }

    fn session(&self, p: &TestParams) -> Result<Box<dyn Session + '_>, String> {
        // llama-bench's to_llama_cparams(), field for field.
        let mut cp = unsafe { sys::llama_context_default_params() };
        cp.n_ctx = p.n_ctx();
        cp.n_batch = p.n_batch;
        cp.n_ubatch = p.n_ubatch;
        cp.type_k = ggml_type(&p.type_k)?;
        cp.type_v = ggml_type(&p.type_v)?;
        cp.offload_kqv = !p.no_kv_offload;
        cp.flash_attn_type = p.flash_attn;
        cp.embeddings = false;
        cp.op_offload = true;
        cp.swa_full = false;
        cp.n_threads = p.n_threads as i32;
        cp.n_threads_batch = p.n_threads as i32;
        let (ctx, placement) = self.new_context(cp);
        if let Ok(mut slot) = self.placement.lock() {
            *slot = Some((p.clone(), placement));
        }
        let ctx = ctx.map_err(|why| {
            format!(
                "llama.cpp could not create a context of {} tokens (n_batch {}, n_ubatch {}): {why}",
                p.n_ctx(),
                p.n_batch,
                p.n_ubatch
            )
        })?;
        // llama-bench's threadpool: default params for n_threads, poll 50, not strict.
        let mut tpp = unsafe { sys::ggml_threadpool_params_default(p.n_threads as i32) };
        tpp.poll = 50;
        tpp.strict_cpu = false;
        let Some(threadpool) = NonNull::new(unsafe { sys::ggml_threadpool_new(&mut tpp) }) else {
            unsafe { sys::llama_free(ctx.as_ptr()) };
            return Err(format!(
                "could not create a threadpool of {} threads",
                p.n_threads
            ));
        };
        unsafe {
            sys::llama_attach_threadpool(ctx.as_ptr(), threadpool.as_ptr(), std::ptr::null_mut());
            sys::llama_set_n_threads(ctx.as_ptr(), p.n_threads as i32, p.n_threads as i32);
        }
        Ok(Box::new(LlamaSession {
            ctx,
            threadpool,
            _model: self,
        }))
    }
}

impl LlamaSession<'_> {
    fn decode(&mut self, tokens: &[i32]) -> Result<(), String> {
        // llama_batch_get_one takes a mutable pointer but llama_decode only reads the tokens,
        // so the caller's slice is passed as is: no copy inside the timed region.
        let ptr = tokens.as_ptr().cast_mut();
        let batch = unsafe { sys::llama_batch_get_one(ptr, tokens.len() as i32) };
        match unsafe { sys::llama_decode(self.ctx.as_ptr(), batch) } {
            0 => Ok(()),
            1 => Err("llama_decode: no KV cache slot for the batch (context full)".into()),
            2 => Err("llama_decode: aborted".into()),
            -1 => Err("llama_decode: invalid batch".into()),
            r => Err(format!("llama_decode failed with code {r}")),
        }
    }
}

impl Session for LlamaSession<'_> {
    fn clear(&mut self) {
        unsafe { sys::llama_memory_clear(sys::llama_get_memory(self.ctx.as_ptr()), false) };
    }

    fn decode_chunks(&mut self, tokens: &[i32], n_batch: usize) -> Result<(), String> {
        for chunk in tokens.chunks(n_batch.max(1)) {
            self.decode(chunk)?;
        }
        Ok(())
    }

    fn decode_one(&mut self, token: i32) -> Result<(), String> {
        self.decode(&[token])
    }

    fn synchronize(&mut self) {
        unsafe { sys::llama_synchronize(self.ctx.as_ptr()) };
    }

    fn save_state(&mut self) -> Vec<u8> {
        let ctx = self.ctx.as_ptr();
        let n = unsafe { sys::llama_state_seq_get_size(ctx, 0) };
        let mut buf = vec![0u8; n];
        let written = unsafe { sys::llama_state_seq_get_data(ctx, buf.as_mut_ptr(), n, 0) };
        buf.truncate(written);
        buf
    }

    fn restore_state(&mut self, state: &[u8]) -> bool {
        let ctx = self.ctx.as_ptr();
        unsafe { sys::llama_state_seq_set_data(ctx, state.as_ptr(), state.len(), 0) != 0 }
    }
}
