//! The kinds of test: what a test measures, which code runs it, which exporters show it.

use serde::{Deserialize, Serialize};

/// What a test measures, and so which code runs it and which exporters can show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestKind {
    /// Prefill of `n_prompt` tokens (llama-bench `pp`).
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

    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::Pp => "pp",
            TestKind::Tg => "tg",
            TestKind::Pg => "pg",
            TestKind::Request => "request",
            TestKind::Parallel => "parallel",
            TestKind::Arrival => "arrival",
            TestKind::Goodput => "goodput",
            TestKind::Quality => "quality",
            TestKind::Spec => "spec",
        }
    }

    /// The llama-bench kind of a test with these sizes.
    pub fn of_sizes(n_prompt: u32, n_gen: u32) -> TestKind {
        match (n_prompt, n_gen) {
            (_, 0) => TestKind::Pp,
            (0, _) => TestKind::Tg,
            _ => TestKind::Pg,
        }
    }

    /// The kind of a serving mode ("request", "parallel", "arrival").
    pub fn of_serving_mode(mode: &str) -> Option<TestKind> {
        match mode {
            "request" => Some(TestKind::Request),
            "parallel" => Some(TestKind::Parallel),
            "arrival" => Some(TestKind::Arrival),
            "goodput" => Some(TestKind::Goodput),
            _ => None,
        }
    }
}

impl std::fmt::Display for TestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
