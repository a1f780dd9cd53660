//! Serving tests: how fast a model answers requests, per request and per server.
//!
//! Tokens per second has two levels. Per request: how fast one response streams after its
//! first token, (n_gen − 1) / (E2E − TTFT), about 1 / inter-token latency. Per server: the
//! tokens of all concurrent requests per second (llama-batched-bench's S_TG). Three tests,
//! all in-process on the real engine with real sampling:
//!
//! - `request`: one request at a time (TTFT, ITL, E2E, per-request rate);
//! - `parallel`: B sequences decoded together, prompts separate or shared, as
//!   llama-batched-bench (S_PP, S_TG, S next to per-sequence figures);
//! - `arrival`: Poisson arrivals with continuous batching (TTFT and per-request rate under
//!   load).
//!
//! Layout: `config::serving` (the `[serving]` table), `plan::serving` (tests and context
//! groups), `bench` and `arrivals` (the measurement loops), `metrics` (pure figures, targets, capacity,
//! cost), `sampling`, `dataset` (prompt files), `run` (a group's context and a test's
//! figures, for `kinds::serving`), `record::serving` (the result schema) and
//! `export::serving` (the Markdown table).

pub mod arrivals;
pub mod bench;
pub mod dataset;
pub(crate) mod driver;
pub(crate) mod goodput;
pub mod http;
pub(crate) mod metrics;
pub(crate) mod ratio;
pub(crate) mod run;
pub mod sampling;
pub mod sharegpt;

pub use crate::record::serving::Serving;
