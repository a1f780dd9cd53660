//! The one llama.cpp model type: its load path, what llama.cpp reports about it, its
//! detokenizer, and the one constructor of its contexts.

use std::ffi::c_char;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Mutex;

use llama_cpp_sys_2 as sys;

use super::backend::{capture, ensure_init, take_first_error};
use super::context::Context;
use super::{c_string, c_text};
use crate::engine::placement::{self, Placement};
use crate::engine::{EngineError, LoadParams, ModelInfo};
use crate::plan::TestParams;

/// A model llama.cpp loaded: what every test, serving run and quality pass runs on.
pub struct LlamaModel {
    ptr: NonNull<sys::llama_model>,
    pub(super) info: ModelInfo,
    /// What llama.cpp logged while loading: where it put the layers and weights.
    load_log: String,
    /// The expert tensors (`blk.N.ffn_*_exps`) and their bytes, from the GGUF header: where
    /// the log says they went, these say how much.
    expert_tensors: Vec<(String, u64)>,
    /// The placement of the last timed session and its parameters.
    pub(super) placement: Mutex<Option<(TestParams, Option<Placement>)>>,
    /// The model-level parameters this build did not honour (see `knobs`).
    pub(super) notes: Vec<String>,
    fit: Option<placement::FitChoice>,
}

impl Drop for LlamaModel {
    fn drop(&mut self) {
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) };
    }
}

impl LlamaModel {
    /// The only path to `llama_model_load_from_file` (llama.cpp is started on first use).
    pub fn load(path: &Path, params: &LoadParams) -> Result<Self, EngineError> {
        Self::load_with(path, params, false)
    }

    /// Its tokenizer only (llama.cpp's `vocab_only`): no weights are read.
    pub fn load_vocab(path: &Path) -> Result<Self, EngineError> {
        Self::load_with(path, &LoadParams::default(), true)
    }

