//! What is made from result files: comparisons of two result sets with a verdict per test
//! (`compare`, also `tpsbench noise`), and the same plan run against several llama.cpp builds
//! in interleaved rounds (`library_ab`, `run --library`).

pub mod compare;
pub mod library_ab;
