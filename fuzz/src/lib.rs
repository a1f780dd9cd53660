//! The pure modules under test, compiled from the main crate's sources. The fuzz crate does
//! not depend on `tpsbench` itself: that would build llama.cpp again, under fuzzing flags,
//! for code the targets never call.

#[path = "../../src/config.rs"]
pub mod config;
#[path = "../../src/gguf/mod.rs"]
pub mod gguf;
#[path = "../../src/plan.rs"]
pub mod plan;
