//! Serving tests on llama.cpp: multi-sequence batches, logits and KV-cache sequence
//! operations, through `llama-cpp-sys-2` directly; tokenization and the chat template are the
//! model's own (`model.rs`).
//!
//! The context is made as llama-batched-bench makes it (common's context parameters, with
//! `n_seq_max` and `kv_unified` set, and no threadpool attached: llama.cpp's CPU backend then
//! runs each graph on its own OpenMP threads), so the parallel test's figures can be compared
//! with that tool's.

use llama_cpp_sys_2 as sys;

use super::context::Context;
use super::model::LlamaModel;
use crate::engine::EngineError;
use crate::engine::batching::{BatchParams, BatchSession, BatchToken, ServingModel};

pub(super) struct LlamaBatchSession<'m> {
    ctx: Context<'m>,
    n_vocab: usize,
    /// Batch buffers, reused across decodes; `llama_batch` points into them.
    token: Vec<i32>,
    pos: Vec<i32>,
    n_seq_id: Vec<i32>,
    seq: Vec<i32>,
    seq_ptr: Vec<*mut i32>,
    logits: Vec<i8>,
    /// From the model's load log and this context's creation log.
    placement: Option<crate::engine::placement::Placement>,
}

/// common_context_params_to_llama() with common's defaults, as llama-batched-bench: the
/// test's context-level parameters (the knob hook) with the sequences and outputs set. These
/// contexts keep ggml's own thread pool, so what the hook sets of one is unused.
pub(super) fn context_params(p: &BatchParams) -> Result<sys::llama_context_params, EngineError> {
    let mut cp = super::params::llama_bench(&p.base)?.0;
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
        let (ctx, placement) = self.new_context(context_params(p)?, &what);
        let ctx = ctx?;
        Ok(Box::new(LlamaBatchSession {
            ctx,
            n_vocab: self.n_vocab(),
            token: Vec::new(),
            pos: Vec::new(),
            n_seq_id: Vec::new(),
            seq: Vec::new(),
            seq_ptr: Vec::new(),
            logits: Vec::new(),
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
        let n = tokens.len();
        self.token.clear();
        self.pos.clear();
        self.seq.clear();
        self.logits.clear();
        for t in tokens {
            self.token.push(t.token);
            self.pos.push(t.pos);
            self.seq.push(t.seq);
            self.logits.push(i8::from(t.logits));
        }
        self.n_seq_id.clear();
        self.n_seq_id.resize(n, 1);
        // One sequence per entry: entry i's seq_id array is &seq[i].
        let base = self.seq.as_mut_ptr();
        self.seq_ptr.clear();
        self.seq_ptr.extend((0..n).map(|i| unsafe { base.add(i) }));
        let batch = sys::llama_batch {
            n_tokens: n as i32,
            token: self.token.as_mut_ptr(),
            embd: std::ptr::null_mut(),
            pos: self.pos.as_mut_ptr(),
            n_seq_id: self.n_seq_id.as_mut_ptr(),
            seq_id: self.seq_ptr.as_mut_ptr(),
            logits: self.logits.as_mut_ptr(),
        };
        self.ctx.decode(batch)
    }

    fn synchronize(&mut self) {
        self.ctx.synchronize();
    }

    fn logits(&mut self, i: usize) -> Result<&[f32], EngineError> {
        if self.logits.get(i) != Some(&1) {
            return Err(EngineError::Logits(format!(
                "batch entry {i} has no logits"
            )));
        }
        self.ctx.logits(i, self.n_vocab).ok_or_else(|| {
            EngineError::Logits(format!("llama.cpp returned no logits for batch entry {i}"))
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
        let (lo, hi) = unsafe {
            (
                sys::llama_memory_seq_pos_min(mem, seq),
                sys::llama_memory_seq_pos_max(mem, seq),
            )
        };
        (hi >= 0).then_some((lo, hi))
    }

    fn placement(&self) -> Option<crate::engine::placement::Placement> {
        self.placement.clone()
    }
}
