//! Serving tests on llama.cpp: multi-sequence batches, logits, KV-cache sequence operations,
//! tokenization and the chat template, through `llama-cpp-sys-2` directly.
//!
//! The context is made as llama-batched-bench makes it (common's context parameters, with
//! `n_seq_max` and `kv_unified` set, and no threadpool attached: llama.cpp's CPU backend then
//! runs each graph on its own OpenMP threads), so the parallel test's figures can be compared
//! with that tool's.

use std::ffi::c_char;

use llama_cpp_sys_2 as sys;

use super::context::{Batch, Context};
use super::model::{LlamaModel, sized};
use super::{c_string, c_text};
use crate::engine::EngineError;
use crate::engine::batching::{BatchParams, BatchSession, BatchToken, ServingModel};

pub(super) struct LlamaBatchSession<'m> {
    ctx: Context<'m>,
    n_vocab: usize,
    batch: Batch,
    /// From the model's load log and this context's creation log.
    placement: Option<crate::engine::placement::Placement>,
}

/// common_context_params_to_llama() with common's defaults, as llama-batched-bench: the
/// test's context-level parameters (the knob hook) with the sequences and outputs set. These
/// contexts keep ggml's own thread pool, so what the hook sets of one is unused.
pub(super) fn context_params(p: &BatchParams) -> Result<sys::llama_context_params, EngineError> {
    let mut cp = super::knobs::llama_bench(&p.base)?.0;
    cp.n_ctx = p.n_ctx;
    cp.n_seq_max = p.n_seq_max.max(1);
    cp.kv_unified = p.kv_unified;
    cp.n_outputs_max = 0;
    cp.n_outputs_max_per_seq = 1;
    cp.no_perf = false;
    Ok(cp)
}

impl ServingModel for LlamaModel {
    fn batch_session(&self, p: &BatchParams) -> Result<Box<dyn BatchSession + '_>, EngineError> {
        let b = &p.base;
        let what = format!(
            "a context of {} tokens for {} sequences (n_batch {}, n_ubatch {})",
            p.n_ctx, p.n_seq_max, b.n_batch, b.n_ubatch
        );
        let cp = context_params(p)?;
        let (ctx, placement) = self.new_context(cp, &what);
        Ok(Box::new(LlamaBatchSession {
            ctx: ctx?,
            n_vocab: self.n_vocab(),
            batch: Batch::new(cp.n_batch as usize),
            placement,
        }))
    }

    /// Text to token ids: the one tokenizer of every path. `add_special` adds BOS (when the
    /// vocabulary adds one); `parse_special` reads control tokens written in the text.
    fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<i32>, EngineError> {
        let len = i32::try_from(text.len())
            .map_err(|_| EngineError::Other("the text is too long to tokenize".into()))?;
        let vocab = self.vocab();
        let out = sized(text.len() + 2, |out: &mut [i32]| unsafe {
            sys::llama_tokenize(
                vocab,
                text.as_ptr() as *const c_char,
                len,
                out.as_mut_ptr(),
                out.len() as i32,
                add_special,
                parse_special,
            )
        });
        out.ok_or_else(|| EngineError::Other("llama.cpp could not tokenize the text".into()))
    }

    /// The model's built-in chat template applied to one user message, ending with the
    /// assistant prefix (`llama_chat_apply_template`).
    fn apply_chat_template(&self, user_message: &str) -> Result<String, EngineError> {
        let tmpl = unsafe { sys::llama_model_chat_template(self.as_ptr(), std::ptr::null()) };
        if tmpl.is_null() {
            return Err(EngineError::Other(
                "the model has no chat template (tokenizer.chat_template)".into(),
            ));
        }
        let content = c_string(user_message, "the prompt")?;
        let msg = sys::llama_chat_message {
            role: c"user".as_ptr(),
            content: content.as_ptr(),
        };
        let mut unsupported = false;
        let buf = sized(2 * user_message.len() + 512, |buf: &mut [u8]| {
            let (p, len) = (buf.as_mut_ptr() as *mut c_char, buf.len() as i32);
            let n = unsafe { sys::llama_chat_apply_template(tmpl, &msg, 1, true, p, len) };
            unsupported = n < 0;
            match n {
                n if n < 0 => i32::MIN,
                n if n > len => -n,
                n => n,
            }
        });
        if unsupported {
            let name = unsafe { c_text(tmpl) };
            let short: String = name.chars().take(60).collect();
            return Err(EngineError::Other(format!(
                "llama.cpp does not support this model's chat template ({short:?}...)"
            )));
        }
        let buf = buf.ok_or_else(|| {
            EngineError::Other("llama_chat_apply_template: inconsistent lengths".into())
        })?;
        String::from_utf8(buf)
            .map_err(|_| EngineError::Other("the chat template produced invalid UTF-8".into()))
    }
}

impl BatchSession for LlamaBatchSession<'_> {
    fn n_ctx(&self) -> u32 {
        self.ctx.n_ctx()
    }

    fn clear(&mut self) {
        self.ctx.clear(false);
    }

    fn decode(&mut self, tokens: &[BatchToken]) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::decode("llama_decode: empty batch"));
        }
        let batch = self.batch.fill(tokens.iter().copied());
        self.ctx.decode(batch)
    }

    fn synchronize(&mut self) {
        self.ctx.synchronize();
    }

    fn logits(&mut self, i: usize) -> Result<&[f32], EngineError> {
        if !self.batch.has_logits(i) {
            return Err(EngineError::Other(format!("batch entry {i} has no logits")));
        }
        self.ctx.logits(i, self.n_vocab).ok_or_else(|| {
            EngineError::Other(format!("llama.cpp returned no logits for batch entry {i}"))
        })
    }

    fn seq_cp(&mut self, src: i32, dst: i32) {
        unsafe { sys::llama_memory_seq_cp(self.ctx.memory(), src, dst, -1, -1) };
    }

    fn seq_rm(&mut self, seq: i32, p0: i32, p1: i32) -> bool {
        unsafe { sys::llama_memory_seq_rm(self.ctx.memory(), seq, p0, p1) }
    }

    fn seq_pos_range(&self, seq: i32) -> Option<(i32, i32)> {
        let mem = self.ctx.memory();
        let lo = unsafe { sys::llama_memory_seq_pos_min(mem, seq) };
        let hi = unsafe { sys::llama_memory_seq_pos_max(mem, seq) };
        (hi >= 0).then_some((lo, hi))
    }

    fn placement(&self) -> Option<crate::engine::placement::Placement> {
        self.placement.clone()
    }
}
