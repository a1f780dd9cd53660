//! Serving tests: how fast a model answers requests, per request ((n_gen − 1) / (E2E −
//! TTFT)) and per server (the tokens of all concurrent requests per second, as
//! llama-batched-bench's S_TG). `driver` runs a test over a transport: `run` in process,
//! `http` against a server.

pub mod arrivals;
pub mod bench;
pub mod dataset;
pub(crate) mod driver;
pub mod error;
pub(crate) mod goodput;
pub mod http;
pub(crate) mod metrics;
pub(crate) mod ratio;
pub(crate) mod run;
pub mod sampling;
pub mod sharegpt;

pub use crate::record::serving::Serving;
