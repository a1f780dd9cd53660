//! `TestRecord.serving`: the figures of a serving test, in the result file. Times are
//! milliseconds, rates tokens per second. See docs/schema.md, "serving".

use serde::{Deserialize, Serialize};

/// A distribution: count, mean, extremes and percentiles (linear interpolation between the
/// closest ranks). All zero when `n` is 0.
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

pub use crate::config::serving::Slo;
pub use crate::config::serving::Targets;
pub use crate::engine::endpoint::ServerInfo;

pub use crate::plan::serving::Transport;

/// A ratio served / in-process with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// Ratio of the geometric means (served over in-process).
    pub ratio: f64,
    /// 95% Welch t interval on the log scale.
    pub lo: f64,
    pub hi: f64,
    /// Samples on each side (requests, or repetitions for aggregate t/s).
    pub n_served: u64,
    pub n_in_process: u64,
}

/// What serving costs: this HTTP test against the in-process test with the same parameters
/// in the same run. The intervals cover the requests (or repetitions) of this one run; the
/// variance between launches is not in them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VsInProcess {
    /// The id of the in-process test.
    pub test: String,
    pub ttft: Option<Ratio>,
    pub per_request_ts: Option<Ratio>,
    pub aggregate_ts: Option<Ratio>,
}

/// One arrival rate the goodput search tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputStep {
    /// Poisson arrival rate, requests per second.
    pub rate: f64,
    pub n_requests: u32,
    /// Requests that met every SLO threshold.
    pub n_good: u32,
    /// n_good / n_requests.
    pub attainment: f64,
    /// Good requests per second of the run: n_good / (first arrival to last token).
    pub goodput: f64,
    pub duration_s: f64,
    /// attainment ≥ the SLO's.
    pub met: bool,
}

/// The goodput search: the highest arrival rate whose requests meet the SLOs at the stated
/// attainment, found by bisection on the rate (geometric midpoints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub slo: Slo,
    /// The highest rate tried that met the SLOs; None when even the lowest did not.
    pub max_rate: Option<f64>,
    /// Good requests per second at `max_rate`.
    pub goodput: Option<f64>,
    /// The lowest rate tried that did not meet them; None when the highest did.
    pub failed_rate: Option<f64>,
    /// Why the search stopped: "converged", "steps", "time", "met at max_rate",
    /// "not met at min_rate".
    pub stopped: String,
    pub steps: Vec<GoodputStep>,
}

/// The prompt file a test replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// File name.
    pub name: String,
    pub sha256: String,
    /// Prompts in the file.
    pub n_prompts: u64,
    /// Whether prompts went through the model's chat template.
    pub chat_template: bool,
    /// Prompt lengths in tokens, after the template, with the model's tokenizer.
    pub prompt_tokens: Dist,
    /// "sharegpt": sampled as vLLM's bench serve samples it (seeded by the test's
    /// `sampling_seed`; each request generates its reply's token count). Absent: a prompt
    /// file, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// What a reader must know of the file (a ShareGPT file cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// llama-server's own draft counters (`timings.draft_n`, `timings.draft_n_accepted`) summed
/// over a served test's answers in all its repetitions: the served side of speculative
/// decoding, beside the in-process `speculative` tests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServedDrafts {
    /// The draft GGUF (file name) tpsbench gave the llama-server it launched, with K and the
    /// minimum; absent for a server started otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_max: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_min: Option<u32>,
    /// Answers in all, and those that carried the counters (llama-server leaves them out of
    /// an answer it drafted nothing for).
    pub answers: u64,
    pub answers_counted: u64,
    pub drafted: u64,
    pub accepted: u64,
}

