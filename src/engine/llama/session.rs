//! The timed loops' context (pp, tg, pg tests), made as llama-bench makes it: its context
//! parameters field for field and its own ggml threadpool attached.

use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::context::Context;
use super::knobs::llama_bench;
use super::model::LlamaModel;
use crate::engine::{EngineError, Session};
use crate::plan::TestParams;

struct Threadpool(NonNull<sys::ggml_threadpool>);

impl Drop for Threadpool {
    fn drop(&mut self) {
        unsafe { sys::ggml_threadpool_free(self.0.as_ptr()) };
    }
}

/// llama-bench's thread pool `tpp` for `p`, attached to `ctx`.
fn attach_threadpool(
    ctx: &Context<'_>,
    p: &TestParams,
    mut tpp: sys::ggml_threadpool_params,
) -> Result<Threadpool, EngineError> {
    let threadpool = NonNull::new(unsafe { sys::ggml_threadpool_new(&mut tpp) })
        .map(Threadpool)
        .ok_or(EngineError::Threadpool {
            n_threads: p.n_threads,
        })?;
    unsafe {
        sys::llama_attach_threadpool(ctx.as_ptr(), threadpool.0.as_ptr(), std::ptr::null_mut());
        sys::llama_set_n_threads(ctx.as_ptr(), p.n_threads as i32, p.n_threads as i32);
    }
    Ok(threadpool)
}

pub(super) struct LlamaSession<'m> {
    /// Declared before the threadpool: the context is freed first.
    ctx: Context<'m>,
    _threadpool: Threadpool,
}

impl<'m> LlamaSession<'m> {
    pub(super) fn new(model: &'m LlamaModel, p: &TestParams) -> Result<Self, EngineError> {
        let (n_ctx, n_batch, n_ubatch) = (p.n_ctx(), p.n_batch, p.n_ubatch);
        let what = format!("a context of {n_ctx} tokens (n_batch {n_batch}, n_ubatch {n_ubatch})");
        let (cp, tpp) = llama_bench(p)?;
        let (ctx, placement) = model.new_context(cp, &what);
        model.set_placement(p, placement);
        let ctx = ctx?;
        Ok(LlamaSession {
            _threadpool: attach_threadpool(&ctx, p, tpp)?,
            ctx,
        })
    }

    fn decode(&mut self, tokens: &[i32]) -> Result<(), EngineError> {
        // llama_batch_get_one takes a mutable pointer but llama_decode only reads the tokens,
        // so the caller's slice is passed as is: no copy inside the timed region.
        let ptr = tokens.as_ptr().cast_mut();
        let batch = unsafe { sys::llama_batch_get_one(ptr, tokens.len() as i32) };
        self.ctx.decode(batch)
    }
}

impl Session for LlamaSession<'_> {
    fn clear(&mut self) {
        self.ctx.clear(false);
    }

    fn decode_chunks(&mut self, tokens: &[i32], n_batch: usize) -> Result<(), EngineError> {
        for chunk in tokens.chunks(n_batch.max(1)) {
            self.decode(chunk)?;
        }
        Ok(())
    }

    fn decode_one(&mut self, token: i32) -> Result<(), EngineError> {
        self.decode(&[token])
    }

    fn synchronize(&mut self) {
        self.ctx.synchronize();
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
