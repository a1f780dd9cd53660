//! Speculative decoding at the engine boundary: one greedy generation's counts and times,
//! and the session that runs generations plain and speculative on one target context, so a
//! test pairs the two on the same context.

use crate::engine::EngineError;

/// Drafted and accepted tokens at one draft position (0 = the first drafted token).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub drafted: u64,
    pub accepted: u64,
}

/// One greedy generation: what came out, and what drafting did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    pub tokens: Vec<i32>,
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
    pub by_position: Vec<Position>,
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