impl ServedDrafts {
    /// Accepted / drafted; None when nothing was drafted.
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
    /// Arrival time from the start of the repetition.
    pub arrival_ms: f64,
    pub ttft_ms: f64,
    pub e2e_ms: f64,
    /// (n_gen − 1) / (E2E − TTFT); absent for a single generated token.
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
    /// Generated tokens / t_ms.
    pub output_ts: f64,
    /// Time outside llama.cpp calls (sampling, batch building, bookkeeping), waits for
    /// arrivals excluded.
    pub overhead_ms: f64,
    /// Time with no request to serve (arrival tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The figures of a serving test. Rates are means over repetitions of per-repetition rates
/// (as llama-bench's avg_ts); distributions pool every request of every repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Serving {
    pub mode: crate::config::serving::Mode,
    /// "http" for a served test; absent in-process.
    #[serde(default, skip_serializing_if = "Transport::is_in_process")]
    pub transport: Transport,
    /// The server that answered (served tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
    /// Served tests: where token counts came from: "usage" (the server's own count),
    /// "tokenizer" (the text through the model's tokenizer, when the server gives no usage)
    /// or "chunks" (one token per text chunk, with no GGUF at hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_counts: Option<String>,
    /// Requests that returned fewer tokens than asked: counted as they are, never as full.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub short_requests: u32,
    /// Served tests: the ratios to the in-process test with the same parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_in_process: Option<VsInProcess>,
    /// Goodput tests: the search and its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<Goodput>,
    /// Served tests whose server drafted (speculative decoding): its own counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<ServedDrafts>,
    /// B: sequences decoded together (parallel), 1 (request), slots (arrival).
    pub n_parallel: u32,
    /// The context's n_seq_max.
    pub n_seq_max: u32,
    pub kv_unified: bool,
    /// One prompt prefilled once and copied to every sequence (llama-batched-bench -pps).
    pub shared_prompt: bool,
    /// Requests per second, Poisson (arrival tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate: Option<f64>,
    /// Requests per repetition.
    pub n_requests: u32,
    pub repetitions: u32,
    /// 0 = greedy.
    pub temperature: f64,
    pub sampling_seed: u64,
    /// Prompt tokens decoded per repetition (S_PP's numerator).
    pub n_prompt_tokens: u64,
    /// Tokens generated per repetition.
    pub n_output_tokens: u64,
    /// llama-batched-bench's N_KV: KV cells the test fills (parallel; request: the longest
    /// request; absent for arrival tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_kv: Option<u64>,
    /// Time to first token: arrival to the first sampled token (prefill + sampling).
    pub ttft_ms: Dist,
    /// Inter-token latency: gaps between consecutive tokens of a request. Over HTTP, the gaps
    /// between streamed chunks, a chunk that carries m tokens counting as m gaps of 1/m of
    /// its gap (docs/served.md).
    pub itl_ms: Dist,
    /// End-to-end latency: arrival to the last token.
    pub e2e_ms: Dist,
    /// Time per output token of each request: (E2E − TTFT) / (n_gen − 1).
    pub tpot_ms: Dist,
    /// Arrival to admission into the batch (arrival tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<Dist>,
    /// Mean per-request decode rate, (n_gen − 1) / (E2E − TTFT).
    pub per_request_ts: Option<f64>,
    /// S_PP: prompt tokens / T_PP.
    pub aggregate_pp_ts: Option<f64>,
    /// S_TG: decode tokens of all sequences / T_TG (arrival: generated tokens / t_ms).
    pub aggregate_ts: Option<f64>,
    /// S: all tokens decoded / (T_PP + T_TG).
    pub total_ts: Option<f64>,
    /// Generated tokens / whole time (prefill included): the rate cost is based on.
    pub output_ts: f64,
    /// Means over repetitions of T_PP, T_TG and the whole time.
    pub t_pp_ms: Option<f64>,
    pub t_tg_ms: Option<f64>,
    pub t_ms: f64,
    /// Mean time per repetition outside llama.cpp calls, and its share of the busy time
    /// (t_ms less idle_ms).
    pub overhead_ms: f64,
    pub overhead_fraction: f64,
    /// Mean time per repetition with no request to serve (arrival tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Targets>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_targets: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<f64>,
    /// price_per_hour / (output_ts × 3600) × 1e6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_mtok: Option<f64>,
    pub reps: Vec<RepFigures>,
    pub requests: Vec<RequestSample>,
}
