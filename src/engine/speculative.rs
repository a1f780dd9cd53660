//! Speculative decoding at the engine boundary: a drafter setting, one greedy
//! generation's counts and times, and the session that runs generations plain and
//! speculative on one target context, so a test pairs the two on the same context.

use std::path::PathBuf;

use crate::config::speculative::Drafter;
use crate::engine::EngineError;

#[derive(Debug, Clone, PartialEq)]
pub struct DrafterParams {
    pub kind: Drafter,
    /// The draft GGUF (draft-simple, Eagle3, DFlash, DSpark).
    pub draft: Option<PathBuf>,
    /// The draft model's n_gpu_layers (-1: llama.cpp's default).
    pub draft_n_gpu_layers: i32,
    /// K: most tokens drafted per step (llama.cpp's --spec-draft-n-max).
    pub n_max: u32,
    pub n_min: u32,
    pub p_min: f32,
}

/// One greedy generation: what came out, and what drafting did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    pub tokens: Vec<i32>,
    /// Tokens decoded before generating (the prompt but its last token).
    pub n_prompt: u64,
    /// Tokens generated (llama-speculative-simple's n_predict).
    pub n_generated: u64,
    /// Target decodes while generating.
    pub n_steps: u64,
    /// Steps that verified a non-empty draft.
    pub n_drafts: u64,
    pub n_drafted: u64,
    pub n_accepted: u64,
    /// Partial acceptances undone through a checkpoint (contexts that cannot drop part of
    /// a sequence).
    pub n_restores: u64,
    /// Per draft position: tokens drafted there and accepted there.
    pub by_position: Vec<(u64, u64)>,
    pub t_prefill_ns: u64,
    /// The whole generation: drafting, verifying and sampling.
    pub t_gen_ns: u64,
    pub t_draft_ns: u64,
    pub t_verify_ns: u64,
}

/// A target context with one drafter: generations plain or speculative, alternately.
pub trait SpecSession {
    /// One greedy generation of `n_gen` tokens after `prompt` (at least 2 tokens), from
    /// empty contexts; `speculative = false` decodes one token per step with the same
    /// sampler and context.
    fn generate(
        &mut self,
        prompt: &[i32],
        n_gen: u32,
        speculative: bool,
    ) -> Result<Generation, EngineError>;
    /// Bytes the drafter holds: the draft model's weights and its context's state.
    fn draft_bytes(&self) -> u64;
}
