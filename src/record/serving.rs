//! `TestRecord.serving`: the figures of a serving test, in the result file. Times are
//! milliseconds, rates tokens per second. See docs/schema.md, "serving".

use serde::{Deserialize, Serialize};

/// Percentiles interpolate linearly between the closest ranks; all zero when `n` is 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub n: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Dist {
    /// The percentile `q` (50, 90 or 99; anything else reads as 99).
    pub fn at(&self, q: u32) -> f64 {
        match q {
            50 => self.p50,
            90 => self.p90,
            _ => self.p99,
        }
    }
}

pub use crate::config::serving::{Slo, Targets};
pub use crate::engine::endpoint::ServerInfo;
pub use crate::plan::serving::Transport;

/// Served over in-process: the ratio of the geometric means, its 95% Welch t interval on the
/// log scale, and the samples on each side (requests, or repetitions for aggregate t/s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    pub n_served: u64,
    pub n_in_process: u64,
}

/// What serving costs: this HTTP test against the in-process test with the same parameters
/// in the same run (its intervals leave out the variance between launches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VsInProcess {
    pub test: String,
    pub ttft: Option<Ratio>,
    pub per_request_ts: Option<Ratio>,
    pub aggregate_ts: Option<Ratio>,
}

/// One arrival rate the goodput search tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputStep {
    /// Poisson arrivals per second.
    pub rate: f64,
    pub n_requests: u32,
    pub n_good: u32,
    pub attainment: f64,
    /// n_good / (first arrival to last token).
    pub goodput: f64,
    pub duration_s: f64,
    pub met: bool,
}

/// The goodput search: the highest arrival rate whose requests meet the SLOs at the stated
/// attainment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub slo: Slo,
    pub max_rate: Option<f64>,
    pub goodput: Option<f64>,
    pub failed_rate: Option<f64>,
    pub stopped: String,
    pub steps: Vec<GoodputStep>,
}

/// The prompt file a test replayed.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// The file's name, never its path.
    pub name: String,
    pub sha256: String,
    pub n_prompts: u64,
    pub chat_template: bool,
    /// After the template, with the model's tokenizer.
    pub prompt_tokens: Dist,
    /// "sharegpt": sampled as vLLM's bench serve samples it. Absent: a prompt file, in order.
    pub format: Option<String>,
    pub note: Option<String>,
}

/// llama-server's own draft counters (`timings.draft_n`, `timings.draft_n_accepted`) summed
/// over a served test's answers in all its repetitions.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServedDrafts {
    /// What tpsbench gave the llama-server it launched; absent for a server started otherwise.
    pub draft: Option<String>,
    pub draft_sha256: Option<String>,
    pub draft_max: Option<u32>,
    pub draft_min: Option<u32>,
    /// Answers in all, and those that carried the counters (llama-server leaves them out of
    /// an answer it drafted nothing for).
    pub answers: u64,
    pub answers_counted: u64,
    pub drafted: u64,
    pub accepted: u64,
}

impl ServedDrafts {
    pub fn acceptance(&self) -> Option<f64> {
        (self.drafted > 0).then(|| self.accepted as f64 / self.drafted as f64)
    }

    /// Why the counts cannot be (a reader refuses the file), or None.
    pub fn inconsistent(&self) -> Option<String> {
        if self.accepted > self.drafted {
            return Some(format!(
                "drafts.accepted {} is above drafts.drafted {}",
                self.accepted, self.drafted
            ));
        }
        (self.answers_counted > self.answers).then(|| {
            format!(
                "drafts.answers_counted {} is above drafts.answers {}",
                self.answers_counted, self.answers
            )
        })
    }
}

/// One request of one repetition: the points to plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSample {
    pub repetition: u32,
    pub n_prompt: u32,
    pub n_gen: u32,
    /// From the start of the repetition.
    pub arrival_ms: f64,
    pub ttft_ms: f64,
    pub e2e_ms: f64,
    /// Absent for a single generated token.
    pub decode_ts: Option<f64>,
}

