//! tpsbench: a Criterion-style benchmark harness for local LLM inference through llama.cpp.
//!
//! Pure logic (`config`, `plan`, `stats`, `progress`'s estimate, `export`) is separate from
//! I/O (`results`, `system`) and from the engine (`engine::llama`, the only code that touches
//! llama.cpp). `runner` ties them together; `cli` is the command line.

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
pub mod serving;
pub mod stats;
pub mod util;

// The paths from before these modules moved into their layer's folder, for code written
// against them (other branches); new code uses the paths above.
#[doc(hidden)]
pub use engine::{linkage, placement};
#[doc(hidden)]
pub use output::progress;
#[doc(hidden)]
pub use record::results;
#[doc(hidden)]
pub use report::export;
#[doc(hidden)]
pub use util::{system, units};
