//! Small helpers every layer may use: facts about the host, the build and files (`system`),
//! and sizes and counts as llama-bench prints them (`units`).

pub mod system;
pub mod units;
