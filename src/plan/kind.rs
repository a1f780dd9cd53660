//! The kinds of test: what a test measures, which code runs it, which exporters show it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestKind {
    /// Prefill of `n_prompt` tokens (llama-bench `pp`).
    #[default]
    Pp,
    /// Decode of `n_gen` tokens, one at a time (llama-bench `tg`).
    Tg,
    /// Prefill then decode in one repetition (llama-bench `pg`).
    Pg,
    /// One request at a time: TTFT, inter-token latency ([serving] mode "request").
    Request,
    /// B sequences decoded together (llama-batched-bench; [serving] mode "parallel").
    Parallel,
    /// Requests arriving as a Poisson process ([serving] mode "arrival").
    Arrival,
    /// The highest arrival rate that meets the SLOs ([serving] mode "goodput").
    Goodput,
    /// KLD and perplexity against a ladder's reference variant.
    Quality,
    /// Speculative decoding against plain decoding on the same context ([speculative]).
    Spec,
}

impl TestKind {
    /// The kinds llama-bench itself has: its exporters write only these.
    pub fn is_llama_bench(self) -> bool {
        matches!(self, TestKind::Pp | TestKind::Tg | TestKind::Pg)
    }

    /// The llama-bench kind of a test with these sizes.
    pub fn of_sizes(n_prompt: u32, n_gen: u32) -> TestKind {
        match (n_prompt, n_gen) {
            (_, 0) => TestKind::Pp,
            (0, _) => TestKind::Tg,
            _ => TestKind::Pg,
        }
    }

    /// The kind of a serving mode ("request", "parallel", "arrival", "goodput"): its name.
    pub fn of_serving_mode(mode: &str) -> Option<TestKind> {
        crate::config::serving::Mode::parse(mode).and_then(|m| TestKind::parse(m.name()))
    }
}

crate::config::names::names!(TestKind::as_str {
    Pp = "pp",
    Tg = "tg",
    Pg = "pg",
    Request = "request",
    Parallel = "parallel",
    Arrival = "arrival",
    Goodput = "goodput",
    Quality = "quality",
    Spec = "spec",
});
