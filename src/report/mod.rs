//! What is made from result files: the exporters, one per format and chosen by the kinds of
//! test (`export`); the leaderboard page (`leaderboard`); comparisons of two result sets
//! with a verdict per test (`compare`, also `tpsbench noise`); merging shards (`merge`); and
//! the same plan run against several llama.cpp builds in interleaved rounds (`library_ab`,
//! `run --library`); validating and redacting files for a published set (`publish`).

pub mod compare;
pub mod export;
pub(crate) mod fastest;
pub mod leaderboard;
pub mod library_ab;
pub(crate) mod merge;
pub(crate) mod publish;
pub mod speculative;
pub mod tune;
