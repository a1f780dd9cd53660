//! One llama.cpp context, as `LlamaModel::new_context` makes it: freed when dropped, with
//! the calls every user of a context shares (decode, memory, logits).

use std::marker::PhantomData;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use crate::config::KV_TYPES;
use crate::engine::{BatchToken, EngineError};
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

/// A `llama_batch` llama.cpp allocated, refilled for each decode (grown when one needs more).
pub(super) struct Batch {
    raw: sys::llama_batch,
    capacity: usize,
}

impl Drop for Batch {
    fn drop(&mut self) {
        unsafe { sys::llama_batch_free(self.raw) };
    }
}

impl Batch {
    pub(super) fn new(capacity: usize) -> Batch {
        let capacity = capacity.max(1);
        let raw = unsafe { sys::llama_batch_init(capacity as i32, 0, 1) };
        Batch { raw, capacity }
    }

    pub(super) fn fill(
        &mut self,
        tokens: impl ExactSizeIterator<Item = BatchToken>,
    ) -> sys::llama_batch {
        if tokens.len() > self.capacity {
            *self = Batch::new(tokens.len());
        }
        let b = &mut self.raw;
        b.n_tokens = tokens.len() as i32;
        for (i, t) in tokens.enumerate() {
            // SAFETY: i < capacity, the entries llama_batch_init allocated.
            unsafe {
                *b.token.add(i) = t.token;
                *b.pos.add(i) = t.pos;
                *b.n_seq_id.add(i) = 1;
                *(*b.seq_id.add(i)) = t.seq;
                *b.logits.add(i) = i8::from(t.logits);
            }
        }
        *b
    }

    pub(super) fn has_logits(&self, i: usize) -> bool {
        i < self.raw.n_tokens.max(0) as usize && unsafe { *self.raw.logits.add(i) } != 0
    }
}

/// A KV cache type (`KV_TYPES`) as ggml's type id.
pub(super) fn ggml_type(name: &str) -> Result<sys::ggml_type, EngineError> {
    (GGML_TYPES.iter())
        .find(|t| KV_TYPES.contains(&name) && t.1.eq_ignore_ascii_case(name))
        .map(|t| t.0)
        .ok_or_else(|| EngineError::Other(format!("unknown KV cache type {name:?}")))
}
