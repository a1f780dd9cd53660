//! Logits for quality measurement: the rows of chosen positions handed back one at a time
//! (a 512-token chunk of a 128k-vocabulary model is 256 MB of logits), on a context made as
//! llama-perplexity makes it: one sequence, a batch as large as the context, its own threads.

use llama_cpp_sys_2 as sys;

use super::context::{Batch, Context};
use super::model::LlamaModel;
use crate::engine::{BatchToken, EngineError};

pub struct EvalContext<'m> {
    ctx: Context<'m>,
    batch: Batch,
    capacity: usize,
    n_vocab: usize,
    bos: Option<i32>,
}

/// llama-perplexity's context: `n_ctx` tokens of one sequence, decoded `n_ctx` at a time.
fn context_params(n_ctx: u32, n_threads: u32) -> sys::llama_context_params {
    let mut cp = unsafe { sys::llama_context_default_params() };
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx;
    cp.n_ubatch = n_ctx.min(512);
    cp.n_seq_max = 1;
    cp.n_threads = n_threads.max(1) as i32;
    cp.n_threads_batch = n_threads.max(1) as i32;
    cp.embeddings = false;
    cp
}

impl LlamaModel {
    /// A context of `n_ctx` tokens for one sequence, decoding up to `n_ctx` tokens per call.
    pub fn eval_context(&self, n_ctx: u32, n_threads: u32) -> Result<EvalContext<'_>, EngineError> {
        // SAFETY: no callback.
        unsafe { self.observed_context(n_ctx, n_threads, None, std::ptr::null_mut()) }
    }

    /// The same context with an eval callback that sees each graph node (llama-imatrix's).
    ///
    /// # Safety
    /// `user` must stay valid, and be used by nothing else, while the context lives.
    pub(crate) unsafe fn observed_context(
        &self,
        n_ctx: u32,
        n_threads: u32,
        cb_eval: sys::ggml_backend_sched_eval_callback,
        user: *mut std::ffi::c_void,
    ) -> Result<EvalContext<'_>, EngineError> {
        let mut cp = context_params(n_ctx, n_threads);
        (cp.cb_eval, cp.cb_eval_user_data) = (cb_eval, user);
        let what = format!("a context of {n_ctx} tokens");
        Ok(EvalContext {
            ctx: self.new_context(cp, &what).0?,
            batch: Batch::new(n_ctx as usize),
            capacity: n_ctx as usize,
            n_vocab: self.n_vocab(),
            bos: self.bos(),
        })
    }
}

impl EvalContext<'_> {
    /// Decodes one chunk from an empty cache, its first token replaced by BOS when the
    /// vocabulary adds one (as llama-perplexity and llama-imatrix do), asking for logits where
    /// `output(i)` is true (`i` indexes `tokens`); [`row`](Self::row) reads them.
    pub fn chunk(
        &mut self,
        tokens: &[i32],
        output: &dyn Fn(usize) -> bool,
    ) -> Result<(), EngineError> {
        if tokens.len() > self.capacity {
            return Err(EngineError::decode(format!(
                "{} tokens do not fit a context of {}",
                tokens.len(),
                self.capacity
            )));
        }
        let entry = |(i, &token): (usize, &i32)| BatchToken {
            token: self.bos.filter(|_| i == 0).unwrap_or(token),
            pos: i as i32,
            seq: 0,
            logits: output(i),
        };
        self.ctx.clear(true);
        let batch = self.batch.fill(tokens.iter().enumerate().map(entry));
        self.ctx.decode(batch)
    }

    /// The logits of position `i` of the last chunk, one `output` asked for.
    pub fn row(&self, i: usize) -> Result<&[f32], EngineError> {
        self.ctx.logits(i, self.n_vocab).ok_or_else(|| {
            EngineError::Other(format!("llama.cpp returned no logits for position {i}"))
        })
    }
}
