//! The engine boundary for serving tests: several sequences decoded together in one batch,
//! real logits, KV-cache sequence operations, tokenization and the chat template. Implemented
//! by `llama::batch` (llama.cpp) and, in unit tests, `mock::serving` (a fake clock and a
//! simulated KV cache).

use super::EngineError;
use crate::plan::TestParams;

/// One entry of a multi-sequence batch (a row of `llama_batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchToken {
    pub token: i32,
    pub pos: i32,
    pub seq: i32,
    /// Whether llama.cpp computes logits for this entry.
    pub logits: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchParams {
    /// n_batch, n_ubatch, n_threads, flash_attn, type_k, type_v (n_prompt, n_gen, n_depth are
    /// not used: the context size is `n_ctx`).
    pub base: TestParams,
    pub n_ctx: u32,
    pub n_seq_max: u32,
    /// One KV buffer shared by all sequences (`kv_unified`); otherwise each sequence has its
    /// own stream of `n_ctx / n_seq_max` cells.
    pub kv_unified: bool,
}

pub trait BatchSession {
    /// The context size llama.cpp allocated (`llama_n_ctx`; padded up from the request).
    fn n_ctx(&self) -> u32;
    fn clear(&mut self);
    /// One `llama_decode` of `tokens` (at most n_batch of them), without synchronizing.
    fn decode(&mut self, tokens: &[BatchToken]) -> Result<(), EngineError>;
    fn synchronize(&mut self);
    /// Logits of entry `i` of the last decoded batch (`llama_get_logits_ith`); the entry must
    /// have had `logits` set.
    fn logits(&mut self, i: usize) -> Result<&[f32], EngineError>;
    /// Copies sequence `src` into `dst` (`llama_memory_seq_cp`, all positions).
    fn seq_cp(&mut self, src: i32, dst: i32);
    /// Removes positions [p0, p1) of a sequence (-1: open end); false if it cannot.
    fn seq_rm(&mut self, seq: i32, p0: i32, p1: i32) -> bool;
    /// Smallest and largest position held for a sequence; None when it is empty.
    fn seq_pos_range(&self, seq: i32) -> Option<(i32, i32)>;
    /// Where the model and this context's KV cache and compute buffers were put, as the
    /// engine reported it when the context was made; None when it does not say.
    fn placement(&self) -> Option<crate::engine::placement::Placement> {
        None
    }
}

pub trait ServingModel {
    fn batch_session(
        &self,
        params: &BatchParams,
    ) -> Result<Box<dyn BatchSession + '_>, EngineError>;
    fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<i32>, EngineError>;
    fn apply_chat_template(&self, user_message: &str) -> Result<String, EngineError>;
}
