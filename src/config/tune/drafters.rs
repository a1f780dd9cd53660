//! `objective = "speculative"`: greedy decode speed on `[speculative]`'s prompts, plain and
//! with each drafter setting. A drafter's worth depends on the text it drafts: random ids
//! (a tgN objective) would leave nothing to draft.

use crate::config::speculative::SpeculativeConfig;
use crate::config::{ConfigError, Ctx};

use super::Objective;

/// The speculative objective: what each candidate decodes per round.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeObjective {
    pub dataset: String,
    pub n_prompts: u32,
    /// Tokens generated per prompt, at most.
    pub n_gen: u32,
}

impl DecodeObjective {
    /// The longest prompt vLLM's ShareGPT sampling keeps, counted in the limits' context (a
    /// longer one fails its test, which says so).
    pub const PROMPT_TOKENS: u32 = 1024;

    /// "decode after 16 prompts of ShareGPT_V3.json, up to 128 tokens each, plain or drafted".
    pub fn describe(&self) -> String {
        format!(
            "decode after {} prompts of {}, up to {} tokens each, plain or drafted",
            self.n_prompts, self.dataset, self.n_gen
        )
    }
}

/// `objective = "speculative"`; the sizes are a whole generation's context, which the limits
/// check.
pub(super) fn objective(
    ctx: &Ctx,
    at: std::ops::Range<usize>,
    speculative: Option<&SpeculativeConfig>,
) -> Result<(DecodeObjective, Objective), ConfigError> {
    let Some(sc) = speculative else {
        let msg = "objective \"speculative\" races [speculative]'s drafter settings against \
                   plain decoding on its prompts: add a [speculative] table with a dataset \
                   and drafters (docs/tune.md)";
        return Err(ctx.err(at, "tune.objective", msg));
    };
    let d = DecodeObjective {
        dataset: crate::config::values::file_name(&sc.dataset),
        n_prompts: sc.n_prompts,
        n_gen: sc.n_gen,
    };
    let sizes = Objective {
        n_prompt: 0,
        n_gen: sc.n_gen,
        n_depth: DecodeObjective::PROMPT_TOKENS,
    };
    Ok((d, sizes))
}
