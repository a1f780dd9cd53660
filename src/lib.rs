//! tpsbench: a Criterion-style benchmark harness for local LLM inference through llama.cpp.
//!
//! The modules below are the layers, bottom to top. A module imports only from its own layer
//! and those below, and no files import each other in a circle. `scripts/check-layers` reads
//! this list (the `// layer` lines) and checks both; CONTRIBUTING.md's layer table must agree.

// layer support: pure statistics, GGUF files (read, validate, write, synthetic shapes), host facts and formatting
pub mod gguf;
pub mod stats;
pub mod util;
// layer config: models.toml, parsed and checked (pure)
pub mod config;
// layer plan: every model and test of every kind, identities, shards (pure)
pub mod plan;
// layer output: progress and ETA on stderr
pub mod output;
// layer engine: the only code touching llama.cpp (engine::llama) or a server over HTTP (engine::endpoint)
pub mod engine;
// layer machine: the hardware: bandwidth probe, roofline, GPUs, energy, memory
pub(crate) mod machine;
// layer record: the result schema and result files; every reader of a result file goes through it
pub mod record;
// layer kinds: how each kind of test is measured (speed, serving, quality ladder)
pub mod kinds;
pub mod ladder;
pub mod serving;
// layer runner: load once per key, run, record, resume, shard, isolate
pub mod runner;
// layer report: exporters, the leaderboard, compare, merge, publish
pub mod report;
// layer cli: the command line; each command parses its args and calls one function below
pub mod cli;
