//! tpsbench: a Criterion-style benchmark harness for local LLM inference through llama.cpp.
//!
//! The folders are the layers, bottom to top, and a module imports only from its own layer
//! and those below (`scripts/check-layers`): `stats`, `gguf` and `util`; `config`; `plan`;
//! `output` (progress on stderr); `engine` (`engine::llama`, the only code that touches
//! llama.cpp); `machine`; `record`; `kinds`, `serving` and `ladder`, how each kind of test
//! is measured; `runner`, which ties them together; `report` (exporters, the leaderboard,
//! compare, merge); and `cli`, the command line.

pub mod cli;
pub mod config;
pub mod engine;
pub mod gguf;
pub mod kinds;
pub mod ladder;
pub mod machine;
pub mod output;
pub mod plan;
pub mod record;
pub mod report;
pub mod runner;
pub mod served;
pub mod serving;
pub mod stats;
pub mod util;
