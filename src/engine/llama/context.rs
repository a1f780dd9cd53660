//! One llama.cpp context, as `LlamaModel::new_context` makes it: freed when dropped, with
//! the calls every user of a context shares (decode, memory, logits).

use std::marker::PhantomData;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use crate::config::KV_TYPES;
use crate::engine::EngineError;
use crate::gguf::GGML_TYPES;

/// A llama.cpp context on a model it cannot outlive.
pub(super) struct Context<'m> {
    ptr: NonNull<sys::llama_context>,
    _model: PhantomData<&'m ()>,
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        unsafe { sys::llama_free(self.ptr.as_ptr()) };
    }
}

impl<'m> Context<'m> {
    pub(super) fn new<M>(ptr: NonNull<sys::llama_context>, _model: &'m M) -> Self {
        Context {
            ptr,
            _model: PhantomData,
        }
    }
}

impl Context<'_> {
    pub(super) fn as_ptr(&self) -> *mut sys::llama_context {
        self.ptr.as_ptr()
    }

    /// One `llama_decode`, without synchronizing.
    #[inline]
    pub(super) fn decode(&mut self, batch: sys::llama_batch) -> Result<(), EngineError> {
        match unsafe { sys::llama_decode(self.ptr.as_ptr(), batch) } {
            0 => Ok(()),
            r => Err(EngineError::decode_code(r)),
        }
    }

    pub(super) fn synchronize(&mut self) {
        unsafe { sys::llama_synchronize(self.ptr.as_ptr()) };
    }

    pub(super) fn memory(&self) -> sys::llama_memory_t {
        unsafe { sys::llama_get_memory(self.ptr.as_ptr()) }
    }

    /// Clears the KV memory (`llama_memory_clear`); `data` also zeroes the buffers.
    pub(super) fn clear(&mut self, data: bool) {
        unsafe { sys::llama_memory_clear(self.memory(), data) };
    }

    /// The context size llama.cpp allocated (`llama_n_ctx`).
    pub(super) fn n_ctx(&self) -> u32 {
        unsafe { sys::llama_n_ctx(self.ptr.as_ptr()) }
    }

    /// Logits of entry `i` of the last decoded batch, `n_vocab` of them; None when llama.cpp
    /// has none for it.
    pub(super) fn logits(&self, i: usize, n_vocab: usize) -> Option<&[f32]> {
        let p = unsafe { sys::llama_get_logits_ith(self.ptr.as_ptr(), i as i32) };
        (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, n_vocab) })
    }
}

/// A KV cache type (`KV_TYPES`) as ggml's type id.
pub(super) fn ggml_type(name: &str) -> Result<sys::ggml_type, EngineError> {
    let kv = KV_TYPES.contains(&name);
    let t = GGML_TYPES
        .iter()
        .find(|t| kv && t.1.eq_ignore_ascii_case(name));
    t.map(|t| t.0)
        .ok_or_else(|| EngineError::Param(format!("unknown KV cache type {name:?}")))
}
