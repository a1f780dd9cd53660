//! The engine layer's test support: a fake engine with a fake clock, for the unit tests of
//! the measuring loop, the runner and serving. Integration tests use llama.cpp itself.

pub(crate) mod mock;
