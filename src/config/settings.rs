//! How each test is repeated: the run settings of the top-level `[sweep]` (warmup,
//! repetitions, adaptive stopping, the seed, rounds and the budget of `rounds = "auto"`).
//! Parsed by `config::apply_settings`.

impl RunSettings {
    /// The settings without a `[sweep]` table: llama-bench's (1 warmup, 5 repetitions).
    pub(crate) const LLAMA_BENCH: RunSettings = RunSettings {
        warmup: 1,
        repetitions: 5,
        ci_target: None,
        max_repetitions: 50,
        max_seconds: 60.0,
        seed: 42,
        rounds: 1,
        auto_rounds: None,
        repetitions_given: false,
    };

    pub fn policy(&self) -> crate::stats::analysis::StopPolicy {
        use crate::stats::analysis::StopPolicy;
        match self.ci_target {
            None => StopPolicy::fixed(self.repetitions),
            Some(t) => StopPolicy {
                min_repetitions: self.repetitions,
                ci_target: Some(t),
                max_repetitions: self.max_repetitions,
                max_seconds: self.max_seconds,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSettings {
    /// Untimed warmup passes before the repetitions (llama-bench: 1).
    pub warmup: u32,
    /// Timed repetitions per test (llama-bench: 5); the minimum when `ci_target` is set.
    pub repetitions: u32,
    /// Adaptive stopping: repeat until the median's 95% CI is within ±`ci_target`
    /// (0.01 = ±1%), up to `max_repetitions` or `max_seconds` of timed work per test.
    pub ci_target: Option<f64>,
    pub max_repetitions: u32,
    pub max_seconds: f64,
    /// Seed of the random prompt tokens; recorded in the result.
    pub seed: u64,
    /// Each pp/tg/pg test runs this many times in a fresh context, interleaved with the
    /// others, rotated each round; 1 is llama-bench's (intervals of one launch only). Under
    /// `rounds = "auto"`, the most rounds (`max_rounds`).
    pub rounds: u32,
    /// `rounds = "auto"`: rounds are added until every comparison the answer depends on is
    /// established or the budget is spent (`stats::pairs`, a sequential design).
    pub auto_rounds: Option<AutoRounds>,
    /// `repetitions` was given: auto rounds then keep it rather than
    /// [`AutoRounds::REPETITIONS`].
    pub repetitions_given: bool,
}

/// The rounds a budget may give (`max_rounds` of `[sweep]` and `[tune]`, `--max-rounds`),
/// and the rule said when one is outside them.
pub const MAX_ROUNDS: std::ops::RangeInclusive<i64> = 2..=10_000;
pub const MAX_ROUNDS_RULE: &str =
    "must be between 2 and 10000 (a paired comparison needs 2 rounds)";

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoRounds {
    /// `max_rounds`: the most rounds (default [`AutoRounds::DEFAULT_MAX_ROUNDS`]); alpha is
    /// spent over the looks it plans.
    pub max_rounds: u32,
    /// `max_rounds_seconds`: wall-clock seconds of the whole run after which no round starts.
    pub max_seconds: Option<f64>,
    /// `max_rounds` or `max_rounds_seconds` was given: without either, a plan with nothing to
    /// compare is refused (auto would have nothing to decide).
    pub budget_given: bool,
}

impl AutoRounds {
    pub const DEFAULT_MAX_ROUNDS: u32 = 10;
    /// Repetitions per round under auto when `repetitions` is not given: at the noise of a
    /// 2-core VM, a fresh context's own level varies more than repetitions inside it, so
    /// many short rounds resolve a comparison sooner than few long ones in the same time
    /// (tests/it/monte_carlo/sequential.rs, docs/methodology.md).
    pub const REPETITIONS: u32 = 1;
}
