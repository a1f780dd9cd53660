//! tpsbench: a Criterion-style benchmark harness for local LLM inference through llama.cpp.
//!
//! Pure logic (`config`, `plan`, `stats`, `progress`'s estimate, `export`) is separate from
//! I/O (`results`, `system`) and from the engine (`engine::llama`, the only code that touches
//! llama.cpp). `runner` ties them together; `cli` is the command line.

pub mod cli;
pub mod compare;
pub mod config;
pub mod engine;
pub mod export;
pub mod gguf;
pub mod isolate;
pub mod kinds;
pub mod ladder;
pub mod leaderboard;
pub mod library_ab;
pub mod linkage;
pub mod machine;
pub mod measure;
pub mod merge;
pub mod placement;
pub mod plan;
pub mod progress;
pub mod quality;
pub mod record;
pub mod results;
pub mod runner;
pub mod serving;
pub mod stats;
pub mod synth;
pub mod system;
pub mod units;
