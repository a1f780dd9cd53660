//! Serving tests on llama.cpp: multi-sequence batches, logits and KV-cache sequence
//! operations, through `llama-cpp-sys-2` directly; tokenization and the chat template are the
//! model's own (`model.rs`).
//!
//! The context is made as llama-batched-bench makes it (common's context parameters, with
//! `n_seq_max` and `kv_unified` set, and no threadpool attached: llama.cpp's CPU backend then
//! runs each graph on its own OpenMP threads), so the parallel test's figures can be compared
//! with that tool's.

use llama_cpp_sys_2 as sys;

use super::context::{Batch, Context};
use super::model::LlamaModel;
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

    fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<i32>, EngineError> {
        LlamaModel::tokenize(self, text, add_special, parse_special)
    }

    fn apply_chat_template(&self, user_message: &str) -> Result<String, EngineError> {
        LlamaModel::apply_chat_template(self, user_message)
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