    fn load_with(path: &Path, params: &LoadParams, vocab_only: bool) -> Result<Self, EngineError> {
        // Some malformed files make llama.cpp abort the process rather than fail: every
        // path to llama.cpp goes through the validator first (see gguf::validate).
        let header =
            crate::gguf::reader::read_header(path).map_err(|source| EngineError::Header {
                path: path.to_path_buf(),
                source,
            })?;
        let expert_tensors: Vec<(String, u64)> = (header.tensors.iter())
            .filter(|t| placement::expert_layer(&t.name).is_some())
            .map(|t| (t.name.clone(), t.n_bytes))
            .collect();
        ensure_init()?;
        let c_path = c_string(&path.to_string_lossy(), "the model path")?;
        // `parts` owns what `mp` now points to: alive until the load returns.
        let (mut mp, parts) = model_params(params)?;
        mp.vocab_only = vocab_only;
        // llama-bench's -fitt/-fitc: fit replaces n_gpu_layers, the split and the overrides
        // (`fitted` owns what `mp` then points to).
        let (_fitted, fit) = (params.params.knobs.asks_fit())
            .then(|| {
                let weights = header.tensors.iter().map(|t| t.n_bytes).sum();
                let (target, min_ctx) = (parts.fit_target, parts.fit_min_ctx);
                let context = params.fit_context.as_deref();
                super::fit::fit(&c_path, &mut mp, target, min_ctx, context, weights)
            })
            .transpose()?
            .unzip();
        take_first_error();
        let (raw, load_log) =
            capture(|| unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), mp) });
        let ptr = NonNull::new(raw).ok_or_else(|| EngineError::Load {
            path: path.to_path_buf(),
            why: take_first_error(),
        })?;
        Ok(LlamaModel {
            ptr,
            info: unsafe { model_info(ptr.as_ptr()) },
            load_log: placement::relevant_lines(&load_log),
            expert_tensors,
            placement: Mutex::new(None),
            notes: parts.notes,
            fit,
        })
    }

    /// The only path to `llama_init_from_model`: a context made with `cp`, or why llama.cpp
    /// refused `what` (the context described); with where it put the model and this context.
    pub(super) fn new_context(
        &self,
        cp: sys::llama_context_params,
        what: &str,
    ) -> (Result<Context<'_>, EngineError>, Option<Placement>) {
        take_first_error();
        let (raw, ctx_log) =
            capture(|| unsafe { sys::llama_init_from_model(self.ptr.as_ptr(), cp) });
        let placement = placement::parse_with_experts(
            &format!("{}\n{ctx_log}", self.load_log),
            &self.expert_tensors,
        )
        .map(|p| placement::Placement {
            fit: self.fit.clone(),
            ..p
        });
        let ctx = NonNull::new(raw)
            .map(|ptr| Context::new(ptr, self))
            .ok_or_else(|| {
                let why = take_first_error()
                    .unwrap_or_else(|| "too large for memory or invalid parameters".into());
                EngineError::Context {
                    n_ctx: cp.n_ctx,
                    message: format!("llama.cpp could not create {what}: {why}"),
                }
            });
        (ctx, placement)
    }

    pub(super) fn set_placement(&self, p: &TestParams, placement: Option<Placement>) {
        if let Ok(mut slot) = self.placement.lock() {
            *slot = Some((p.clone(), placement));
        }
    }

    /// The llama.cpp model, for the speculative loop (`spec.rs`), which hands it to C++.
    pub(super) fn as_ptr(&self) -> *mut sys::llama_model {
        self.ptr.as_ptr()
    }

    pub(super) fn vocab(&self) -> *const sys::llama_vocab {
        unsafe { sys::llama_model_get_vocab(self.ptr.as_ptr()) }
    }

    pub fn n_vocab(&self) -> usize {
        self.info.n_vocab.max(0) as usize
    }

    pub fn bos(&self) -> Option<i32> {
        self.info.bos
    }

    /// The text of `tokens`, special tokens left out.
    pub fn detokenize(&self, tokens: &[i32]) -> Result<String, EngineError> {
        let vocab = self.vocab();
        let buf = sized(tokens.len() * 8 + 16, |buf: &mut [u8]| unsafe {
            sys::llama_detokenize(
                vocab,
                tokens.as_ptr(),
                tokens.len() as i32,
                buf.as_mut_ptr() as *mut c_char,
                buf.len() as i32,
                true,
                false,
            )
        });
        let buf = buf.ok_or_else(|| EngineError::Other("detokenization failed".into()))?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// llama.cpp's sizing convention: `fill` writes into the buffer and returns how much it
/// wrote, or minus the size it needs (then one retry at that size).
pub(super) fn sized<T: Copy + Default>(
    cap: usize,
    mut fill: impl FnMut(&mut [T]) -> i32,
) -> Option<Vec<T>> {
    let mut buf = vec![T::default(); cap];
    for _ in 0..2 {
        let n = fill(&mut buf);
        if n >= 0 {
            buf.truncate(n as usize);
            return Some(buf);
        }
        if n == i32::MIN {
            return None;
        }
        buf.resize(n.unsigned_abs() as usize, T::default());
    }
    None
}

/// The model parameters of a load, and what they point to (keep it until the load returns).
pub(super) fn model_params(
    params: &LoadParams,
) -> Result<(sys::llama_model_params, Box<super::knobs::ModelParts>), EngineError> {
    let mut mp = unsafe { sys::llama_model_default_params() };
    let parts = super::knobs::apply_model(&mut mp, &params.params)?;
    mp.load_mtp = params.load_mtp;
    Ok((mp, parts))
}

unsafe fn model_info(m: *const sys::llama_model) -> ModelInfo {
    unsafe {
        let mut buf = [0 as c_char; 256];
        sys::llama_model_desc(m, buf.as_mut_ptr(), buf.len());
        let description = c_text(buf.as_ptr());
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