/// llama-batched-bench's figures of one repetition (parallel and request tests); for
/// arrival tests only `t_ms` and the rates over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepFigures {
    pub t_pp_ms: Option<f64>,
    pub t_tg_ms: Option<f64>,
    pub t_ms: f64,
    pub aggregate_pp_ts: Option<f64>,
    pub aggregate_ts: Option<f64>,
    pub total_ts: Option<f64>,
    pub output_ts: f64,
    /// Outside llama.cpp calls (sampling, batch building, bookkeeping), waits for arrivals
    /// excluded.
    pub overhead_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<f64>,
}

/// The figures of a serving test. Rates are means over repetitions of per-repetition rates
/// (as llama-bench's avg_ts); distributions pool every request of every repetition.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Serving {
    pub mode: crate::config::serving::Mode,
    #[serde(default, skip_serializing_if = "Transport::is_in_process")]
    pub transport: Transport,
    pub server: Option<ServerInfo>,
    /// "usage" (the server's own count), "tokenizer" (the text through the model's
    /// tokenizer) or "chunks" (one token per text chunk, with no GGUF at hand).
    pub token_counts: Option<String>,
    /// Counted as they are, never as full.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub short_requests: u32,
    pub vs_in_process: Option<VsInProcess>,
    pub goodput: Option<Goodput>,
    pub drafts: Option<ServedDrafts>,
    /// B: sequences decoded together (parallel), 1 (request), slots (arrival).
    pub n_parallel: u32,
    pub n_seq_max: u32,
    pub kv_unified: bool,
    /// llama-batched-bench -pps: one prompt prefilled once and copied to every sequence.
    pub shared_prompt: bool,
    pub arrival_rate: Option<f64>,
    /// Per repetition.
    pub n_requests: u32,
    pub repetitions: u32,
    /// 0 = greedy.
    pub temperature: f64,
    pub sampling_seed: u64,
    /// Per repetition.
    pub n_prompt_tokens: u64,
    pub n_output_tokens: u64,
    /// llama-batched-bench's N_KV: KV cells the test fills (parallel; request: the longest
    /// request; absent for arrival tests).
    pub n_kv: Option<u64>,
    /// Arrival to the first sampled token (prefill + sampling).
    pub ttft_ms: Dist,
    /// Inter-token latency: gaps between consecutive tokens of a request (over HTTP, as
    /// docs/served.md spreads a chunk's tokens).
    pub itl_ms: Dist,
    pub e2e_ms: Dist,
    /// (E2E − TTFT) / (n_gen − 1) of each request.
    pub tpot_ms: Dist,
    /// Arrival to admission into the batch.
    pub queue_ms: Option<Dist>,
    #[serialize_always]
    pub per_request_ts: Option<f64>,
    /// llama-batched-bench's S_PP, S_TG (arrival: generated tokens / t_ms) and S.
    #[serialize_always]
    pub aggregate_pp_ts: Option<f64>,
    #[serialize_always]
    pub aggregate_ts: Option<f64>,
    #[serialize_always]
    pub total_ts: Option<f64>,
    /// Generated tokens / whole time (prefill included): the rate cost is based on.
    pub output_ts: f64,
    #[serialize_always]
    pub t_pp_ms: Option<f64>,
    #[serialize_always]
    pub t_tg_ms: Option<f64>,
    pub t_ms: f64,
    /// Its share is of the busy time (t_ms less idle_ms).
    pub overhead_ms: f64,
    pub overhead_fraction: f64,
    pub idle_ms: Option<f64>,
    pub dataset: Option<DatasetInfo>,
    pub targets: Option<Targets>,
    pub meets_targets: Option<bool>,
    pub price_per_hour: Option<f64>,
    pub cost_per_mtok: Option<f64>,
    pub reps: Vec<RepFigures>,
    pub requests: Vec<RequestSample>,
}
